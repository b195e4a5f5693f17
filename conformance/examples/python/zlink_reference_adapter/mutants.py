"""The mutant catalogue: deliberate bugs, applied by patching from the test tree only.

Each mutant breaks one rule the way a real runtime could get it wrong. Every checking
layer (unit tests, property machines, conformance self-test) is run against each mutant
and must fail it; ``test_mutants.py`` keeps the kill matrix. A mutant that survives is a
gap in the checks, to close, never to hide.

Switch one on for a whole process with ``ZLINK_MUTANT=<name>`` (tests/conftest.py and
the reference adapter read it) or call ``apply(name)``.
"""

from __future__ import annotations

import dataclasses
from collections import deque
from collections.abc import Callable
from typing import Any

from zlink_model import queue as core_queue
from zlink_model import rules
from zlink_model.queue import QueueCore, WorkRecord
from zlink_model.vocabulary import ENTER_DRAIN


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    rule: str  # the rule ID it breaks
    invariant: str  # the invariant (TLA+ operator / Python predicate) that must catch it
    description: str
    apply: Callable[[], None]


Registrar = Callable[[str, str, str, str], Callable[[Callable[[], None]], Callable[[], None]]]


def registrar(catalogue: dict[str, Mutant]) -> Registrar:
    """The ``@mutant(name, rule, invariant, description)`` decorator of one catalogue (this
    one, and the catalogue of mutants only explore kills)."""
    def mutant(name: str, rule: str, invariant: str, description: str) -> Callable[
        [Callable[[], None]], Callable[[], None]
    ]:
        def register(fn: Callable[[], None]) -> Callable[[], None]:
            catalogue[name] = Mutant(name, rule, invariant, description, fn)
            return fn

        return register

    return mutant


CATALOGUE: dict[str, Mutant] = {}
mutant = registrar(CATALOGUE)


def apply(name: str) -> Mutant:
    """Switch a mutant on for the rest of this process."""
    try:
        m = CATALOGUE[name]
    except KeyError:
        known = ", ".join(sorted(CATALOGUE))
        raise SystemExit(f"unknown mutant {name!r}; known: {known}") from None
    m.apply()
    return m


# ---------------------------------------------------------------------------- core
@mutant("drain_without_flag_check", "SE-6.5", "NoDoubleDrain",
        "every admission posts a drain, and a drain enters even if one is running")
def _drain_without_flag_check() -> None:
    place = QueueCore._place

    def patched_place(self: QueueCore[Any], rec: WorkRecord, lane: int, nbytes: int,
                      barrier: bool, judged: bool) -> bool:
        place(self, rec, lane, nbytes, barrier, judged)
        self.drain_scheduled = True
        return True

    def patched_enter(self: QueueCore[Any], now: float) -> None:
        self.drain_scheduled = False
        self.draining = True
        self.slice_started_at = now
        if self.config.observer is not None:
            self.config.observer(self.name, ENTER_DRAIN, {"now": now})

    QueueCore._place = patched_place  # type: ignore[method-assign]
    QueueCore.enter_drain = patched_enter  # type: ignore[method-assign]


@mutant("resume_skips_requeue", "SE-6.7", "NoResumeWithoutRequeue",
        "a yielded work continues as soon as its external call is done, without requeue")
def _resume_skips_requeue() -> None:
    import asyncio

    from zlink_reference._shell.queue import ZLinkSerialExecutionQueue

    async def patched_yield(self: Any, rec: Any, awaitable: Any) -> Any:
        fut = asyncio.ensure_future(awaitable)
        self._core.yield_turn(rec)
        self._rt.loop.call_soon(self._continue)
        result = await fut
        # Bug: take the turn back directly instead of queueing a resume permit.
        self._core.suspended.discard(rec)
        rec._phase = core_queue.RUNNING
        return result

    ZLinkSerialExecutionQueue._yield = patched_yield  # type: ignore[method-assign]

    finish = QueueCore.finish

    def patched_finish(self: QueueCore[Any], rec: WorkRecord, outcome: int = 0) -> None:
        # Bug, second half: the turn check is gone, so the off-turn finish goes through.
        if self.current is not rec:
            saved = self.current
            self.current = rec
            finish(self, rec, outcome)
            self.current = saved
            return
        finish(self, rec, outcome)

    QueueCore.finish = patched_finish  # type: ignore[method-assign]


@mutant("admission_split", "SE-6.3", "CapacityRespected",
        "the capacity check runs on the submitting thread, the insertion later on the loop")
def _admission_split() -> None:
    from zlink_model.errors import ZLinkRejectedError
    from zlink_reference._shell import queue as shell_queue
    from zlink_reference._shell.queue import ZLinkSerialExecutionQueue, ZLinkWorkHandle

    def patched_submit(self: Any, work: Any, lane: int, payload: int, barrier: bool) -> Any:
        core = self._core
        nbytes = rules.reservation_bytes(payload, core.config.policy.fixed_work_byte_cost)
        count, used = core.reserved_of(lane)
        cap, bcap = (
            (core.config.life_count_cap, core.config.life_byte_cap) if lane
            else (core.config.app_count_cap, core.config.app_byte_cap)
        )
        verdict = rules.admission_verdict(core.closed, bool(lane), count, used, nbytes, cap, bcap)
        if verdict is not None:  # checked here ...
            raise ZLinkRejectedError(verdict, core.name)

        def insert() -> Any:  # ... inserted later, unjudged
            rec: Any = ZLinkWorkHandle(self._rt, self._core, work)
            if core._place(rec, lane, nbytes, barrier, False):
                self._rt.loop.call_soon(self._drain)
            return rec

        if shell_queue.get_ident() != self._rt.thread_id:
            return self._rt.call_on_loop(insert)
        return insert()

    def patched_enqueue(self: Any, work: Any) -> Any:
        return patched_submit(self, work, 0, 0, False)

    ZLinkSerialExecutionQueue._submit = patched_submit  # type: ignore[method-assign]
    ZLinkSerialExecutionQueue.enqueue = patched_enqueue  # type: ignore[method-assign]


@mutant("drain_on_submitter_stack", "SE-6.5", "OffSubmitterStack",
        "a submission that wakes an idle queue runs its drain at once, inside the submit call")
def _drain_on_submitter_stack() -> None:
    from zlink_reference._shell import queue as shell_queue
    from zlink_reference._shell.queue import ZLinkSerialExecutionQueue, ZLinkWorkHandle

    def patched_submit(self: Any, work: Any, lane: int, payload: int, barrier: bool) -> Any:
        rt = self._rt
        if shell_queue.get_ident() != rt.thread_id and not rt.on_loop_thread():
            return rt.call_on_loop(lambda: patched_submit(self, work, lane, payload, barrier))
        if not callable(work):
            raise TypeError(f"work must be a zero-argument callable, got {work!r}")
        rec: Any = ZLinkWorkHandle(self._rt, self._core, work)
        if self._core.admit(rec, lane, payload, barrier):
            self._drain()  # bug: the drain runs on the submitter's stack, not posted
        return rec

    def patched_enqueue(self: Any, work: Any) -> Any:
        return patched_submit(self, work, 0, 0, False)

    def patched_admit_record(self: Any, rec: Any, payload: int) -> None:
        if self._core.admit(rec, 0, payload, False):
            self._drain()  # the same bug on an Actor message's admission

    def patched_transfer(self: Any, rec: Any) -> None:
        if self._core.transfer(rec):
            self._drain()  # the same bug on the SpotWide Actor path's second stage

    ZLinkSerialExecutionQueue._submit = patched_submit  # type: ignore[method-assign]
    ZLinkSerialExecutionQueue.enqueue = patched_enqueue  # type: ignore[method-assign]
    ZLinkSerialExecutionQueue._admit_record = patched_admit_record  # type: ignore[method-assign]
    ZLinkSerialExecutionQueue._transfer = patched_transfer  # type: ignore[method-assign]


@mutant("lifecycle_ignores_burst", "SE-6.1", "LifecycleBurstBounded",
        "lifecycle work always overtakes application work, whatever the streak")
def _lifecycle_ignores_burst() -> None:
    original = rules.select_next

    def patched(barrier: int, life: int, app: int, streak: int, limit: int) -> Any:
        if not barrier and life:
            return rules.Source.LIFECYCLE, (streak + 1 if app else 0)
        return original(barrier, life, app, streak, limit)

    setattr(core_queue, "select_next", patched)  # noqa: B010 (a patch, not a set)


@mutant("barrier_keeps_streak", "D-4", "LifecycleBurstBounded",
        "a barrier-next take keeps the lifecycle streak instead of resetting it, and "
        "take_next reports the count kept (always within the burst limit)")
def _barrier_keeps_streak() -> None:
    original = rules.select_next

    def patched(barrier: int, life: int, app: int, streak: int, limit: int) -> Any:
        if barrier:
            return rules.Source.BARRIER, streak
        return original(barrier, life, app, streak, limit)

    setattr(core_queue, "select_next", patched)  # noqa: B010 (a patch, not a set)


@mutant("lifecycle_waits_for_application", "SE-6.6", "LifecycleBurstBounded",
        "lifecycle work waits behind application work instead of overtaking it: the "
        "streak stays 0, always within the burst limit, and every line stays in order")
def _lifecycle_waits_for_application() -> None:
    original = rules.select_next

    def patched(barrier: int, life: int, app: int, streak: int, limit: int) -> Any:
        if not barrier and life and app:
            return rules.Source.APPLICATION, 0
        return original(barrier, life, app, streak, limit)

    setattr(core_queue, "select_next", patched)  # noqa: B010 (a patch, not a set)


@mutant("close_drops_accepted", "SE-6.2", "EveryAcceptedWorkEndsOnce",
        "close discards the works still waiting in line")
def _close_drops_accepted() -> None:
    close = QueueCore.close

    def patched(self: QueueCore[Any]) -> None:
        close(self)
        for attr in ("app", "life", "barrier"):
            line: deque[WorkRecord] | None = getattr(self, attr)
            if line:
                for rec in line:
                    self._release(rec)
            setattr(self, attr, None)

    QueueCore.close = patched  # type: ignore[method-assign]


@mutant("capacity_off_by_one", "SE-5.1", "CapacityRespected",
        "the count check lets one work more than the capacity in")
def _capacity_off_by_one() -> None:
    place = QueueCore._place

    def patched(self: QueueCore[Any], rec: WorkRecord, lane: int, nbytes: int,
                barrier: bool, judged: bool) -> bool:
        count = self.life_count if lane else self.app_count
        cap = self.config.life_count_cap if lane else self.config.app_count_cap
        if judged and count == cap and not self.closed:
            judged = False  # bug: `>` where `>=` belongs
        return place(self, rec, lane, nbytes, barrier, judged)

    QueueCore._place = patched  # type: ignore[method-assign]


@mutant("fifo_swap", "SE-6.6", "FifoWithinLane",
        "when two or more application works wait, the second one is taken first")
def _fifo_swap() -> None:
    take = QueueCore.take_next
    step = QueueCore.next_step

    def swap(self: QueueCore[Any]) -> None:
        app = self.app
        if app is not None and len(app) >= 2:
            app[0], app[1] = app[1], app[0]

    def patched_take(self: QueueCore[Any], now: float) -> Any:
        swap(self)
        return take(self, now)

    def patched_step(self: QueueCore[Any], now: float, prev: Any = None, outcome: int = 0) -> Any:
        if prev is not None:
            self.finish(prev, outcome)
        swap(self)
        return step(self, now)

    QueueCore.take_next = patched_take  # type: ignore[method-assign]
    QueueCore.next_step = patched_step  # type: ignore[method-assign]


@mutant("time_budget_ignored", "SE-6.4", "SliceBounded",
        "the drain never ends a slice, however long the owner holds the turn")
def _time_budget_ignored() -> None:
    def never(now: float, start: float, budget: float) -> bool:
        return False

    setattr(core_queue, "slice_expired", never)  # noqa: B010 (a patch, not a set)
    init = core_queue.QueueConfig.__init__

    def patched_init(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        self.budget = float("inf")

    core_queue.QueueConfig.__init__ = patched_init  # type: ignore[method-assign]


# ---------------------------------------------------------------------- coordinators
def _spot_module() -> Any:
    from zlink_reference.coordinators import spot

    return spot


def _spot_wide_module() -> Any:
    from zlink_reference.coordinators import spot_wide

    return spot_wide


@mutant("spotwide_releases_claim_on_yield", "SE-4.6", "YieldedActorKeepsClaim",
        "a SpotWide Actor queue lets its turn go as soon as the execution turn is placed")
def _spotwide_releases_claim_on_yield() -> None:
    spot_wide = _spot_wide_module()

    def no_claim(handle: Any) -> None:
        # Bug: the Actor queue's turn ends as soon as the execution turn is placed.
        return None

    spot_wide.TurnHold = no_claim


@mutant("payload_reserved_twice", "SE-5.3", "PayloadReservedOnce",
        "the SpotWide execution turn reserves the payload again on the Spot queue")
def _payload_reserved_twice() -> None:
    original = QueueCore.transfer

    def patched(self: QueueCore[Any], rec: WorkRecord) -> bool:
        from zlink_reference._shell.loop import thread_state

        # the Actor queue's record whose turn is placing this execution turn
        holder = thread_state().turn.sync
        payload = holder.nbytes - self.config.fixed_reservation if holder is not None else 0
        wake = original(self, rec)
        rec._nbytes += payload
        self.app_bytes += payload
        return wake

    QueueCore.transfer = patched  # type: ignore[method-assign]


@mutant("per_actor_shares_spot_queue", "SE-4.2", "NoOverlap",
        "PerActor Actor work runs on the Spot queue instead of its own Actor queue")
def _per_actor_shares_spot_queue() -> None:
    spot = _spot_module()
    original = spot.ZLinkSpotSerialExecutor._actor_queue

    def patched(self: Any, actor_id: str) -> Any:
        original(self, actor_id)
        return self._spot

    spot.ZLinkSpotSerialExecutor._actor_queue = patched


@mutant("spot_wide_skips_spot_gate", "SE-4.3", "OneTurnHoldsSpotGate",
        "SpotWide Actor work runs on its Actor queue without taking the Spot gate")
def _spot_wide_skips_spot_gate() -> None:
    spot = _spot_module()
    original = spot.ZLinkSpotSerialExecutor.execute_actor

    def patched(self: Any, actor_id: str, work: Any, payload_bytes: int = 0) -> Any:
        wide, self._wide = self._wide, False
        try:
            return original(self, actor_id, work, payload_bytes)
        finally:
            self._wide = wide

    spot.ZLinkSpotSerialExecutor.execute_actor = patched


@mutant("timers_share_one_queue", "SE-4.2", "NoOverlap",
        "PerActor timers of every name share one queue")
def _timers_share_one_queue() -> None:
    spot = _spot_module()
    original = spot.ZLinkSpotSerialExecutor._timer_queue

    def patched(self: Any, timer_name: str) -> Any:
        return original(self, "shared")

    spot.ZLinkSpotSerialExecutor._timer_queue = patched


@mutant("actors_share_one_mailbox", "SE-10.6", "CapacityRespected",
        "every Actor of a Spot shares one Actor queue (one mailbox limit for all)")
def _actors_share_one_mailbox() -> None:
    spot = _spot_module()
    original = spot.ZLinkSpotSerialExecutor._actor_queue

    def patched(self: Any, actor_id: str) -> Any:
        return original(self, "shared")

    spot.ZLinkSpotSerialExecutor._actor_queue = patched


@mutant("actor_queue_ignores_payload", "SE-5.3", "PayloadReservedOnce",
        "the Actor queue reserves only the fixed cost, whatever the payload")
def _actor_queue_ignores_payload() -> None:
    from zlink_reference._shell.queue import ZLinkSerialExecutionQueue

    original = ZLinkSerialExecutionQueue.enqueue_with_payload_bytes
    original_record = ZLinkSerialExecutionQueue._admit_record
    spot_wide_message = _spot_wide_module().SpotWideMessage

    def patched(self: Any, work: Any, payload_bytes: int) -> Any:
        return original(self, work, 0)

    def patched_record(self: Any, rec: Any, payload: int) -> None:
        # The same bug on a SpotWide message, which its Spot admits as a record.
        original_record(self, rec, 0 if isinstance(rec, spot_wide_message) else payload)

    ZLinkSerialExecutionQueue.enqueue_with_payload_bytes = patched  # type: ignore[method-assign]
    ZLinkSerialExecutionQueue._admit_record = patched_record  # type: ignore[method-assign]


@mutant("snapshot_reads_live_state", "SE-7.2", "SnapshotConsistent",
        "a message reads its Actor's registration live, value by value")
def _snapshot_reads_live_state() -> None:
    from zlink_reference.coordinators import snapshot

    class Live:
        def __init__(self, read: Any) -> None:
            self._read = read

        def __getitem__(self, key: str) -> Any:
            return self._read()[key]

        def __getattr__(self, name: str) -> Any:
            return getattr(self._read(), name)

    # Every message takes its snapshot by calling its Actor's cell (a wrapped work
    # through ``with_snapshot``, an ``ActorMessage`` in ``run_message``): the bug hands
    # it a view that reads the cell again at every use.
    original = snapshot.ActorStateCell.__call__

    def patched(cell: Any) -> Any:
        return Live(lambda: original(cell))

    snapshot.ActorStateCell.__call__ = patched  # type: ignore[method-assign,assignment]


@mutant("reentrancy_check_off", "SE-8.2", "NoSelfWait",
        "waiting on work of the same coordinator is not detected")
def _reentrancy_check_off() -> None:
    from zlink_reference._shell import context

    def never(target: Any, *, held_turn: bool) -> None:
        return None

    context.check_reentrancy = never


@mutant("scope_wait_check_off", "SE-8.2", "NoSelfWait",
        "a work awaiting its own coordinator's quiescence, completion or after-cancellation "
        "is not refused: the wait waits for the waiter itself")
def _scope_wait_check_off() -> None:
    from zlink_reference._shell import context

    def never(counted: Any, *, wait: str, scope: str) -> None:
        return None

    context.check_scope_wait = never


@mutant("queue_exposed", "SE-3.1", "NoQueueChoice",
        "the Spot coordinator exposes its Spot queue as a public attribute")
def _queue_exposed() -> None:
    spot = _spot_module()
    spot.ZLinkSpotSerialExecutor.spot_queue = property(lambda self: self._spot)


# ------------------------------------------------------------------------- disposal
@mutant("dispose_safely_counts_zombies", "SD-2", "AwaitCompletionIgnoresZombies",
        "dispose_safely marks zombies but keeps counting them as active")
def _dispose_safely_counts_zombies() -> None:
    original = QueueCore.dispose_safely

    def patched(self: QueueCore[Any]) -> list[Any]:
        marked = original(self)
        self.zombies -= len(marked)  # bug: the active count does not drop
        for rec in marked:
            rec._zombie = False
        return marked

    QueueCore.dispose_safely = patched  # type: ignore[method-assign]


@mutant("dispose_runs_never_started", "SD-1", "EveryAcceptedWorkEndsOnce",
        "dispose cancels started work but lets never-started work run")
def _dispose_runs_never_started() -> None:
    def patched(self: QueueCore[Any]) -> tuple[list[Any], list[Any]]:
        self.closed = True
        self.mode = core_queue.MODE_CANCELLED
        live = [r for r in self.live_records() if r.phase != core_queue.QUEUED]
        return [], live

    QueueCore.dispose = patched  # type: ignore[method-assign]


@mutant("cancel_off_turn", "SD-1", "CancellationOnOwnTurn",
        "a suspended work's cancellation is raised in it at once, off its turn")
def _cancel_off_turn() -> None:
    import asyncio

    from zlink_reference._shell.queue import ZLinkSerialExecutionQueue

    original = ZLinkSerialExecutionQueue._yield

    async def patched(self: Any, rec: Any, awaitable: Any) -> Any:
        fut = asyncio.ensure_future(awaitable)
        self._core.yield_turn(rec)
        self._rt.loop.call_soon(self._continue)
        try:
            result = await fut
        except asyncio.CancelledError:
            self._core.suspended.discard(rec)  # bug: no requeue, no turn
            self._core._release(rec)
            raise
        rec._phase = core_queue.SUSPENDED
        self._core.suspended = self._core.suspended or set()
        self._core.suspended.add(rec)
        permit = self._rt.loop.create_future()
        rec._extra().permit = permit
        if self._core.requeue(rec):
            self._rt.loop.call_soon(self._drain)
        await permit
        return result

    del original
    ZLinkSerialExecutionQueue._yield = patched  # type: ignore[method-assign]


@mutant("timeout_fires_late", "SD-1", "ExpireTimeout",
        "the timer of dispose_after_timeout(ms) is set one millisecond past the timeout, "
        "so what is left is cancelled late")
def _timeout_fires_late() -> None:
    from zlink_reference._shell.scope import Scope

    original = Scope.dispose_after_timeout

    def patched(self: Any, timeout_ms: float) -> None:
        original(self, timeout_ms + 1)  # bug: `>` where `>=` belongs

    Scope.dispose_after_timeout = patched  # type: ignore[method-assign]


@mutant("timeout_expires_one_queue", "SD-1", "ExpireTimeout",
        "the timer of dispose_after_timeout cancels what is left on the scope's first "
        "queue only; the other queues of a Spot stay in the timeout mode and run on")
def _timeout_expires_one_queue() -> None:
    from zlink_reference._shell.scope import Scope

    def patched(self: Any) -> None:
        self.state().timer = None
        self.host._scope_cancelling()
        for q in self.host._scope_queues()[:1]:  # bug: the first queue only
            if q._core.mode == core_queue.MODE_TIMEOUT:
                q._scope_cancel(expire=True)
            elif q._core.mode == core_queue.MODE_SAFELY:
                q._scope_cancel(expire=False)

    Scope.expire = patched  # type: ignore[method-assign]


@mutant("bound_spares_zombies", "D-27", "ExpireTimeout",
        "the timer of dispose_after_timeout, set after dispose_safely, cancels only what "
        "the timeout mode holds: the zombies it was set to bound run on")
def _bound_spares_zombies() -> None:
    from zlink_reference._shell.scope import Scope

    def patched(self: Any) -> None:
        self.state().timer = None
        self.host._scope_cancelling()
        for q in self.host._scope_queues():
            if q._core.mode == core_queue.MODE_TIMEOUT:
                q._scope_cancel(expire=True)
            # bug: a queue disposed safely is skipped, its zombies unbounded (D-27)

    Scope.expire = patched  # type: ignore[method-assign]


@mutant("dispose_safely_cancels_queued", "SD-1", "CancellationOnOwnTurn",
        "dispose_safely cancels the works that never started and keeps only the started "
        "ones as zombies (on every scope but a SpotWide Spot)")
def _dispose_safely_cancels_queued() -> None:
    import asyncio

    from zlink_reference._shell.scope import Scope

    original = Scope.dispose_safely

    def patched(self: Any) -> None:
        host = self.host
        if host._rt.on_loop_thread() and not getattr(host, "_wide", False):
            for q in host._scope_queues():
                core = q._core
                if core.mode != core_queue.MODE_OPEN:
                    continue
                for source in (rules.Source.BARRIER, rules.Source.LIFECYCLE,
                               rules.Source.APPLICATION):
                    for rec in list(core.line(source)):
                        # bug: a never-started work is dropped, not made a zombie
                        if rec.phase == core_queue.QUEUED:
                            core.cancel(rec)
                            q._ended(rec, core_queue.CANCELLED, asyncio.CancelledError())
        original(self)

    Scope.dispose_safely = patched  # type: ignore[method-assign]


@mutant("statistics_skip_barrier_line", "D-24", "QueueStatistics",
        "statistics() counts the works waiting in the lifecycle and application lines as "
        "ready, but not those in the barrier-next line")
def _statistics_skip_barrier_line() -> None:
    from zlink_reference._shell import queue as shell_queue

    original = shell_queue.QueueStatistics.__init__

    def patched(self: Any, core: QueueCore[Any]) -> None:
        original(self, core)
        if core.barrier:
            self.ready -= len(core.barrier)  # bug: the barrier-next line is left out

    shell_queue.QueueStatistics.__init__ = patched  # type: ignore[method-assign]


# ------------------------------------------------------- invariants' own mutants
# Each breaks an invariant no mutant above targets, so the machines are shown to catch
# it too.
@mutant("end_slice_drops_wakeup", "SE-6.5", "NoLostWakeup",
        "a slice that ends on its time budget leaves the remaining work without a drain")
def _end_slice_drops_wakeup() -> None:
    end_slice = QueueCore.end_slice

    def patched(self: QueueCore[Any], now: float) -> None:
        end_slice(self, now)
        self.drain_scheduled = False  # bug: the next slice is never scheduled

    QueueCore.end_slice = patched  # type: ignore[method-assign]


@mutant("closed_queue_admits", "SE-6.2", "NoWorkAcceptedAfterClose",
        "admission ignores the closed flag: a closed queue keeps accepting work")
def _closed_queue_admits() -> None:
    place = QueueCore._place

    def patched(self: QueueCore[Any], rec: WorkRecord, lane: int, nbytes: int,
                barrier: bool, judged: bool) -> bool:
        closed, self.closed = self.closed, False
        try:
            return place(self, rec, lane, nbytes, barrier, judged)
        finally:
            self.closed = closed

    QueueCore._place = patched  # type: ignore[method-assign]


@mutant("dispose_safely_keeps_waiters", "SD-3", "AwaitCompletionIgnoresZombies",
        "dispose_safely leaves await_completion waiting although only zombies are left")
def _dispose_safely_keeps_waiters() -> None:
    from zlink_reference._shell.scope import Scope

    def patched(self: Any) -> None:
        host = self.host
        if not host._rt.on_loop_thread():
            host._rt.call_on_loop(self.dispose_safely)
            return
        host._scope_closing()
        for q in host._scope_queues():
            if q._core.mode == core_queue.MODE_OPEN:
                q._core.dispose_safely()  # bug: the waiters are not looked at

    Scope.dispose_safely = patched  # type: ignore[method-assign]


@mutant("final_counted_once_placed", "D-22", "AwaitCompletionIgnoresZombies",
        "a session's final work counts only once it is placed in its queue: while it is "
        "held back, the scope's counts, waits, safe disposal and timer leave it out")
def _final_counted_once_placed() -> None:
    from zlink_reference.coordinators.session import ZLinkSessionSerialExecutor

    def patched(self: Any) -> list[Any]:
        return []  # bug: the held final work is no work of the scope yet

    ZLinkSessionSerialExecutor._held = patched  # type: ignore[method-assign]


@mutant("post_capacity_off_by_one", "SE-5.1", "CapacityRespected",
        "the plain lane (post) lets one work more than the count capacity in")
def _post_capacity_off_by_one() -> None:
    admit_plain = QueueCore.admit_plain

    def patched(self: QueueCore[Any], work: object) -> bool:
        if self.app_count == self.config.app_count_cap and not self.closed:
            # bug: `>` where `>=` belongs, in the fast path only
            self.app_count -= 1
            try:
                return admit_plain(self, work)
            finally:
                self.app_count += 1
        return admit_plain(self, work)

    QueueCore.admit_plain = patched  # type: ignore[method-assign]
