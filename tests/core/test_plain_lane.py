"""The plain lane (``admit_plain``, ``finish_plain``, ``promote_plain``,
``promote_current``) is the general path restricted to handle-less application work.

The property drives two cores through the same operations: one admits every plain
submission with ``admit_plain`` (its items are the works themselves), the other with
``admit`` (records). Both must give the same answers (accepted or the same rejection,
the same drain flag), the same counts, flags and sequence numbers, and the same works in
the same places, after every step: ``admit_plain`` is ``admit`` and ``finish_plain`` is
``finish`` for that case, as ``_place`` is held to ``admission_verdict``; ``next_plain``
(followed by ``next_step`` when it hands out nothing, as the shell's drain does) is
``next_step`` after a plain work completed."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from zlink_model.errors import ZLinkClosedError, ZLinkProtocolError, ZLinkRejectedError
from zlink_model.invariants import check_core
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import (
    COMPLETED,
    FAILED,
    QueueConfig,
    QueueCore,
    WorkRecord,
    is_plain,
)
from zlink_model.rules import APPLICATION_LANE, LIFECYCLE_LANE, Source
from zlink_model.vocabulary import EVENTS, PLAIN_TRANSITIONS


class Plain:
    """A plain work: a callable that is no record."""

    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        self.index = index

    def __call__(self) -> None:
        return None


class Labelled(WorkRecord):
    __slots__ = ("index",)

    def __init__(self, index: int) -> None:
        super().__init__()
        self.index = index


def label(item: object) -> int:
    return item.index  # type: ignore[attr-defined, no-any-return]


def state(core: QueueCore[Any]) -> tuple[object, ...]:
    """What the two paths must agree on. Lines are read directly (``line`` refuses a
    core with plain works live). Sequence numbers are compared apart: a promotion
    numbers the line's places again."""
    return (
        core.app_count, core.app_bytes, core.life_count, core.life_bytes,
        core.drain_scheduled, core.draining, core.streak, core.closed,
        None if core.turn_holder is None else label(core.turn_holder),
        tuple(tuple(label(r) for r in line) if line else ()
              for line in (core.barrier, core.life, core.app)),
    )


OPS = st.lists(st.tuples(
    st.sampled_from(["post", "post", "post", "life", "barrier", "payload", "enter",
                     "step", "run", "run", "fail", "tick", "close", "promote"]),
    st.integers(0, 300)), max_size=40)


def _policy(cap: int, byte_cap: int, fixed: int, burst: int) -> ZLinkExecutionLanePolicy:
    return ZLinkExecutionLanePolicy(
        application_message_capacity=cap, application_byte_capacity=byte_cap,
        lifecycle_message_capacity=cap, lifecycle_byte_capacity=byte_cap,
        fixed_work_byte_cost=fixed, lifecycle_burst_limit=burst, owner_time_budget_ms=5)


def _answer(fn: Any, *args: Any) -> object:
    """``fn(*args)``'s answer: its result (a work as its label), or the refusal."""
    try:
        res = fn(*args)
        return ("ok", label(res) if isinstance(res, Plain | Labelled) else res)
    except ZLinkClosedError:
        return ("closed",)
    except ZLinkRejectedError as err:
        return ("rejected", err.reason)
    except ZLinkProtocolError as err:
        return ("refused", err.rule)


@settings(max_examples=300, deadline=None)
# The ways a run of plain works may end that random draws reach rarely: a lifecycle or
# barrier-next item admitted while a plain work holds the turn goes ahead of the plain
# head, and the slice ends exactly when its budget (5) is used.
@example(ops=[("post", 0), ("post", 0), ("enter", 0), ("step", 0), ("life", 0), ("run", 0)],
         cap=5, byte_cap=2000, fixed=0, burst=2)
@example(ops=[("post", 0), ("post", 0), ("enter", 0), ("step", 0), ("barrier", 0), ("run", 0)],
         cap=5, byte_cap=2000, fixed=0, burst=2)
@example(ops=[("post", 0), ("post", 0), ("enter", 0), ("step", 0), ("tick", 5), ("run", 0)],
         cap=5, byte_cap=2000, fixed=0, burst=2)
@given(ops=OPS, cap=st.integers(1, 5), byte_cap=st.integers(1, 2000),
       fixed=st.integers(0, 400), burst=st.integers(1, 3))
def test_SE_6_3_plain_lane_agrees_with_the_general_path(
    ops: list[tuple[str, int]], cap: int, byte_cap: int, fixed: int, burst: int,
) -> None:
    config = QueueConfig(_policy(cap, byte_cap, fixed, burst))
    fast: QueueCore[Labelled] = QueueCore(config, "q")
    general: QueueCore[Labelled] = QueueCore(config, "q")
    now = 0
    promoted = 0  # sequence numbers the promotions used
    for i, (op, arg) in enumerate(ops):
        if op == "post":
            a = _answer(fast.admit_plain, Plain(i))
            b = _answer(general.admit, Labelled(i))
        elif op in ("life", "barrier", "payload"):
            lane = LIFECYCLE_LANE if op == "life" else APPLICATION_LANE
            payload = arg if op == "payload" else 0
            barrier = op == "barrier"
            a = _answer(fast.admit, Labelled(i), lane, payload, barrier)
            b = _answer(general.admit, Labelled(i), lane, payload, barrier)
        elif op == "enter":
            a = _answer(fast.enter_drain, now)
            b = _answer(general.enter_drain, now)
        elif op in ("step", "fail", "run"):
            if not general.draining:
                continue
            outcome = FAILED if op == "fail" else COMPLETED
            holder = fast.turn_holder
            if op == "run" and is_plain(holder) and holder is not None:
                # The drain's step through a run of plain works: next_plain, and
                # next_step after it when it handed out nothing.
                a = _answer(fast.next_plain, now, holder)
                if a == ("ok", None):
                    a = _answer(fast.next_step, now, None, outcome)
            else:
                a = _answer(fast.next_step, now, holder, outcome)
            b = _answer(general.next_step, now, general.current, outcome)
        elif op == "tick":
            now += arg % 7
            continue
        elif op == "close":
            fast.close()
            general.close()
            continue
        else:  # promote: every plain work of the fast core becomes a record in place
            before = fast.next_seq
            fast.promote_plain(lambda w: Labelled(label(w)))
            assert not fast.has_plain()
            promoted += fast.next_seq - before
            # Promoted records are ordinary ones: the core's invariants hold on them.
            found = check_core(fast)
            assert not found, found
            a = b = None
        assert a == b, f"step {i} {op}: plain path {a}, general path {b}"
        assert state(fast) == state(general), f"after step {i} {op}"
        assert fast.next_seq == general.next_seq + promoted, f"after step {i} {op}"


def test_SE_6_3_plain_transitions_are_named_in_the_vocabulary() -> None:
    for method, general, _ in PLAIN_TRANSITIONS:
        assert callable(getattr(QueueCore, method)), method
        assert general == "" or general in EVENTS, general
        assert method not in EVENTS  # no trace event of its own: traced queues never use it


def test_SE_6_3_admit_plain_refuses_a_traced_queue_and_a_record() -> None:
    traced: QueueCore[WorkRecord] = QueueCore(
        QueueConfig(ZLinkExecutionLanePolicy(), observer=lambda *a: None), "q")
    with pytest.raises(ZLinkProtocolError, match="admit_plain"):
        traced.admit_plain(Plain(0))
    core: QueueCore[WorkRecord] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy()), "q")
    with pytest.raises(ZLinkProtocolError):
        core.admit_plain(WorkRecord())
    assert core.app_count == 0 and core.app is None


def test_SE_6_3_record_queries_wait_for_promotion_while_plain_works_are_live() -> None:
    core: QueueCore[Labelled] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy()), "q")
    core.admit(Labelled(0))
    core.admit_plain(Plain(1))
    core.admit(Labelled(2))
    for query in (lambda: core.line(Source.APPLICATION), core.live_records, core.copy, core.dispose,
                  core.dispose_safely):
        with pytest.raises(ZLinkProtocolError, match="promote_plain"):
            query()
    assert core.promote_plain(lambda w: Labelled(label(w))) == 1
    assert [r.index for r in core.live_records()] == [0, 1, 2]
    seqs = [r.seq for r in core.live_records()]
    assert seqs == sorted(seqs)
    assert core.app_count == 3 and core.app_bytes == 3 * core.config.fixed_reservation
    ended, live = core.dispose()
    assert [r.index for r in ended] == [0, 1, 2] and live == []
    assert core.app_count == 0 and core.app_bytes == 0


def test_SE_6_7_a_plain_turn_holder_is_promoted_alone_and_ends_as_a_record() -> None:
    core: QueueCore[Labelled] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy()), "q")
    core.admit_plain(Plain(0))
    core.admit_plain(Plain(1))
    core.enter_drain(0)
    head = core.next_step(0)
    assert is_plain(head) and label(head) == 0
    with pytest.raises(ZLinkProtocolError, match="finish_plain"):
        core.finish_plain(Plain(9))
    rec = core.promote_current(lambda w: Labelled(label(w)))
    assert rec is not None and core.turn_holder is rec and rec.index == 0
    assert core.has_plain()  # work 1 still waits as itself
    nxt = core.next_step(0, rec)
    assert is_plain(nxt) and label(nxt) == 1
    assert core.app_count == 1
    assert core.next_step(0, nxt) is None and core.is_idle()


def test_SE_6_7_next_plain_refuses_a_work_that_does_not_hold_the_turn() -> None:
    """``next_plain`` ends the plain turn holder only: not a record, not another plain
    work, not an empty turn; a refusal changes nothing."""
    core: QueueCore[Labelled] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy()), "q")
    first, second = Plain(0), Plain(1)
    core.admit_plain(first)
    core.admit_plain(second)
    core.admit(Labelled(2))
    core.enter_drain(0)
    assert core.next_step(0) is first
    before = state(core)
    for wrong in (second, None, Labelled(3)):
        with pytest.raises(ZLinkProtocolError, match="next_plain"):
            core.next_plain(0, wrong)
        assert state(core) == before
    assert core.next_plain(0, first) is second
    # A record heads the line next: the turn is given back, next_step takes the record.
    assert core.next_plain(0, second) is None and core.turn_holder is None
    assert label(core.next_step(0)) == 2
