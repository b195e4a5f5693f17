"""Coordinators beyond the SE-10 list: Spot kinds, sessions, removal, relocation, the
state lane, and bad input."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from zlink_reference import (
    RejectReason,
    ZLinkActorSerialExecutor,
    ZLinkClosedError,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkSessionSerialExecutor,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkStateLane,
    ZLinkUserSpotExecutionMode,
    ZLinkYieldNotSupportedError,
    current_snapshot,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors
from helpers import Gate, Timeline, policy

PER_ACTOR = ZLinkUserSpotExecutionMode.PER_ACTOR
SPOT_WIDE = ZLinkUserSpotExecutionMode.SPOT_WIDE


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


def make_spot(**kw: Any) -> ZLinkSpotSerialExecutor:
    kw.setdefault("clock", VirtualClock())
    kw.setdefault("error_hook", hook)
    return ZLinkSpotSerialExecutor("S", **kw)


# ---------------------------------------------------------------- Spot kinds
def test_SE_4_1_mode_is_fixed_at_registration_and_only_for_user_spots() -> None:
    with pytest.raises(ValueError, match="needs its execution mode"):
        ZLinkSpotSerialExecutor("S", loop=asyncio.new_event_loop())
    with pytest.raises(ValueError, match="for User Spots only"):
        ZLinkSpotSerialExecutor("S", kind=ZLinkSpotKind.ENTRY, mode=PER_ACTOR,
                                loop=asyncio.new_event_loop())
    with pytest.raises(ValueError):
        ZLinkSpotSerialExecutor("S", mode="sideways",  # type: ignore[arg-type]
                                loop=asyncio.new_event_loop())


async def test_SE_4_1_entry_spot_offers_no_yield() -> None:
    s = make_spot(kind=ZLinkSpotKind.ENTRY)
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    errors: list[type[BaseException]] = []

    async def handler() -> None:
        try:
            await yield_framework_call(ext)
        except ZLinkYieldNotSupportedError:
            errors.append(ZLinkYieldNotSupportedError)

    s.execute_actor("A", handler)
    s.execute_spot(handler)
    s.execute_timer("t", handler)
    await run_until_idle()
    assert errors == [ZLinkYieldNotSupportedError] * 3


async def test_SE_4_1_entry_spot_actors_overlap_like_per_actor() -> None:
    s, t, gate = make_spot(kind=ZLinkSpotKind.ENTRY), Timeline(), Gate()
    s.execute_actor("A", t.gated("A", gate))
    s.execute_actor("B", t.gated("B", gate))
    await run_until_idle()
    assert t.started() == ["A", "B"]
    gate.open()
    await run_until_idle()


async def test_SE_4_1_instance_spot_is_one_gate() -> None:
    s, t, gate = make_spot(kind=ZLinkSpotKind.INSTANCE), Timeline(), Gate()
    s.execute_actor("A", t.gated("A", gate))
    await run_until_idle()
    s.execute_actor("B", t.sync("B"))
    s.execute_timer("tick", t.sync("tick"))
    await run_until_idle()
    assert t.started() == ["A"]
    gate.open()
    await run_until_idle()
    assert t.started() == ["A", "tick", "B"]  # B's turn reaches the Spot queue later
    assert s.timer_names() == [], "SpotWide wiring makes no timer queue (SE-4.4)"


# ---------------------------------------------------------------- sessions
async def test_D_12_session_control_and_infrastructure_overtake_packets_in_order() -> None:
    clock = VirtualClock()
    sess = ZLinkSessionSerialExecutor("s1", clock=clock, error_hook=hook)
    t, gate = Timeline(), Gate()
    sess.execute_application(t.gated("p0", gate), payload_bytes=100)
    await run_until_idle()
    sess.execute_application(t.sync("p1"), payload_bytes=100)
    sess.execute_infrastructure(t.sync("connected"))
    sess.execute_control(t.sync("pause"))
    gate.open()
    await run_until_idle()
    assert t.started() == ["p0", "connected", "pause", "p1"]


async def test_D_12_session_final_runs_after_all_accepted_work_and_closes() -> None:
    clock = VirtualClock()
    sess = ZLinkSessionSerialExecutor("s1", clock=clock, error_hook=hook)
    t, gate = Timeline(), Gate()
    ext: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def suspended() -> None:
        t.marks.append(("start", "susp"))
        await yield_framework_call(ext)
        t.marks.append(("end", "susp"))

    sess.execute_application(t.gated("p0", gate))
    sess.execute_application(suspended)
    sess.execute_control(t.sync("ctl"))
    final = sess.execute_final(t.sync("final"))
    for submit in (sess.execute_application, sess.execute_control,
                   sess.execute_infrastructure, sess.execute_final):
        with pytest.raises(ZLinkClosedError):
            submit(t.sync("late"))
    await run_until_idle()
    gate.open()
    await run_until_idle()
    assert "final" not in t.started(), "final ran while accepted work was suspended"
    ext.set_result(None)
    await run_until_idle()
    assert final.done()
    assert t.started()[-1] == "final" and t.ended()[-2:] == ["susp", "final"]
    assert sess.statistics().closed


async def test_D_12_session_final_on_an_idle_session_runs_at_once() -> None:
    sess = ZLinkSessionSerialExecutor("s1", clock=VirtualClock(), error_hook=hook)
    h = sess.execute_final(lambda: "bye")
    await run_until_idle()
    assert h.result() == "bye"


# ---------------------------------------------------------------- removal, relocation
@pytest.mark.parametrize("mode", [PER_ACTOR, SPOT_WIDE])
async def test_SE_2_2_removing_a_spot_completes_and_drops_its_queues(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    s, t, gate = make_spot(mode=mode), Timeline(), Gate()
    s.execute_actor("A", t.gated("A0", gate))
    s.execute_actor("A", t.sync("A1"))
    s.execute_timer("tick", t.sync("tick"))
    s.execute_spot(t.sync("spot"))
    await run_until_idle()
    s.close()
    assert s.actor_ids() == [] and s.timer_names() == []
    for submit in (lambda: s.execute_actor("A", t.sync("x")),
                   lambda: s.execute_actor("B", t.sync("x")),
                   lambda: s.execute_timer("tick", t.sync("x")),
                   lambda: s.execute_spot(t.sync("x")),
                   lambda: s.execute_lifecycle(t.sync("x"))):
        with pytest.raises(ZLinkClosedError):
            submit()
    gate.open()
    await s.await_quiescence()
    assert sorted(t.ended()) == ["A0", "A1", "spot", "tick"]
    assert all(st.closed for st in s.statistics().values())


async def test_SE_4_7_one_actors_pending_work_can_be_taken_out_of_a_spot_wide_spot() -> None:
    s, t, gate = make_spot(mode=SPOT_WIDE), Timeline(), Gate()
    s.execute_actor("A", t.gated("A0", gate))
    pending_handles = [s.execute_actor("A", t.sync(f"A{i}"), payload_bytes=10 * i)
                       for i in range(1, 4)]
    s.execute_actor("B", t.sync("B1"))
    await run_until_idle()
    taken = s.take_actor_pending("A")
    assert [p.payload_bytes for p in taken] == [10, 20, 30]
    assert [p.handle for p in taken] == pending_handles
    assert all(h.cancelled() for h in pending_handles)
    assert s.statistics()["spot:S/actor:A"].application_count == 1  # only A0 remains
    gate.open()
    await run_until_idle()
    assert t.started() == ["A0", "B1"]
    target = make_spot(mode=SPOT_WIDE)
    moved = [target.execute_actor("A", p.work, p.payload_bytes) for p in taken]
    await run_until_idle()
    assert all(h.done() for h in moved)
    assert t.started() == ["A0", "B1", "A1", "A2", "A3"]
    assert s.take_actor_pending("nobody") == []


async def test_SE_4_7_one_actors_pending_work_can_be_taken_out_of_a_per_actor_spot() -> None:
    """A PerActor message keeps the caller's work itself (its queue runs a runner every
    message shares): what is taken out is the caller's work, which runs elsewhere."""
    s, t, gate = make_spot(mode=PER_ACTOR), Timeline(), Gate()
    s.execute_actor("A", t.gated("A0", gate))
    works = [t.sync(f"A{i}") for i in range(1, 4)]
    pending_handles = [s.execute_actor("A", w, payload_bytes=10 * i)
                       for i, w in enumerate(works, 1)]
    await run_until_idle()
    taken = s.take_actor_pending("A")
    assert [p.work for p in taken] == works
    assert [p.payload_bytes for p in taken] == [10, 20, 30]
    assert [p.handle for p in taken] == pending_handles
    assert all(h.cancelled() for h in pending_handles)
    target = make_spot(mode=PER_ACTOR)
    moved = [target.execute_actor("A", p.work, p.payload_bytes) for p in taken]
    gate.open()
    await run_until_idle()
    assert all(h.done() and not h.cancelled() for h in moved)
    assert t.started() == ["A0", "A1", "A2", "A3"]


# ---------------------------------------------------------------- lane and snapshots
async def test_SE_8_1_state_lane_reports_turns_and_refuses_reentry() -> None:
    s = make_spot(mode=PER_ACTOR)
    lane = ZLinkStateLane("L", s._rt)
    seen: list[bool] = []

    def inner() -> None:
        seen.append(lane.is_on_lane())
        with pytest.raises(ZLinkReentrancyError):
            lane.run(lambda: None)

    assert not lane.is_on_lane()
    lane.run(inner)
    assert seen == [True] and not lane.is_on_lane()


async def test_SE_7_1_actor_coordinator_snapshot_is_read_once_per_message() -> None:
    actor = ZLinkActorSerialExecutor("A", actor_type="npc", clock=VirtualClock(), error_hook=hook)
    actor.update_registration(hp=10, name="orc")
    gate = Gate()
    seen: list[Any] = []

    async def handler() -> None:
        first = current_snapshot()
        await gate.wait()
        seen.append((first, current_snapshot()))

    actor.execute_actor(handler)
    await run_until_idle()
    actor.update_registration(hp=3)
    gate.open()
    await run_until_idle()
    first, later = seen[0]
    assert first is later and first["hp"] == 10 and first.actor_type == "npc"
    assert actor.snapshot()["hp"] == 3
    with pytest.raises(TypeError):
        first.registration["hp"] = 1  # type: ignore[index]


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize("mode", [PER_ACTOR, SPOT_WIDE])
async def test_SE_6_3_bad_entry_input_is_refused_with_nothing_inserted(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    rec = TraceRecorder()
    s = make_spot(mode=mode, observer=rec)
    with pytest.raises(ValueError, match="payload_bytes must be >= 0, got -5"):
        s.execute_actor("A", lambda: None, payload_bytes=-5)
    with pytest.raises(ValueError, match="actor_id must not be empty"):
        s.execute_actor("", lambda: None)
    with pytest.raises(TypeError, match="actor_id must be a string"):
        s.execute_actor(7, lambda: None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="timer_name must not be empty"):
        s.execute_timer("", lambda: None)
    with pytest.raises(TypeError, match="work must be a zero-argument callable"):
        s.execute_spot("not callable")  # type: ignore[arg-type]
    assert not rec.events and s.actor_ids() == []
    with pytest.raises(ZLinkRejectedError) as err:
        ZLinkSessionSerialExecutor("x", clock=VirtualClock(), policy=policy(
            application_byte_capacity=100)).execute_application(lambda: None, 1000)
    assert err.value.reason is RejectReason.APPLICATION_BYTES


async def test_SE_6_2_closed_actor_and_session_coordinators_reject_new_work() -> None:
    actor = ZLinkActorSerialExecutor("A", clock=VirtualClock(), error_hook=hook)
    sess = ZLinkSessionSerialExecutor("s", clock=VirtualClock(), error_hook=hook)
    actor.close()
    sess.close()
    with pytest.raises(ZLinkClosedError):
        actor.execute_actor(lambda: None)
    with pytest.raises(ZLinkClosedError):
        sess.execute_application(lambda: None)


# ---------------------------------------------------------------- layers, names
async def test_SE_2_3_actor_and_session_coordinators_own_exactly_one_queue() -> None:
    clock = VirtualClock()
    actor = ZLinkActorSerialExecutor("A", clock=clock, error_hook=hook)
    sess = ZLinkSessionSerialExecutor("s", clock=clock, error_hook=hook)
    for _ in range(3):
        actor.execute_actor(lambda: None)
        actor.execute_lifecycle(lambda: None)
        sess.execute_application(lambda: None)
        sess.execute_control(lambda: None)
        sess.execute_infrastructure(lambda: None)
    await run_until_idle()
    assert [q.name for q in actor._scope_queues()] == ["actor:A"]
    assert [q.name for q in sess._scope_queues()] == ["session:s"]
    # Fields, whether the object keeps them in a dict, in slots or compiled (no vars()).
    for owner in (actor, sess):
        fields = [n for n in dir(owner) if not callable(getattr(owner, n, None))]
        assert not [n for n in fields if "map" in n or n.endswith("_queues")], fields


def test_SE_3_2_every_entry_that_takes_work_is_named_execute() -> None:
    import inspect

    for cls in (ZLinkSpotSerialExecutor, ZLinkActorSerialExecutor, ZLinkSessionSerialExecutor):
        # isroutine, not isfunction: a compiled method is a method descriptor.
        takes_work = [n for n, f in inspect.getmembers(cls, inspect.isroutine)
                      if not n.startswith("_") and "work" in inspect.signature(f).parameters]
        assert takes_work and all(n.startswith("execute_") for n in takes_work), takes_work


@pytest.mark.parametrize("kind", ["spot_wide", "instance"])
async def test_SE_4_4_spot_wide_timers_make_no_timer_queue(kind: str) -> None:
    wiring: dict[str, Any] = (
        {"kind": ZLinkSpotKind.INSTANCE} if kind == "instance" else {"mode": SPOT_WIDE})
    s = make_spot(**wiring)
    for name in ("tick", "beat", "tick"):
        s.execute_timer(name, lambda: None)
    await run_until_idle()
    assert s.timer_names() == []
    assert [q.name for q in s._scope_queues()] == ["spot:S"]
