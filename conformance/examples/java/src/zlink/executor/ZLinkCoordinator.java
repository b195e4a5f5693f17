package zlink.executor;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the three coordinators share: the runtime, a state lane, the closed flag and every
 * queue the coordinator made. It has no entry of its own: callers use the
 * {@code execute*} entries of the subclasses (SE-3), and nothing here hands out a queue. A coordinator is one scope (SD): disposing it disposes
 * every queue it made.
 *
 * <p>The state lane is one monitor, {@code lane}: the queue maps, the closed flag and the
 * Actor registrations are read and changed only inside it (SE-2.4), so closing empties
 * the maps and closes every queue in them in one lane turn, and a submission cannot slip
 * a queue into a map that is being emptied. Lock order: the lane, then a queue's lock;
 * a queue never calls back into its coordinator while it holds its own lock.
 */
public abstract class ZLinkCoordinator extends ZLinkScope {
    final String name;
    final Object lane = new Object();
    boolean closed; // lane-owned
    private final List<ZLinkSerialExecutionQueue> made = new ArrayList<>(); // lane-owned

    ZLinkCoordinator(String name, ZLinkRuntime runtime) { // subclasses of this package only
        super(runtime);
        if (name == null || name.isEmpty()) throw new IllegalArgumentException("a coordinator needs a name");
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    /** Whether the coordinator was closed or disposed. */
    public boolean isClosed() {
        synchronized (lane) {
            return closed;
        }
    }

    /** Per-queue reservations, keyed by queue name: values, never the queues (SE-2.5). */
    public Map<String, ZLinkQueueStatistics> statistics() {
        Map<String, ZLinkQueueStatistics> out = new LinkedHashMap<>();
        for (ZLinkSerialExecutionQueue q : scopeQueues()) out.put(q.name(), q.statistics());
        return out;
    }

    /** No new work on any entry; every queue is closed and the maps are emptied in the
     *  same lane turn (SE-2.2, SE-2.4). Accepted work still runs to its end. */
    public void close() {
        synchronized (lane) {
            closed = true;
            for (ZLinkSerialExecutionQueue q : made) q.close();
            dropMaps();
        }
    }

    /** Make a queue of this coordinator (inside a lane turn). */
    ZLinkSerialExecutionQueue makeQueue(String queueName, ZLinkExecutionLanePolicy policy, boolean yieldAllowed) {
        ZLinkSerialExecutionQueue q = new ZLinkSerialExecutionQueue(queueName, policy, rt, yieldAllowed, this);
        made.add(q);
        return q;
    }

    /** Inside a lane turn: refuse as closed, naming the coordinator itself. */
    void checkOpenLocked() {
        if (closed) throw new ZLinkClosedException(name);
    }

    static String checkId(String kind, String value) {
        if (value == null || value.isEmpty()) throw new IllegalArgumentException(kind + " must be a non-empty string");
        return value;
    }

    static ZLinkWork checkWork(ZLinkWork work) {
        if (work == null) throw new IllegalArgumentException("work must not be null");
        return work;
    }

    /** Hook: empty the coordinator's queue maps (a Spot has two). */
    void dropMaps() {}

    @Override
    List<ZLinkSerialExecutionQueue> scopeQueues() {
        synchronized (lane) {
            return new ArrayList<>(made);
        }
    }

    @Override
    void scopeClosing() {
        synchronized (lane) {
            closed = true;
            dropMaps();
        }
    }

    @Override
    public String toString() {
        return "<" + getClass().getSimpleName() + " " + name + (isClosed() ? " closed" : "") + ">";
    }
}
