"""Mutants the fixed suite does not kill: plausible one-line bugs of the reference, each
on a rule of its own, that only scenarios nobody wrote a case for reach.

They are kept apart from ``mutants.CATALOGUE``, whose every entry the fixed suite must
kill (the self-test fails on a survivor): these survive the fixed suite by design, and
``zlink conformance explore`` must kill each one (``tests/conformance/test_explore.py``,
and the kill matrix in docs/conformance.md, section 13). The preload file switches one
on by name like any other mutant (``ZLINK_MUTANT_NAME``).
"""

from __future__ import annotations

from typing import Any

from zlink_model import queue as core_queue
from zlink_model import rules
from zlink_model.queue import QueueCore, WorkRecord
from zlink_model.rules import LIFECYCLE_LANE
from zlink_reference_adapter.mutants import Mutant, registrar

CATALOGUE: dict[str, Mutant] = {}
mutant = registrar(CATALOGUE)


def apply(name: str) -> Mutant:
    """Switch a mutant of this catalogue on for the rest of this process."""
    m = CATALOGUE[name]
    m.apply()
    return m


@mutant("failed_work_keeps_bytes", "SE-5.2", "CapacityRespected",
        "a work that fails gives back its count but not its bytes")
def _failed_work_keeps_bytes() -> None:
    finish = QueueCore.finish

    def patched(self: QueueCore[Any], rec: WorkRecord, outcome: int = 0) -> None:
        finish(self, rec, outcome)
        if outcome == core_queue.FAILED:
            if rec.lane == LIFECYCLE_LANE:
                self.life_bytes += rec.nbytes
            else:
                self.app_bytes += rec.nbytes

    QueueCore.finish = patched  # type: ignore[method-assign]


@mutant("rejection_leaks_a_slot", "SE-6.3", "CapacityRespected",
        "a refused byte-capacity admission still takes a count slot of its lane")
def _rejection_leaks_a_slot() -> None:
    reject = QueueCore._reject

    def patched(self: QueueCore[Any], lane: int, nbytes: int, barrier: bool) -> Any:
        over_bytes = (self.life_bytes + nbytes > self.config.life_byte_cap
                      if lane == LIFECYCLE_LANE
                      else self.app_bytes + nbytes > self.config.app_byte_cap)
        if over_bytes and not self.closed:
            if lane == LIFECYCLE_LANE:
                self.life_count += 1
            else:
                self.app_count += 1
        return reject(self, lane, nbytes, barrier)

    QueueCore._reject = patched  # type: ignore[method-assign]


@mutant("dispose_spares_lifecycle", "SD-1", "EveryAcceptedWorkEndsOnce",
        "a cancelling disposal cancels the queued application work but lets the queued "
        "lifecycle work run")
def _dispose_spares_lifecycle() -> None:
    def patched(self: QueueCore[Any]) -> tuple[list[Any], list[Any]]:
        ended = []
        for source in (rules.Source.BARRIER, rules.Source.APPLICATION):
            for rec in self.line(source):
                if rec.phase == core_queue.QUEUED:
                    self.cancel(rec)
                    ended.append(rec)
        return ended, self.live_records()

    QueueCore._cancel_live = patched  # type: ignore[method-assign]


@mutant("resume_jumps_the_line", "SE-6.7", "FifoWithinLane",
        "a resume permit goes to the head of its lane when two or more works wait there")
def _resume_jumps_the_line() -> None:
    requeue = QueueCore.requeue

    def patched(self: QueueCore[Any], rec: WorkRecord) -> bool:
        line = self.life if rec.lane == LIFECYCLE_LANE else self.app
        crowded = line is not None and len(line) >= 2
        wake = requeue(self, rec)
        line = self.life if rec.lane == LIFECYCLE_LANE else self.app
        if crowded and line is not None and line[-1] is rec:
            line.pop()
            line.appendleft(rec)
        return wake

    QueueCore.requeue = patched  # type: ignore[method-assign]


@mutant("session_final_passes_a_yielded_work", "D-12", "EveryAcceptedWorkEndsOnce",
        "a session's final work is placed at once when no work holds the turn and none is "
        "queued, although a yielded work has not ended")
def _session_final_passes_a_yielded_work() -> None:
    from zlink_reference.coordinators import session

    execute_final = session.ZLinkSessionSerialExecutor.execute_final
    place_final = session.ZLinkSessionSerialExecutor._place_final

    def patched_execute(self: Any, work: Any) -> Any:
        handle = execute_final(self, work)
        core = self._queue._core
        if core.current is None and not core.has_ready():  # bug: idle is not "all ended"
            self._place_final(handle)
        return handle

    def patched_place(self: Any, handle: Any) -> None:
        if getattr(handle, "wid", -1) >= 0:  # placed already
            return
        place_final(self, handle)

    session.ZLinkSessionSerialExecutor.execute_final = patched_execute  # type: ignore[method-assign]
    session.ZLinkSessionSerialExecutor._place_final = patched_place  # type: ignore[method-assign]


@mutant("resumed_lifecycle_ignores_burst", "SE-6.1", "LifecycleBurstBounded",
        "a yielded lifecycle work's resume permit is taken whatever the streak, as if it "
        "were not lifecycle work waiting")
def _resumed_lifecycle_ignores_burst() -> None:
    def patched(self: QueueCore[Any], now: float) -> Any:
        life = self.life
        if life and life[0].phase == core_queue.REQUEUED and not self.barrier \
                and self.app and self.streak >= self.config.burst_limit:
            self.streak = 0  # bug: the permit is served as if the streak were fresh
        return take(self, now)

    take = QueueCore._take_next
    QueueCore._take_next = patched  # type: ignore[method-assign]


@mutant("nested_jumps_the_line", "SE-6.6", "FifoWithinLane",
        "an application work submitted from inside a turn of the same queue goes to the "
        "head of its lane when two or more works already wait there")
def _nested_jumps_the_line() -> None:
    from zlink_reference._shell.loop import thread_state

    place = QueueCore._place

    def patched(self: QueueCore[Any], rec: WorkRecord, lane: int, nbytes: int,
                barrier: bool, judged: bool) -> bool:
        line = self.life if lane == LIFECYCLE_LANE else self.app
        crowded = lane != LIFECYCLE_LANE and line is not None and len(line) >= 2 \
            and not barrier
        wake = place(self, rec, lane, nbytes, barrier, judged)
        holder = thread_state().turn.sync  # the record whose synchronous turn runs here
        nested = holder is not None and holder is self.turn_holder
        line = self.life if lane == LIFECYCLE_LANE else self.app
        if judged and crowded and nested and line is not None and line[-1] is rec:
            line.pop()
            line.appendleft(rec)
        return wake

    QueueCore._place = patched  # type: ignore[method-assign]


@mutant("yield_leaks_bytes", "D-2", "CapacityRespected",
        "a resume permit reserves the work's bytes a second time, and only one "
        "reservation is given back at the end")
def _yield_leaks_bytes() -> None:
    requeue = QueueCore.requeue

    def patched(self: QueueCore[Any], rec: WorkRecord) -> bool:
        if rec.lane == LIFECYCLE_LANE:
            self.life_bytes += rec.nbytes
        else:
            self.app_bytes += rec.nbytes
        return requeue(self, rec)

    QueueCore.requeue = patched  # type: ignore[method-assign]


@mutant("failed_call_resumes_in_application_lane", "SE-6.7", "FifoWithinLane",
        "a lifecycle work whose external call failed queues its resume permit in the "
        "application lane")
def _failed_call_resumes_in_application_lane() -> None:
    import asyncio

    from zlink_reference._shell.queue import ZLinkSerialExecutionQueue

    original = ZLinkSerialExecutionQueue._yield
    requeue = QueueCore.requeue
    failing: set[int] = set()

    async def patched_yield(self: Any, rec: Any, awaitable: Any) -> Any:
        fut = asyncio.ensure_future(awaitable)

        def note(f: asyncio.Future[Any]) -> None:
            if not f.cancelled() and f.exception() is not None:
                failing.add(id(rec))

        fut.add_done_callback(note)
        return await original(self, rec, fut)

    def patched_requeue(self: QueueCore[Any], rec: WorkRecord) -> bool:
        if id(rec) in failing and rec.lane == LIFECYCLE_LANE:
            failing.discard(id(rec))
            rec._lane = rules.APPLICATION_LANE  # bug: the lane of a plain work
            self.life_count -= 1
            self.life_bytes -= rec.nbytes
            self.app_count += 1
            self.app_bytes += rec.nbytes
        return requeue(self, rec)

    ZLinkSerialExecutionQueue._yield = patched_yield  # type: ignore[method-assign]
    QueueCore.requeue = patched_requeue  # type: ignore[method-assign]


@mutant("timer_queue_third_first", "SE-10.5", "FifoWithinLane",
        "a PerActor timer queue with three or more ticks waiting runs the third first")
def _timer_queue_third_first() -> None:
    take = QueueCore.take_next
    step = QueueCore.next_step

    def rotate(self: QueueCore[Any]) -> None:
        app = self.app
        if "/timer:" in self.name and app is not None and len(app) >= 3:
            app[0], app[2] = app[2], app[0]

    def patched_take(self: QueueCore[Any], now: float) -> Any:
        rotate(self)
        return take(self, now)

    def patched_step(self: QueueCore[Any], now: float, prev: Any = None, outcome: int = 0) -> Any:
        if prev is not None:
            self.finish(prev, outcome)
        rotate(self)
        return step(self, now)

    QueueCore.take_next = patched_take  # type: ignore[method-assign]
    QueueCore.next_step = patched_step  # type: ignore[method-assign]
