package zlink.executor;

import java.util.PriorityQueue;

/**
 * A clock that moves only when told: {@link #advance} moves it and fires every timer that
 * came due; {@link #busy} moves it without firing (a work stays busy on its turn, and
 * timers must not run inside someone else's turn); {@link #fireDue} fires what is due.
 * Thread-safe: works read it from pool threads while the embedder advances it.
 */
public final class ZLinkVirtualClock implements ZLinkClock {
    private long now;
    private long nextOrder;
    private final PriorityQueue<Timer> timers = new PriorityQueue<>(
        (a, b) -> a.due != b.due ? Long.compare(a.due, b.due) : Long.compare(a.order, b.order));

    private final class Timer implements Cancellable {
        final long due;
        final long order;
        final Runnable action;
        boolean cancelled;

        Timer(long due, long order, Runnable action) {
            this.due = due;
            this.order = order;
            this.action = action;
        }

        @Override
        public void cancel() {
            synchronized (ZLinkVirtualClock.this) {
                cancelled = true;
                timers.remove(this);
            }
        }
    }

    @Override
    public synchronized long nowMs() {
        return now;
    }

    @Override
    public synchronized Cancellable callLater(long delayMs, Runnable action) {
        Timer t = new Timer(now + Math.max(0, delayMs), nextOrder++, action);
        timers.add(t);
        return t;
    }

    /** Move the clock without firing timers (the busy op of a work). */
    public synchronized void busy(long ms) {
        now += ms;
    }

    /** Move the clock and fire what came due, on the caller's thread, in due order. */
    public void advance(long ms) {
        synchronized (this) {
            now += ms;
        }
        fireDue();
    }

    /** Fire every due timer (those that came due while firing, too); true if any fired.
     *  Timers run outside the clock's lock, so they may set new timers. */
    public boolean fireDue() {
        boolean fired = false;
        for (;;) {
            Timer t;
            synchronized (this) {
                t = timers.peek();
                if (t == null || t.due > now) return fired;
                timers.poll();
                if (t.cancelled) continue;
            }
            fired = true;
            t.action.run();
        }
    }

    /** Whether a timer is due now and has not fired yet. */
    public synchronized boolean hasDue() {
        Timer t = timers.peek();
        return t != null && t.due <= now;
    }
}
