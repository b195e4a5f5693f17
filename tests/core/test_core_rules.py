"""The core's hot paths agree with the rules they write out (SE-6.3, SE-6.6), and
transition guards refuse steps the protocol forbids."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zlink_model.queue import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from zlink_model.rules import (
    Source,
    admission_verdict,
    reservation_bytes,
    select_next,
)
from zlink_reference import ZLinkExecutionLanePolicy, ZLinkProtocolError, ZLinkRejectedError


def make_core(**kw: int) -> QueueCore:
    return QueueCore(QueueConfig(ZLinkExecutionLanePolicy(**kw)), "q")


@given(
    count_cap=st.integers(1, 5), byte_cap=st.integers(1, 4000), fixed=st.integers(0, 900),
    prefill=st.lists(st.integers(0, 900), max_size=6), payload=st.integers(0, 2000),
    lifecycle=st.booleans(), closed=st.booleans(),
)
def test_SE_6_3_admit_agrees_with_admission_verdict(
    count_cap: int, byte_cap: int, fixed: int, prefill: list[int], payload: int,
    lifecycle: bool, closed: bool,
) -> None:
    policy = ZLinkExecutionLanePolicy(
        application_message_capacity=count_cap, application_byte_capacity=byte_cap,
        lifecycle_message_capacity=count_cap, lifecycle_byte_capacity=byte_cap,
        fixed_work_byte_cost=fixed,
    )
    core = QueueCore(QueueConfig(policy), "q")
    lane = LIFECYCLE_LANE if lifecycle else APPLICATION_LANE
    for p in prefill:
        try:
            core.admit(WorkRecord(), lane, p)
        except ZLinkRejectedError:
            pass
    if closed:
        core.close()
    count, used = core.reserved_of(lane)
    nbytes = reservation_bytes(payload, fixed)
    verdict = admission_verdict(closed, lifecycle, count, used, nbytes, count_cap, byte_cap)
    before = (core.app_count, core.app_bytes, core.life_count, core.life_bytes, core.next_seq)
    try:
        core.admit(WorkRecord(), lane, payload)
    except ZLinkRejectedError as err:
        assert verdict is not None and err.reason is verdict
        after = (core.app_count, core.app_bytes, core.life_count, core.life_bytes, core.next_seq)
        assert after == before, "a rejected submission changed the queue"
    else:
        assert verdict is None


@given(
    ops=st.lists(st.sampled_from(["app", "life", "barrier", "take"]), max_size=40),
    limit=st.integers(1, 4),
)
def test_SE_6_6_next_step_agrees_with_select_next(ops: list[str], limit: int) -> None:
    core = make_core(lifecycle_burst_limit=limit, application_message_capacity=100,
                     lifecycle_message_capacity=100)
    core.drain_scheduled = False
    taken = 0
    for op in ops:
        if op == "take":
            if core.current is not None:
                core.finish(core.current)
            if not core.draining:
                if not core.has_ready():
                    continue
                if not core.drain_scheduled:
                    continue
                core.enter_drain(0)
            n = [len(core.line(s)) for s in Source]
            expected, streak = select_next(n[0], n[1], n[2], core.streak, limit)
            heads = {s: core.line(s)[0] if n[s] else None for s in Source}
            rec = core.next_step(0)
            if expected is None:
                assert rec is None and not core.draining
            else:
                assert rec is heads[expected] and core.streak == streak
                taken += 1
        else:
            lane = LIFECYCLE_LANE if op == "life" else APPLICATION_LANE
            core.admit(WorkRecord(), lane, 0, barrier=(op == "barrier"))


def test_SE_6_6_guards_refuse_forbidden_steps() -> None:
    core = make_core()
    with pytest.raises(ZLinkProtocolError, match="enter_drain"):
        core.enter_drain(0)
    rec = WorkRecord()
    assert core.admit(rec) is True
    assert core.admit(WorkRecord()) is False  # already scheduled: no second wake
    with pytest.raises(ZLinkProtocolError, match="take_next"):
        core.take_next(0)
    core.enter_drain(0)
    with pytest.raises(ZLinkProtocolError, match="exit_drain"):
        core.exit_drain(0)  # work is ready
    with pytest.raises(ZLinkProtocolError, match="end_slice"):
        core.end_slice(5)  # budget (10 ms) not used
    got = core.take_next(0)
    assert got is rec
    with pytest.raises(ZLinkProtocolError, match="finish"):
        core.finish(WorkRecord())
    with pytest.raises(ZLinkProtocolError, match="requeue"):
        core.requeue(rec)  # running, not suspended
    core.yield_turn(rec)
    with pytest.raises(ZLinkProtocolError, match="yield_turn"):
        core.yield_turn(rec)
    assert core.requeue(rec) is False  # a drain is running: no wake
    with pytest.raises(ZLinkProtocolError, match="take_next"):
        core.take_next(10)  # budget used


def test_SE_4_1_core_refuses_yield_where_none_is_offered() -> None:
    core = QueueCore(QueueConfig(ZLinkExecutionLanePolicy(), yield_allowed=False), "entry")
    rec = WorkRecord()
    core.admit(rec)
    core.enter_drain(0)
    core.take_next(0)
    with pytest.raises(ZLinkProtocolError, match=r"SE-4\.1"):
        core.yield_turn(rec)


def test_D_4_a_barrier_take_resets_the_lifecycle_streak() -> None:
    """With a burst limit of 1, a lifecycle take while application work waits uses the
    whole burst; a barrier item taken next resets the streak (D-4), so the next
    lifecycle item still overtakes the waiting application work."""
    core = make_core(lifecycle_burst_limit=1)
    a0, l0, l1, b0 = WorkRecord(), WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(a0)
    core.admit(l0, LIFECYCLE_LANE)
    core.enter_drain(0)
    assert core.take_next(0) is l0 and core.streak == 1
    core.admit(l1, LIFECYCLE_LANE)
    core.admit(b0, barrier=True)
    core.finish(l0)
    assert core.take_next(0) is b0 and core.streak == 0
    core.finish(b0)
    assert core.take_next(0) is l1 and core.streak == 1
    core.finish(l1)
    assert core.take_next(0) is a0 and core.streak == 0
