package zlink.executor;

import java.util.concurrent.CompletionStage;

/**
 * One unit of application work. {@code run} is called on the work's turn. Returning
 * {@code null} (or an already completed stage) means the work completed synchronously;
 * returning a pending stage means the work keeps its turn until the stage completes
 * (SE-6.7). A stage that completes with a {@link java.util.concurrent.CancellationException}
 * ends the work cancelled; any other exception ends it failed.
 *
 * <p>A pending work must continue its code on the runtime's shared execution resource
 * ({@link ZLinkRuntime#execute}) or inline where the runtime hands it a result (a resumed
 * framework call): never on a thread of its own.
 */
@FunctionalInterface
public interface ZLinkWork {
    CompletionStage<?> run(ZLinkTurn turn) throws Exception;
}
