package zlink.executor;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;

/**
 * What a running work receives: the name of the queue whose turn it holds, the one
 * framework call that gives the turn back while an external call is pending (SE-6.7),
 * the wait for another work with the SE-8.2 check, the cancellation signal of a disposal,
 * and the state snapshot of its message (SE-7).
 */
public final class ZLinkTurn {
    private final ZLinkSerialExecutionQueue queue;
    private final ZLinkWorkHandle rec;
    private volatile ZLinkActorStateSnapshot snapshot;

    ZLinkTurn(ZLinkSerialExecutionQueue queue, ZLinkWorkHandle rec) {
        this.queue = queue;
        this.rec = rec;
    }

    /** The name of the queue whose turn this work holds. */
    public String owner() {
        return queue.name();
    }

    /** This work's handle on the queue whose turn it holds. */
    public ZLinkWorkHandle work() {
        return rec;
    }

    /** The runtime whose shared execution resource this work continues on. */
    public ZLinkRuntime runtime() {
        return queue.runtime();
    }

    /**
     * Make a framework call on {@code call}, an external call already started. If it is
     * done, the returned stage is done too and the work goes on without yielding.
     * Otherwise the turn is given back at once; when the call settles (or the work is
     * cancelled) the work's resume permit queues at the tail of its lane, and the returned
     * stage completes only when the permit gets the turn: the work's code continues on
     * its own turn, never before (SE-6.7, D-1, D-8). A failed call completes it with the
     * call's error; a cancelled work with a {@link java.util.concurrent.CancellationException}.
     *
     * @throws ZLinkYieldNotSupportedException on an Entry Spot's queues (SE-4.1)
     */
    public <T> CompletableFuture<T> yieldFrameworkCall(CompletionStage<T> call, String what) {
        return queue.yieldFrameworkCall(rec, call, what);
    }

    /**
     * Wait, holding this turn, for {@code other} to end. Completes with its handle.
     *
     * @throws ZLinkReentrancyException at once when {@code other} needs a turn or claim
     *     this work holds (the wait could never end), or, while this work holds its turn,
     *     when {@code other} is unfinished work of the same coordinator: the seed makes
     *     any synchronous wait on the same coordinator's execute* raise (SE-8.2, D-14)
     */
    public CompletableFuture<ZLinkWorkHandle> awaitWork(ZLinkWorkHandle other) {
        if (other.isDone()) return CompletableFuture.completedFuture(other);
        boolean holding = queue.holdsTurn(rec);
        List<Object> held = holding ? rec.gates : rec.gates.subList(1, rec.gates.size());
        boolean detects = !ZLinkRuntime.bug("no_reentrancy_detection");
        if (detects && (other == rec || other.origin == rec || rec.origin == other
                || (holding && other.queue.owner == queue.owner)
                || held.stream().anyMatch(other.gates::contains))) {
            throw new ZLinkReentrancyException("work " + rec.label() + " on " + queue.name()
                + " waits for work " + other.label() + " of " + other.queueName()
                + ", which needs a turn the waiter holds (SE-8.2)");
        }
        return other.whenDone();
    }

    /**
     * Continue this work's code after something the runtime does not see released it (a
     * gate opened, a waited-for work ended): handed to the shared execution resource,
     * counted in flight before any thread can run it ({@link ZLinkRuntime#execute}), and
     * run as this work, so {@link ZLinkSerialExecutionQueue#isCurrent} and the SE-8.2
     * check still know who is calling.
     */
    public void continueWith(Runnable continuation) {
        queue.runtime().execute(() -> queue.continueAs(rec, continuation));
    }

    /** Whether a disposal asked this work to stop at its next await point. */
    public boolean cancellationRequested() {
        return rec.cancelRequested();
    }

    /** Run {@code listener} when a disposal cancels this work while it awaits something
     *  other than a framework call (at once if it was cancelled already; D-17). The
     *  listener must hand the work's continuation to {@link #continueWith}. */
    public void onCancel(Runnable listener) {
        rec.onCancel(listener);
    }

    /** The Actor state this message started with (null for works that are not an Actor's
     *  message). Read once, when the work started, in one state-lane turn (SE-7.1). */
    public ZLinkActorStateSnapshot snapshot() {
        return snapshot;
    }

    void setSnapshot(ZLinkActorStateSnapshot snapshot) {
        this.snapshot = snapshot;
    }
}
