package zlink.adapter;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import zlink.executor.ZLinkActorSerialExecutor;
import zlink.executor.ZLinkObserver;
import zlink.executor.ZLinkRejectedException;
import zlink.executor.ZLinkReentrancyException;
import zlink.executor.ZLinkRuntime;
import zlink.executor.ZLinkScope;
import zlink.executor.ZLinkSerialExecutionQueue;
import zlink.executor.ZLinkSessionSerialExecutor;
import zlink.executor.ZLinkSpotSerialExecutor;
import zlink.executor.ZLinkTurn;
import zlink.executor.ZLinkVirtualClock;
import zlink.executor.ZLinkWork;
import zlink.executor.ZLinkWorkHandle;
import zlink.executor.ZLinkYieldNotSupportedException;
import zlink.executor.ZLinkZombie;

/** Everything one case made; {@code reset} drops it and starts a new one. */
final class Case implements ZLinkObserver {
    /** How many entry calls of the runtime this thread is inside now: a work whose code
     *  begins while it is not zero began on the submitter's stack (SE-6.5 forbids it);
     *  a pool thread that runs a posted drain sees zero. */
    private static final ThreadLocal<Integer> SUBMITTING = ThreadLocal.withInitial(() -> 0);
    /** The submission this thread is inside the entry call of: the runtime's admit hook
     *  gives it its place in its queue's admission order. */
    private static final ThreadLocal<WorkState> ADMITTING = new ThreadLocal<>();
    /** The verdicts a turn this thread just began must follow: {@code ticketsTaken} as
     *  the take_next hook read it, under the queue's lock, read back by the work's first
     *  event of that turn ({@code started} or {@code resumed}), which the drain runs on
     *  the same thread right after it. */
    private static final ThreadLocal<Long> TURN_AFTER = new ThreadLocal<>();

    /** Verdicts in the order the runtime judged them: works submitted from several
     *  threads at once are judged in one order, and their verdicts must say that order
     *  (the log is the order the runtime did things in). Each judgment takes the next
     *  ticket, one sequence for the whole case, under the judging queue's lock (its
     *  admit, reject or close hook); its verdict is written once every earlier ticket's
     *  is. One sequence, not one a queue: a judgment of one queue can rest on another's
     *  (a SpotWide Actor queue admits a message, its claim places the message's turn on
     *  the Spot queue, and that turn fills the Spot queue for the next submission). */
    private final Object verdictOrder = new Object();
    private long ticketsTaken;
    /** Every ticket below it is written; {@code writtenAhead} holds the written ones above
     *  it (a verdict written out of turn: on the submitter's stack, below). */
    private long ticketsWritten;
    private final Set<Long> writtenAhead = new HashSet<>();

    private final Adapter adapter;
    private volatile boolean live = true;
    final ZLinkVirtualClock clock = new ZLinkVirtualClock();
    final ExecutorService pool;
    final ZLinkRuntime runtime;
    final Map<String, Target> targets = Collections.synchronizedMap(new LinkedHashMap<>());
    final Map<String, WorkState> works = new ConcurrentHashMap<>();
    final Map<String, Gate> gates = new ConcurrentHashMap<>();
    final Map<String, ExternalCall> calls = new ConcurrentHashMap<>();
    final Set<String> waiters = ConcurrentHashMap.newKeySet();
    final Set<String> zombiesSeen = Collections.synchronizedSet(new HashSet<>());

    Case(Adapter adapter, int threads) {
        this.adapter = adapter;
        AtomicInteger n = new AtomicInteger();
        // The shared execution resource of this case: every queue posts its drain here.
        this.pool = Executors.newFixedThreadPool(threads, r -> {
            Thread t = new Thread(r, "zlink-pool-" + n.incrementAndGet());
            t.setDaemon(true);
            return t;
        });
        this.runtime = new ZLinkRuntime(pool, clock, this);
    }

    /** End the case: its works never write again, its threads are let go. */
    void drop() {
        live = false;
        pool.shutdownNow();
    }

    /** Write an event unless this case was dropped. */
    void emit(String event, Object... fields) {
        if (!live) return;
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("event", event);
        for (int i = 0; i < fields.length; i += 2) m.put((String) fields[i], fields[i + 1]);
        adapter.writeLine(m);
    }

    // ------------------------------------------------------------ observer hooks
    @Override
    public void transition(String queue, String event, ZLinkWorkHandle work) {
        if (Adapter.TRACE) Adapter.log("trace " + queue + " " + event + (work != null ? " " + work.label() : ""));
        WorkState ws = ADMITTING.get();
        if (("admit".equals(event) || "reject".equals(event) || "close".equals(event))
                && ws != null && ws.ticketQueue == null) {
            // Under the queue's lock: tickets follow the order in which the queues judged
            // their submissions, refusals included (a refusal a work's admission caused
            // must not be written before that admission's accepted). A close
            // inside an entry call is a session's final work being judged: it closes the
            // session, and a refusal as closed must not be written before its accepted.
            synchronized (verdictOrder) {
                ws.ticketQueue = queue;
                ws.ticket = ticketsTaken++;
            }
        }
        if ("take_next".equals(event)) {
            // Under the queue's lock, after the previous turn ended and its reservation
            // was released: every submission judged before now has its ticket.
            synchronized (verdictOrder) {
                TURN_AFTER.set(ticketsTaken);
            }
        }
    }

    /**
     * Hold the first event of the turn this thread just began until the verdict of every
     * submission judged before the turn began is written, whatever queue judged it and
     * whichever thread writes it. A queue judges a submission against the reservations it
     * holds then, and a turn it begins later may come after a release: a refusal written
     * after such a turn's {@code started} reads as a refusal with room left (SE-5.1), and
     * the log would not say the order the runtime did things in. Not on a thread still
     * inside an entry call (a drain on the submitter's stack, SE-6.5's bug): the verdict
     * it would wait for is written only once that call returns.
     */
    void awaitVerdictsBeforeTurn() {
        Long before = TURN_AFTER.get();
        TURN_AFTER.remove();
        if (before == null || SUBMITTING.get() > 0) return;
        synchronized (verdictOrder) {
            awaitWrittenLocked(before);
        }
    }

    /** Under {@code verdictOrder}: wait until the verdict of every ticket below
     *  {@code before} is written (or the case is dropped). False if this thread was
     *  interrupted. */
    private boolean awaitWrittenLocked(long before) {
        while (live && ticketsWritten < before) {
            try {
                verdictOrder.wait(100);
            } catch (InterruptedException x) {
                Thread.currentThread().interrupt();
                return false;
            }
        }
        return true;
    }

    /** Called by the runtime while the yielding work still holds its turn: the one moment
     *  at which {@code yielded} is true and no other work can have taken the turn. */
    @Override
    public void yielded(String queue, ZLinkWorkHandle work) {
        WorkState ws = works.get(work.label());
        if (ws == null || ws.pendingCall == null) return;
        ws.yielded = true;
        emit("yielded", "work", ws.id, "owner", queue, "call", ws.pendingCall);
    }

    @Override
    public void zombieWarning(String scope, ZLinkZombie zombie) {
        WorkState ws = works.get(zombie.label());
        if (ws == null) return;
        emit("zombie_warning", "work", ws.id, "owner", ws.owner());
    }

    @Override
    public void fault(Throwable error) {
        Adapter.log("fault: " + stack(error));
        emit("fault", "message", String.valueOf(error));
    }

    static String stack(Throwable t) {
        java.io.StringWriter w = new java.io.StringWriter();
        t.printStackTrace(new java.io.PrintWriter(w));
        return w.toString();
    }

    // ---------------------------------------------------------------- lookups
    Target target(Object name) {
        Target t = name instanceof String ? targets.get(name) : null;
        if (t == null) throw new Adapter.CommandError("unknown_target", "no target named " + name);
        return t;
    }

    Gate gate(String name) {
        return gates.computeIfAbsent(name, k -> new Gate());
    }

    ExternalCall call(String name) {
        return calls.computeIfAbsent(name, k -> new ExternalCall());
    }

    // ------------------------------------------------------------- submission
    /**
     * Submit one work (the submit command, a work's submit op, or one thread of
     * submit_concurrent) and write its verdict before anything else about it. The work
     * waits at {@code go} before it starts: released right after the verdict, or, for a
     * concurrent batch, after every verdict of the batch.
     */
    String submit(Map<String, Object> sub, CountDownLatch batch) {
        return submit(sub, batch, false);
    }

    /** {@link #submit(Map, CountDownLatch)}; {@code byWork}: a work's submit op, which
     *  {@code ZLINK_JAVA_VERDICT_PAUSE_MS} holds between the entry call and the verdict
     *  ({@code ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS} holds the runner's submit command). */
    @SuppressWarnings("unchecked")
    String submit(Map<String, Object> sub, CountDownLatch batch, boolean byWork) {
        String id = Commands.name(sub, "work");
        Target target = target(sub.get("target"));
        Object entry = sub.get("entry");
        if (!(entry instanceof String)) throw Adapter.bad("the submission needs an entry");
        List<Map<String, Object>> script = Commands.checkScript(sub.get("script"));
        WorkState ws = new WorkState(id, target.name);
        if (works.putIfAbsent(id, ws) != null) throw Adapter.bad("work " + id + " was submitted already");
        CountDownLatch go = batch != null ? batch : new CountDownLatch(1);
        ScriptRun run = new ScriptRun(this, ws, script, go);
        ZLinkWorkHandle handle;
        SUBMITTING.set(SUBMITTING.get() + 1);
        WorkState outer = ADMITTING.get();
        ADMITTING.set(ws);
        ZLinkRejectedException refused = null;
        try {
            handle = target.submit((String) entry, run::start, sub);
        } catch (ZLinkRejectedException e) {
            handle = null;
            refused = e;
        } catch (IllegalArgumentException | Adapter.CommandError e) {
            works.remove(id);
            if (e instanceof Adapter.CommandError) throw (Adapter.CommandError) e;
            throw Adapter.bad(e.getMessage());
        } finally {
            SUBMITTING.set(SUBMITTING.get() - 1);
            ADMITTING.set(outer);
        }
        // The verdict is written once this thread is out of the entry call (SUBMITTING is
        // back to what it was), so that it waits for its place in the queue's order.
        if (refused != null) {
            ws.ended.set(true);
            pauseBeforeVerdict(byWork, batch);
            writeVerdict(ws, "rejected", "work", id, "owner", refused.owner(), "reason", refused.reason());
            return "rejected";
        }
        handle.setLabel(id);
        ws.handle = handle;
        ws.admitOwner = handle.queueName();
        pauseBeforeVerdict(byWork, batch);
        writeVerdict(ws, "accepted", "work", ws.id, "owner", ws.admitOwner);
        // What the work's own code cannot report: an end before it started (cancelled by a
        // disposal), or a failure outside its script.
        handle.whenDone().thenAccept(h -> endedOutside(ws, h));
        if (batch == null) go.countDown();
        return "accepted";
    }

    /** The test levers' pause: a work's submit op, or the runner's submit command (not
     *  a thread of submit_concurrent, {@code batch}). */
    private static void pauseBeforeVerdict(boolean byWork, CountDownLatch batch) {
        long ms = byWork ? Adapter.VERDICT_PAUSE_MS : batch == null ? Adapter.RUNNER_VERDICT_PAUSE_MS : 0;
        if (ms <= 0) return;
        try {
            Thread.sleep(ms);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Write a verdict ({@code accepted} or {@code rejected}) once the verdict of every
     *  submission the runtime judged earlier is written: the log says the order in which
     *  it judged them, whichever thread submitted. Not when this thread is still
     *  inside an outer entry call: a drain run on the submitter's stack (SE-6.5's bug)
     *  holds the earlier verdict until it returns, and its order is broken anyway. A
     *  verdict that no queue's hook ticketed (a coordinator's refusal as closed, judged
     *  under its own lock) waits for every verdict ticketed before it is written: the
     *  submission that closed it, a session's final work, is one of them. */
    private void writeVerdict(WorkState ws, String event, Object... fields) {
        synchronized (verdictOrder) {
            if (SUBMITTING.get() == 0) {
                if (!awaitWrittenLocked(ws.ticketQueue != null ? ws.ticket : ticketsTaken)) return;
            }
            emit(event, fields);
            if (ws.ticketQueue != null) {
                writtenAhead.add(ws.ticket);
                while (writtenAhead.remove(ticketsWritten)) ticketsWritten++;
                verdictOrder.notifyAll();
            }
        }
    }

    private void endedOutside(WorkState ws, ZLinkWorkHandle h) {
        if (!ws.ended.compareAndSet(false, true)) return;
        String outcome = h.outcome();
        if (ZLinkWorkHandle.CANCELLED.equals(outcome)) {
            emit("cancelled", "work", ws.id, "owner", ws.owner());
        } else if (ZLinkWorkHandle.FAILED.equals(outcome)) {
            emit("failed", "work", ws.id, "owner", ws.owner(), "message", String.valueOf(h.error()));
        } else {
            emit("finished", "work", ws.id, "owner", ws.owner());
        }
    }

    static String outcomeName(ZLinkWorkHandle h) {
        String o = h.outcome();
        if (ZLinkWorkHandle.COMPLETED.equals(o)) return "finished";
        return o; // failed, cancelled
    }

    // ----------------------------------------------------------------- state
    /** What the adapter knows about one work the runner named. */
    static final class WorkState {
        final String id;
        volatile String admitOwner;
        volatile String runOwner;
        volatile boolean started;
        final AtomicBoolean ended = new AtomicBoolean(); // a terminal event was written
        volatile ZLinkWorkHandle handle;
        volatile String pendingCall; // the call a work is making a framework call on
        volatile boolean yielded; // it gave its turn back and has not resumed yet
        volatile String ticketQueue; // the queue that judged it, from its hook
        volatile long ticket; // its place in the order the runtime judged submissions
        final String target; // the target it was submitted to

        WorkState(String id, String owner) {
            this.id = id;
            this.target = owner;
            this.admitOwner = owner;
            this.runOwner = owner;
        }

        /** Where events about it go: the queue it ran on once started, else its admitter
         *  (a work that never started is cancelled, or made a zombie, there). */
        String owner() {
            return started ? runOwner : admitOwner;
        }
    }

    /** A created target and how each entry of its type submits to it. */
    static final class Target {
        final String name;
        final String type;
        final Object obj;
        final ZLinkScope scope;

        Target(String name, String type, Object obj) {
            this.name = name;
            this.type = type;
            this.obj = obj;
            this.scope = (ZLinkScope) obj;
        }

        /** The runtime picks the queue; nothing here does (SE-3.1). */
        ZLinkWorkHandle submit(String entry, ZLinkWork work, Map<String, Object> sub) {
            switch (type + "." + entry) {
                case "spot.execute_spot":
                    return ((ZLinkSpotSerialExecutor) obj).executeSpot(work);
                case "spot.execute_actor":
                    return ((ZLinkSpotSerialExecutor) obj).executeActor(Commands.name(sub, "actor_id"), work, payload(sub, false));
                case "spot.execute_timer":
                    return ((ZLinkSpotSerialExecutor) obj).executeTimer(Commands.name(sub, "timer_name"), work);
                case "spot.execute_lifecycle":
                    return ((ZLinkSpotSerialExecutor) obj).executeLifecycle(work);
                case "actor.execute_actor":
                    return ((ZLinkActorSerialExecutor) obj).executeActor(work, payload(sub, false));
                case "actor.execute_lifecycle":
                    return ((ZLinkActorSerialExecutor) obj).executeLifecycle(work);
                case "session.execute_application":
                    return ((ZLinkSessionSerialExecutor) obj).executeApplication(work, payload(sub, false));
                case "session.execute_control":
                    return ((ZLinkSessionSerialExecutor) obj).executeControl(work);
                case "session.execute_infrastructure":
                    return ((ZLinkSessionSerialExecutor) obj).executeInfrastructure(work);
                case "session.execute_final":
                    return ((ZLinkSessionSerialExecutor) obj).executeFinal(work);
                case "queue.enqueue":
                    return ((ZLinkSerialExecutionQueue) obj).enqueue(work);
                case "queue.enqueue_with_payload_bytes":
                    return ((ZLinkSerialExecutionQueue) obj).enqueueWithPayloadBytes(work, payload(sub, true));
                case "queue.enqueue_lifecycle":
                    return ((ZLinkSerialExecutionQueue) obj).enqueueLifecycle(work);
                case "queue.enqueue_barrier_next":
                    return ((ZLinkSerialExecutionQueue) obj).enqueueBarrierNext(work);
                default:
                    throw Adapter.bad("a " + type + " has no entry " + entry);
            }
        }

        private static long payload(Map<String, Object> sub, boolean required) {
            Object v = sub.get("payload_bytes");
            if (v == null) {
                if (required) throw Adapter.bad("the submission needs payload_bytes");
                return 0;
            }
            if (!(v instanceof Long) || (Long) v < 0) throw Adapter.bad("payload_bytes must be an integer >= 0, got " + v);
            return (Long) v;
        }
    }

    /** A latch a work waits at, holding its turn, until the runner opens it. */
    final class Gate {
        private boolean open;
        private final List<Runnable> waiting = new ArrayList<>();

        /** Register {@code wake} unless the gate is open; true if the caller must wait. */
        synchronized boolean await(Runnable wake) {
            if (open) return false;
            waiting.add(wake);
            return true;
        }

        /** Open it: each woken work is handed to the runtime, which counts it as in flight
         *  before any thread can run it, so a settle that follows sees it. */
        void open() {
            List<Runnable> wake;
            synchronized (this) {
                open = true;
                wake = new ArrayList<>(waiting);
                waiting.clear();
            }
            for (Runnable r : wake) r.run();
        }
    }

    /** An external call the runner completes or fails. */
    static final class ExternalCall {
        final CompletableFuture<Void> future = new CompletableFuture<>();
    }

    /** A failure the script asked for (raise op, failed call): the work fails with it. */
    static final class ScriptError extends RuntimeException {
        ScriptError(String message) {
            super(message, null, false, false);
        }

        @Override
        public String toString() {
            return getMessage();
        }
    }

    /**
     * One work's script, run as a small state machine: {@link #step} runs ops on the
     * caller's stack until one must wait (a shut gate, a pending call, another work); the
     * continuation is then handed to the runtime by whoever releases the wait. The work's
     * stage ({@code done}) completes when the script ends.
     */
    static final class ScriptRun {
        private final Case c;
        private final WorkState ws;
        private final List<Map<String, Object>> ops;
        private final CountDownLatch go;
        private final CompletableFuture<Void> done = new CompletableFuture<>();
        private ZLinkTurn turn;

        ScriptRun(Case c, WorkState ws, List<Map<String, Object>> ops, CountDownLatch go) {
            this.c = c;
            this.ws = ws;
            this.ops = ops;
            this.go = go;
        }

        /** The work: called by the runtime on the work's turn. */
        CompletableFuture<Void> start(ZLinkTurn turn) {
            // Read before anything else: on this thread, inside the submit call that
            // admitted this work? (SE-6.5 forbids it.) Such a work must not wait for its
            // verdict: the submitter writes it only once the call returns.
            boolean inline = SUBMITTING.get() > 0;
            try {
                if (!inline) go.await(); // the verdict is written first; the submitter is about to release it
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                done.completeExceptionally(new CancellationException("case dropped"));
                return done;
            }
            c.awaitVerdictsBeforeTurn();
            this.turn = turn;
            ws.runOwner = turn.owner();
            ws.started = true;
            if (Adapter.MARK) {
                c.emit("started", "work", ws.id, "owner", ws.runOwner, "on_submitter_stack", inline);
            } else {
                c.emit("started", "work", ws.id, "owner", ws.runOwner);
            }
            step(0);
            return done;
        }

        private void step(int from) {
            try {
                for (int i = from; i < ops.size(); i++) {
                    if (!op(i, ops.get(i))) return; // waits; its continuation goes on later
                }
                finish();
            } catch (ScriptError e) {
                fail(e.getMessage());
            } catch (CancellationException e) {
                cancel();
            } catch (RuntimeException e) {
                Adapter.log("work " + ws.id + ": " + stack(e));
                fail(String.valueOf(e));
            }
        }

        /** Run op {@code i}; false if the work now waits. */
        private boolean op(int i, Map<String, Object> op) {
            switch ((String) op.get("op")) {
                case "gate":
                    return gate(i, op);
                case "call":
                    return call(i, (String) op.get("call"));
                case "wait_for":
                    return waitFor(i, (String) op.get("work"));
                case "await_scope":
                    return awaitScope(i, (String) op.get("mode"));
                case "busy":
                    c.clock.busy((Long) op.get("ms"));
                    return true;
                case "submit":
                    try {
                        c.submit(op, null, true);
                    } catch (Adapter.CommandError e) {
                        Adapter.log("work " + ws.id + " op " + i + ": " + e.getMessage());
                        c.emit("error", "work", ws.id, "owner", ws.runOwner, "op", (long) i, "kind", "other");
                    }
                    return true;
                case "is_current": {
                    Target t = c.target(op.get("target"));
                    if (!(t.obj instanceof ZLinkSerialExecutionQueue)) {
                        throw new ScriptError("is_current asks a bare queue, not a " + t.type);
                    }
                    boolean current = ((ZLinkSerialExecutionQueue) t.obj).isCurrent();
                    c.emit("current", "work", ws.id, "owner", ws.runOwner, "target", t.name, "current", current);
                    return true;
                }
                case "snapshot": {
                    var snap = turn.snapshot();
                    Map<String, Object> values = snap == null ? Map.of() : snap.values();
                    c.emit("snapshot", "work", ws.id, "owner", ws.runOwner, "values", values);
                    return true;
                }
                case "raise":
                    throw new ScriptError((String) op.get("message"));
                default:
                    throw new ScriptError("op " + op.get("op") + " cannot run here"); // checkScript keeps this unreachable
            }
        }

        private boolean gate(int i, Map<String, Object> op) {
            Gate g = c.gate((String) op.get("gate"));
            boolean ignoreCancel = Boolean.TRUE.equals(op.get("ignore_cancel"));
            if (!ignoreCancel && turn.cancellationRequested()) throw new CancellationException("cancelled");
            AtomicBoolean once = new AtomicBoolean();
            boolean waits = g.await(() -> {
                if (once.compareAndSet(false, true)) turn.continueWith(() -> step(i + 1));
            });
            if (!waits) return true;
            if (!ignoreCancel) {
                // A disposal cancels the work at this await point, on its turn (D-17).
                turn.onCancel(() -> {
                    if (once.compareAndSet(false, true)) turn.continueWith(this::cancel);
                });
            }
            return false;
        }

        /** The call op: a framework call on the external call (SE-6.7). */
        private boolean call(int i, String name) {
            ExternalCall call = c.call(name);
            ws.pendingCall = name;
            CompletableFuture<Void> resumed;
            try {
                resumed = turn.yieldFrameworkCall(call.future, "call " + name);
            } catch (ZLinkYieldNotSupportedException e) {
                ws.pendingCall = null;
                c.emit("error", "work", ws.id, "owner", ws.runOwner, "op", (long) i, "kind", "yield_not_supported");
                return true;
            }
            // Runs at once if the call was done already (no yield), else when the resume
            // permit gets the turn: either way on the work's own turn.
            resumed.whenComplete((v, t) -> afterCall(i, t));
            return false;
        }

        private void afterCall(int i, Throwable t) {
            ws.pendingCall = null;
            if (ws.yielded) { // it gave its turn back and holds it again now
                ws.yielded = false;
                c.awaitVerdictsBeforeTurn();
                c.emit("resumed", "work", ws.id, "owner", ws.runOwner);
            }
            if (t instanceof CompletionException && t.getCause() != null) t = t.getCause();
            if (t instanceof CancellationException) {
                cancel();
            } else if (t != null) {
                fail(t instanceof ScriptError ? t.getMessage() : String.valueOf(t));
            } else {
                step(i + 1);
            }
        }

        /** The await_scope op: await the work's own target's quiescence, completion or
         *  after-cancellation from inside the work. Each waits for the waiter itself, so the
         *  runtime refuses it at once (SE-8.2, SE-10.13); a wait that returns reports
         *  nothing. Not raced against the work's cancellation: a zombie asks too, and a
         *  wait the runtime does not refuse must show as a hang. False if the work waits. */
        private boolean awaitScope(int i, String mode) {
            ZLinkScope scope = (ZLinkScope) c.target(ws.target).obj;
            CompletableFuture<?> ends;
            try {
                if ("quiescence".equals(mode)) ends = scope.awaitQuiescence();
                else if ("completion".equals(mode)) ends = scope.awaitCompletion();
                else ends = scope.awaitAfterCancellation();
            } catch (ZLinkReentrancyException e) {
                Adapter.log("work " + ws.id + " op " + i + ": " + e.getMessage());
                c.emit("error", "work", ws.id, "owner", ws.runOwner, "op", (long) i, "kind", "reentrancy");
                return true;
            }
            if (ends.isCompletedExceptionally()) {
                c.emit("error", "work", ws.id, "owner", ws.runOwner, "op", (long) i, "kind", "not_disposed");
                return true;
            }
            if (ends.isDone()) return true;
            ends.whenComplete((v, e) -> turn.continueWith(() -> step(i + 1)));
            return false;
        }

        /** The wait_for op: wait, holding the turn, for another work (SE-8.2). */
        private boolean waitFor(int i, String name) {
            WorkState other = c.works.get(name);
            if (other == null || other.handle == null) {
                Adapter.log("work " + ws.id + " op " + i + ": no accepted work named " + name);
                c.emit("error", "work", ws.id, "owner", ws.runOwner, "op", (long) i, "kind", "other");
                return true;
            }
            if (Boolean.TRUE.equals(ops.get(i).get("wrapped"))) {
                // As users write it: the wait starts in a task of its own on the shared
                // executor (counted in flight, run as this work), not in this code.
                turn.continueWith(() -> {
                    if (startWait(i, name, other)) step(i + 1);
                });
                return false;
            }
            return startWait(i, name, other);
        }

        /** Start waiting for {@code other}; false if the work now waits. */
        private boolean startWait(int i, String name, WorkState other) {
            CompletableFuture<ZLinkWorkHandle> ends;
            try {
                ends = turn.awaitWork(other.handle);
            } catch (ZLinkReentrancyException e) {
                c.emit("error", "work", ws.id, "owner", ws.runOwner, "op", (long) i, "kind", "reentrancy");
                return true;
            }
            if (ends.isDone()) {
                waited(name, other.handle);
                return true;
            }
            AtomicBoolean once = new AtomicBoolean();
            ends.thenAccept(h -> {
                if (once.compareAndSet(false, true)) {
                    turn.continueWith(() -> {
                        waited(name, h);
                        step(i + 1);
                    });
                }
            });
            turn.onCancel(() -> {
                if (once.compareAndSet(false, true)) turn.continueWith(this::cancel);
            });
            return false;
        }

        private void waited(String name, ZLinkWorkHandle h) {
            c.emit("waited", "work", ws.id, "owner", ws.runOwner, "target", name, "outcome", outcomeName(h));
        }

        private void finish() {
            if (ws.ended.compareAndSet(false, true)) c.emit("finished", "work", ws.id, "owner", ws.runOwner);
            done.complete(null);
        }

        private void fail(String message) {
            if (ws.ended.compareAndSet(false, true)) {
                c.emit("failed", "work", ws.id, "owner", ws.runOwner, "message", message);
            }
            done.completeExceptionally(new ScriptError(message));
        }

        private void cancel() {
            if (ws.ended.compareAndSet(false, true)) c.emit("cancelled", "work", ws.id, "owner", ws.runOwner);
            done.completeExceptionally(new CancellationException("cancelled"));
        }
    }
}
