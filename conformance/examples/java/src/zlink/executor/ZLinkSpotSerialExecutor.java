package zlink.executor;

import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletionStage;

/**
 * ZLinkSpotSerialExecutor: one per Spot. Owns the Spot queue, one Actor queue per actor
 * id and one timer queue per timer name (SE-2.2); the caller never picks a queue (SE-3.1):
 *
 * <pre>
 * entry            PerActor (User) / Entry     SpotWide (User) / Instance
 * executeSpot      Spot queue                  Spot queue
 * executeLifecycle Spot queue, lifecycle lane  Spot queue, lifecycle lane
 * executeActor     that Actor's queue          Actor queue (claim, payload), then one
 *                                              execution turn on the Spot queue
 * executeTimer     that timer's queue          Spot queue (no timer queue is made)
 * </pre>
 *
 * SpotWide (SE-4.5, SE-4.6, SE-5.3): the Actor queue admits the work and reserves its
 * payload. When the work reaches its Actor queue's turn, that turn places one execution
 * turn on the Spot queue (fixed cost only, never refused, D-6) and keeps the Actor queue's
 * turn until the execution turn ends. That held turn is the Actor's claim: a yielded
 * Actor work gives the Spot gate back, but the same Actor's next record cannot start.
 */
public final class ZLinkSpotSerialExecutor extends ZLinkCoordinator {
    private final ZLinkSpotKind kind;
    private final ZLinkUserSpotExecutionMode mode;
    private final boolean wide;
    private final boolean yieldAllowed;
    private final ZLinkSerialExecutionQueue spot;
    private final ZLinkExecutionLanePolicy actorPolicy;
    private final ZLinkExecutionLanePolicy timerPolicy;
    // Lane-owned (SE-2.4).
    private final Map<String, ZLinkSerialExecutionQueue> actors = new HashMap<>();
    private final Map<String, ZLinkSerialExecutionQueue> timers = new HashMap<>();
    private final Map<String, ZLinkActorStateSnapshot> registrations = new HashMap<>();

    /**
     * @param mode required for a User Spot, null for Entry and Instance Spots
     * @param policy the Spot queue's limits; {@code actorPolicy} each Actor queue's and
     *     {@code timerPolicy} each timer queue's (null: the seed's defaults)
     */
    public ZLinkSpotSerialExecutor(String spotId, ZLinkSpotKind kind, ZLinkUserSpotExecutionMode mode,
                                   ZLinkExecutionLanePolicy policy, ZLinkExecutionLanePolicy actorPolicy,
                                   ZLinkExecutionLanePolicy timerPolicy, ZLinkRuntime runtime) {
        super(checkId("spotId", spotId), runtime);
        this.kind = kind == null ? ZLinkSpotKind.USER : kind;
        if (this.kind == ZLinkSpotKind.USER && mode == null) {
            throw new IllegalArgumentException("a User Spot needs its execution mode (PER_ACTOR or SPOT_WIDE), "
                + "fixed at registration (SE-1.2)");
        }
        if (this.kind != ZLinkSpotKind.USER && mode != null) {
            throw new IllegalArgumentException("the execution mode is for User Spots only, not " + this.kind + " (SE-4.1)");
        }
        this.mode = mode;
        this.wide = this.kind == ZLinkSpotKind.INSTANCE || mode == ZLinkUserSpotExecutionMode.SPOT_WIDE;
        this.yieldAllowed = this.kind != ZLinkSpotKind.ENTRY;
        this.actorPolicy = actorPolicy;
        this.timerPolicy = timerPolicy;
        synchronized (lane) {
            this.spot = makeQueue(spotId, policy, yieldAllowed);
        }
    }

    public ZLinkSpotKind kind() {
        return kind;
    }

    /** A User Spot's mode (null for Entry and Instance Spots). */
    public ZLinkUserSpotExecutionMode mode() {
        return mode;
    }

    /** Spot handler work, on the Spot queue. */
    public ZLinkWorkHandle executeSpot(ZLinkWork work) {
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            return spot.enqueue(work);
        }
    }

    /** Join, leave or relocation, on the Spot queue's lifecycle lane. */
    public ZLinkWorkHandle executeLifecycle(ZLinkWork work) {
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            return spot.enqueueLifecycle(work);
        }
    }

    /** One Actor handler work; the queue path follows the Spot's mode (SE-4). The work
     *  sees the Actor's registration through {@link ZLinkTurn#snapshot()} (SE-7). */
    public ZLinkWorkHandle executeActor(String actorId, ZLinkWork work, long payloadBytes) {
        checkId("actorId", actorId);
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            ZLinkSerialExecutionQueue q = actors.get(actorId);
            if (q == null) {
                q = makeQueue(name + "/actor:" + actorId, actorPolicy, yieldAllowed);
                actors.put(actorId, q);
            }
            // The snapshot is read in one lane turn when the message's work starts.
            ZLinkWork message = turn -> {
                turn.setSnapshot(snapshotOf(actorId));
                return work.run(turn);
            };
            if (!wide) {
                return q.admit(new ZLinkWorkHandle(q, message), ZLinkSerialExecutionQueue.APPLICATION, payloadBytes, false);
            }
            ZLinkSerialExecutionQueue actorQueue = q;
            ZLinkWork claim = turn -> placeExecutionTurn(turn.work(), actorQueue, message);
            ZLinkWorkHandle record = new ZLinkWorkHandle(q, claim);
            record.gates = List.of(q, spot);
            record.quiet = true;
            return q.admit(record, ZLinkSerialExecutionQueue.APPLICATION, payloadBytes, false);
        }
    }

    /** On the Actor queue's turn: place the execution turn on the Spot queue and keep
     *  the claim (the Actor queue's turn) until it ends, with its outcome (D-21). */
    private CompletionStage<?> placeExecutionTurn(ZLinkWorkHandle record, ZLinkSerialExecutionQueue actorQueue,
                                                  ZLinkWork message) {
        ZLinkWorkHandle turn = new ZLinkWorkHandle(spot, message);
        turn.origin = record;
        turn.executionTurn = true;
        turn.gates = List.of(spot, actorQueue);
        record.executionOnSpot = turn;
        spot.transfer(turn);
        return turn.asStage();
    }

    /** A timer callback: on its own timer queue, or straight on the Spot queue in
     *  SpotWide and Instance Spots (SE-4.4). */
    public ZLinkWorkHandle executeTimer(String timerName, ZLinkWork work) {
        checkId("timerName", timerName);
        checkWork(work);
        synchronized (lane) {
            checkOpenLocked();
            if (wide) return spot.enqueue(work);
            ZLinkSerialExecutionQueue q = timers.get(timerName);
            if (q == null) {
                q = makeQueue(name + "/timer:" + timerName, timerPolicy, yieldAllowed);
                timers.put(timerName, q);
            }
            return q.enqueue(work);
        }
    }

    /** Register (or re-register) an Actor with its type and values, in one lane turn. A
     *  message already running keeps the snapshot it started with (SE-7.2). */
    public void registerActor(String actorId, String actorType, Map<String, Object> values) {
        checkId("actorId", actorId);
        synchronized (lane) {
            ZLinkActorStateSnapshot old = registrations.get(actorId);
            long version = old == null ? 1 : old.version() + 1;
            registrations.put(actorId, new ZLinkActorStateSnapshot(actorId, true, actorType, values, version));
        }
    }

    /** Change some of an Actor's registered values, all in one lane turn. */
    public void updateActorRegistration(String actorId, Map<String, Object> values) {
        checkId("actorId", actorId);
        synchronized (lane) {
            ZLinkActorStateSnapshot old = registrations.get(actorId);
            registrations.put(actorId, old == null
                ? new ZLinkActorStateSnapshot(actorId, true, null, values, 1) : old.with(values));
        }
    }

    /** An Actor's state, read in one lane turn (SE-7.1). */
    public ZLinkActorStateSnapshot actorSnapshot(String actorId) {
        return snapshotOf(checkId("actorId", actorId));
    }

    private ZLinkActorStateSnapshot snapshotOf(String actorId) {
        synchronized (lane) {
            ZLinkActorStateSnapshot s = registrations.get(actorId);
            return s != null ? s : ZLinkActorStateSnapshot.unregistered(actorId);
        }
    }

    @Override
    void dropMaps() {
        actors.clear();
        timers.clear();
    }
}
