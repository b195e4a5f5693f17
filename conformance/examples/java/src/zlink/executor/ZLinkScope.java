package zlink.executor;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CompletableFuture;

/**
 * A scope (SD): a queue, or a coordinator with every queue it made, shut down as one.
 * Its accepted works play the part the disposal seed gives to a scope's coroutines.
 *
 * <pre>
 * dispose()                  close; never-started works never start; started works are
 *                            cancelled at their await point, on their own turn (D-8,
 *                            D-15); a synchronous turn that is running finishes
 * disposeSafely()            close; cancel nothing: every live work is a zombie (SD-2)
 * disposeAfterTimeout(ms)    close; after ms on the clock, cancel what is left
 * awaitCompletion()          completes once no active work is left (zombies don't count)
 * awaitAfterCancellation()   completes once nothing is live, with the zombies' failures
 * awaitQuiescence()          completes once every accepted work ended, zombies included
 * destroy()                  disposeSafely() or dispose(), by the flag (SD-4)
 * </pre>
 *
 * The counts live in the queues; this class drives them for all of the scope's queues,
 * runs the disposal and warning timers on the runtime's clock, and re-checks waiters
 * through the runtime whenever a work ends or a disposal changes the counts.
 */
public abstract class ZLinkScope {
    final ZLinkRuntime rt;
    private final Object scopeLock = new Object();
    private volatile boolean disposeSafelyOnExit = true;
    private volatile Long zombieWarnAfterMs = 10_000L;
    private Long disposedAtMs;
    private ZLinkClock.Cancellable timer;
    private ZLinkClock.Cancellable warnTimer;

    ZLinkScope(ZLinkRuntime rt) {
        this.rt = rt;
    }

    /** The scope's name, as listings and logs show it. */
    public abstract String name();

    /** Every queue of the scope, the first one being the one cancelled first. */
    abstract List<ZLinkSerialExecutionQueue> scopeQueues();

    /** Hook: the scope closes to new work (every disposal call, first). */
    void scopeClosing() {}

    /** Hook: the scope cancels what is left (dispose, or the timeout expired). */
    void scopeCancelling() {}

    /** Hook: works the scope accepted and holds back from their queue (a session's final
     *  work before its turn is due), not ended. They count from acceptance (D-22). */
    List<ZLinkWorkHandle> heldWorks() {
        return List.of();
    }

    // ------------------------------------------------------------------ disposal
    /** Close and cancel everything now (SD-1). Zombies are cancelled too. */
    public void dispose() {
        scopeClosing();
        scopeCancelling();
        for (ZLinkSerialExecutionQueue q : scopeQueues()) q.scopeCancel(false);
        synchronized (scopeLock) {
            if (timer != null) {
                timer.cancel();
                timer = null;
            }
        }
        rt.changed();
    }

    /** Close and cancel nothing: every live work goes on as a zombie (SD-1, SD-2). Does
     *  nothing on a queue already disposed. */
    public void disposeSafely() {
        scopeClosing();
        int marked = 0;
        for (ZLinkSerialExecutionQueue q : scopeQueues()) marked += q.scopeDisposeSafely();
        // A held work is live too: it becomes a zombie with its queue (D-22).
        for (ZLinkWorkHandle rec : heldWorks()) if (rec.queue.markHeldZombie(rec)) marked++;
        Long warn = zombieWarnAfterMs;
        synchronized (scopeLock) {
            if (disposedAtMs == null) disposedAtMs = rt.clock().nowMs();
            if (marked > 0 && warn != null && warnTimer == null) {
                warnTimer = rt.clock().callLater(warn, this::warnZombies);
            }
        }
        // Marking zombies lowers the active count without any work ending: waiters of
        // awaitCompletion whose condition now holds return (SD-3).
        rt.changed();
    }

    /** Close now; after {@code timeoutMs} on the runtime's clock, cancel what is left as
     *  {@link #dispose} does (SD-1, D-18). With nothing left, no timer is started. After
     *  {@link #disposeSafely} it bounds the zombies the same way (D-27); a timer already
     *  running stays the one that holds. */
    public void disposeAfterTimeout(long timeoutMs) {
        if (timeoutMs < 0) throw new IllegalArgumentException("timeoutMs must be >= 0, got " + timeoutMs + " (SD-1)");
        scopeClosing();
        List<ZLinkSerialExecutionQueue> queues = scopeQueues();
        boolean left = false;
        for (ZLinkSerialExecutionQueue q : queues) left |= q.scopeDisposeAfterTimeout();
        // A held work still to come needs the bound as much as a queued one (D-22).
        for (ZLinkWorkHandle rec : heldWorks()) left |= rec.queue.mode() == ZLinkSerialExecutionQueue.TIMEOUT;
        boolean started = false;
        synchronized (scopeLock) {
            if (timer == null && left) {
                timer = rt.clock().callLater(timeoutMs, this::expire);
                started = true;
            }
        }
        // Everything ended before the timeout: the timer has nothing left to do. Registered
        // outside the scope's lock, since a waiter may complete (and act) right here.
        if (started) rt.when(() -> liveCount() == 0).thenRun(this::stopTimer);
    }

    private void expire() {
        synchronized (scopeLock) {
            timer = null;
        }
        scopeCancelling();
        // A queue disposed safely has its zombies bounded by this timer (D-27): at the
        // expiry they are cancelled as dispose cancels them.
        for (ZLinkSerialExecutionQueue q : scopeQueues()) {
            q.scopeCancel(q.mode() != ZLinkSerialExecutionQueue.SAFELY);
        }
        rt.changed();
    }

    private void stopTimer() {
        synchronized (scopeLock) {
            if (timer != null) {
                timer.cancel();
                timer = null;
            }
        }
    }

    private void warnZombies() {
        synchronized (scopeLock) {
            warnTimer = null;
        }
        for (ZLinkZombie z : zombies()) rt.observer().zombieWarning(name(), z);
    }

    // ------------------------------------------------------------------- waiting
    /**
     * SE-8.2 (SE-10.13) for a wait on the whole scope: the wait ends only once the works it
     * counts ended; a live work of this scope that waits is among them (a zombie too, for
     * the waits that count zombies), so its wait could never end and throws at once.
     */
    private void checkOwnWait(String wait, boolean zombiesToo) {
        if (ZLinkRuntime.bug("scope_wait_hangs")) return; // the deliberate bug: it waits for itself
        ZLinkWorkHandle running = ZLinkSerialExecutionQueue.runningNow();
        if (running == null) return;
        // A SpotWide execution turn runs its Actor record's work: the record is counted.
        ZLinkWorkHandle waiter = running.origin != null ? running.origin : running;
        if (waiter.isDone() || !scopeQueues().contains(waiter.queue)) return;
        if (!zombiesToo && waiter.queue.isZombie(waiter)) return;
        throw new ZLinkReentrancyException("work " + waiter.label() + " on " + waiter.queueName()
            + " waits in " + wait + " of " + name() + ", which waits for itself"
            + " (SE-8.2: an immediate exception, not a deadlock)");
    }

    /** Completes once no active work is left in the scope; zombies do not count (SD-3).
     *  @throws ZLinkReentrancyException at once from an active work of this scope (SE-8.2) */
    public CompletableFuture<Void> awaitCompletion() {
        checkOwnWait("awaitCompletion", false);
        return rt.when(() -> activeCount() == 0);
    }

    /** Completes once every accepted work of the scope has ended (queued, running,
     *  suspended and zombie ones included).
     *  @throws ZLinkReentrancyException at once from a live work of this scope (SE-8.2) */
    public CompletableFuture<Void> awaitQuiescence() {
        checkOwnWait("awaitQuiescence", true);
        return rt.when(() -> liveCount() == 0);
    }

    /**
     * Completes once no live work is left, zombies included, with the failures of the
     * zombies in the order they happened (SD-3); each failure is handed out once. Fails
     * with {@link ZLinkNotDisposedException} on a scope never disposed (D-19).
     */
    public CompletableFuture<List<Throwable>> awaitAfterCancellation() {
        List<ZLinkSerialExecutionQueue> queues = scopeQueues();
        if (queues.stream().allMatch(q -> q.mode() == ZLinkSerialExecutionQueue.OPEN)) {
            return CompletableFuture.failedFuture(new ZLinkNotDisposedException(
                name() + ": awaitAfterCancellation needs the scope disposed first (SD-3)"));
        }
        checkOwnWait("awaitAfterCancellation", true);
        return rt.when(() -> liveCount() == 0).thenApply(v -> {
            List<Object[]> all = new ArrayList<>();
            for (ZLinkSerialExecutionQueue q : scopeQueues()) all.addAll(q.takeZombieFailures());
            all.sort(Comparator.comparingLong(e -> (Long) e[0]));
            List<Throwable> out = new ArrayList<>();
            for (Object[] e : all) out.add((Throwable) e[1]);
            return out;
        });
    }

    // --------------------------------------------------------------------- flags
    /** True (the default): destroying the scope makes zombies; false: it cancels (SD-4). */
    public boolean disposeSafelyOnExit() {
        return disposeSafelyOnExit;
    }

    /** Make destruction cancel instead of making zombies (SD-4). The flag is the scope's,
     *  so it reaches the queues made before the change too (D-16). */
    public void asNotSafely() {
        disposeSafelyOnExit = false;
    }

    /** Destroy the scope: {@link #disposeSafely} or {@link #dispose}, by the flag (SD-4). */
    public void destroy() {
        if (disposeSafelyOnExit) disposeSafely();
        else dispose();
    }

    /** How long a zombie may outlive dispose_safely before it is reported (SD-6); null: never. */
    public void setZombieWarnAfterMs(Long ms) {
        if (ms != null && ms < 0) throw new IllegalArgumentException("zombieWarnAfterMs must be >= 0");
        zombieWarnAfterMs = ms;
    }

    // ----------------------------------------------------------------- accounting
    /** Live works that are not zombies (SD-2); a SpotWide Actor work counts once. */
    public int activeCount() {
        int n = 0;
        for (ZLinkSerialExecutionQueue q : scopeQueues()) n += q.countLive(false);
        for (ZLinkWorkHandle rec : heldWorks()) if (!rec.queue.isZombie(rec)) n++;
        return n;
    }

    /** Live zombies (SD-2). */
    public int zombieCount() {
        int n = 0;
        for (ZLinkSerialExecutionQueue q : scopeQueues()) n += q.countLive(true);
        for (ZLinkWorkHandle rec : heldWorks()) if (rec.queue.isZombie(rec)) n++;
        return n;
    }

    /** Every accepted, unfinished work of the scope, execution turns included. */
    int liveCount() {
        int n = 0;
        for (ZLinkSerialExecutionQueue q : scopeQueues()) n += q.liveCount();
        return n + heldWorks().size();
    }

    /** The zombies running now, with where each is (SD-6). */
    public List<ZLinkZombie> zombies() {
        long since;
        synchronized (scopeLock) {
            since = disposedAtMs != null ? disposedAtMs : 0;
        }
        List<ZLinkZombie> out = new ArrayList<>();
        for (ZLinkSerialExecutionQueue q : scopeQueues()) q.listZombies(name(), since, out);
        for (ZLinkWorkHandle rec : heldWorks()) {
            if (rec.queue.isZombie(rec)) out.add(new ZLinkZombie(name(), rec.queue.name(), rec.label(), since, "queued", false));
        }
        return out;
    }
}
