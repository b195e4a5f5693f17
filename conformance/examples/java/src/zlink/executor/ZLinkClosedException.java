package zlink.executor;

/** The owner is closed (or disposed): it accepts no new work. */
public class ZLinkClosedException extends ZLinkRejectedException {
    public ZLinkClosedException(String owner) {
        super("closed", owner);
    }
}
