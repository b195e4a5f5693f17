package zlink.executor;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * What every queue of one application shares: the shared execution resource (an
 * {@link ExecutorService}: no thread per owner, SE-6.5), the clock read between works and
 * used for timers, the observer, and the count of work in flight.
 *
 * <p>In flight means: a task handed to the execution resource and not yet ended. Every
 * hand-over goes through {@link #execute}, which counts the task <em>before</em> the
 * executor can see it, and the task counts itself out only after everything it did,
 * including the tasks it handed over, so the count can never drop to zero while
 * something is still about to run. An embedder that must know when nothing can progress
 * (a test adapter's {@code settle}) waits for the count to reach zero: work blocked at
 * something that only the outside can release (a gate, a pending external call) is not
 * in flight, and whoever releases it hands the continuation over through
 * {@link #execute} again.
 */
public final class ZLinkRuntime {
    /** Deliberate bugs, named in ZLINK_JAVA_BUG (comma-separated), that break one rule
     *  each; the conformance kit's tests switch them on to show the suite catches them. */
    static final Set<String> BUGS = parseBugs(System.getenv("ZLINK_JAVA_BUG"));
    /** Every name {@link #BUGS} understands. */
    public static final List<String> KNOWN_BUGS = List.of(
        "admission_not_atomic", "lifecycle_ignores_burst_limit", "count_after_wake",
        "drain_on_submitter_stack", "no_reentrancy_detection", "scope_wait_hangs");

    private static final ThreadLocal<ZLinkRuntime> CURRENT = new ThreadLocal<>();

    private final ExecutorService executor;
    private final ZLinkClock clock;
    private final ZLinkObserver observer;
    private final ReentrantLock countLock = new ReentrantLock();
    private final Condition idle = countLock.newCondition();
    private int inFlight;
    private final List<Waiter> waiters = new ArrayList<>();
    private final AtomicLong failureOrder = new AtomicLong();

    private static final class Waiter {
        final BooleanSupplier condition;
        final CompletableFuture<Void> future = new CompletableFuture<>();

        Waiter(BooleanSupplier condition) {
            this.condition = condition;
        }
    }

    /**
     * @param executor the shared execution resource every queue of this runtime posts its
     *     drains to (one thread, or many: queues never own a thread)
     * @param clock read between works (SE-6.4) and for the scopes' timers
     * @param observer hooks for traces and embedders; may be null
     */
    public ZLinkRuntime(ExecutorService executor, ZLinkClock clock, ZLinkObserver observer) {
        this.executor = executor;
        this.clock = clock;
        this.observer = observer != null ? observer : new ZLinkObserver() {};
    }

    public ZLinkClock clock() { return clock; }

    ZLinkObserver observer() { return observer; }

    static boolean bug(String name) {
        return BUGS.contains(name);
    }

    /** Names in ZLINK_JAVA_BUG that are not in {@link #KNOWN_BUGS}: a typo must not pass
     *  for a bug that is switched on. */
    public static List<String> unknownBugs() {
        List<String> out = new ArrayList<>();
        for (String name : BUGS) if (!KNOWN_BUGS.contains(name)) out.add(name);
        Collections.sort(out);
        return out;
    }

    /** Names in ZLINK_JAVA_BUG that this runtime honours. */
    public static List<String> activeBugs() {
        List<String> out = new ArrayList<>(BUGS);
        out.retainAll(KNOWN_BUGS);
        Collections.sort(out);
        return out;
    }

    private static Set<String> parseBugs(String value) {
        if (value == null || value.isBlank()) return Collections.emptySet();
        Set<String> out = new HashSet<>();
        for (String part : value.split(",")) {
            String name = part.trim().toLowerCase(Locale.ROOT);
            if (!name.isEmpty()) out.add(name);
        }
        return out;
    }

    /**
     * Run {@code task} on the shared execution resource, counted as in flight from this
     * call until the task has returned. Application code that continues after something
     * released it (a gate opened, a waited-for work ended) continues through here.
     */
    public void execute(Runnable task) {
        if (bug("count_after_wake")) {
            // The naive order: wake first, count when the task starts. Between the two,
            // settle sees nothing in flight although a task is about to run.
            submit(() -> {
                try {
                    Thread.sleep(3);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                countIn();
                run(task);
            });
            return;
        }
        countIn();
        submit(() -> run(task));
    }

    /** The drain of a queue that just became busy: posted to the execution resource,
     *  never run by the submitter (SE-6.5). The bug {@code drain_on_submitter_stack} runs
     *  it here, on the submitting thread, inside the submit call. */
    void executeDrain(Runnable drain) {
        if (bug("drain_on_submitter_stack")) {
            countIn();
            run(drain);
            return;
        }
        execute(drain);
    }

    private void submit(Runnable wrapped) {
        try {
            executor.execute(wrapped);
        } catch (RejectedExecutionException e) {
            // The executor was shut down (the embedder dropped this runtime): nothing runs.
            countOut();
        }
    }

    private void run(Runnable task) {
        ZLinkRuntime outer = CURRENT.get();
        CURRENT.set(this);
        try {
            task.run();
        } catch (Throwable t) {
            fault(t);
        } finally {
            if (outer == null) CURRENT.remove(); else CURRENT.set(outer);
            countOut();
        }
    }

    private void countIn() {
        countLock.lock();
        try {
            inFlight++;
        } finally {
            countLock.unlock();
        }
    }

    private void countOut() {
        countLock.lock();
        try {
            if (--inFlight == 0) idle.signalAll();
        } finally {
            countLock.unlock();
        }
    }

    /** Run {@code task} now if the caller already is a task of this runtime (it is
     *  counted), else hand it over through {@link #execute}. Used where a runtime step
     *  follows the completion of something: on a pool thread it goes on at once, like a
     *  continuation; from a foreign thread it never runs application code there. */
    void continueWith(Runnable task) {
        if (CURRENT.get() == this) {
            task.run();
        } else {
            execute(task);
        }
    }

    /** Whether the calling thread is running a task of this runtime. */
    public boolean onExecutionResource() {
        return CURRENT.get() == this;
    }

    /** Tasks handed over and not yet ended. */
    public int inFlight() {
        countLock.lock();
        try {
            return inFlight;
        } finally {
            countLock.unlock();
        }
    }

    /** Wait until nothing is in flight; false if {@code timeoutMs} passed first. */
    public boolean awaitIdle(long timeoutMs) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMs);
        countLock.lock();
        try {
            while (inFlight > 0) {
                long left = deadline - System.nanoTime();
                if (left <= 0) return false;
                idle.awaitNanos(left);
            }
            return true;
        } finally {
            countLock.unlock();
        }
    }

    /** A future completed once {@code condition} holds; re-checked whenever a work ends or
     *  a scope is disposed ({@link #changed}). */
    CompletableFuture<Void> when(BooleanSupplier condition) {
        Waiter w = new Waiter(condition);
        synchronized (waiters) {
            waiters.add(w);
        }
        changed();
        return w.future;
    }

    /** Something that waiters may wait for happened. Called outside every queue lock:
     *  conditions take queue locks to read counts. */
    void changed() {
        List<Waiter> now;
        synchronized (waiters) {
            if (waiters.isEmpty()) return;
            now = new ArrayList<>(waiters);
        }
        List<Waiter> done = new ArrayList<>();
        for (Waiter w : now) {
            if (w.condition.getAsBoolean()) done.add(w);
        }
        if (done.isEmpty()) return;
        synchronized (waiters) {
            waiters.removeAll(done);
        }
        for (Waiter w : done) w.future.complete(null);
    }

    long nextFailureOrder() {
        return failureOrder.incrementAndGet();
    }

    void fault(Throwable t) {
        try {
            observer.fault(t);
        } catch (Throwable ignored) {
            // A broken observer must not stop the runtime.
        }
    }

    @Override
    public String toString() {
        return "ZLinkRuntime(inFlight=" + inFlight() + ", bugs=" + activeBugs() + ")";
    }
}
