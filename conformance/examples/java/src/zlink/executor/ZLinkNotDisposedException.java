package zlink.executor;

/** awaitAfterCancellation on a scope that was never disposed (SD-3, D-19). */
public class ZLinkNotDisposedException extends RuntimeException {
    public ZLinkNotDisposedException(String message) { super(message); }
}
