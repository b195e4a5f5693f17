"""Rules of the queue core that a sampled cosmic-ray run over ``zlink_model/queue.py``
showed unpinned (issue 15; docs/properties.md lists each survivor and the test that
kills it now). Each test names the rule and uses values that tell the mutant apart:
a capacity above 256 (CPython caches small ints, so ``is`` and ``==`` agree below it),
a lane filled to the exact byte, each guard's two halves."""

from __future__ import annotations

import pytest

from zlink_model.errors import ZLinkClosedError, ZLinkProtocolError, ZLinkRejectedError
from zlink_model.queue import (
    DONE,
    LIFECYCLE_LANE,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from zlink_reference import ZLinkExecutionLanePolicy

Events = list[tuple[str, dict[str, object]]]


def core_of(events: Events | None = None, **kw: int) -> QueueCore[WorkRecord]:
    observer = None if events is None else (lambda _q, e, f: events.append((e, f)))
    return QueueCore(QueueConfig(ZLinkExecutionLanePolicy(**kw), observer=observer), "q")


def test_SE_5_1_the_default_count_capacity_of_1024_is_exact() -> None:
    core = core_of()
    for _ in range(1024):
        core.admit(WorkRecord())
    with pytest.raises(ZLinkRejectedError, match="application_count"):
        core.admit(WorkRecord())
    assert core.app_count == 1024


def test_SE_5_1_a_lifecycle_lane_filled_to_the_exact_byte_accepts() -> None:
    core = core_of(lifecycle_byte_capacity=1000, fixed_work_byte_cost=0)
    core.admit(WorkRecord(), LIFECYCLE_LANE, payload_bytes=600)
    core.admit(WorkRecord(), LIFECYCLE_LANE, payload_bytes=400)  # exactly 1000
    assert core.reserved_of(LIFECYCLE_LANE) == (2, 1000)
    with pytest.raises(ZLinkRejectedError, match="lifecycle_bytes"):
        core.admit(WorkRecord(), LIFECYCLE_LANE, payload_bytes=1)


def test_SD_1_dispose_cancels_queued_barrier_works_and_requeued_ones() -> None:
    core = core_of()
    first, barrier, resumed = WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(resumed, barrier=True)
    core.admit(first)
    core.enter_drain(0)
    assert core.take_next(0) is resumed
    core.yield_turn(resumed)
    core.requeue(resumed)  # a barrier work resumes through the application lane
    core.admit(barrier, barrier=True)
    ended, live = core.dispose()
    assert set(ended) == {first, barrier}
    assert live == [resumed]
    core.cancel(resumed)  # the shell's step on its turn, here direct
    assert resumed.phase == DONE and core.is_idle()


def test_SD_3a_survive_cancel_marks_a_zombie_only_in_a_cancelled_scope() -> None:
    core = core_of()
    rec = WorkRecord()
    core.admit(rec)
    with pytest.raises(ZLinkProtocolError, match="the scope was not cancelled"):
        core.survive_cancel(rec)
    core.enter_drain(0)
    core.take_next(0)
    core.yield_turn(rec)
    ended, live = core.dispose()
    assert ended == [] and live == [rec]
    assert core.survive_cancel(rec) is True
    assert core.zombies == 1 and core.active() == 0
    assert core.survive_cancel(rec) is False  # a zombie stays one


def test_SD_1_dispose_safely_closes_the_scope() -> None:
    core = core_of()
    core.admit(WorkRecord())
    core.dispose_safely()
    assert core.closed
    with pytest.raises(ZLinkClosedError):
        core.admit(WorkRecord())


def test_SD_1_expire_timeout_reports_its_event_with_and_without_an_observer() -> None:
    events: Events = []
    for core in (core_of(events), core_of()):
        core.admit(WorkRecord())
        core.dispose_after_timeout()
        ended, _live = core.expire_timeout()
        assert len(ended) == 1
    assert [e for e, _ in events] == ["admit", "dispose_after_timeout", "expire_timeout",
                                      "cancel"]


def test_SE_6_6_exit_drain_needs_a_drain_and_no_turn_held() -> None:
    core = core_of()
    with pytest.raises(ZLinkProtocolError, match="not draining"):
        core.exit_drain(0)  # not draining, no turn
    rec = WorkRecord()
    core.admit(rec)
    core.enter_drain(0)
    core.take_next(0)
    with pytest.raises(ZLinkProtocolError, match="a turn is held"):
        core.exit_drain(0)  # draining, a turn held
    core.finish(rec)
    core.exit_drain(0)
    assert not core.draining


def test_SE_6_6_end_slice_and_take_next_need_a_drain_and_no_turn_held() -> None:
    core = core_of(owner_time_budget_ms=5)
    for step in (lambda: core.end_slice(10), lambda: core.take_next(0)):
        with pytest.raises(ZLinkProtocolError, match="not draining"):
            step()
    a = WorkRecord()
    core.admit(a)
    core.admit(WorkRecord())
    core.enter_drain(0)
    core.take_next(0)
    for step in (lambda: core.end_slice(10), lambda: core.take_next(0)):
        with pytest.raises(ZLinkProtocolError, match="a turn is held"):
            step()
    assert core.current is a and core.app_count == 2 and core.has_ready()


def test_SD_1_each_scope_mode_indexes_its_own_name() -> None:
    """The mode constants index ``MODE_NAMES`` (what traces and reports print): a
    constant moved off its row would name another mode or none."""
    from zlink_model.queue import (
        MODE_CANCELLED,
        MODE_NAMES,
        MODE_OPEN,
        MODE_SAFELY,
        MODE_TIMEOUT,
    )

    modes = (MODE_OPEN, MODE_SAFELY, MODE_TIMEOUT, MODE_CANCELLED)
    assert modes == (0, 1, 2, 3)
    assert [MODE_NAMES[m] for m in modes] == ["open", "safely", "timeout", "cancelled"]
