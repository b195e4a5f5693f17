package zlink.executor;

/** A submission was refused; nothing was inserted and nothing was reserved (SE-6.3). */
public class ZLinkRejectedException extends RuntimeException {
    private final String reason;
    private final String owner;

    public ZLinkRejectedException(String reason, String owner) {
        super("submission rejected by " + owner + ": " + reason);
        this.reason = reason;
        this.owner = owner;
    }

    /** The wire name of the reason: application_count, application_bytes, lifecycle_count,
     *  lifecycle_bytes or closed. */
    public String reason() { return reason; }

    /** The name of the queue (or closed coordinator) that refused. */
    public String owner() { return owner; }
}
