package zlink.executor;

/**
 * One zombie while it runs (SD-2, SD-6): the scope it belongs to, the queue it is on, its
 * label, when its scope was disposed safely, and its state: {@code queued},
 * {@code running}, {@code suspended} or {@code requeued}.
 */
public final class ZLinkZombie {
    private final String scope;
    private final String queue;
    private final String label;
    private final long sinceMs;
    private final String state;
    private final boolean started;

    ZLinkZombie(String scope, String queue, String label, long sinceMs, String state, boolean started) {
        this.scope = scope;
        this.queue = queue;
        this.label = label;
        this.sinceMs = sinceMs;
        this.state = state;
        this.started = started;
    }

    public String scope() { return scope; }
    /** The queue whose turn it holds or waits for (for a SpotWide Actor work that has its
     *  turn on the Spot queue, the Spot queue). */
    public String queue() { return queue; }
    public String label() { return label; }
    public long sinceMs() { return sinceMs; }
    public String state() { return state; }
    /** Whether its code began. */
    public boolean started() { return started; }

    @Override
    public String toString() {
        return "zombie " + label + " on " + queue + " (" + state + ")";
    }
}
