"""The core's hot paths write three rules out instead of calling them (a call less per
work, which the interpreted benchmarks measure): the capacity test of
``rules.admission_verdict`` in ``_place`` and ``admit_plain``, ``rules.slice_expired``
in ``next_step`` and ``next_plain``, and ``rules.select_next``'s answer for "only
application work is ready" in ``next_step``. Hypothesis samples these (test_core_rules,
test_plain_lane); here every small input is tried, so a copy that drifts from its rule
on any small case fails by name."""

from __future__ import annotations

import itertools

import pytest

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
    slice_expired,
)
from zlink_reference import ZLinkExecutionLanePolicy, ZLinkRejectedError

PAYLOADS = (0, 1, 3)
FIXED = (0, 2)
COUNT_CAPS = (1, 2, 3)


def _byte_caps(fixed: int) -> list[int]:
    """Byte capacities on and around every boundary the small payloads can reach."""
    edges = {k * fixed + d for k in range(5) for d in range(-1, 8)}
    return sorted(b for b in edges if b >= 1)


def _core(count_cap: int, byte_cap: int, fixed: int) -> QueueCore[WorkRecord]:
    policy = ZLinkExecutionLanePolicy(
        application_message_capacity=count_cap, application_byte_capacity=byte_cap,
        lifecycle_message_capacity=count_cap, lifecycle_byte_capacity=byte_cap,
        fixed_work_byte_cost=fixed)
    return QueueCore(QueueConfig(policy), "q")


def _fill(core: QueueCore[WorkRecord], lane: int, prefill: tuple[int, ...]) -> None:
    for p in prefill:
        try:
            core.admit(WorkRecord(), lane, p)
        except ZLinkRejectedError:
            pass


@pytest.mark.parametrize("fixed", FIXED)
def test_SE_6_3_place_writes_admission_verdict_out_exactly(fixed: int) -> None:
    """``admit`` (``_place``) accepts exactly when ``admission_verdict`` says so, and
    rejects with its reason, on every small lane state."""
    for count_cap, byte_cap, lifecycle, closed in itertools.product(
            COUNT_CAPS, _byte_caps(fixed), (False, True), (False, True)):
        lane = LIFECYCLE_LANE if lifecycle else APPLICATION_LANE
        for n in range(count_cap + 1):
            for prefill in itertools.product(PAYLOADS, repeat=n):
                for payload in PAYLOADS:
                    core = _core(count_cap, byte_cap, fixed)
                    _fill(core, lane, prefill)
                    if closed:
                        core.close()
                    count, used = core.reserved_of(lane)
                    verdict = admission_verdict(
                        closed, lifecycle, count, used, reservation_bytes(payload, fixed),
                        count_cap, byte_cap)
                    try:
                        core.admit(WorkRecord(), lane, payload)
                        got = None
                    except ZLinkRejectedError as err:
                        got = err.reason
                    assert got is verdict, (
                        f"SE-6.3: admit answered {got} where admission_verdict says "
                        f"{verdict} (caps {count_cap}/{byte_cap}, fixed {fixed}, lane "
                        f"{lane}, closed {closed}, prefill {prefill}, payload {payload})")


@pytest.mark.parametrize("fixed", FIXED)
def test_SE_6_3_admit_plain_writes_admission_verdict_out_exactly(fixed: int) -> None:
    """``admit_plain`` (a posted work reserves the fixed cost) accepts exactly when
    ``admission_verdict`` says so, on every small application-lane state."""
    for count_cap, byte_cap, closed in itertools.product(
            COUNT_CAPS, _byte_caps(fixed), (False, True)):
        for n in range(count_cap + 1):
            for prefill in itertools.product(PAYLOADS, repeat=n):
                core = _core(count_cap, byte_cap, fixed)
                _fill(core, APPLICATION_LANE, prefill)
                if closed:
                    core.close()
                count, used = core.reserved_of(APPLICATION_LANE)
                verdict = admission_verdict(closed, False, count, used,
                                            reservation_bytes(0, fixed), count_cap, byte_cap)
                try:
                    core.admit_plain(lambda: None)
                    got = None
                except ZLinkRejectedError as err:
                    got = err.reason
                assert got is verdict, (
                    f"SE-6.3: admit_plain answered {got} where admission_verdict says "
                    f"{verdict} (caps {count_cap}/{byte_cap}, fixed {fixed}, closed "
                    f"{closed}, prefill {prefill})")


BUDGETS_MS = (1, 2, 2.5)
STARTS = (0, 1, 1.5)
OFFSETS = (-1, -0.5, 0, 0.25, 0.5, 1, 2)


def _drain_core(budget_ms: float) -> QueueCore[WorkRecord]:
    policy = ZLinkExecutionLanePolicy(owner_time_budget_ms=budget_ms)
    return QueueCore(QueueConfig(policy, units_per_ms=1), "q")


def test_SE_6_4_next_step_writes_slice_expired_out_exactly() -> None:
    """``next_step`` ends the slice exactly when ``slice_expired`` says the budget is
    used, for every small reading of the clock."""
    for budget, start, offset in itertools.product(BUDGETS_MS, STARTS, OFFSETS):
        now = start + budget + offset
        core = _drain_core(budget)
        core.admit(WorkRecord(), APPLICATION_LANE, 0)
        core.admit(WorkRecord(), APPLICATION_LANE, 0)
        core.enter_drain(start)
        expired = slice_expired(now, start, core.config.budget)
        rec = core.next_step(now)
        assert (rec is None) == expired, (
            f"SE-6.4: next_step at {now} (slice from {start}, budget {budget}) "
            f"{'ended' if rec is None else 'went on with'} the slice; slice_expired "
            f"says {expired}")


def test_SE_6_4_next_plain_writes_slice_expired_out_exactly() -> None:
    """``next_plain`` hands out the next posted work only while ``slice_expired`` says
    the budget is not used, for every small reading of the clock."""
    for budget, start, offset in itertools.product(BUDGETS_MS, STARTS, OFFSETS):
        now = start + budget + offset
        core = _drain_core(budget)
        first, second = (lambda: None), (lambda: None)
        core.admit_plain(first)
        core.admit_plain(second)
        core.enter_drain(start)
        assert core.next_step(start) is first
        expired = slice_expired(now, start, core.config.budget)
        nxt = core.next_plain(now, first)
        assert (nxt is None) == expired, (
            f"SE-6.4: next_plain at {now} (slice from {start}, budget {budget}) "
            f"{'stopped' if nxt is None else 'handed out the next work'}; slice_expired "
            f"says {expired}")


OPS = ("app", "plain", "life", "barrier", "take")


@pytest.mark.parametrize("limit", (1, 2, 3))
def test_SE_6_6_next_step_writes_select_next_out_exactly(limit: int) -> None:
    """Every sequence of up to five submissions and takes: ``next_step`` gives the
    turn to the head of the lane ``select_next`` picks and leaves its streak, whether
    the work is a record or a posted one."""
    policy = ZLinkExecutionLanePolicy(lifecycle_burst_limit=limit,
                                      application_message_capacity=100,
                                      lifecycle_message_capacity=100)
    for length in range(1, 6):
        for ops in itertools.product(OPS, repeat=length):
            core: QueueCore[WorkRecord] = QueueCore(QueueConfig(policy), "q")
            for op in ops:
                if op == "take":
                    holder = core.turn_holder
                    if holder is not None:
                        if isinstance(holder, WorkRecord):
                            core.finish(holder)
                        else:
                            core.finish_plain(holder)
                    if not core.draining:
                        if not core.drain_scheduled:
                            continue
                        core.enter_drain(0)
                    # The lines as they stand (``line()`` would refuse posted works).
                    lines = {Source.BARRIER: core.barrier, Source.LIFECYCLE: core.life,
                             Source.APPLICATION: core.app}
                    n = {s: len(line) if line else 0 for s, line in lines.items()}
                    expected, streak = select_next(n[Source.BARRIER], n[Source.LIFECYCLE],
                                                   n[Source.APPLICATION], core.streak, limit)
                    heads = {s: line[0] if line else None for s, line in lines.items()}
                    got = core.next_step(0)
                    if expected is None:
                        assert got is None and not core.draining, (
                            f"SE-6.6: next_step took {got!r} with nothing ready ({ops})")
                    else:
                        assert got is heads[expected] and core.streak == streak, (
                            f"SE-6.6: next_step took {got!r} (streak {core.streak}); "
                            f"select_next says the head of {expected.name} (streak "
                            f"{streak}) after {ops}")
                elif op == "plain":
                    core.admit_plain(lambda: None)
                else:
                    lane = LIFECYCLE_LANE if op == "life" else APPLICATION_LANE
                    core.admit(WorkRecord(), lane, 0, barrier=(op == "barrier"))
