package zlink.executor;

/** The clock a runtime reads between works (time budget, SE-6.4) and runs its timers on
 *  (disposal timeouts, zombie warnings, the grace period of the runtime end). */
public interface ZLinkClock {
    /** Milliseconds on this clock. */
    long nowMs();

    /** Run {@code action} once {@code delayMs} have passed; the result cancels it. */
    Cancellable callLater(long delayMs, Runnable action);

    /** A timer that can be called off. */
    interface Cancellable {
        void cancel();
    }
}
