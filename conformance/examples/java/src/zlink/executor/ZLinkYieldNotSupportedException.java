package zlink.executor;

/** yieldFrameworkCall on an owner that offers no Yield (an Entry Spot, SE-4.1). */
public class ZLinkYieldNotSupportedException extends RuntimeException {
    public ZLinkYieldNotSupportedException(String message) { super(message); }
}
