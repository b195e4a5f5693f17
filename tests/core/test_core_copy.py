"""What the core offers checkers only: ``QueueCore.copy`` (a faithful copy that evolves on
its own) and the model-only step ``take_next_ahead_of`` (a take as it was before
admissions a runtime reported late), refused where the protocol does not allow it."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from zlink_model.errors import ZLinkProtocolError
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    MODE_SAFELY,
    QUEUED,
    RUNNING,
    SUSPENDED,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from zlink_model.rules import Source


class Named(WorkRecord):
    """A checker's record: the core's fields plus a label of its own."""

    __slots__ = ("label",)

    def __init__(self, label: str) -> None:
        super().__init__()
        self.label = label

    def copy(self) -> Named:
        new = super().copy()
        new.label = self.label
        return new


def make_core(**kw: Any) -> QueueCore[Named]:
    core: QueueCore[Named] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy(**kw)), "q")
    return core


def observable(core: QueueCore[Named]) -> tuple[Any, ...]:
    """Every field of the state, records by label and core fields."""
    def rec(r: Named) -> tuple[Any, ...]:
        return (r.label, r.wid, r.seq, r.lane, r.barrier, r.nbytes, r.phase, r.resumes,
                r.zombie)
    return (
        tuple(tuple(rec(r) for r in core.line(s)) for s in Source),
        None if core.current is None else rec(core.current),
        tuple(sorted(rec(r) for r in core.suspended_records())),
        core.app_count, core.app_bytes, core.life_count, core.life_bytes, core.next_seq,
        core.drain_scheduled, core.draining, core.slice_started_at, core.streak, core.closed,
        core.mode, core.zombies, core.name, core.config,
    )


def busy_core() -> tuple[QueueCore[Named], dict[str, Named]]:
    """A core with every kind of state: a turn held, a suspended work, a resume permit,
    application, lifecycle and barrier-next items, disposed safely (zombies)."""
    core = make_core(lifecycle_burst_limit=2)
    recs = {n: Named(n) for n in ("a", "b", "c", "l", "x", "y")}
    core.admit(recs["a"])
    core.admit(recs["y"])
    core.enter_drain(0)
    core.take_next(0)
    core.yield_turn(recs["a"])
    core.take_next(0)  # y holds the turn
    core.admit(recs["b"], payload_bytes=100)
    core.admit(recs["l"], LIFECYCLE_LANE)
    core.admit(recs["x"], barrier=True)
    core.admit(recs["c"])
    core.requeue(recs["a"])
    core.dispose_safely()
    return core, recs


def test_SE_6_5_a_copy_has_the_same_observable_state() -> None:
    core, _ = busy_core()
    copy = core.copy()
    assert observable(copy) == observable(core)
    assert copy.current is not core.current
    assert not {id(r) for r in copy.live_records()} & {id(r) for r in core.live_records()}


def test_SE_6_5_a_copy_keeps_a_subclass_and_its_own_fields() -> None:
    core, recs = busy_core()
    copy = core.copy()
    assert all(isinstance(r, Named) for r in copy.live_records())
    assert copy.current is not None and copy.current.label == recs["y"].label


def test_SE_6_6_a_copy_evolves_independently() -> None:
    core, recs = busy_core()
    before = observable(core)
    copy = core.copy()
    held = copy.current
    assert held is not None
    copy.finish(held)
    taken = copy.take_next(0)
    assert taken.label == "x"  # barrier-next first
    copy.close()
    assert observable(core) == before  # the original did not move
    assert core.current is recs["y"] and core.current.phase == RUNNING
    core.finish(recs["y"])  # and it still runs its own course
    assert core.take_next(0) is recs["x"]
    assert copy.closed and observable(copy)[1:12] == observable(core)[1:12]


def test_SE_6_7_a_copy_of_a_suspended_work_requeues_in_the_copy_only() -> None:
    core = make_core()
    a = Named("a")
    core.admit(a)
    core.enter_drain(0)
    core.take_next(0)
    core.yield_turn(a)
    copy = core.copy()
    (suspended,) = copy.suspended_records()
    copy.requeue(suspended)
    assert a.phase == SUSPENDED and core.suspended_records() == (a,)
    assert suspended.phase != SUSPENDED and copy.suspended_records() == ()


def test_copy_shares_one_record_map_across_cores() -> None:
    first, second = make_core(), make_core()
    shared = Named("s")
    first.admit(shared)
    kept = Named("kept")  # a record a checker keeps beside the cores
    memo: dict[Named, Named] = {}
    a, b = first.copy(memo), second.copy(memo)
    assert a.line(Source.APPLICATION)[0] is memo[shared]
    assert b.line(Source.APPLICATION) == ()
    assert memo.setdefault(kept, kept.copy()) is memo[kept]
    # the same map again gives the same copies
    assert first.copy(memo).line(Source.APPLICATION)[0] is memo[shared]


@given(st.lists(st.sampled_from(["app", "life", "barrier", "take", "finish", "yield",
                                 "requeue"]), max_size=25))
def test_SE_6_6_a_copy_steps_like_its_original(ops: list[str]) -> None:
    """Whatever the state, the copy and the original make the same choices after it."""
    core = make_core(lifecycle_burst_limit=2)
    n = 0
    for op in ops:
        try:
            if op in ("app", "life", "barrier"):
                n += 1
                core.admit(Named(f"w{n}"), LIFECYCLE_LANE if op == "life" else APPLICATION_LANE,
                           barrier=op == "barrier")
            elif op == "take":
                if not core.draining and core.drain_scheduled:
                    core.enter_drain(0)
                core.take_next(0)
            elif op == "finish" and core.current is not None:
                core.finish(core.current)
            elif op == "yield" and core.current is not None:
                core.yield_turn(core.current)
            elif op == "requeue" and core.suspended_records():
                core.requeue(core.suspended_records()[0])
        except ZLinkProtocolError:
            pass
    copy = core.copy()
    assert observable(copy) == observable(core)
    for c in (core, copy):
        if c.current is not None:
            c.finish(c.current)
        # The suspended set has no order; requeue both in the same (label) order.
        for r in sorted(c.suspended_records(), key=lambda r: r.label):
            c.requeue(r)
        if not c.draining and c.drain_scheduled:
            c.enter_drain(0)
    order = []
    for c in (core, copy):
        labels = []
        while c.draining and c.has_ready():
            r = c.take_next(0)
            labels.append(r.label)
            c.finish(r)
        order.append(labels)
    assert order[0] == order[1]
    assert observable(copy) == observable(core)


# ------------------------------------------------------------------ take_next_ahead_of
def draining_core(*labels: str, **kw: Any) -> tuple[QueueCore[Named], list[Named]]:
    core = make_core(**kw)
    recs = [Named(label) for label in labels]
    for r in recs:
        core.admit(r)
    core.enter_drain(0)
    return core, recs


def test_SE_6_6_take_next_ahead_of_takes_as_before_the_late_admissions() -> None:
    core, (a, b, c) = draining_core("a", "b", "c")
    counts = core.reserved_of(APPLICATION_LANE)
    taken = core.take_next_ahead_of([b], 0)
    assert taken is a
    assert [r.label for r in core.line(Source.APPLICATION)] == ["c", "b"]
    assert b.phase == QUEUED and b.seq > c.seq and b.wid == b.seq
    assert core.reserved_of(APPLICATION_LANE) == counts  # nothing released or reserved


def test_SE_6_6_take_next_ahead_of_the_head_gives_the_turn_to_the_next() -> None:
    core, (a, b) = draining_core("a", "b")
    assert core.take_next_ahead_of([a], 0) is b
    assert core.line(Source.APPLICATION) == (a,)


def test_SE_6_6_take_next_ahead_of_nothing_is_take_next() -> None:
    core, (a, _b) = draining_core("a", "b")
    copy = core.copy()
    assert core.take_next_ahead_of([], 0) is a
    assert copy.take_next(0).label == "a"
    assert observable(copy) == observable(core)


def test_SE_6_6_take_next_ahead_of_keeps_lines_and_zombies() -> None:
    core = make_core()
    a, b, life, bar = Named("a"), Named("b"), Named("l"), Named("x")
    core.admit(a)
    core.admit(life, LIFECYCLE_LANE)
    core.admit(bar, barrier=True)
    core.admit(b)
    core.dispose_safely()
    core.enter_drain(0)
    zombies = core.zombies
    assert core.take_next_ahead_of([bar, life], 0) is a
    assert core.line(Source.BARRIER) == (bar,) and core.line(Source.LIFECYCLE) == (life,)
    assert life.seq < bar.seq  # placed again in their admission order, not the given one
    assert core.zombies == zombies and core.mode == MODE_SAFELY and bar.zombie


def test_SE_6_3_take_next_ahead_of_a_started_work_is_refused() -> None:
    core, (a, b) = draining_core("a", "b")
    core.take_next(0)
    core.yield_turn(a)
    before = observable(core)
    with pytest.raises(ZLinkProtocolError, match=r"take_next_ahead_of.*\(SE-6\.3\)"):
        core.take_next_ahead_of([a], 0)
    assert observable(core) == before
    core.requeue(a)  # a resume permit is no admission either
    with pytest.raises(ZLinkProtocolError, match=r"SE-6\.3"):
        core.take_next_ahead_of([a], 0)
    assert core.take_next_ahead_of([], 0) is b


def test_SE_6_3_take_next_ahead_of_a_work_of_another_core_is_refused() -> None:
    core, _ = draining_core("a", "b")
    _other, (stranger,) = draining_core("s")
    before = observable(core)
    with pytest.raises(ZLinkProtocolError, match=r"not queued in q"):
        core.take_next_ahead_of([stranger], 0)
    assert observable(core) == before


def test_SE_6_6_take_next_ahead_of_when_no_take_is_allowed_is_refused() -> None:
    core, (a,) = draining_core("a")
    b = Named("b")
    core.admit(b)
    core.take_next(0)
    before = observable(core)
    with pytest.raises(ZLinkProtocolError, match=r"take_next: not draining, or a turn is held"):
        core.take_next_ahead_of([b], 0)  # a turn is held
    assert observable(core) == before
    core.finish(a)
    with pytest.raises(ZLinkProtocolError, match=r"nothing is ready \(SE-6\.6\)"):
        core.take_next_ahead_of([b], 0)  # only late work is ready
    assert observable(core)[0] == ((), (), (("b", b.wid, b.seq, APPLICATION_LANE, False,
                                              b.nbytes, QUEUED, 0, False),))


def test_SE_6_4_take_next_ahead_of_past_the_budget_is_refused() -> None:
    core, (_a, b) = draining_core("a", "b", owner_time_budget_ms=5)
    before = observable(core)
    with pytest.raises(ZLinkProtocolError, match=r"SE-6\.4"):
        core.take_next_ahead_of([b], 5)
    assert observable(core) == before
