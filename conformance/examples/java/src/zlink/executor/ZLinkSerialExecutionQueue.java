package zlink.executor;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.locks.ReentrantLock;

/**
 * ZLinkSerialExecutionQueue: runs the works submitted to one owner one at a time (SE-6),
 * on the runtime's shared execution resource (no thread per owner, SE-6.5).
 *
 * <h2>State and the lock</h2>
 * Two lanes (application, lifecycle) with count and byte reservations, the barrier-next
 * line, the flags {@code drainScheduled} and {@code draining}, the turn holder
 * {@code current}, the scope mode and zombie count. One lock guards all of it, and every
 * transition (admit, transfer, take_next, finish, yield_turn, requeue, cancel, end_slice,
 * exit_drain, close, and the disposal steps) is one critical section. Admission in
 * particular checks capacity, issues the sequence number, inserts and sets the
 * drain-scheduled flag in one step (SE-6.3), so threads racing to submit can never
 * overfill a lane. No application code and no other queue's lock is ever entered while
 * this lock is held; the only calls out are the observer's hooks: {@code transition}, for
 * traces, and {@code yielded}, which must run while the turn is still held.
 *
 * <h2>The drain role</h2>
 * Whoever sets {@code drainScheduled} posts exactly one drain to the execution resource,
 * after leaving the lock (SE-6.5); the drain never runs on the submitter's stack. At any
 * time one piece of code holds the drain role: the posted drain task, a work that keeps
 * its turn while it awaits something (the drain parks on its stage and goes on when it
 * completes), or a resumed work. A work that yields hands the role to a newly posted task.
 * Between works the drain reads the clock and ends the slice once {@code ownerTimeBudget}
 * is used (SE-6.4), reposting itself behind every owner that became ready meanwhile.
 */
public final class ZLinkSerialExecutionQueue extends ZLinkScope {
    static final int APPLICATION = 0;
    static final int LIFECYCLE = 1;
    static final int BARRIER = 2; // a line, not a lane: barrier work reserves in APPLICATION (D-4)
    /** D-3: no hidden per-work metadata beyond fixedWorkByteCost. */
    static final long METADATA_BYTES = 0;

    static final int OPEN = 0;
    static final int SAFELY = 1; // dispose_safely: live works became zombies
    static final int TIMEOUT = 2; // dispose_after_timeout: closed, the timer runs
    static final int CANCELLED = 3; // dispose, or the timeout expired

    /** The work whose code the runtime is running on this thread right now (its first
     *  synchronous part, or a resumed part), for {@link #isCurrent}. */
    private static final ThreadLocal<ZLinkWorkHandle> RUNNING_NOW = new ThreadLocal<>();

    private final String name;
    /** The coordinator that made this queue, or the queue itself when bare: a work that
     *  holds its turn may not wait for unfinished work of the same owner (SE-8.2, D-14). */
    final Object owner;
    private final ZLinkExecutionLanePolicy policy;
    private final boolean yieldAllowed;
    private final ReentrantLock lock = new ReentrantLock();

    private final ArrayDeque<ZLinkWorkHandle> app = new ArrayDeque<>();
    private final ArrayDeque<ZLinkWorkHandle> life = new ArrayDeque<>();
    private final ArrayDeque<ZLinkWorkHandle> barrier = new ArrayDeque<>();
    private final LinkedHashSet<ZLinkWorkHandle> suspended = new LinkedHashSet<>();
    private int appCount;
    private long appBytes;
    private int lifeCount;
    private long lifeBytes;
    private long nextSeq;
    private boolean drainScheduled;
    private boolean draining;
    private ZLinkWorkHandle current;
    private long sliceStartedAt;
    private int streak;
    private boolean closed;
    private int mode = OPEN;
    private int zombies;
    private final List<Runnable> idleWaiters = new ArrayList<>();
    private final List<Object[]> zombieFailures = new ArrayList<>(); // {order, error}

    /** A bare queue, a scope of its own. */
    public ZLinkSerialExecutionQueue(String name, ZLinkExecutionLanePolicy policy, ZLinkRuntime runtime) {
        this(name, policy, runtime, true);
    }

    ZLinkSerialExecutionQueue(String name, ZLinkExecutionLanePolicy policy, ZLinkRuntime runtime,
                              boolean yieldAllowed) {
        this(name, policy, runtime, yieldAllowed, null);
    }

    ZLinkSerialExecutionQueue(String name, ZLinkExecutionLanePolicy policy, ZLinkRuntime runtime,
                              boolean yieldAllowed, Object owner) {
        super(Objects.requireNonNull(runtime, "runtime"));
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("a queue needs a name");
        this.name = name;
        this.owner = owner != null ? owner : this;
        this.policy = policy != null ? policy : ZLinkExecutionLanePolicy.defaults();
        this.yieldAllowed = yieldAllowed;
    }

    @Override
    public String name() {
        return name;
    }

    public ZLinkExecutionLanePolicy policy() {
        return policy;
    }

    ZLinkRuntime runtime() {
        return rt;
    }

    // ----------------------------------------------------------- entries (SE-6.2)
    /** Application work reserving fixedWorkByteCost. */
    public ZLinkWorkHandle enqueue(ZLinkWork work) {
        return admit(new ZLinkWorkHandle(this, work), APPLICATION, 0, false);
    }

    /** Application work reserving its payload plus the fixed cost. */
    public ZLinkWorkHandle enqueueWithPayloadBytes(ZLinkWork work, long payloadBytes) {
        return admit(new ZLinkWorkHandle(this, work), APPLICATION, payloadBytes, false);
    }

    /** Lifecycle work: overtakes waiting application work, within the burst limit. */
    public ZLinkWorkHandle enqueueLifecycle(ZLinkWork work) {
        return admit(new ZLinkWorkHandle(this, work), LIFECYCLE, 0, false);
    }

    /** Application work that runs right after the current turn, before queued lifecycle
     *  and application work; several keep their order (D-4). */
    public ZLinkWorkHandle enqueueBarrierNext(ZLinkWork work) {
        return admit(new ZLinkWorkHandle(this, work), APPLICATION, 0, true);
    }

    /** Whether the calling code is a work holding this queue's turn, in a part of its
     *  code the runtime runs (its start, or its continuation after a resume). */
    public boolean isCurrent() {
        ZLinkWorkHandle rec = RUNNING_NOW.get();
        if (rec == null || rec.queue != this) return false;
        lock.lock();
        try {
            return current == rec;
        } finally {
            lock.unlock();
        }
    }

    /** The work whose code runs on this thread now (null outside any work). */
    static ZLinkWorkHandle runningNow() {
        return RUNNING_NOW.get();
    }

    /** No new submissions; accepted work still runs to its end (SE-6.2). Idempotent. */
    public void close() {
        lock.lock();
        try {
            if (closed) return;
            closed = true;
            observe("close", null);
        } finally {
            lock.unlock();
        }
    }

    public boolean isClosed() {
        lock.lock();
        try {
            return closed;
        } finally {
            lock.unlock();
        }
    }

    /** Reservations and flags right now. */
    public ZLinkQueueStatistics statistics() {
        lock.lock();
        try {
            return new ZLinkQueueStatistics(name, appCount, appBytes, lifeCount, lifeBytes,
                app.size() + life.size() + barrier.size(), current != null, suspended.size(), closed);
        } finally {
            lock.unlock();
        }
    }

    @Override
    List<ZLinkSerialExecutionQueue> scopeQueues() {
        return List.of(this);
    }

    // ------------------------------------------------------------------ admission
    /** Admit a handle built by the caller (a coordinator sets its gates first). */
    ZLinkWorkHandle admit(ZLinkWorkHandle rec, int lane, long payloadBytes, boolean toBarrier) {
        Objects.requireNonNull(rec.work, "work");
        if (payloadBytes < 0) {
            throw new IllegalArgumentException("payloadBytes must be >= 0, got " + payloadBytes + " (SE-6.2)");
        }
        long nbytes = payloadBytes + METADATA_BYTES + policy.fixedWorkByteCost();
        boolean wake;
        if (ZLinkRuntime.bug("admission_not_atomic")) {
            // The bug: check, leave the lock, insert later. Racing submitters all pass the
            // check before any of them inserts, so a lane overfills (breaks SE-6.3). The
            // pause is long enough for the racers to meet on a loaded machine too (with
            // 5 ms, the threads of a busy 2-core machine started too far apart to race).
            lock.lock();
            try {
                String reason = verdictLocked(lane, nbytes);
                if (reason != null) throw rejectLocked(reason);
            } finally {
                lock.unlock();
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            lock.lock();
            try {
                wake = placeLocked(rec, lane, nbytes, toBarrier, "admit");
            } finally {
                lock.unlock();
            }
        } else {
            lock.lock();
            try {
                // Capacity check, sequence number, insertion and the drain flag: one step.
                String reason = verdictLocked(lane, nbytes);
                if (reason != null) throw rejectLocked(reason);
                wake = placeLocked(rec, lane, nbytes, toBarrier, "admit");
            } finally {
                lock.unlock();
            }
        }
        if (wake) rt.executeDrain(this::drain); // outside the lock (SE-6.5)
        return rec;
    }

    /** Place an execution turn of work another queue already accepted (a SpotWide Actor's
     *  turn, SE-4.5, or a session's final work): reserves the fixed cost in the application
     *  lane and is never refused, not even after close (D-6). A queue already disposed
     *  cancels it at once: disposal means what never started never starts. */
    void transfer(ZLinkWorkHandle rec) {
        boolean wake = false;
        boolean cancelled = false;
        lock.lock();
        try {
            if (rec.phase != ZLinkWorkHandle.NEW) return; // ended before it was placed
            if (mode == CANCELLED) {
                rec.phase = ZLinkWorkHandle.DONE;
                cancelled = true;
            } else {
                wake = placeLocked(rec, APPLICATION, policy.fixedWorkByteCost() + METADATA_BYTES, false, "transfer");
            }
        } finally {
            lock.unlock();
        }
        if (cancelled) {
            ended(rec, ZLinkWorkHandle.CANCELLED, new CancellationException("disposed before it started"));
            return;
        }
        if (wake) rt.executeDrain(this::drain);
    }

    /** Accept (null) or the reason to reject one submission (SE-6.3): closed wins over
     *  capacity, count over bytes. */
    private String verdictLocked(int lane, long nbytes) {
        if (closed) return "closed";
        boolean lc = lane == LIFECYCLE;
        int count = lc ? lifeCount : appCount;
        long bytes = lc ? lifeBytes : appBytes;
        int countCap = lc ? policy.lifecycleMessageCapacity() : policy.applicationMessageCapacity();
        long byteCap = lc ? policy.lifecycleByteCapacity() : policy.applicationByteCapacity();
        if (count + 1 > countCap) return lc ? "lifecycle_count" : "application_count";
        if (bytes + nbytes > byteCap) return lc ? "lifecycle_bytes" : "application_bytes";
        return null;
    }

    private ZLinkRejectedException rejectLocked(String reason) {
        observe("reject", null);
        return "closed".equals(reason) ? new ZLinkClosedException(name) : new ZLinkRejectedException(reason, name);
    }

    /** Insert; true when this made an idle queue busy, so the caller must post the drain. */
    private boolean placeLocked(ZLinkWorkHandle rec, int lane, long nbytes, boolean toBarrier, String event) {
        if (lane == LIFECYCLE) {
            lifeCount++;
            lifeBytes += nbytes;
        } else {
            appCount++;
            appBytes += nbytes;
        }
        long s = nextSeq++;
        rec.wid = s;
        rec.seq = s;
        rec.lane = lane;
        rec.barrier = toBarrier;
        rec.nbytes = nbytes;
        rec.phase = ZLinkWorkHandle.QUEUED;
        rec.resumes = 0;
        // Accepted work moved into a scope disposed safely (a SpotWide turn, a session's
        // final work) is a zombie there too (SD-2).
        rec.zombie = mode == SAFELY;
        if (rec.zombie) zombies++;
        (toBarrier ? barrier : lane == LIFECYCLE ? life : app).add(rec);
        observe(event, rec);
        return wakeLocked();
    }

    /** The first item in an idle queue schedules its drain (SE-6.5); a queue that is
     *  draining or already scheduled only inserts. */
    private boolean wakeLocked() {
        if (draining || drainScheduled) return false;
        drainScheduled = true;
        return true;
    }

    // ---------------------------------------------------------------------- drain
    private void drain() {
        lock.lock();
        try {
            if (!drainScheduled || draining) {
                throw new ZLinkProtocolError("enter_drain", "SE-6.5", name + ": no drain scheduled, or one draining");
            }
            drainScheduled = false;
            draining = true;
            sliceStartedAt = rt.clock().nowMs();
            observe("enter_drain", null);
        } finally {
            lock.unlock();
        }
        runTurns(null, null, null);
    }

    /**
     * Hold the drain role: end {@code prev}'s turn (if given), then give turns until the
     * slice ends, nothing is ready, or a turn stays held: by a work that awaits something
     * (its stage carries the drain on when it completes) or by a resumed work (which
     * carries it on when its turn ends).
     */
    private void runTurns(ZLinkWorkHandle prev, String outcome, Throwable error) {
        for (;;) {
            ZLinkWorkHandle rec = null;
            boolean repost = false;
            lock.lock();
            try {
                if (prev != null) finishLocked(prev, outcome, error);
                long now = rt.clock().nowMs();
                if (now - sliceStartedAt >= policy.ownerTimeBudgetMs()) {
                    // end_slice (SE-6.4, D-10): leave the drain and, if work is ready,
                    // schedule the next slice in the same step. It is posted behind every
                    // owner that became ready meanwhile (D-13).
                    draining = false;
                    drainScheduled = hasReadyLocked();
                    repost = drainScheduled;
                    observe("end_slice", null);
                } else if (!hasReadyLocked()) {
                    draining = false; // exit_drain
                    observe("exit_drain", null);
                } else {
                    rec = takeNextLocked();
                }
            } finally {
                lock.unlock();
            }
            if (prev != null) ended(prev, outcome, error);
            if (repost) rt.execute(this::drain);
            if (rec == null) return;
            prev = null;
            Runnable permit = rec.permit;
            if (permit != null) {
                // A resume permit: the suspended work continues, holding the drain role.
                rec.permit = null;
                runAs(rec, permit);
                return;
            }
            CompletableFuture<?> stage;
            ZLinkTurn turn = new ZLinkTurn(this, rec);
            try {
                CompletionStage<?> result = callAs(rec, turn);
                stage = result == null ? null : result.toCompletableFuture();
            } catch (CancellationException e) {
                prev = rec;
                outcome = ZLinkWorkHandle.CANCELLED;
                error = e;
                continue;
            } catch (Throwable e) {
                prev = rec;
                outcome = ZLinkWorkHandle.FAILED;
                error = e;
                continue;
            }
            if (stage == null || stage.isDone()) {
                prev = rec;
                Object[] o = outcomeOf(stage);
                outcome = (String) o[0];
                error = (Throwable) o[1];
                continue;
            }
            // The work keeps the turn while it awaits anything but a framework call; the
            // drain goes on when it ends: at once on a pool thread, else handed over.
            ZLinkWorkHandle held = rec;
            stage.whenComplete((v, t) -> {
                Object[] o = outcomeOf(stage);
                rt.continueWith(() -> runTurns(held, (String) o[0], (Throwable) o[1]));
            });
            return;
        }
    }

    private CompletionStage<?> callAs(ZLinkWorkHandle rec, ZLinkTurn turn) throws Exception {
        ZLinkWorkHandle outer = RUNNING_NOW.get();
        RUNNING_NOW.set(rec);
        executing(rec, +1);
        try {
            return rec.work.run(turn);
        } finally {
            RUNNING_NOW.set(outer);
            executing(rec, -1);
        }
    }

    /** A work's continuation, run as that work (see {@link ZLinkTurn#continueWith}). */
    void continueAs(ZLinkWorkHandle rec, Runnable r) {
        runAs(rec, r);
    }

    private void runAs(ZLinkWorkHandle rec, Runnable r) {
        ZLinkWorkHandle outer = RUNNING_NOW.get();
        RUNNING_NOW.set(rec);
        executing(rec, +1);
        try {
            r.run();
        } finally {
            RUNNING_NOW.set(outer);
            executing(rec, -1);
        }
    }

    private void executing(ZLinkWorkHandle rec, int delta) {
        lock.lock();
        try {
            rec.executing += delta;
        } finally {
            lock.unlock();
        }
        if (delta < 0) judgeSurvivor(rec);
    }

    /**
     * SD-3a: a started work whose cancellation was requested but cannot reach it (it
     * holds its turn waiting on something that does not listen for cancellation, see
     * {@link ZLinkTurn#onCancel}) does not end within its cancellation: it becomes a
     * zombie now (core transition survive_cancel: active -1, zombie +1). It keeps its
     * turn and runs on; await_completion stops waiting for it, await_after_cancellation
     * still waits. Judged only while no part of its code runs (else when that part
     * returns), so a work still on its way to an await that listens is never marked. A
     * work the cancellation did reach is left to end; a yielded one gets its
     * cancellation on its own turn.
     */
    private void judgeSurvivor(ZLinkWorkHandle rec) {
        if (!rec.cancelRequested() || rec.cancelDelivered()) return;
        boolean marked = false;
        lock.lock();
        try {
            if (rec.executing == 0 && rec.phase == ZLinkWorkHandle.RUNNING && !rec.zombie
                    && current == rec) {
                rec.zombie = true;
                zombies++;
                marked = true;
                observe("survive_cancel", rec);
            }
        } finally {
            lock.unlock();
        }
        if (marked) rt.changed();
    }

    /** {outcome, error} of a completed stage (null: a synchronous completion). */
    private static Object[] outcomeOf(CompletableFuture<?> stage) {
        if (stage == null) return new Object[] {ZLinkWorkHandle.COMPLETED, null};
        try {
            stage.join();
            return new Object[] {ZLinkWorkHandle.COMPLETED, null};
        } catch (CancellationException e) {
            return new Object[] {ZLinkWorkHandle.CANCELLED, e};
        } catch (java.util.concurrent.CompletionException e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            if (cause instanceof CancellationException) return new Object[] {ZLinkWorkHandle.CANCELLED, cause};
            return new Object[] {ZLinkWorkHandle.FAILED, cause};
        }
    }

    private boolean hasReadyLocked() {
        return !barrier.isEmpty() || !life.isEmpty() || !app.isEmpty();
    }

    /** take_next (SE-6.6): barrier-next first; lifecycle overtakes application work until
     *  lifecycleBurstLimit lifecycle items were taken in a row while application work
     *  waited (D-5); then one application item. */
    private ZLinkWorkHandle takeNextLocked() {
        if (!draining || current != null) {
            throw new ZLinkProtocolError("take_next", "SE-6.6", name + ": not draining, or a turn is held");
        }
        int limit = ZLinkRuntime.bug("lifecycle_ignores_burst_limit") ? Integer.MAX_VALUE : policy.lifecycleBurstLimit();
        ZLinkWorkHandle rec;
        if (!barrier.isEmpty()) {
            rec = barrier.poll();
            streak = 0;
        } else if (!life.isEmpty() && (app.isEmpty() || streak < limit)) {
            streak = app.isEmpty() ? 0 : streak + 1;
            rec = life.poll();
        } else {
            rec = app.poll();
            streak = 0;
        }
        rec.phase = ZLinkWorkHandle.RUNNING;
        rec.started = true;
        current = rec;
        observe("take_next", rec);
        return rec;
    }

    /** finish: the turn holder ended; its reservation is released now, not when it
     *  started (SE-5.2). A zombie's failure is kept for awaitAfterCancellation (SD-3),
     *  under the same lock, so a waiter that sees the queue empty sees the failure too. */
    private void finishLocked(ZLinkWorkHandle rec, String outcome, Throwable error) {
        if (current != rec) {
            throw new ZLinkProtocolError("finish", "SE-6.7", name + ": work " + rec.label() + " ends off its turn");
        }
        current = null;
        if (ZLinkWorkHandle.FAILED.equals(outcome) && rec.zombie && !rec.quiet) {
            zombieFailures.add(new Object[] {rt.nextFailureOrder(), error});
        }
        releaseLocked(rec);
        observe("finish", rec);
    }

    private void releaseLocked(ZLinkWorkHandle rec) {
        rec.phase = ZLinkWorkHandle.DONE;
        if (rec.zombie) zombies--; // a finished zombie leaves the scope (SD-2)
        if (rec.lane == LIFECYCLE) {
            lifeCount--;
            lifeBytes -= rec.nbytes;
        } else {
            appCount--;
            appBytes -= rec.nbytes;
        }
    }

    /** After a work ended (outside the lock): its handle settles, idle waiters whose
     *  condition holds run, and the runtime re-checks its waiters. */
    private void ended(ZLinkWorkHandle rec, String outcome, Throwable error) {
        rec.settle(outcome, error);
        if (ZLinkWorkHandle.FAILED.equals(outcome) && !rec.quiet) rt.observer().workFailed(rec, error);
        List<Runnable> idle = null;
        lock.lock();
        try {
            if (appCount + lifeCount == 0 && !idleWaiters.isEmpty()) {
                idle = new ArrayList<>(idleWaiters);
                idleWaiters.clear();
            }
        } finally {
            lock.unlock();
        }
        if (idle != null) for (Runnable r : idle) r.run();
        rt.changed();
    }

    /** Run {@code action} once no accepted work is left (at once if none is). */
    void whenIdle(Runnable action) {
        lock.lock();
        try {
            if (appCount + lifeCount != 0) {
                idleWaiters.add(action);
                return;
            }
        } finally {
            lock.unlock();
        }
        action.run();
    }

    /** End a work that was accepted but never placed (a session's final work under
     *  disposal, D-22); false if it was placed already. */
    boolean cancelUnplaced(ZLinkWorkHandle rec) {
        lock.lock();
        try {
            if (rec.phase != ZLinkWorkHandle.NEW) return false;
            rec.phase = ZLinkWorkHandle.DONE;
        } finally {
            lock.unlock();
        }
        rec.settle(ZLinkWorkHandle.CANCELLED, new CancellationException("disposed before it started"));
        return true;
    }

    /** Whether {@code rec} is held: accepted, not placed in a line yet, not ended (a
     *  session's final work before its turn is due, D-22). */
    boolean isHeld(ZLinkWorkHandle rec) {
        lock.lock();
        try {
            return rec.phase == ZLinkWorkHandle.NEW;
        } finally {
            lock.unlock();
        }
    }

    /** A held work of a queue disposed safely is a zombie too (SD-2, D-22); the queue
     *  marks it again when it places it. True if it was marked now. */
    boolean markHeldZombie(ZLinkWorkHandle rec) {
        lock.lock();
        try {
            if (rec.phase != ZLinkWorkHandle.NEW || mode != SAFELY || rec.zombie) return false;
            rec.zombie = true;
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code rec} is a zombie (read under the queue's lock). */
    boolean isZombie(ZLinkWorkHandle rec) {
        lock.lock();
        try {
            return rec.zombie;
        } finally {
            lock.unlock();
        }
    }

    /** Whether {@code rec} holds this queue's turn now. */
    boolean holdsTurn(ZLinkWorkHandle rec) {
        lock.lock();
        try {
            return current == rec;
        } finally {
            lock.unlock();
        }
    }

    // ---------------------------------------------------------------------- Yield
    <T> CompletableFuture<T> yieldFrameworkCall(ZLinkWorkHandle rec, CompletionStage<T> call, String what) {
        if (!yieldAllowed) {
            throw new ZLinkYieldNotSupportedException(name + " offers no Yield (an Entry Spot has none, SE-4.1)");
        }
        CompletableFuture<T> pending = call.toCompletableFuture();
        lock.lock();
        try {
            if (current != rec) {
                throw new IllegalStateException("yieldFrameworkCall outside its work's turn");
            }
            if (rec.cancelRequested()) {
                // Cancelled while it ran: the cancellation reaches it at this await point,
                // on its own turn, without yielding (D-17).
                return CompletableFuture.failedFuture(new CancellationException("cancelled"));
            }
            if (pending.isDone()) return pending; // done already: go on without yielding
            // yield_turn: give the turn back; the work keeps its reservation (D-2). The
            // observer hears it while no other work can have taken the turn.
            current = null;
            rec.phase = ZLinkWorkHandle.SUSPENDED;
            rec.awaiting = what;
            suspended.add(rec);
            observe("yield_turn", rec);
            rt.observer().yielded(name, rec);
        } finally {
            lock.unlock();
        }
        // The drain role moves on without this work, in a posted task.
        rt.execute(() -> runTurns(null, null, null));
        CompletableFuture<T> resumed = new CompletableFuture<>();
        java.util.concurrent.atomic.AtomicBoolean once = new java.util.concurrent.atomic.AtomicBoolean();
        Runnable requeue = () -> {
            if (!once.compareAndSet(false, true)) return;
            // The permit runs when the drain gives it the turn: the work continues on its
            // own turn, with the call's result, its error, or its cancellation (D-8).
            requeue(rec, () -> {
                if (rec.cancelRequested()) {
                    resumed.completeExceptionally(new CancellationException("cancelled"));
                    return;
                }
                try {
                    resumed.complete(pending.join());
                } catch (CancellationException e) {
                    resumed.completeExceptionally(e);
                } catch (java.util.concurrent.CompletionException e) {
                    resumed.completeExceptionally(e.getCause() != null ? e.getCause() : e);
                }
            });
        };
        pending.whenComplete((v, t) -> requeue.run());
        // A disposal cuts the pending call short (D-15): the call is cancelled and the work
        // queues its permit now, to learn of its cancellation on its own turn.
        rec.onCancel(() -> {
            pending.cancel(false);
            requeue.run();
        });
        return resumed;
    }

    /** requeue: the resume permit goes to the tail of the work's own lane with a fresh
     *  sequence number and no capacity check (D-1, D-2); no resume skips the queue. */
    private void requeue(ZLinkWorkHandle rec, Runnable permit) {
        boolean wake;
        lock.lock();
        try {
            if (rec.phase != ZLinkWorkHandle.SUSPENDED) {
                throw new ZLinkProtocolError("requeue", "SE-6.7", name + ": work " + rec.label() + " is not suspended");
            }
            suspended.remove(rec);
            rec.seq = nextSeq++;
            rec.phase = ZLinkWorkHandle.REQUEUED;
            rec.resumes++;
            rec.awaiting = null;
            rec.permit = permit;
            (rec.lane == LIFECYCLE ? life : app).add(rec);
            observe("requeue", rec);
            wake = wakeLocked();
        } finally {
            lock.unlock();
        }
        if (wake) rt.execute(this::drain);
    }

    // ------------------------------------------------------------ scope (SD)
    int mode() {
        lock.lock();
        try {
            return mode;
        } finally {
            lock.unlock();
        }
    }

    /** dispose, or the disposal timeout expired: close; works that never started end
     *  cancelled now; live ones are asked to stop, each on its own turn (D-8, D-15). A
     *  SpotWide Actor record is not asked: it follows its execution turn (D-21). */
    void scopeCancel(boolean expire) {
        List<ZLinkWorkHandle> never = new ArrayList<>();
        List<ZLinkWorkHandle> live;
        lock.lock();
        try {
            if (expire ? mode != TIMEOUT : mode == CANCELLED) return;
            closed = true;
            mode = CANCELLED;
            observe(expire ? "expire_timeout" : "dispose", null);
            for (ArrayDeque<ZLinkWorkHandle> line : List.of(barrier, life, app)) {
                for (ZLinkWorkHandle rec : new ArrayList<>(line)) {
                    if (rec.phase == ZLinkWorkHandle.QUEUED) {
                        line.remove(rec);
                        releaseLocked(rec);
                        observe("cancel", rec);
                        never.add(rec);
                    }
                }
            }
            live = liveRecordsLocked();
        } finally {
            lock.unlock();
        }
        for (ZLinkWorkHandle rec : never) {
            ended(rec, ZLinkWorkHandle.CANCELLED, new CancellationException("disposed before it started"));
        }
        for (ZLinkWorkHandle rec : live) {
            if (!rec.quiet) {
                rec.requestCancel();
                judgeSurvivor(rec);
            }
        }
    }

    /** dispose_safely: close and mark every live work a zombie; returns how many. */
    int scopeDisposeSafely() {
        lock.lock();
        try {
            if (mode != OPEN) return 0;
            closed = true;
            mode = SAFELY;
            int marked = 0;
            for (ZLinkWorkHandle rec : liveRecordsLocked()) {
                if (!rec.zombie) {
                    rec.zombie = true;
                    marked++;
                }
            }
            zombies += marked;
            observe("dispose_safely", null);
            return marked;
        } finally {
            lock.unlock();
        }
    }

    /** dispose_after_timeout: close now; true if live work is left for the timer, the
     *  zombies of a queue disposed safely included (the timer bounds them, D-27). */
    boolean scopeDisposeAfterTimeout() {
        lock.lock();
        try {
            if (mode == OPEN) {
                closed = true;
                mode = TIMEOUT;
                observe("dispose_after_timeout", null);
            }
            return (mode == TIMEOUT || mode == SAFELY) && appCount + lifeCount > 0;
        } finally {
            lock.unlock();
        }
    }

    List<Object[]> takeZombieFailures() {
        lock.lock();
        try {
            List<Object[]> out = new ArrayList<>(zombieFailures);
            zombieFailures.clear();
            return out;
        } finally {
            lock.unlock();
        }
    }

    private List<ZLinkWorkHandle> liveRecordsLocked() {
        List<ZLinkWorkHandle> out = new ArrayList<>(barrier);
        out.addAll(life);
        out.addAll(app);
        out.addAll(suspended);
        if (current != null) out.add(current);
        return out;
    }

    int liveCount() {
        lock.lock();
        try {
            return appCount + lifeCount;
        } finally {
            lock.unlock();
        }
    }

    /** Live works counted once (execution turns are counted by their Actor record):
     *  zombies if {@code zombiesOnly}, else the active ones. */
    int countLive(boolean zombiesOnly) {
        lock.lock();
        try {
            int n = 0;
            for (ZLinkWorkHandle rec : liveRecordsLocked()) {
                if (!rec.executionTurn && rec.zombie == zombiesOnly) n++;
            }
            return n;
        } finally {
            lock.unlock();
        }
    }

    void listZombies(String scope, long since, List<ZLinkZombie> out) {
        List<ZLinkWorkHandle> records;
        lock.lock();
        try {
            records = new ArrayList<>();
            for (ZLinkWorkHandle rec : liveRecordsLocked()) {
                if (rec.zombie && !rec.executionTurn) records.add(rec);
            }
        } finally {
            lock.unlock();
        }
        for (ZLinkWorkHandle rec : records) {
            // A SpotWide Actor record is where its execution turn is.
            ZLinkWorkHandle where = rec.executionOnSpot != null && !rec.executionOnSpot.isDone()
                ? rec.executionOnSpot : rec;
            where.queue.describeZombie(scope, since, where, rec.label(), out);
        }
    }

    private void describeZombie(String scope, long since, ZLinkWorkHandle rec, String label, List<ZLinkZombie> out) {
        lock.lock();
        try {
            if (rec.phase < 0 || rec.phase == ZLinkWorkHandle.DONE) return;
            out.add(new ZLinkZombie(scope, name, label, since, ZLinkWorkHandle.PHASES[rec.phase], rec.started));
        } finally {
            lock.unlock();
        }
    }

    private void observe(String event, ZLinkWorkHandle rec) {
        rt.observer().transition(name, event, rec);
    }

    @Override
    public String toString() {
        return "<ZLinkSerialExecutionQueue " + statistics() + ">";
    }
}
