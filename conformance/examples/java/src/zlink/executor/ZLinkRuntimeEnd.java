package zlink.executor;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The runtime end (SD-5): the application ends when no active work is left in any scope;
 * then every scope is destroyed by its flag (SD-4), the zombies still running are
 * cancelled and given a grace period on the runtime's clock to end on their own turn.
 * Whatever has not ended then is abandoned, never waited for (D-20).
 */
public final class ZLinkRuntimeEnd {
    private ZLinkRuntimeEnd() {}

    /** What the end found and did. */
    public static final class Report {
        /** Zombies the end cancelled. */
        public final List<ZLinkZombie> cancelled;
        /** Zombies still running when the grace period was over. */
        public final List<ZLinkZombie> abandoned;

        Report(List<ZLinkZombie> cancelled, List<ZLinkZombie> abandoned) {
            this.cancelled = List.copyOf(cancelled);
            this.abandoned = List.copyOf(abandoned);
        }
    }

    /** Start the end over {@code scopes}; the future completes with its report. */
    public static CompletableFuture<Report> finish(ZLinkRuntime runtime, List<? extends ZLinkScope> scopes,
                                                   long graceMs) {
        if (graceMs < 0) throw new IllegalArgumentException("graceMs must be >= 0, got " + graceMs);
        List<ZLinkScope> all = List.copyOf(scopes);
        CompletableFuture<Report> out = new CompletableFuture<>();
        runtime.when(() -> all.stream().allMatch(s -> s.activeCount() == 0)).thenRun(() -> {
            for (ZLinkScope s : all) s.destroy();
            List<ZLinkZombie> cancelled = zombies(all);
            for (ZLinkScope s : all) s.dispose();
            AtomicBoolean once = new AtomicBoolean();
            AtomicReference<ZLinkClock.Cancellable> timer = new AtomicReference<>();
            timer.set(runtime.clock().callLater(graceMs, () -> {
                if (once.compareAndSet(false, true)) out.complete(new Report(cancelled, zombies(all)));
            }));
            runtime.when(() -> all.stream().allMatch(s -> s.zombieCount() == 0)).thenRun(() -> {
                if (!once.compareAndSet(false, true)) return;
                ZLinkClock.Cancellable t = timer.get();
                if (t != null) t.cancel();
                out.complete(new Report(cancelled, List.of()));
            });
        });
        return out;
    }

    private static List<ZLinkZombie> zombies(List<ZLinkScope> scopes) {
        List<ZLinkZombie> out = new ArrayList<>();
        for (ZLinkScope s : scopes) out.addAll(s.zombies());
        return out;
    }
}
