package zlink.executor;

/** A transition was attempted while its guard does not hold: a bug of this runtime,
 *  never of the application. The runtime reports it to its fault hook. */
public class ZLinkProtocolError extends Error {
    public ZLinkProtocolError(String transition, String rule, String detail) {
        super(transition + ": " + detail + " (" + rule + ")");
    }
}
