package zlink.executor;

/**
 * Hooks an embedder (a test adapter, a logger) attaches to a runtime. Every method has a
 * default that does nothing. They are called from runtime threads; {@link #yielded} is
 * called while the yielding work still holds its turn, before any other work can take it.
 */
public interface ZLinkObserver {
    /** A transition of a queue (admit, take_next, finish, yield_turn, requeue, cancel,
     *  end_slice, exit_drain, close, dispose...), for traces. {@code work} may be null. */
    default void transition(String queue, String event, ZLinkWorkHandle work) {}

    /** {@code work} gives its turn back while its framework call is pending (SE-6.7). */
    default void yielded(String queue, ZLinkWorkHandle work) {}

    /** A zombie outlived its scope's warning threshold after dispose_safely (SD-6). */
    default void zombieWarning(String scope, ZLinkZombie zombie) {}

    /** A work failed (its error is also its handle's outcome). */
    default void workFailed(ZLinkWorkHandle work, Throwable error) {}

    /** The runtime broke one of its own invariants, or a runtime callback threw. */
    default void fault(Throwable error) {
        error.printStackTrace();
    }
}
