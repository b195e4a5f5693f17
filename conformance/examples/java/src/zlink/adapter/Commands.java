package zlink.adapter;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;

import zlink.executor.ZLinkActorSerialExecutor;
import zlink.executor.ZLinkCoordinator;
import zlink.executor.ZLinkExecutionLanePolicy;
import zlink.executor.ZLinkNotDisposedException;
import zlink.executor.ZLinkQueueStatistics;
import zlink.executor.ZLinkRuntimeEnd;
import zlink.executor.ZLinkScope;
import zlink.executor.ZLinkSerialExecutionQueue;
import zlink.executor.ZLinkSessionSerialExecutor;
import zlink.executor.ZLinkSpotKind;
import zlink.executor.ZLinkSpotSerialExecutor;
import zlink.executor.ZLinkUserSpotExecutionMode;
import zlink.executor.ZLinkZombie;

/** The protocol's commands (besides hello, reset and shutdown), each mapped onto the
 *  runtime's API. */
final class Commands {
    /** How long settle may wait for the runtime to become idle before it calls it a
     *  livelock and answers with an error (a bound against a bug, never a verdict). */
    static final long SETTLE_BOUND_MS = 5_000;
    static final int CONCURRENT_LIMIT = 16;
    static final long CONCURRENT_WAIT_MS = 10_000;

    private final Adapter adapter;

    Commands(Adapter adapter) {
        this.adapter = adapter;
    }

    Map<String, Object> run(Case c, String name, Map<String, Object> cmd) throws Exception {
        switch (name) {
            case "create": return create(c, cmd);
            case "submit": return reply("verdict", c.submit(cmd, null));
            case "submit_concurrent": return submitConcurrent(c, cmd);
            case "open":
                c.gate(name(cmd, "gate")).open();
                return reply();
            case "complete": return settleCall(c, cmd, null);
            case "fail": {
                Object m = cmd.get("message");
                return settleCall(c, cmd, m instanceof String ? (String) m : "external call failed");
            }
            case "advance":
                // Fires every timer that came due (disposal timeouts, zombie warnings, the
                // runtime end's grace period) on this thread, before the reply.
                c.clock.advance(ms(cmd.get("ms")));
                return reply("now_ms", c.clock.nowMs());
            case "register": return register(c, cmd, true);
            case "update_registration": return register(c, cmd, false);
            case "settle": return settle(c);
            case "close":
                closeTarget(c.target(cmd.get("target")));
                return reply();
            case "dispose": return dispose(c, cmd);
            case "as_not_safely":
                c.target(cmd.get("target")).scope.asNotSafely();
                return reply();
            case "await": return awaitScope(c, cmd);
            case "runtime_end": return runtimeEnd(c, cmd);
            case "statistics": return statistics(c, cmd);
            case "zombies": return zombies(c, cmd);
            default:
                throw Adapter.bad("unknown command " + name);
        }
    }

    static Map<String, Object> reply(Object... fields) {
        Map<String, Object> m = new LinkedHashMap<>();
        for (int i = 0; i < fields.length; i += 2) m.put((String) fields[i], fields[i + 1]);
        return m;
    }

    static String name(Map<String, Object> fields, String key) {
        Object v = fields.get(key);
        if (!(v instanceof String) || !Adapter.NAME.matcher((String) v).matches()) {
            Object what = fields.containsKey("cmd") ? fields.get("cmd") : fields.getOrDefault("op", "command");
            throw Adapter.bad(what + " needs a valid " + key + " name, got " + v);
        }
        return (String) v;
    }

    static long ms(Object v) {
        if (!(v instanceof Long) || (Long) v < 0) throw Adapter.bad("ms must be an integer >= 0, got " + v);
        return (Long) v;
    }

    /** Refuse a script this adapter cannot run before anything is submitted. */
    @SuppressWarnings("unchecked")
    static List<Map<String, Object>> checkScript(Object script) {
        if (script == null) return List.of();
        if (!(script instanceof List)) throw Adapter.bad("script must be a list of ops");
        List<Map<String, Object>> out = new ArrayList<>();
        for (Object o : (List<Object>) script) {
            if (!(o instanceof Map)) throw Adapter.bad("a script op must be an object");
            Map<String, Object> op = (Map<String, Object>) o;
            Object kind = op.get("op");
            if ("gate".equals(kind)) name(op, "gate");
            else if ("call".equals(kind)) name(op, "call");
            else if ("wait_for".equals(kind)) name(op, "work");
            else if ("is_current".equals(kind)) name(op, "target");
            else if ("await_scope".equals(kind)) {
                if (!List.of("quiescence", "completion", "after_cancellation").contains(op.get("mode"))) {
                    throw Adapter.bad("await_scope needs a mode: quiescence, completion or after_cancellation");
                }
            }
            else if ("busy".equals(kind)) ms(op.get("ms"));
            else if ("raise".equals(kind)) {
                if (!(op.get("message") instanceof String)) throw Adapter.bad("raise needs a message");
            } else if ("submit".equals(kind)) checkScript(op.get("script"));
            else if (!"snapshot".equals(kind)) throw Adapter.bad("unknown op " + kind);
            out.add(op);
        }
        return out;
    }

    private static final Map<String, String> POLICY_FIELDS = Map.of(
        "application_message_capacity", "", "application_byte_capacity", "",
        "lifecycle_message_capacity", "", "lifecycle_byte_capacity", "",
        "fixed_work_byte_cost", "", "lifecycle_burst_limit", "", "owner_time_budget_ms", "");

    @SuppressWarnings("unchecked")
    static ZLinkExecutionLanePolicy policy(Object data, String what) {
        if (data == null) return ZLinkExecutionLanePolicy.defaults();
        if (!(data instanceof Map)) throw Adapter.bad(what + " must be an object");
        ZLinkExecutionLanePolicy.Builder b = ZLinkExecutionLanePolicy.builder();
        for (Map.Entry<String, Object> e : ((Map<String, Object>) data).entrySet()) {
            String k = e.getKey();
            Object v = e.getValue();
            if (!POLICY_FIELDS.containsKey(k)) throw Adapter.bad(what + ": unknown field " + k);
            boolean budget = k.equals("owner_time_budget_ms");
            if (!(v instanceof Long) && !(budget && v instanceof Double)) {
                throw Adapter.bad(what + ": " + k + " must be " + (budget ? "a number" : "an integer") + ", got " + v);
            }
            try {
                switch (k) {
                    case "application_message_capacity": b.applicationMessageCapacity((Long) v); break;
                    case "application_byte_capacity": b.applicationByteCapacity((Long) v); break;
                    case "lifecycle_message_capacity": b.lifecycleMessageCapacity((Long) v); break;
                    case "lifecycle_byte_capacity": b.lifecycleByteCapacity((Long) v); break;
                    case "fixed_work_byte_cost": b.fixedWorkByteCost((Long) v); break;
                    case "lifecycle_burst_limit": b.lifecycleBurstLimit((Long) v); break;
                    default: b.ownerTimeBudgetMs(((Number) v).doubleValue());
                }
            } catch (IllegalArgumentException ex) {
                throw Adapter.bad(what + ": " + ex.getMessage());
            }
        }
        return b.build();
    }

    // ------------------------------------------------------------------- commands
    private Map<String, Object> create(Case c, Map<String, Object> cmd) {
        String name = name(cmd, "target");
        if (c.targets.containsKey(name)) throw Adapter.bad("target " + name + " exists");
        ZLinkExecutionLanePolicy policy = policy(cmd.get("policy"), "policy");
        Object type = cmd.get("type");
        Object obj;
        try {
            if ("spot".equals(type)) {
                ZLinkSpotKind kind = enumOf(ZLinkSpotKind.class, cmd.getOrDefault("kind", "user"), "kind");
                Object m = cmd.get("mode");
                ZLinkUserSpotExecutionMode mode = m == null ? null : enumOf(ZLinkUserSpotExecutionMode.class, m, "mode");
                obj = new ZLinkSpotSerialExecutor(name, kind, mode, policy, policy(cmd.get("actor_policy"), "actor_policy"),
                    policy(cmd.get("timer_policy"), "timer_policy"), c.runtime);
            } else if ("actor".equals(type)) {
                Object at = cmd.get("actor_type");
                obj = new ZLinkActorSerialExecutor(name, at instanceof String ? (String) at : null, policy, c.runtime);
            } else if ("session".equals(type)) {
                obj = new ZLinkSessionSerialExecutor(name, policy, c.runtime);
            } else if ("queue".equals(type)) {
                obj = new ZLinkSerialExecutionQueue(name, policy, c.runtime);
            } else {
                throw Adapter.bad("unknown target type " + type);
            }
        } catch (IllegalArgumentException e) {
            throw Adapter.bad(e.getMessage());
        }
        Object warn = cmd.get("zombie_warn_after_ms");
        if (warn != null) ((ZLinkScope) obj).setZombieWarnAfterMs(ms(warn));
        c.targets.put(name, new Case.Target(name, (String) type, obj));
        return reply();
    }

    private static <E extends Enum<E>> E enumOf(Class<E> type, Object v, String what) {
        try {
            return Enum.valueOf(type, String.valueOf(v).toUpperCase(java.util.Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw Adapter.bad("unknown " + what + " " + v);
        }
    }

    /** Submit every submission at once, each from its own OS thread, started together at
     *  a barrier (SE-6.3 under real concurrency). The works wait until every verdict of
     *  the batch is written, so no started can come before an accepted. */
    @SuppressWarnings("unchecked")
    private Map<String, Object> submitConcurrent(Case c, Map<String, Object> cmd) throws Exception {
        Object subs = cmd.get("submissions");
        if (!(subs instanceof List) || ((List<Object>) subs).size() < 2 || ((List<Object>) subs).size() > CONCURRENT_LIMIT
                || !((List<Object>) subs).stream().allMatch(s -> s instanceof Map)) {
            throw Adapter.bad("submissions must be a list of 2 to " + CONCURRENT_LIMIT + " submission objects");
        }
        List<Map<String, Object>> list = (List<Map<String, Object>>) subs;
        CountDownLatch batch = new CountDownLatch(1);
        CyclicBarrier together = new CyclicBarrier(list.size());
        List<RuntimeException> errors = Collections.synchronizedList(new ArrayList<>());
        List<Thread> threads = new ArrayList<>();
        for (int i = 0; i < list.size(); i++) {
            Map<String, Object> sub = list.get(i);
            Thread t = new Thread(() -> {
                try {
                    together.await(CONCURRENT_WAIT_MS, TimeUnit.MILLISECONDS);
                    c.submit(sub, batch);
                } catch (Adapter.CommandError e) {
                    errors.add(e);
                } catch (Exception e) {
                    errors.add(new Adapter.CommandError("internal", String.valueOf(e)));
                }
            }, "zlink-submit-" + i);
            t.setDaemon(true);
            threads.add(t);
        }
        for (Thread t : threads) t.start();
        for (Thread t : threads) {
            t.join(CONCURRENT_WAIT_MS);
            if (t.isAlive()) throw new Adapter.CommandError("internal", "a submitting thread did not end");
        }
        batch.countDown();
        if (!errors.isEmpty()) throw errors.get(0);
        return reply();
    }

    private Map<String, Object> settleCall(Case c, Map<String, Object> cmd, String failure) {
        Case.ExternalCall call = c.call(name(cmd, "call"));
        if (call.future.isCancelled()) return reply("state", "cancelled"); // cut short by a disposal (D-15)
        if (call.future.isDone()) throw Adapter.bad("call " + cmd.get("call") + " was already settled");
        // Completing it runs the yielded work's requeue on this thread: its resume permit
        // queues and, if the queue was idle, a drain is handed to the runtime, counted.
        if (failure == null) {
            call.future.complete(null);
            return reply("state", "completed");
        }
        call.future.completeExceptionally(new Case.ScriptError(failure));
        return reply("state", "failed");
    }

    @SuppressWarnings("unchecked")
    private Map<String, Object> register(Case c, Map<String, Object> cmd, boolean fresh) {
        Case.Target t = c.target(cmd.get("target"));
        Object v = cmd.getOrDefault("values", Map.of());
        if (!(v instanceof Map)) throw Adapter.bad("values must be an object");
        Map<String, Object> values = (Map<String, Object>) v;
        if (t.obj instanceof ZLinkSpotSerialExecutor) {
            ZLinkSpotSerialExecutor spot = (ZLinkSpotSerialExecutor) t.obj;
            String actor = name(cmd, "actor_id");
            if (fresh) {
                Object at = cmd.get("actor_type");
                spot.registerActor(actor, at instanceof String ? (String) at : null, values);
            } else {
                spot.updateActorRegistration(actor, values);
            }
        } else if (t.obj instanceof ZLinkActorSerialExecutor) {
            ((ZLinkActorSerialExecutor) t.obj).updateRegistration(values);
        } else {
            throw Adapter.bad("a " + t.type + " has no Actor registrations");
        }
        return reply();
    }

    /**
     * Answer once nothing can progress without further input. Every step of this runtime
     * that can run is a task handed to the shared executor through ZLinkRuntime.execute,
     * counted from the moment it is handed over until it has returned; whatever releases
     * a blocked work (a gate opening, a call settling, a waited-for work ending, a
     * disposal) hands the continuation over the same way, counted before it is woken.
     * So "nothing in flight" means every work is finished, at a shut gate, yielded on a
     * pending call, waiting for such a work, or queued behind one of those. Due timers of
     * the virtual clock fire here too; what they start is counted like anything else.
     */
    private Map<String, Object> settle(Case c) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(SETTLE_BOUND_MS);
        for (;;) {
            c.clock.fireDue();
            long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
            if (left <= 0 || !c.runtime.awaitIdle(left)) {
                throw new Adapter.CommandError("internal", "the runtime did not become idle within "
                    + SETTLE_BOUND_MS + " ms (" + c.runtime.inFlight() + " tasks in flight: a livelock?)");
            }
            if (!c.clock.hasDue()) return reply("now_ms", c.clock.nowMs());
        }
    }

    private static void closeTarget(Case.Target t) {
        if (t.obj instanceof ZLinkSerialExecutionQueue) ((ZLinkSerialExecutionQueue) t.obj).close();
        else ((ZLinkCoordinator) t.obj).close();
    }

    private Map<String, Object> dispose(Case c, Map<String, Object> cmd) {
        Case.Target t = c.target(cmd.get("target"));
        Object mode = cmd.get("mode");
        if ("dispose".equals(mode)) {
            t.scope.dispose();
        } else if ("dispose_safely".equals(mode)) {
            t.scope.disposeSafely();
        } else if ("dispose_after_timeout".equals(mode)) {
            t.scope.disposeAfterTimeout(ms(cmd.get("timeout_ms")));
        } else if ("destroy".equals(mode)) {
            t.scope.destroy();
        } else {
            throw Adapter.bad("unknown dispose mode " + mode);
        }
        // Report each work this call made a zombie, once.
        for (ZLinkZombie z : t.scope.zombies()) {
            Case.WorkState ws = c.works.get(z.label());
            if (ws != null && c.zombiesSeen.add(z.label())) c.emit("zombie", "work", ws.id, "owner", ws.owner());
        }
        return reply();
    }

    private Map<String, Object> awaitScope(Case c, Map<String, Object> cmd) {
        Case.Target t = c.target(cmd.get("target"));
        String waiter = name(cmd, "waiter");
        Object mode = cmd.get("mode");
        if (!"completion".equals(mode) && !"after_cancellation".equals(mode) && !"quiescence".equals(mode)) {
            throw Adapter.bad("unknown await mode " + mode);
        }
        if ("quiescence".equals(mode) && !(t.obj instanceof ZLinkSerialExecutionQueue)) {
            throw Adapter.bad("await_quiescence is a bare queue's");
        }
        if (!c.waiters.add(waiter)) throw Adapter.bad("waiter " + waiter + " exists");
        if ("quiescence".equals(mode)) {
            ((ZLinkSerialExecutionQueue) t.obj).awaitQuiescence().thenRun(() -> c.emit("returned", "waiter", waiter));
        } else if ("completion".equals(mode)) {
            t.scope.awaitCompletion().thenRun(() -> c.emit("returned", "waiter", waiter));
        } else {
            t.scope.awaitAfterCancellation().whenComplete((errors, error) -> {
                Throwable cause = error instanceof java.util.concurrent.CompletionException ? error.getCause() : error;
                if (cause instanceof ZLinkNotDisposedException) {
                    c.emit("returned", "waiter", waiter, "error", "not_disposed");
                } else if (cause != null) {
                    c.fault(cause);
                } else {
                    List<Object> messages = new ArrayList<>();
                    for (Throwable e : errors) messages.add(e instanceof Case.ScriptError ? e.getMessage() : String.valueOf(e));
                    c.emit("returned", "waiter", waiter, "errors", messages);
                }
            });
        }
        return reply();
    }

    private Map<String, Object> runtimeEnd(Case c, Map<String, Object> cmd) {
        String waiter = name(cmd, "waiter");
        long grace = cmd.containsKey("grace_ms") ? ms(cmd.get("grace_ms")) : 1000;
        if (!c.waiters.add(waiter)) throw Adapter.bad("waiter " + waiter + " exists");
        List<ZLinkScope> scopes = new ArrayList<>();
        synchronized (c.targets) {
            for (Case.Target t : c.targets.values()) scopes.add(t.scope);
        }
        ZLinkRuntimeEnd.finish(c.runtime, scopes, grace).thenAccept(report ->
            c.emit("returned", "waiter", waiter, "cancelled", labels(report.cancelled), "abandoned", labels(report.abandoned)));
        return reply();
    }

    private static List<Object> labels(List<ZLinkZombie> zombies) {
        List<Object> out = new ArrayList<>();
        for (ZLinkZombie z : zombies) if (!z.label().isEmpty() && !out.contains(z.label())) out.add(z.label());
        return out;
    }

    private Map<String, Object> statistics(Case c, Map<String, Object> cmd) {
        Case.Target t = c.target(cmd.get("target"));
        List<ZLinkQueueStatistics> stats = new ArrayList<>();
        if (t.obj instanceof ZLinkSerialExecutionQueue) stats.add(((ZLinkSerialExecutionQueue) t.obj).statistics());
        else stats.addAll(((ZLinkCoordinator) t.obj).statistics().values());
        Map<String, Object> owners = new LinkedHashMap<>();
        for (ZLinkQueueStatistics s : stats) {
            owners.put(s.name, reply("application_count", (long) s.applicationCount, "application_bytes", s.applicationBytes,
                "lifecycle_count", (long) s.lifecycleCount, "lifecycle_bytes", s.lifecycleBytes));
        }
        return reply("active", (long) t.scope.activeCount(), "zombies", (long) t.scope.zombieCount(), "owners", owners);
    }

    private Map<String, Object> zombies(Case c, Map<String, Object> cmd) {
        Case.Target t = c.target(cmd.get("target"));
        List<Object> out = new ArrayList<>();
        for (ZLinkZombie z : t.scope.zombies()) {
            Case.WorkState ws = c.works.get(z.label());
            String owner = ws != null ? ws.owner() : z.queue();
            String state = z.state().equals("suspended") || z.state().equals("requeued") ? "yielded" : z.state();
            out.add(reply("work", z.label(), "owner", owner, "state", state));
        }
        return reply("zombies", out);
    }
}
