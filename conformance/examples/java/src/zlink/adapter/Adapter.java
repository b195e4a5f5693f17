package zlink.adapter;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.lang.reflect.Parameter;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Pattern;

import zlink.executor.ZLinkActorSerialExecutor;
import zlink.executor.ZLinkRuntime;
import zlink.executor.ZLinkSerialExecutionQueue;
import zlink.executor.ZLinkSessionSerialExecutor;
import zlink.executor.ZLinkSpotSerialExecutor;

/**
 * The conformance adapter of the Java example runtime ({@code zlink.executor}).
 *
 * <p>It reads commands as JSON Lines on stdin and writes replies and events on stdout
 * ({@code specs/adapter-protocol.md}); its log goes to stderr. From the repository root:
 * <pre>zlink conformance run --adapter "sh conformance/examples/java/run.sh"</pre>
 *
 * How it keeps the protocol's promises on real threads:
 * <ul>
 * <li>One case, one runtime: {@code reset} drops the case (its works can never write
 *     into the next one), and makes a new shared executor, runtime and virtual clock.
 * <li>One lock around stdout: each event is one whole line, written by the code that
 *     makes it happen, while the state it reports holds ({@code started} on the turn,
 *     {@code yielded} from the runtime's hook before the turn can be taken).
 * <li>{@code accepted} before {@code started}: a work's first act waits on a latch that
 *     the submitting code releases right after it wrote the verdict.
 * <li>{@code settle} waits until the runtime has nothing in flight and no timer of the
 *     virtual clock is due ({@link Commands#settle}).
 * </ul>
 */
public final class Adapter {
    static final int PROTOCOL = 1;
    static final Pattern NAME = Pattern.compile("[A-Za-z][A-Za-z0-9_.-]{0,63}");
    /** ZLINK_JAVA_MARK=off: leave capability submitter_stack out and write no
     *  on_submitter_stack mark (what an adapter that does not count entry calls per
     *  thread looks like; the kit then judges a drain on the submitter's stack from the
     *  order of events alone, specs/adapter-protocol.md). */
    static final boolean MARK = !"off".equals(System.getenv("ZLINK_JAVA_MARK"));
    static final boolean TRACE = System.getenv("ZLINK_JAVA_TRACE") != null
        && !System.getenv("ZLINK_JAVA_TRACE").isEmpty();
    /** ZLINK_JAVA_VERDICT_PAUSE_MS=N: a submission made by a work (its script's submit
     *  op) pauses N ms between its entry call's return and writing its verdict. A test's
     *  lever: it widens the window in which the runner's own submission to the same
     *  queue is judged meanwhile, and the verdicts must still come in the order the queue
     *  judged them. Unset or empty: no pause; anything but 0 to 10000 stops the adapter. */
    static final long VERDICT_PAUSE_MS = pauseMillis(System.getenv("ZLINK_JAVA_VERDICT_PAUSE_MS"));
    /** ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS=N: a submission made by the runner (the submit
     *  command) pauses N ms between its entry call's return and writing its verdict. A
     *  test's lever: it widens the window in which the pool ends the works the queue held
     *  when it judged the submission and begins the turns that follow, and the verdict
     *  must still come before those turns. Same bounds as ZLINK_JAVA_VERDICT_PAUSE_MS. */
    static final long RUNNER_VERDICT_PAUSE_MS =
        pauseMillis(System.getenv("ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS"));

    private static long pauseMillis(String text) {
        if (text == null || text.isBlank()) return 0;
        try {
            long ms = Long.parseLong(text.trim());
            return ms >= 0 && ms <= 10_000 ? ms : -1;
        } catch (NumberFormatException e) {
            return -1;
        }
    }

    private final PrintStream out;
    private final Object outLock = new Object();
    final int threads;
    private boolean greeted;
    Case current;
    private final Commands commands = new Commands(this);

    Adapter(PrintStream out, int threads) {
        this.out = out;
        this.threads = threads;
        this.current = new Case(this, threads);
    }

    /** A command the adapter refuses; becomes {@code {"ok": false, "error": ...}}. */
    static final class CommandError extends RuntimeException {
        final String kind;

        CommandError(String kind, String message) {
            super(message);
            this.kind = kind;
        }
    }

    static CommandError bad(String message) {
        return new CommandError("bad_command", message);
    }

    /** Write one line (an event or a reply) as a whole. */
    void writeLine(Map<String, Object> message) {
        String line = Json.write(message);
        synchronized (outLock) {
            out.print(line);
            out.print('\n');
            out.flush();
        }
    }

    static void log(String text) {
        System.err.println("[java-adapter] " + text);
        System.err.flush();
    }

    // ------------------------------------------------------------------ handshake
    List<String> capabilities() {
        List<String> caps = new ArrayList<>(List.of(
            "actor", "await_after_dispose_safely", "concurrent_submission", "disposal", "member_listing", "queue",
            "queue_observation", "reentrancy_detection", "runtime_end", "scope_wait", "session", "snapshots",
            "spot.entry", "spot.instance", "spot.user.per_actor", "spot.user.spot_wide",
            "statistics", "submitter_stack", "synchronous_wait", "virtual_clock", "yield",
            "zombie_listing", "zombie_warning"));
        // One thread serves ready owners first come, first served (D-13); with more, the
        // owners run side by side and a cut slice is not observable, so it is not claimed.
        if (threads == 1) caps.add("single_execution_resource");
        if (!MARK) caps.remove("submitter_stack");
        // Without the detection the runtime still waits synchronously (and deadlocks
        // where SE-8.2 demands an error), so it claims the wait but not the detection.
        if (ZLinkRuntime.activeBugs().contains("no_reentrancy_detection")) {
            caps.remove("reentrancy_detection");
        }
        Collections.sort(caps);
        return caps;
    }

    private static final Map<String, Class<?>> COORDINATORS = new LinkedHashMap<>();

    static {
        COORDINATORS.put("spot", ZLinkSpotSerialExecutor.class);
        COORDINATORS.put("actor", ZLinkActorSerialExecutor.class);
        COORDINATORS.put("session", ZLinkSessionSerialExecutor.class);
    }

    static String snake(String camel) {
        StringBuilder b = new StringBuilder();
        for (char c : camel.toCharArray()) {
            if (Character.isUpperCase(c)) b.append('_').append(Character.toLowerCase(c));
            else b.append(c);
        }
        return b.toString();
    }

    /** The handshake's surface, read from the coordinator classes by reflection (the
     *  classes are compiled with -parameters, so the names are the source's): each
     *  execute* method and its parameters, in snake_case. A parameter that let a caller
     *  pick a queue would show up here (SE-10.1). */
    static Map<String, Object> surface() {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Map.Entry<String, Class<?>> e : COORDINATORS.entrySet()) {
            Map<String, Object> entries = new TreeMap<>();
            for (Method m : e.getValue().getMethods()) {
                if (!m.getName().startsWith("execute") || Modifier.isStatic(m.getModifiers())) continue;
                List<Object> params = new ArrayList<>();
                for (Parameter p : m.getParameters()) {
                    if (!p.isNamePresent()) throw new IllegalStateException("compile with javac -parameters");
                    params.add(snake(p.getName()));
                }
                entries.put(snake(m.getName()), params);
            }
            out.put(e.getKey(), entries);
        }
        return out;
    }

    /** Every other public member of each coordinator (methods and fields of the runtime's
     *  own classes) and whether it hands out a queue: its type, or a type argument of it,
     *  is the queue class (SE-2.5). Read by reflection, so a member added later is listed. */
    static Map<String, Object> members() {
        Map<String, Object> out = new LinkedHashMap<>();
        String pkg = ZLinkSerialExecutionQueue.class.getPackageName();
        String queueType = ZLinkSerialExecutionQueue.class.getName();
        for (Map.Entry<String, Class<?>> e : COORDINATORS.entrySet()) {
            Map<String, Object> found = new TreeMap<>();
            for (Method m : e.getValue().getMethods()) {
                if (m.getName().startsWith("execute") || !m.getDeclaringClass().getPackageName().equals(pkg)) continue;
                boolean queue = m.getGenericReturnType().getTypeName().contains(queueType);
                found.merge(snake(m.getName()), queue ? "queue" : "other",
                    (a, b) -> "queue".equals(a) || "queue".equals(b) ? "queue" : "other");
            }
            for (Field f : e.getValue().getFields()) {
                boolean queue = f.getGenericType().getTypeName().contains(queueType);
                found.put(snake(f.getName()), queue ? "queue" : "other");
            }
            out.put(e.getKey(), found);
        }
        return out;
    }

    Map<String, Object> hello(Map<String, Object> cmd) {
        Object protocol = cmd.get("protocol");
        if (!(protocol instanceof Long) || (Long) protocol != PROTOCOL) {
            throw new CommandError("unsupported", "this adapter speaks protocol " + PROTOCOL + ", not " + protocol);
        }
        greeted = true;
        Map<String, Object> runtime = new LinkedHashMap<>();
        runtime.put("name", "zlink-java-example");
        runtime.put("version", "0.1.0");
        runtime.put("language", "java " + Runtime.version().feature());
        Map<String, Object> r = new LinkedHashMap<>();
        r.put("protocol", (long) PROTOCOL);
        r.put("runtime", runtime);
        r.put("capabilities", capabilities());
        r.put("surface", surface());
        r.put("members", members());
        return r;
    }

    // ---------------------------------------------------------------------- loop
    Map<String, Object> run(Map<String, Object> cmd) throws Exception {
        Object name = cmd.get("cmd");
        if ("hello".equals(name)) return hello(cmd);
        if (!greeted) throw bad("the first command must be hello");
        if ("shutdown".equals(name)) return new LinkedHashMap<>();
        if ("reset".equals(name)) {
            current.drop();
            current = new Case(this, threads);
            return new LinkedHashMap<>();
        }
        return commands.run(current, String.valueOf(name), cmd);
    }

    @SuppressWarnings("unchecked")
    void serve(BufferedReader in) throws Exception {
        int number = 0;
        for (String line; (line = in.readLine()) != null; ) {
            number++;
            if (line.isBlank()) continue;
            Object parsed;
            try {
                parsed = Json.parse(line);
            } catch (IllegalArgumentException e) {
                log("stdin line " + number + ": not JSON (" + e.getMessage() + "); ignored");
                continue;
            }
            if (!(parsed instanceof Map)) {
                log("stdin line " + number + ": not a JSON object; ignored");
                continue;
            }
            Map<String, Object> cmd = (Map<String, Object>) parsed;
            Object id = cmd.getOrDefault("id", null);
            Map<String, Object> reply = new LinkedHashMap<>();
            reply.put("re", id);
            try {
                Map<String, Object> fields = run(cmd);
                reply.put("ok", true);
                reply.putAll(fields);
            } catch (CommandError e) {
                reply.put("ok", false);
                reply.put("error", error(e.kind, e.getMessage()));
            } catch (Throwable e) {
                // Anything else is the adapter's own bug: say so and keep serving.
                java.io.StringWriter trace = new java.io.StringWriter();
                e.printStackTrace(new java.io.PrintWriter(trace));
                log("command " + cmd.get("cmd") + ": " + trace);
                reply.put("ok", false);
                reply.put("error", error("internal", String.valueOf(e)));
            }
            writeLine(reply);
            if ("shutdown".equals(cmd.get("cmd")) && Boolean.TRUE.equals(reply.get("ok"))) break;
        }
        current.drop();
    }

    private static Map<String, Object> error(String kind, String message) {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("kind", kind);
        m.put("message", message == null ? kind : message);
        return m;
    }

    public static void main(String[] args) throws Exception {
        PrintStream protocolOut = new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        // A stray print anywhere must never corrupt the protocol stream: System.out is the log.
        System.setOut(System.err);
        if (!ZLinkRuntime.unknownBugs().isEmpty()) {
            log("ZLINK_JAVA_BUG names unknown bugs " + ZLinkRuntime.unknownBugs() + "; known: " + ZLinkRuntime.KNOWN_BUGS);
            System.exit(2);
        }
        for (String bug : ZLinkRuntime.activeBugs()) log("deliberate bug switched on: " + bug);
        for (String pause : new String[] {"ZLINK_JAVA_VERDICT_PAUSE_MS", "ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS"}) {
            if (pauseMillis(System.getenv(pause)) < 0) {
                log(pause + " must be an integer from 0 to 10000, not " + System.getenv(pause));
                System.exit(2);
            }
        }
        int threads = 1;
        String t = System.getenv("ZLINK_JAVA_THREADS");
        if (t != null && !t.isBlank()) {
            try {
                threads = Integer.parseInt(t.trim());
            } catch (NumberFormatException e) {
                threads = -1;
            }
            if (threads < 1 || threads > 64) {
                log("ZLINK_JAVA_THREADS must be an integer from 1 to 64, not " + t);
                System.exit(2);
            }
        }
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8), 1 << 16);
        new Adapter(protocolOut, threads).serve(in);
        protocolOut.flush();
        // Pool threads are daemons; blocked works of the last case must not keep us alive.
        System.exit(0);
    }
}
