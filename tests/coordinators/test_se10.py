"""SE-10: the seed's verification list, one test per item, through the public surface
only (entry points, their handles, rejections, order of runs, errors). Overlap is shown
with gates the test opens, time with the virtual clock; nothing sleeps."""

from __future__ import annotations

import asyncio
import inspect
import typing
from collections.abc import Mapping
from typing import Any

import pytest

import zlink_reference
from zlink_reference import (
    RejectReason,
    ZLinkActorSerialExecutor,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    current_snapshot,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors
from helpers import Gate, Timeline, policy

PER_ACTOR = ZLinkUserSpotExecutionMode.PER_ACTOR
SPOT_WIDE = ZLinkUserSpotExecutionMode.SPOT_WIDE
MODES = [PER_ACTOR, SPOT_WIDE]


def spot(mode: ZLinkUserSpotExecutionMode, **kw: Any) -> ZLinkSpotSerialExecutor:
    kw.setdefault("clock", VirtualClock())
    kw.setdefault("error_hook", lambda exc, h: unexpected_errors.append(exc))
    return ZLinkSpotSerialExecutor("S", mode=mode, **kw)


# 1 ------------------------------------------------------------------------------
ENTRY_PARAMETERS = {
    "execute_spot": ["work"],
    "execute_actor": ["actor_id", "work", "payload_bytes"],
    "execute_timer": ["timer_name", "work"],
    "execute_lifecycle": ["work"],
    "execute_application": ["work", "payload_bytes"],
    "execute_control": ["work"],
    "execute_infrastructure": ["work"],
    "execute_final": ["work"],
}


def test_SE_10_01_no_surface_lets_the_application_choose_the_queue() -> None:
    """No entry takes a queue, lane or routing argument, and no public attribute or
    method of a coordinator hands out one of its queues (SE-3.1, SE-2.5)."""
    for cls in (ZLinkSpotSerialExecutor, ZLinkActorSerialExecutor, ZLinkSessionSerialExecutor):
        entries = [n for n in dir(cls) if n.startswith("execute")]
        assert entries, cls
        for name in entries:
            params = [p for p in inspect.signature(getattr(cls, name)).parameters if p != "self"]
            allowed = ENTRY_PARAMETERS[name]
            if cls is ZLinkActorSerialExecutor and name == "execute_actor":
                allowed = ["work", "payload_bytes"]
            assert params == allowed, f"{cls.__name__}.{name}{params}"
        hints = [inspect.signature(getattr(cls, n)).return_annotation
                 for n in dir(cls) if not n.startswith("_") and callable(getattr(cls, n))]
        assert not any("ZLinkSerialExecutionQueue" in str(h) for h in hints), cls
    # registration fixes the mode; nothing takes a queue
    init = inspect.signature(ZLinkSpotSerialExecutor.__init__).parameters
    assert not [p for p in init if "queue" in p or "lane" in p]


def _submittable(value: object) -> bool:
    """Something a caller could submit work to: it has a public ``enqueue*`` or
    ``execute*`` method (a queue, a coordinator)."""
    if isinstance(value, type):
        return False
    return any(callable(getattr(value, n, None)) for n in dir(value)
               if n.startswith(("enqueue", "execute")))


def _type_submittable(hint: object) -> bool:
    """A return annotation naming a type with a public ``enqueue*``/``execute*``
    method, or a container, union or generic holding one."""
    if isinstance(hint, type):
        return any(n.startswith(("enqueue", "execute")) and callable(getattr(hint, n))
                   for n in dir(hint))
    return any(_type_submittable(a) for a in typing.get_args(hint))


def _hands_out_queue(obj: object) -> list[str]:
    """Every public member of ``obj`` whose value, or whose result by its annotation,
    could be submitted to (looking inside lists, tuples, sets and mappings)."""
    found = []
    for name in dir(obj):
        if name.startswith("_"):
            continue
        static = inspect.getattr_static(type(obj), name, None)
        if callable(static) and not isinstance(static, property):
            hints = typing.get_type_hints(getattr(obj, name))
            if _type_submittable(hints.get("return")):
                found.append(f"{type(obj).__name__}.{name}()")
            continue
        value = getattr(obj, name, None)  # a core slot not set yet reads as None
        values: list[object] = [value]
        if isinstance(value, Mapping):
            values += list(value.keys()) + list(value.values())
        elif isinstance(value, list | tuple | set | frozenset):
            values += list(value)
        if any(_submittable(v) for v in values):
            found.append(f"{type(obj).__name__}.{name}")
    return found


async def test_SE_10_01_no_public_member_of_a_handle_coordinator_or_queue_hands_out_a_queue(
) -> None:
    """SE-10.1, SE-2.5, SE-3.1: the application has no means to choose the queue, not
    only at registration. No public attribute of a coordinator, of a queue, or of a
    handle any entry returns (every entry, both modes, Entry and Instance Spots) gives
    an object a caller could submit to, nor a method whose result is one."""
    gate = Gate()
    owners: list[object] = []
    handles: list[object] = []
    for kind, mode in [(ZLinkSpotKind.USER, PER_ACTOR), (ZLinkSpotKind.USER, SPOT_WIDE),
                       (ZLinkSpotKind.ENTRY, None), (ZLinkSpotKind.INSTANCE, None)]:
        s = ZLinkSpotSerialExecutor("S", kind=kind, mode=mode, clock=VirtualClock(),
                                    error_hook=lambda exc, h: unexpected_errors.append(exc))
        s.execute_spot(gate.wait)  # hold the gate so every handle below is still live
        handles += [s.execute_spot(lambda: None), s.execute_actor("a", lambda: None),
                    s.execute_timer("t", lambda: None), s.execute_lifecycle(lambda: None)]
        owners.append(s)
    a = ZLinkActorSerialExecutor("A", clock=VirtualClock())
    handles += [a.execute_actor(gate.wait), a.execute_lifecycle(lambda: None)]
    x = ZLinkSessionSerialExecutor("X", clock=VirtualClock())
    handles += [x.execute_application(gate.wait), x.execute_control(lambda: None),
                x.execute_infrastructure(lambda: None), x.execute_final(lambda: None)]
    q = ZLinkSerialExecutionQueue(name="q", clock=VirtualClock())
    handles += [q.enqueue(gate.wait), q.enqueue_with_payload_bytes(lambda: None, 1),
                q.enqueue_lifecycle(lambda: None), q.enqueue_barrier_next(lambda: None)]
    owners += [a, x, q]
    await run_until_idle()
    for obj in owners + handles:
        assert _hands_out_queue(obj) == [], obj
    gate.open()
    await run_until_idle()
    for obj in owners + handles:
        assert _hands_out_queue(obj) == [], obj
    assert "ZLinkSerialExecutionQueue" in zlink_reference.__all__  # the primitive itself


# 2, 3 ---------------------------------------------------------------------------
async def test_SE_10_02_per_actor_long_work_on_two_actors_overlaps() -> None:
    s, t, ga, gb = spot(PER_ACTOR), Timeline(), Gate(), Gate()
    s.execute_actor("A", t.gated("A", ga))
    s.execute_actor("B", t.gated("B", gb))
    await run_until_idle()
    assert t.started() == ["A", "B"] and t.ended() == []
    gb.open()
    ga.open()
    await run_until_idle()
    assert t.overlap("A", "B")


async def test_SE_10_03_spot_wide_same_submissions_run_one_after_the_other() -> None:
    s, t, ga, gb = spot(SPOT_WIDE), Timeline(), Gate(), Gate()
    s.execute_actor("A", t.gated("A", ga))
    s.execute_actor("B", t.gated("B", gb))
    await run_until_idle()
    assert t.started() == ["A"]
    gb.open()
    await run_until_idle()
    assert t.started() == ["A"], "B started while A held the Spot gate"
    ga.open()
    await run_until_idle()
    assert t.marks == [("start", "A"), ("end", "A"), ("start", "B"), ("end", "B")]
    assert not t.overlap("A", "B")


# 4 ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_SE_10_04_same_actor_keeps_submission_order(mode: ZLinkUserSpotExecutionMode
                                                          ) -> None:
    s, t = spot(mode), Timeline()
    gate = Gate()
    s.execute_actor("A", t.gated("A0", gate))
    for i in range(1, 8):
        s.execute_actor("A", t.sync(f"A{i}"))
        s.execute_actor("B", t.sync(f"B{i}"))
    await run_until_idle()
    gate.open()
    await run_until_idle()
    assert [n for n in t.started() if n.startswith("A")] == [f"A{i}" for i in range(8)]
    assert [n for n in t.started() if n.startswith("B")] == [f"B{i}" for i in range(1, 8)]


# 5 ------------------------------------------------------------------------------
async def test_SE_10_05_per_actor_timers_overlap_by_name_and_keep_order_per_name() -> None:
    s, t = spot(PER_ACTOR), Timeline()
    g1, g2, g3 = Gate(), Gate(), Gate()
    s.execute_timer("tick", t.gated("tick1", g1))
    s.execute_timer("tick", t.gated("tick2", g2))
    s.execute_timer("beat", t.gated("beat1", g3))
    await run_until_idle()
    assert t.started() == ["tick1", "beat1"]
    g2.open()
    await run_until_idle()
    assert "tick2" not in t.started(), "same timer name ran out of order"
    g1.open()
    g3.open()
    await run_until_idle()
    assert t.overlap("tick1", "beat1")
    assert t.started() == ["tick1", "beat1", "tick2"]
    assert s.timer_names() == ["tick", "beat"]


async def test_SE_10_05_per_actor_five_owners_in_progress_at_once() -> None:
    """Spot queue, two Actor queues and two timer queues are independent (SE-4.2)."""
    s, t, gate = spot(PER_ACTOR), Timeline(), Gate()
    s.execute_spot(t.gated("spot", gate))
    s.execute_actor("A", t.gated("A", gate))
    s.execute_actor("B", t.gated("B", gate))
    s.execute_timer("tick", t.gated("tick", gate))
    s.execute_timer("beat", t.gated("beat", gate))
    await run_until_idle()
    assert sorted(t.started()) == ["A", "B", "beat", "spot", "tick"] and not t.ended()
    gate.open()
    await run_until_idle()


# 6 ------------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_SE_10_06_full_actor_mailbox_rejects_only_that_actor(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    s = spot(mode, actor_policy=policy(application_message_capacity=3))
    gate = Gate()
    for _ in range(3):
        s.execute_actor("A", gate.wait)
    with pytest.raises(ZLinkRejectedError) as err:
        s.execute_actor("A", gate.wait)
    assert err.value.reason is RejectReason.APPLICATION_COUNT
    assert "actor:A" in err.value.queue
    handles = [s.execute_actor("B", lambda: None) for _ in range(3)]
    s.execute_spot(lambda: None)
    s.execute_timer("t", lambda: None)
    await run_until_idle()
    if mode is PER_ACTOR:
        assert all(h.done() for h in handles)
    gate.open()
    await run_until_idle()
    assert all(h.done() for h in handles)


# 7 ------------------------------------------------------------------------------
async def test_SE_10_07_spot_wide_large_payload_is_rejected_before_small() -> None:
    gate = Gate()

    def fill(payload: int) -> int:
        s = spot(SPOT_WIDE, actor_policy=policy(
            application_message_capacity=10, application_byte_capacity=3000,
            fixed_work_byte_cost=100))
        accepted = 0
        for _ in range(10):
            try:
                s.execute_actor("A", gate.wait, payload_bytes=payload)
            except ZLinkRejectedError as err:
                assert err.reason is RejectReason.APPLICATION_BYTES
                break
            accepted += 1
        return accepted

    small, large = fill(50), fill(900)
    gate.open()
    await run_until_idle()
    assert (small, large) == (10, 3)  # 3 x 1000 bytes fit, the 4th large one does not


# 8 ------------------------------------------------------------------------------
@pytest.mark.parametrize("payload", [0, 10_000_000])
async def test_SE_10_08_spot_queue_fills_by_count_regardless_of_payload(payload: int) -> None:
    """Each Actor's turn on the Spot queue reserves only the fixed cost, so the Spot
    queue is full at the same count whatever the payloads (SE-5.3)."""
    s = spot(
        SPOT_WIDE,
        policy=policy(application_message_capacity=4, application_byte_capacity=4 * 256),
        actor_policy=policy(application_byte_capacity=64 * 1024 * 1024),
    )
    gate = Gate()
    for actor in ("A", "B", "C"):
        s.execute_actor(actor, gate.wait, payload_bytes=payload)
    await run_until_idle()
    spot_stats = s.statistics()["spot:S"]
    assert (spot_stats.application_count, spot_stats.application_bytes) == (3, 3 * 256)
    s.execute_spot(lambda: None)  # the 4th place
    with pytest.raises(ZLinkRejectedError) as err:
        s.execute_spot(lambda: None)
    assert err.value.reason is RejectReason.APPLICATION_COUNT
    assert s.statistics()["spot:S/actor:A"].application_bytes == payload + 256
    gate.open()
    await run_until_idle()


# 9 ------------------------------------------------------------------------------
async def test_SE_10_09_lifecycle_overtakes_then_one_application_item_after_the_limit() -> None:
    s, t, gate = spot(SPOT_WIDE, policy=policy(lifecycle_burst_limit=2)), Timeline(), Gate()
    s.execute_spot(t.gated("hold", gate))
    await run_until_idle()
    for i in range(2):
        s.execute_spot(t.sync(f"app{i}"))
    for i in range(5):
        s.execute_lifecycle(t.sync(f"life{i}"))
    gate.open()
    await run_until_idle()
    assert t.started() == ["hold", "life0", "life1", "app0", "life2", "life3", "app1", "life4"]


# 10 -----------------------------------------------------------------------------
async def test_SE_10_10_owner_past_its_time_budget_has_its_slice_cut() -> None:
    clock = VirtualClock()
    s = spot(PER_ACTOR, clock=clock, actor_policy=policy(owner_time_budget_ms=10))
    order: list[str] = []

    def busy(name: str) -> Any:
        def work() -> None:
            order.append(name)
            clock.advance(4)
        return work

    for i in range(6):
        s.execute_actor("flood", busy(f"F{i}"))
    s.execute_actor("other", busy("O0"))
    await run_until_idle()
    assert order == ["F0", "F1", "F2", "O0", "F3", "F4", "F5"]


# 11 -----------------------------------------------------------------------------
async def test_SE_10_11_yielded_spot_wide_actor_holds_only_its_own_next_record() -> None:
    s, t = spot(SPOT_WIDE), Timeline()
    ext: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def a1() -> str:
        t.marks.append(("start", "A1"))
        value = await yield_framework_call(ext)
        t.marks.append(("end", "A1"))
        return value

    h1 = s.execute_actor("A", a1)
    s.execute_actor("A", t.sync("A2"))
    s.execute_actor("B", t.sync("B1"))
    s.execute_spot(t.sync("spot"))
    s.execute_timer("tick", t.sync("tick"))
    await run_until_idle()
    # Direct Spot-queue work was in line before the Actors' turns were transferred.
    assert sorted(t.started()) == ["A1", "B1", "spot", "tick"], "others proceed, A2 waits"
    ext.set_result("done")
    await run_until_idle()
    assert await h1 == "done"
    assert t.started()[-1] == "A2" and t.ended()[-2:] == ["A1", "A2"]


# 12 -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_SE_10_12_registration_change_mid_message_is_never_seen_mixed(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    s, gate = spot(mode), Gate()
    s.register_actor("A", "player", host="h1", port=1)
    seen: list[tuple[str, int]] = []

    async def handler() -> None:
        snap = current_snapshot()
        assert snap is not None
        seen.append((snap["host"], snap["port"]))
        await gate.wait()
        snap = current_snapshot()
        assert snap is not None
        seen.append((snap["host"], snap["port"]))

    s.execute_actor("A", handler)
    await run_until_idle()
    s.update_actor_registration("A", host="h2")
    s.update_actor_registration("A", port=2)
    gate.open()
    await run_until_idle()
    s.execute_actor("A", lambda: seen.append(
        (current_snapshot()["host"], current_snapshot()["port"])))  # type: ignore[index]
    await run_until_idle()
    assert seen == [("h1", 1), ("h1", 1), ("h2", 2)]


# 13 -----------------------------------------------------------------------------
@pytest.mark.parametrize("mode", MODES)
async def test_SE_10_13_waiting_on_the_same_coordinator_raises_at_once(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    s = spot(mode)
    outcomes: list[str] = []

    async def waits_for(submit: Any) -> None:
        try:
            await submit()
        except ZLinkReentrancyError:
            outcomes.append("raised")
        else:
            outcomes.append("waited")

    s.execute_actor("A", lambda: waits_for(lambda: s.execute_actor("A", lambda: None)))
    await run_until_idle()
    s.execute_spot(lambda: waits_for(lambda: s.execute_spot(lambda: None)))
    await run_until_idle()
    s.execute_actor("A", lambda: waits_for(lambda: s.execute_actor("B", lambda: None)))
    await run_until_idle()
    s.execute_actor("A", lambda: waits_for(lambda: s.execute_timer("t", lambda: None)))
    await run_until_idle()
    # D-14, after the seed: "조율자가 실행 중인 작업 안에서 같은 조율자의 execute* 완료를
    # 동기적으로 기다리면 ... 즉시 예외": B's and the timer's queues are the same
    # coordinator's, so waiting for them raises in PerActor too.
    assert outcomes == ["raised"] * 4


@pytest.mark.parametrize("mode", MODES)
async def test_SE_10_13_a_yield_on_another_actors_work_waits(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    """D-14: a wait through yield_framework_call gives the turn back, so it is no
    synchronous wait; only the claims the waiter keeps count (its own Actor's queue), and
    B's work needs none of them in either mode."""
    s = spot(mode)
    outcomes: list[str] = []

    async def yields_for() -> None:
        try:
            await yield_framework_call(s.execute_actor("B", lambda: None))
        except ZLinkReentrancyError:
            outcomes.append("raised")
        else:
            outcomes.append("waited")

    s.execute_actor("A", yields_for)
    await run_until_idle()
    assert outcomes == ["waited"]


async def test_SE_10_13_waiting_on_another_coordinator_is_legal() -> None:
    s, other = spot(PER_ACTOR), spot(PER_ACTOR)
    seen: list[Any] = []

    async def waits() -> None:
        seen.append(await other.execute_actor("A", lambda: "other"))

    s.execute_actor("A", waits)
    await run_until_idle()
    assert seen == ["other"]


async def test_SE_10_13_actor_and_session_coordinators_raise_too() -> None:
    clock = VirtualClock()
    hook = lambda exc, h: unexpected_errors.append(exc)  # noqa: E731
    actor = ZLinkActorSerialExecutor("A", clock=clock, error_hook=hook)
    session = ZLinkSessionSerialExecutor("s", clock=clock, error_hook=hook)
    outcomes: list[str] = []

    async def waits_for(handle: Any) -> None:
        try:
            await handle
        except ZLinkReentrancyError:
            outcomes.append("raised")

    actor.execute_actor(lambda: waits_for(actor.execute_lifecycle(lambda: None)))
    session.execute_application(lambda: waits_for(session.execute_control(lambda: None)))
    await run_until_idle()
    assert outcomes == ["raised", "raised"]


def test_SE_9_trace_names_are_the_core_transitions() -> None:
    from zlink_model.queue import EVENTS

    rec = TraceRecorder()

    async def go() -> None:
        s = ZLinkSpotSerialExecutorFactory(rec)
        s.execute_actor("A", lambda: None)
        await run_until_idle()

    asyncio.run(go())
    assert rec.events and {e.event for e in rec} <= set(EVENTS)
    assert {e.queue for e in rec} == {"spot:S", "spot:S/actor:A"}
    assert "transfer" in rec.names("spot:S")


def ZLinkSpotSerialExecutorFactory(rec: TraceRecorder) -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=SPOT_WIDE, clock=VirtualClock(), observer=rec)
