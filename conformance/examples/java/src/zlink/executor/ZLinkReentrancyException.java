package zlink.executor;

/** Work waited, holding its turn, for work that needs that very turn or claim: the wait
 *  could never end, so it fails at once instead (SE-8.2, D-14). */
public class ZLinkReentrancyException extends RuntimeException {
    public ZLinkReentrancyException(String message) { super(message); }
}
