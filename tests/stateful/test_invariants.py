"""Each invariant predicate holds on a correct run and fails on a deliberately broken
one: a trace with one event changed, dropped or added, or a core with one field
corrupted. The correct runs are recorded from the pure core, so they are what the model
allows by construction (and replay through it)."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from zlink_model import invariants as inv
from zlink_model.errors import ZLinkProtocolError
from zlink_model.queue import FAILED, QueueConfig, QueueCore, WorkRecord
from zlink_model.replay import check_trace, replay
from zlink_model.rules import APPLICATION_LANE, LIFECYCLE_LANE
from zlink_reference import ZLinkExecutionLanePolicy, ZLinkRejectedError
from zlink_reference.testing import TraceEvent, TraceRecorder

POLICY = ZLinkExecutionLanePolicy(
    application_message_capacity=3, application_byte_capacity=10,
    lifecycle_message_capacity=2, lifecycle_byte_capacity=10, fixed_work_byte_cost=1,
    lifecycle_burst_limit=1, owner_time_budget_ms=5)


def run(script: Callable[[QueueCore], None]) -> tuple[QueueCore, list[TraceEvent]]:
    rec = TraceRecorder()
    core = QueueCore(QueueConfig(POLICY, observer=rec), "q")
    script(core)
    return core, rec.events


def busy_queue(core: QueueCore) -> None:
    """Every lane, a rejection, a yield and its resume, a failure, a slice that ends on
    its budget and reschedules, close, and a safe disposal with a zombie that ends."""
    a, b, c, d = WorkRecord(), WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(a, APPLICATION_LANE, 1)
    core.admit(b, LIFECYCLE_LANE)
    core.admit(c)
    core.admit(d, barrier=True)
    with pytest.raises(ZLinkRejectedError):
        core.admit(WorkRecord())  # the application lane is full (3)
    core.enter_drain(0)
    assert core.take_next(0) is d
    core.finish(d)
    assert core.take_next(0) is b  # lifecycle first, streak 1
    core.finish(b)
    assert core.take_next(0) is a  # the burst limit (1) is reached
    core.yield_turn(a)
    assert core.take_next(0) is c
    core.finish(c, FAILED)
    core.exit_drain(0)
    core.requeue(a)
    core.enter_drain(1)
    assert core.take_next(1) is a  # the resume
    e, f = WorkRecord(), WorkRecord()
    core.admit(e)
    core.admit(f)
    core.finish(a)
    core.end_slice(6)  # the budget (5) is used, work is ready
    core.enter_drain(6)
    assert core.take_next(6) is e
    core.finish(e)
    assert core.take_next(6) is f
    core.yield_turn(f)
    core.exit_drain(6)
    core.close()
    core.dispose_safely()  # f is a zombie
    core.requeue(f)
    core.enter_drain(7)
    assert core.take_next(7) is f
    core.finish(f)
    core.exit_drain(7)


def disposed_queue(core: QueueCore) -> None:
    """A dispose while one work runs and one never started."""
    a, b = WorkRecord(), WorkRecord()
    core.admit(a)
    core.admit(b)
    core.enter_drain(0)
    core.take_next(0)
    core.dispose()  # b never started: cancelled now
    core.finish(a, 2)
    core.exit_drain(0)


def burst_then_barrier(core: QueueCore) -> None:
    """A lifecycle take while application work waits uses the whole burst (limit 1);
    a barrier-next take then resets the streak (D-4), so the next lifecycle item
    overtakes the waiting application work again. Whatever the core takes is finished,
    so a core with a wrong count still leaves a whole trace for the checker to judge."""
    a0, l0, l1, b0 = WorkRecord(), WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(a0)
    core.admit(l0, LIFECYCLE_LANE)
    core.enter_drain(0)
    core.finish(core.take_next(0))
    core.admit(l1, LIFECYCLE_LANE)
    core.admit(b0, barrier=True)
    for _ in range(3):
        core.finish(core.take_next(0))
    core.exit_drain(0)


# --------------------------------------------------------------- editing traces
def index(events: list[TraceEvent], event: str, nth: int = 0, **fields: Any) -> int:
    hits = [i for i, e in enumerate(events) if e.event == event
            and all(e.fields.get(k) == v for k, v in fields.items())]
    return hits[nth]


def edit(events: list[TraceEvent], i: int, **fields: Any) -> list[TraceEvent]:
    out = list(events)
    out[i] = dataclasses.replace(out[i], fields={**out[i].fields, **fields})
    return out


def drop(events: list[TraceEvent], *idx: int) -> list[TraceEvent]:
    return [e for i, e in enumerate(events) if i not in idx]


def insert(events: list[TraceEvent], i: int, event: str, **fields: Any) -> list[TraceEvent]:
    return [*events[:i], TraceEvent(-1, "q", event, fields), *events[i:]]


@functools.cache
def busy() -> tuple[QueueCore, list[TraceEvent]]:
    """The correct busy run, made on first use (never at collection: a broken core must
    fail these tests, not stop pytest from collecting the machines)."""
    return run(busy_queue)


@functools.cache
def disposed() -> tuple[QueueCore, list[TraceEvent]]:
    """The correct run with disposals, made on first use."""
    return run(disposed_queue)


def test_the_correct_runs_replay_and_keep_every_invariant() -> None:
    for core, events in (busy(), disposed()):
        assert replay(events, POLICY).ok
        assert check_trace(events, POLICY).ok, check_trace(events, POLICY).lines()
        assert inv.check_queue(core, events, policy=POLICY) == []
        for name in inv.INVARIANTS:
            pred = getattr(inv, name)
            if "spot" not in inv.INVARIANTS[name].over:
                assert pred(core, events, policy=POLICY), name


# ------------------------------------------------------------- trace breakages
def broken_traces() -> list[tuple[str, list[TraceEvent]]]:
    _, ev = busy()
    _, dis = disposed()
    return [
        # a submission while draining posts a second drain
        ("NoDoubleDrain", edit(ev, index(ev, "admit", work=5), wake=True)),
        # the drain entered twice
        ("NoDoubleDrain", insert(ev, index(ev, "enter_drain") + 1, "enter_drain", now=0)),
        # the second application item served before the first
        ("FifoWithinLane", edit(edit(ev, index(ev, "take_next", work=0), pos=2, work=2),
                                index(ev, "take_next", work=2), pos=0, work=0)),
        ("LifecycleBurstBounded", edit(ev, index(ev, "take_next", work=1), streak=2)),
        # the yielded work finishes without queueing a resume permit or taking a turn
        ("NoResumeWithoutRequeue", drop(ev, index(ev, "requeue", work=0),
                                        index(ev, "enter_drain", now=1),
                                        index(ev, "take_next", work=0, resume=True))),
        # a take while another work holds the turn
        ("NoResumeWithoutRequeue", drop(ev, index(ev, "finish", work=3))),
        ("NoLostWakeup", edit(ev, index(ev, "end_slice"), reschedule=False)),
        # an admission the count limit should have refused
        ("CapacityRespected", insert(ev, index(ev, "reject"), "admit", work=99, pos=4,
                                     lane="application", barrier=False, bytes=1,
                                     wake=False)),
        ("SliceBounded", edit(ev, index(ev, "take_next", work=5), now=11)),
        ("NoWorkAcceptedAfterClose", insert(ev, index(ev, "close") + 1, "admit", work=50,
                                            pos=50, lane="lifecycle", barrier=False,
                                            bytes=1, wake=False)),
        ("ZombiesCounted", edit(ev, index(ev, "dispose_safely"), zombies=0)),
        ("EveryAcceptedWorkEndsOnce", insert(ev, index(ev, "finish", work=3) + 1, "finish",
                                             work=3, outcome="completed")),
        # the never-started work runs after dispose instead of being cancelled
        ("CancellationOnOwnTurn", insert(drop(dis, index(dis, "cancel")),
                                         index(dis, "finish"), "take_next", work=1, pos=1,
                                         source="application", resume=False, streak=0,
                                         now=0)),
        # a started (suspended) work ended by cancel, off its turn
        ("CancellationOnOwnTurn", insert(ev, index(ev, "yield_turn", work=6) + 1, "cancel",
                                         work=6, phase="suspended")),
        ("WellFormedTrace", insert(ev, 3, "teleport")),
        ("WellFormedTrace", edit(ev, index(ev, "finish", work=3), outcome="vanished")),
    ]


def test_D_4_the_trace_checker_derives_the_streak_a_barrier_take_resets() -> None:
    """The streak is computed from the takes and the lines, not copied from the
    runtime: a core that keeps its lifecycle streak across a barrier-next take and
    reports the count it keeps (each reported streak within the burst limit) breaks
    LifecycleBurstBounded. Killer of the ``barrier_keeps_streak`` mutant."""
    _, events = run(burst_then_barrier)
    takes = [(e.fields["source"], e.fields["streak"]) for e in events
             if e.event == "take_next"]
    assert check_trace(events, POLICY).ok, check_trace(events, POLICY).lines()
    assert inv.LifecycleBurstBounded(trace=events, policy=POLICY)
    assert takes == [("lifecycle", 1), ("barrier", 0), ("lifecycle", 1),
                     ("application", 0)]


def test_D_4_a_reported_streak_that_disagrees_with_the_rules_is_a_failure() -> None:
    """A barrier-next take that reports the streak kept (1, within the limit) instead
    of reset: the derived streak is 0, and the disagreement is named by its rule."""
    _, events = run(burst_then_barrier)
    bad = edit(events, index(events, "take_next", source="barrier"), streak=1)
    assert not inv.LifecycleBurstBounded(trace=bad, policy=POLICY)
    found = [v for v in check_trace(bad, POLICY).violations
             if v.invariant == "LifecycleBurstBounded"]
    assert found and "reports streak 1, the rules give 0" in found[0].message, found
    # without a policy (no burst limit to judge) the disagreement is still seen
    assert not inv.LifecycleBurstBounded(trace=bad)


def lifecycle_overtakes(core: QueueCore) -> None:
    """Application work waits, then a lifecycle item comes: within the burst limit the
    lifecycle item is served first (SE-6.6, SE-6.1)."""
    a0, a1, l0 = WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(a0)
    core.admit(a1)
    core.admit(l0, LIFECYCLE_LANE)
    core.enter_drain(0)
    for _ in range(3):
        core.finish(core.take_next(0))
    core.exit_drain(0)


def test_SE_6_6_the_trace_checker_derives_the_line_each_take_serves() -> None:
    """The line a take serves is computed from the lines, the derived streak and the
    burst limit (rules.select_next), not taken from the trace: a core that serves the
    waiting application work before a lifecycle item it should let overtake (streak 0,
    every line in order) breaks LifecycleBurstBounded. Killer of the
    ``lifecycle_waits_for_application`` mutant."""
    _, events = run(lifecycle_overtakes)
    found = check_trace(events, POLICY)
    assert found.ok, found.lines()
    takes = [e.fields["source"] for e in events if e.event == "take_next"]
    assert takes == ["lifecycle", "application", "application"]


def test_SE_6_6_a_take_from_the_wrong_line_is_named_with_the_line_the_rules_serve() -> None:
    """The trace edited so that the application work is taken while the lifecycle item
    waits (and the lifecycle item after it): each line stays in order and the streak
    within the limit, yet the choice of line is not the rules'."""
    _, events = run(lifecycle_overtakes)
    takes = [i for i, e in enumerate(events) if e.event == "take_next"]
    first, second = events[takes[0]], events[takes[1]]
    bad = list(events)
    bad[takes[0]] = dataclasses.replace(first, fields={**second.fields})
    bad[takes[1]] = dataclasses.replace(second, fields={**first.fields})
    finishes = [i for i, e in enumerate(events) if e.event == "finish"]
    bad[finishes[0]] = dataclasses.replace(events[finishes[0]],
                                           fields={**events[finishes[1]].fields})
    bad[finishes[1]] = dataclasses.replace(events[finishes[1]],
                                           fields={**events[finishes[0]].fields})
    found = [v for v in check_trace(bad, POLICY).violations
             if v.invariant == "LifecycleBurstBounded"]
    assert found and "the rules serve the lifecycle line" in found[0].message, found
    assert not inv.LifecycleBurstBounded(trace=bad, policy=POLICY)


def test_D_4_a_core_whose_streak_disagrees_with_its_trace_is_a_failure() -> None:
    """The core's own streak is held to the streak derived from its trace: a core
    broken on purpose (its streak set by hand after the takes) breaks
    LifecycleBurstBounded in the agreement of core and trace."""
    core, events = run(burst_then_barrier)
    checker = inv.TraceChecker(POLICY)
    assert checker.feed(events) == [] and checker.check([core]) == []
    core.streak = 1
    found = [v for v in checker.check([core]) if v.invariant == "LifecycleBurstBounded"]
    assert found and "the core's lifecycle streak is 1" in found[0].message, found


# The invariant each of broken_traces() must break, in its order.
BROKEN = ["NoDoubleDrain", "NoDoubleDrain", "FifoWithinLane", "LifecycleBurstBounded",
          "NoResumeWithoutRequeue", "NoResumeWithoutRequeue", "NoLostWakeup",
          "CapacityRespected", "SliceBounded", "NoWorkAcceptedAfterClose", "ZombiesCounted",
          "EveryAcceptedWorkEndsOnce", "CancellationOnOwnTurn", "CancellationOnOwnTurn",
          "WellFormedTrace", "WellFormedTrace"]


@pytest.mark.parametrize(("i", "name"), list(enumerate(BROKEN)),
                         ids=[f"{n}-{i}" for i, n in enumerate(BROKEN)])
def test_each_invariant_catches_a_broken_trace(i: int, name: str) -> None:
    traces = broken_traces()
    assert [n for n, _ in traces] == BROKEN
    events = traces[i][1]
    pred = getattr(inv, name)
    assert not pred(trace=events, policy=POLICY)
    assert name in {v.invariant for v in check_trace(events, POLICY).violations}


# -------------------------------------------------------------- core breakages
def corrupt(field: str) -> Callable[[QueueCore], None]:
    def apply(core: QueueCore) -> None:
        if field == "double_drain":
            core.drain_scheduled = core.draining = True
        elif field == "fifo":
            assert core.app is not None
            core.app.rotate(1)
        elif field == "streak":
            core.streak = core.config.burst_limit + 1
        elif field == "phase":
            next(iter(core.suspended_records()))._phase = 1  # RUNNING, off the turn
        elif field == "wakeup":
            core.drain_scheduled = core.draining = False
        elif field == "capacity":
            core._place(WorkRecord(), APPLICATION_LANE, 1, False, False)
        elif field == "bytes":
            core.app_bytes += 1
        elif field == "active":
            core.zombies += 1
        elif field == "zombie_flag":
            next(iter(core.suspended_records()))._zombie = True
    return apply


def waiting_queue(core: QueueCore) -> None:
    """Two application works and one suspended, a drain scheduled: room to corrupt."""
    a, b, c = WorkRecord(), WorkRecord(), WorkRecord()
    core.admit(a)
    core.enter_drain(0)
    core.take_next(0)
    core.yield_turn(a)
    core.exit_drain(0)
    core.admit(b)
    core.admit(c)


@pytest.mark.parametrize(("name", "field"), [
    ("NoDoubleDrain", "double_drain"),
    ("FifoWithinLane", "fifo"),
    ("LifecycleBurstBounded", "streak"),
    ("NoResumeWithoutRequeue", "phase"),
    ("NoLostWakeup", "wakeup"),
    ("CapacityRespected", "capacity"),
    ("ReservationsBalanced", "bytes"),
    ("AwaitCompletionIgnoresZombies", "active"),
    ("ZombiesCounted", "zombie_flag"),
])
def test_each_invariant_catches_a_broken_core(name: str, field: str) -> None:
    core, events = run(waiting_queue)
    pred = getattr(inv, name)
    assert pred(core) and pred(core, events)
    corrupt(field)(core)
    assert not pred(core)


def _dropped(core: QueueCore) -> None:
    """The core dropped a waiting work without an ending event."""
    assert core.app is not None
    core.app.pop()


def _unexplained_zombie(core: QueueCore) -> None:
    """The core holds a zombie the trace never made."""
    next(iter(core.suspended_records()))._zombie = True
    core.zombies = 1


def _other_reservation(core: QueueCore) -> None:
    """A work's reservation differs from what its admission reported."""
    assert core.app is not None
    core.app[0]._nbytes = 5


@pytest.mark.parametrize(("name", "damage"), [
    ("EveryAcceptedWorkEndsOnce", _dropped),
    ("ZombiesCounted", _unexplained_zombie),
    ("ReservationsBalanced", _other_reservation),
])
def test_core_and_trace_must_agree(name: str, damage: Callable[[QueueCore], None]) -> None:
    core, events = run(waiting_queue)
    assert getattr(inv, name)(core, events)
    damage(core)
    assert not getattr(inv, name)(core, events)


# ------------------------------------------------------------------- SpotWide
def spot_wide(payload: int = 2) -> inv.SpotWideView:
    """A Spot queue holding one execution turn of actor A (running) and one own work,
    actor A's queue holding the record whose turn it is (its claim) and one waiting."""
    spot = QueueCore(QueueConfig(POLICY), "spot")
    actor = QueueCore(QueueConfig(POLICY), "spot/actor:A")
    rec, nxt, turn, own = WorkRecord(), WorkRecord(), WorkRecord(), WorkRecord()
    actor.admit(rec, APPLICATION_LANE, payload)
    actor.admit(nxt, APPLICATION_LANE, payload)
    actor.enter_drain(0)
    actor.take_next(0)  # the claim
    spot.transfer(turn)
    spot.admit(own)
    spot.enter_drain(0)
    spot.take_next(0)
    return inv.SpotWideView(spot, {"A": actor}, {turn.wid: "A"},
                            lambda a, r: payload + POLICY.fixed_work_byte_cost)


def test_spot_wide_invariants_hold_on_a_correct_spot() -> None:
    assert inv.check_spot_wide(spot_wide()) == []


def _claim_released(v: inv.SpotWideView) -> None:
    actor = v.actors["A"]
    assert actor.current is not None
    actor.finish(actor.current)  # the claim ends while the turn still runs


def _gate_skipped(v: inv.SpotWideView) -> None:
    actor = v.actors["A"]
    actor.finish(actor.current)  # type: ignore[arg-type]
    v.spot.finish(v.spot.current)  # type: ignore[arg-type]
    actor.take_next(0)  # the next record runs on the Actor queue, no turn placed


def _payload_twice(v: inv.SpotWideView) -> None:
    turn = next(r for r in v.spot.live_records() if r.wid in v.turn_of)
    turn._nbytes += 2
    v.spot.app_bytes += 2


@pytest.mark.parametrize(("name", "damage"), [
    ("YieldedActorKeepsClaim", _claim_released),
    ("OneTurnHoldsSpotGate", _gate_skipped),
    ("SpotQueueReservesFixedCostOnly", _payload_twice),
    ("PayloadReservedOnce", _payload_twice),
])
def test_each_spot_wide_invariant_catches_a_broken_spot(
        name: str, damage: Callable[[inv.SpotWideView], None]) -> None:
    view = spot_wide()
    assert getattr(inv, name)(view)
    damage(view)
    assert not getattr(inv, name)(view)


def test_payload_reserved_once_sees_a_payload_never_reserved() -> None:
    view = spot_wide(payload=2)
    # the caller submitted 3 bytes per record; the Actor queue reserved 2
    short = dataclasses.replace(view, reservation=lambda a, r: 3 + 1)
    assert not inv.PayloadReservedOnce(short)


def test_every_invariant_is_registered_with_its_rules_and_model() -> None:
    for name, info in inv.INVARIANTS.items():
        assert callable(getattr(inv, name)), name
        assert info.rules and info.model and info.holds_when
        doc = getattr(inv, name).__doc__ or ""
        assert info.rules.split(",")[0] in doc or name == "WellFormedTrace", name
        if info.model != "-":
            assert info.model in doc, f"{name}'s docstring must name {info.model}"


# ------------------------------------------- the image's kept figures vs a recount
def _random_run(choices: list[int]) -> list[TraceEvent]:
    """The trace of a core driven by ``choices``: each picks one of the steps the core's
    state enables (admissions in both lanes and as barriers, some over the limits,
    transfers, drains, turns, finishes of every outcome, yields and resumes, cancels,
    and every disposal), so most runs go deep; a step the core refuses is skipped."""
    rec = TraceRecorder()
    core = QueueCore(QueueConfig(POLICY, observer=rec), "q")
    works: list[WorkRecord] = []
    clock = 0

    def admit(lane: int, payload: int, barrier: bool) -> None:
        w = WorkRecord()
        core.admit(w, lane, payload, barrier=barrier)
        works.append(w)

    def transfer() -> None:
        w = WorkRecord()
        core.transfer(w)
        works.append(w)

    for n, choice in enumerate(choices):
        clock += choice % 3
        live = core.live_records()
        cur = core.current
        steps: list[Callable[[], object]] = [
            functools.partial(admit, APPLICATION_LANE, choice % 4, False),
            functools.partial(admit, LIFECYCLE_LANE, choice % 3, False),
            functools.partial(admit, APPLICATION_LANE, 0, True), transfer]
        if core.drain_scheduled:
            steps.append(functools.partial(core.enter_drain, clock))
        if core.draining and cur is None:
            steps += [functools.partial(core.take_next, clock)] * 6 + [
                functools.partial(core.end_slice, clock),
                functools.partial(core.exit_drain, clock)]
        if cur is not None:
            steps += [functools.partial(core.finish, cur, choice % 3),
                      functools.partial(core.yield_turn, cur)] * 3
        for rec_ in core.suspended_records():
            steps += [functools.partial(core.requeue, rec_),
                      functools.partial(core.survive_cancel, rec_)]
        if live and n % 4 == 3:
            steps.append(functools.partial(core.cancel, live[n % len(live)]))
        if n % 16 == 15:  # now and then, so that most of a run is before it
            steps.append((core.close, core.dispose, core.dispose_safely,
                          core.dispose_after_timeout, core.expire_timeout)[choice % 5])
        try:
            steps[choice % len(steps)]()
        except (ZLinkProtocolError, ZLinkRejectedError):
            pass
    return rec.events


def _damaged(events: list[TraceEvent], edits: list[tuple[int, int]]) -> list[TraceEvent]:
    """``events`` with events dropped or repeated: traces the checker must also keep
    its figures right on (a work admitted twice, ended twice, ended never)."""
    out = list(events)
    for kind, at in edits:
        if not out:
            break
        i = at % len(out)
        if kind == 0:
            del out[i]
        else:
            out.insert(i, out[i])
    return out


def _assert_image_agrees_with_a_recount(events: list[TraceEvent]) -> None:
    image = inv.TraceImage("q", POLICY)
    for ev in events:
        image.feed(ev)
        live, own = image.recount()
        assert image.live() == live, ev
        assert image.transferred() == {w.wid for w in live if w.transferred}, ev
        assert image.own_reserved() == own, ev


_CHOICES = st.lists(st.integers(0, 1000), min_size=30, max_size=80)
_EDITS = st.lists(st.tuples(st.integers(0, 1), st.integers(0, 200)), max_size=3)


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(_CHOICES, _EDITS)
def test_SE_5_1_the_trace_image_keeps_live_works_and_reservations_as_a_recount_finds_them(
        choices: list[int], edits: list[tuple[int, int]]) -> None:
    """CapacityRespected, ZombiesCounted, EveryAcceptedWorkEndsOnce and the replay's
    core checks read figures the image keeps as events arrive instead of recounting
    every work ever accepted: after every event of random runs, damaged ones too, the
    kept figures are what a recount from the whole history gives."""
    _assert_image_agrees_with_a_recount(_damaged(_random_run(choices), edits))


def test_SE_5_1_the_kept_figures_agree_with_a_recount_on_every_broken_trace() -> None:
    """The same on the hand-made runs and every broken trace above (each broken in the
    way one invariant must see)."""
    for events in [busy()[1], disposed()[1], *(t for _, t in broken_traces())]:
        _assert_image_agrees_with_a_recount(events)
