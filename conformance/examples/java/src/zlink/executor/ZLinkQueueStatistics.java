package zlink.executor;

/** A point-in-time view of one queue's reservations and flags (a value, never the queue). */
public final class ZLinkQueueStatistics {
    public final String name;
    public final int applicationCount;
    public final long applicationBytes;
    public final int lifecycleCount;
    public final long lifecycleBytes;
    public final int ready;
    public final boolean running;
    public final int suspended;
    public final boolean closed;

    ZLinkQueueStatistics(String name, int applicationCount, long applicationBytes, int lifecycleCount,
                         long lifecycleBytes, int ready, boolean running, int suspended, boolean closed) {
        this.name = name;
        this.applicationCount = applicationCount;
        this.applicationBytes = applicationBytes;
        this.lifecycleCount = lifecycleCount;
        this.lifecycleBytes = lifecycleBytes;
        this.ready = ready;
        this.running = running;
        this.suspended = suspended;
        this.closed = closed;
    }

    @Override
    public String toString() {
        return name + ": app " + applicationCount + "/" + applicationBytes + "B, life " + lifecycleCount
            + "/" + lifecycleBytes + "B, ready " + ready + (running ? ", running" : "")
            + ", suspended " + suspended + (closed ? ", closed" : "");
    }
}
