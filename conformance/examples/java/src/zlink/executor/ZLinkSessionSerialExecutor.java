package zlink.executor;

import java.util.List;

/**
 * ZLinkSessionSerialExecutor: one per STREAM session; exactly one queue (SE-2.3). Lanes
 * as in D-12: packets use the application lane and reserve their payload; control and
 * infrastructure work use the lifecycle lane, so they overtake a backlog of packets and
 * keep their order among themselves. executeFinal closes the session at once and runs its
 * work after every work accepted before it has ended.
 */
public final class ZLinkSessionSerialExecutor extends ZLinkCoordinator {
    private final ZLinkSerialExecutionQueue queue;
    private ZLinkWorkHandle finalWork; // lane-owned

    public ZLinkSessionSerialExecutor(String sessionId, ZLinkExecutionLanePolicy policy, ZLinkRuntime runtime) {
        super(checkId("sessionId", sessionId), runtime);
        synchronized (lane) {
            queue = makeQueue(sessionId, policy, true);
        }
    }

    /** A packet for the session callback: application lane, payload reserved. */
    public ZLinkWorkHandle executeApplication(ZLinkWork work, long payloadBytes) {
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            return queue.enqueueWithPayloadBytes(work, payloadBytes);
        }
    }

    /** A session control command: lifecycle lane (overtakes queued packets). */
    public ZLinkWorkHandle executeControl(ZLinkWork work) {
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            return queue.enqueueLifecycle(work);
        }
    }

    /** A connection-state update or similar: lifecycle lane, in order with control. */
    public ZLinkWorkHandle executeInfrastructure(ZLinkWork work) {
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            return queue.enqueueLifecycle(work);
        }
    }

    /** The last work of the session. From this call on the session accepts nothing; the
     *  work is placed (never refused, D-6) once every work accepted before it has ended,
     *  yielded ones included, so nothing runs after it (D-12). */
    public ZLinkWorkHandle executeFinal(ZLinkWork work) {
        checkWork(work);
        ZLinkWorkHandle fin;
        synchronized (lane) {
            checkOpenLocked();
            fin = new ZLinkWorkHandle(queue, work);
            finalWork = fin;
            closed = true;
            queue.close();
        }
        queue.whenIdle(() -> {
            if (!fin.isDone()) queue.transfer(fin); // cancelled by a disposal before its turn came
        });
        return fin;
    }

    @Override
    List<ZLinkWorkHandle> heldWorks() {
        // D-22: the final work is a work from its acceptance: counted, waited for, a
        // zombie after disposeSafely, bounded by the timer, while it waits for its turn.
        ZLinkWorkHandle fin;
        synchronized (lane) {
            fin = finalWork;
        }
        return fin != null && !fin.isDone() && queue.isHeld(fin) ? List.of(fin) : List.of();
    }

    @Override
    void scopeCancelling() {
        // A final work not placed yet was accepted: disposal ends it cancelled (D-22).
        ZLinkWorkHandle fin;
        synchronized (lane) {
            fin = finalWork;
        }
        if (fin != null && queue.cancelUnplaced(fin)) rt.changed();
    }
}
