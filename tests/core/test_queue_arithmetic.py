"""The queue core's arithmetic (SE-6.4, SE-5.1, SD-2): the time budget in clock units,
the idle test, and the live/active/reserved counts, each with numbers that tell a
wrong operator apart (both lanes non-zero, unequal, and a clock whose unit is not the
millisecond). These close gaps a mutation run over ``zlink_model/queue.py`` found
(issue 15, defect 10; docs/properties.md lists the run)."""

from __future__ import annotations

import pytest

from zlink_model.queue import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from zlink_reference import ZLinkExecutionLanePolicy


def core_of(units_per_ms: float = 1.0, **kw: int) -> QueueCore[WorkRecord]:
    policy = ZLinkExecutionLanePolicy(**{"owner_time_budget_ms": 10, **kw})
    return QueueCore(QueueConfig(policy, units_per_ms=units_per_ms), "q")


@pytest.mark.parametrize("units_per_ms", [1, 1000, 0.5])
def test_SE_6_4_the_budget_is_counted_in_the_clocks_units(units_per_ms: float) -> None:
    core = core_of(units_per_ms)
    budget = 10 * units_per_ms
    assert core.config.budget == budget
    a, b, c = WorkRecord(), WorkRecord(), WorkRecord()
    for rec in (a, b, c):
        core.admit(rec)
    core.enter_drain(100)
    assert core.take_next(100) is a
    # One unit short of the budget: the slice goes on.
    assert core.next_step(100 + budget - 0.25, a) is b
    # Exactly the budget: the slice ends, and the work left is scheduled (D-10).
    assert core.next_step(100 + budget, b) is None
    assert not core.draining and core.drain_scheduled
    assert core.has_ready()


def test_SE_6_4_a_millisecond_clock_budget_is_not_a_microsecond_one() -> None:
    """The same 10 ms budget on a clock counting microseconds: 9,999 units in, the
    slice is not over; on a millisecond clock it would be long over."""
    micro, milli = core_of(1000), core_of(1)
    for core in (micro, milli):
        first, second = WorkRecord(), WorkRecord()
        core.admit(first)
        core.admit(second)
        core.enter_drain(0)
        core.take_next(0)
    assert micro.next_step(9_999, micro.current) is not None
    assert milli.next_step(9_999, milli.current) is None


def test_SE_6_6_is_idle_sees_live_lifecycle_work_alone() -> None:
    core = core_of()
    assert core.is_idle()
    rec = WorkRecord()
    core.admit(rec, LIFECYCLE_LANE)
    assert not core.is_idle() and core.app_count == 0
    core.enter_drain(0)
    core.take_next(0)
    assert not core.is_idle()  # running still counts
    core.finish(rec)
    assert core.is_idle()


def test_SE_6_6_is_idle_sees_live_application_work_alone() -> None:
    core = core_of()
    core.admit(WorkRecord(), APPLICATION_LANE)
    assert not core.is_idle() and core.life_count == 0


def test_SD_2_live_and_active_add_both_lanes_and_subtract_zombies() -> None:
    core = core_of()
    for _ in range(2):
        core.admit(WorkRecord(), APPLICATION_LANE, payload_bytes=10)
    for _ in range(3):
        core.admit(WorkRecord(), LIFECYCLE_LANE, payload_bytes=7)
    assert core.live() == 5
    assert core.active() == 5
    assert core.reserved_of(APPLICATION_LANE) == (2, 2 * (10 + 256))
    assert core.reserved_of(LIFECYCLE_LANE) == (3, 3 * (7 + 256))
    core.enter_drain(0)
    taken = core.take_next(0)  # a lifecycle work: it overtakes
    core.yield_turn(taken)  # suspended: still live, still reserved
    assert core.live() == 5 and core.reserved_of(LIFECYCLE_LANE)[0] == 3
    marked = core.dispose_safely()
    assert len(marked) == 5 and core.zombies == 5
    assert core.live() == 5 and core.active() == 0
    core.requeue(taken)
    core.cancel(taken)  # a finished zombie leaves the scope (SD-2)
    assert core.zombies == 4 and core.live() == 4 and core.active() == 0
    assert core.reserved_of(LIFECYCLE_LANE) == (2, 2 * (7 + 256))


def test_SE_5_1_a_payload_reservation_is_payload_plus_fixed_cost() -> None:
    core = core_of(fixed_work_byte_cost=100)
    core.admit(WorkRecord(), APPLICATION_LANE, payload_bytes=1)
    core.admit(WorkRecord(), APPLICATION_LANE)
    assert core.reserved_of(APPLICATION_LANE) == (2, 101 + 100)


def test_SE_6_3_sequence_numbers_are_consecutive_across_admit_transfer_and_requeue() -> None:
    """Each step that places an item takes the next sequence number, exactly one more
    than the last (SE-6.3, D-1): an order key that skipped or repeated numbers would
    still sort, but wids would no longer name admissions one to one."""
    core = core_of()
    a, b, c = WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(a)
    core.admit(b, LIFECYCLE_LANE)
    core.transfer(c)
    assert [a.seq, b.seq, c.seq] == [0, 1, 2] and core.next_seq == 3
    core.enter_drain(0)
    taken = core.take_next(0)
    core.yield_turn(taken)
    core.requeue(taken)
    assert taken.seq == 3 and taken.wid == 1 and core.next_seq == 4
    d = WorkRecord()
    core.admit(d)
    assert d.seq == d.wid == 4


def test_SD_1_dispose_ends_the_never_started_works_itself() -> None:
    """``dispose`` cancels queued works in the core and returns them first; the live
    ones it returns second are the shell's to cancel on their turn (D-8)."""
    core = core_of()
    running, queued_app, queued_life, suspended = (WorkRecord() for _ in range(4))
    core.admit(suspended)
    core.admit(running)
    core.enter_drain(0)
    core.yield_turn(core.take_next(0))
    assert core.take_next(0) is running
    core.admit(queued_app)
    core.admit(queued_life, LIFECYCLE_LANE)
    ended, live = core.dispose()
    assert set(ended) == {queued_app, queued_life}
    assert all(r.phase == 4 for r in ended)  # DONE
    assert set(live) == {running, suspended}
    assert core.reserved_of(LIFECYCLE_LANE) == (0, 0)
    assert core.reserved_of(APPLICATION_LANE) == (2, 2 * 256)


def test_SE_6_3_the_model_only_take_ahead_numbers_moved_works_consecutively() -> None:
    """``take_next_ahead_of`` (checkers only) gives each moved admission the next
    number, as its admission would have had after the take."""
    core = core_of()
    a, b, c = WorkRecord(), WorkRecord(), WorkRecord()
    for rec in (a, b, c):
        core.admit(rec)
    core.enter_drain(0)
    assert core.take_next_ahead_of([b, c], 0) is a
    assert (b.seq, c.seq, core.next_seq) == (3, 4, 5)
    d = WorkRecord()
    core.admit(d)
    assert d.seq == 5


def test_SD_1_a_timeout_expires_only_while_it_runs() -> None:
    """``expire_timeout`` of a scope already cancelled (``dispose`` came first) is
    refused: the timeout no longer runs, and cancelling twice is no step (SD-1)."""
    from zlink_model.errors import ZLinkProtocolError

    core = core_of()
    core.admit(WorkRecord())
    with pytest.raises(ZLinkProtocolError, match="no disposal timeout is running"):
        core.expire_timeout()  # open scope
    core.dispose_after_timeout()
    core.dispose()
    with pytest.raises(ZLinkProtocolError, match="no disposal timeout is running"):
        core.expire_timeout()  # cancelled by dispose meanwhile


def test_SE_6_6_the_fast_take_reports_streak_zero_in_its_event() -> None:
    """The drain's shortcut for "only application work is ready" emits the same
    ``take_next`` event ``take_next`` would: streak 0 (the trace format's field)."""
    events: list[tuple[str, dict[str, object]]] = []
    policy = ZLinkExecutionLanePolicy(owner_time_budget_ms=10)
    core: QueueCore[WorkRecord] = QueueCore(
        QueueConfig(policy, observer=lambda _q, e, f: events.append((e, f))), "q")
    a, b = WorkRecord(), WorkRecord()
    core.admit(a)
    core.admit(b)
    core.enter_drain(0)
    core.take_next(0)
    assert core.next_step(1, a) is b  # the shortcut
    takes = [f for e, f in events if e == "take_next"]
    assert [(t["work"], t["streak"], t["source"], t["resume"]) for t in takes] == [
        (0, 0, "application", False), (1, 0, "application", False)]
