package zlink.executor;

import java.util.Map;

/** ZLinkActorSerialExecutor: one per Actor; exactly one queue, no map (SE-2.3). Handler
 *  work on the application lane, the Actor's lifecycle control on the lifecycle lane. */
public final class ZLinkActorSerialExecutor extends ZLinkCoordinator {
    private final ZLinkSerialExecutionQueue queue;
    private ZLinkActorStateSnapshot registration; // lane-owned

    public ZLinkActorSerialExecutor(String actorId, String actorType, ZLinkExecutionLanePolicy policy,
                                    ZLinkRuntime runtime) {
        super(checkId("actorId", actorId), runtime);
        synchronized (lane) {
            queue = makeQueue(actorId, policy, true);
            registration = new ZLinkActorStateSnapshot(actorId, true, actorType, Map.of(), 1);
        }
    }

    /** One handler work, application lane, payload reserved; it sees the Actor's state
     *  through {@link ZLinkTurn#snapshot()} (SE-7). */
    public ZLinkWorkHandle executeActor(ZLinkWork work, long payloadBytes) {
        checkWork(work);
        ZLinkWork message = turn -> {
            turn.setSnapshot(snapshot());
            return work.run(turn);
        };
        synchronized (lane) {
            checkOpenLocked();
            return queue.admit(new ZLinkWorkHandle(queue, message), ZLinkSerialExecutionQueue.APPLICATION,
                payloadBytes, false);
        }
    }

    /** The Actor's lifecycle control, lifecycle lane. */
    public ZLinkWorkHandle executeLifecycle(ZLinkWork work) {
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            return queue.enqueueLifecycle(work);
        }
    }

    /** Change registered values, all in one lane turn (SE-7.2). */
    public void updateRegistration(Map<String, Object> values) {
        synchronized (lane) {
            registration = registration.with(values);
        }
    }

    /** The Actor's state, read in one lane turn (SE-7.1). */
    public ZLinkActorStateSnapshot snapshot() {
        synchronized (lane) {
            return registration;
        }
    }
}
