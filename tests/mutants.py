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

from zlink_reference._core import queue as core_queue
from zlink_reference._core import rules
from zlink_reference._core.queue import QueueCore, WorkRecord


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    rule: str  # the rule ID it breaks
    invariant: str  # the invariant (TLA+ operator / Python predicate) that must catch it
    description: str
    apply: Callable[[], None]


CATALOGUE: dict[str, Mutant] = {}


def mutant(name: str, rule: str, invariant: str, description: str) -> Callable[
    [Callable[[], None]], Callable[[], None]
]:
    def register(fn: Callable[[], None]) -> Callable[[], None]:
        CATALOGUE[name] = Mutant(name, rule, invariant, description, fn)
        return fn

    return register


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

    def patched_place(self: QueueCore, rec: WorkRecord, lane: int, nbytes: int,
                      barrier: bool, judged: bool) -> bool:
        place(self, rec, lane, nbytes, barrier, judged)
        self.drain_scheduled = True
        return True

    def patched_enter(self: QueueCore, now: float) -> None:
        self.drain_scheduled = False
        self.draining = True
        self.slice_started_at = now
        if self.config.observer is not None:
            self.config.observer(self.name, "enter_drain", {"now": now})

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
        rec.phase = core_queue.RUNNING
        return result

    ZLinkSerialExecutionQueue._yield = patched_yield  # type: ignore[method-assign]

    finish = QueueCore.finish

    def patched_finish(self: QueueCore, rec: WorkRecord, outcome: int = 0) -> None:
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
    from zlink_reference._core.errors import ZLinkRejectedError
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
            rec = ZLinkWorkHandle(self, work)
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


@mutant("lifecycle_ignores_burst", "SE-6.1", "LifecycleBurstBounded",
        "lifecycle work always overtakes application work, whatever the streak")
def _lifecycle_ignores_burst() -> None:
    original = rules.select_next

    def patched(barrier: int, life: int, app: int, streak: int, limit: int) -> Any:
        if not barrier and life:
            return rules.Source.LIFECYCLE, (streak + 1 if app else 0)
        return original(barrier, life, app, streak, limit)

    core_queue.select_next = patched  # type: ignore[assignment]


@mutant("close_drops_accepted", "SE-6.2", "EveryAcceptedWorkEndsOnce",
        "close discards the works still waiting in line")
def _close_drops_accepted() -> None:
    close = QueueCore.close

    def patched(self: QueueCore) -> None:
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

    def patched(self: QueueCore, rec: WorkRecord, lane: int, nbytes: int,
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

    def swap(self: QueueCore) -> None:
        app = self.app
        if app is not None and len(app) >= 2:
            app[0], app[1] = app[1], app[0]

    def patched_take(self: QueueCore, now: float) -> WorkRecord:
        swap(self)
        return take(self, now)

    def patched_step(self: QueueCore, now: float, prev: Any = None, outcome: int = 0) -> Any:
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

    core_queue.slice_expired = never  # type: ignore[assignment]
    init = core_queue.QueueConfig.__init__

    def patched_init(self: Any, *a: Any, **kw: Any) -> None:
        init(self, *a, **kw)
        self.budget = float("inf")

    core_queue.QueueConfig.__init__ = patched_init  # type: ignore[method-assign]
