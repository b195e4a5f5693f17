"""SD: scope disposal and zombie work, for a standalone queue and every coordinator.

Each scope kind is built by a factory that also says how to submit one work to it, so
the same test runs over a queue, a PerActor Spot, a SpotWide Spot, an Actor executor and
a Session executor."""

from __future__ import annotations

import asyncio
import logging
import os
from collections.abc import Callable
from typing import Any, cast

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from zlink_reference import (
    ZLinkActorSerialExecutor,
    ZLinkClosedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    current_work,
    yield_framework_call,
)
from zlink_reference.disposal import ZLinkNotDisposedError, ZLinkRuntime, run
from zlink_reference.testing import VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors
from helpers import Gate, Timeline


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


class Scope:
    """A scope under test and how to submit to it."""

    def __init__(self, kind: str, clock: VirtualClock, on_error: Any = hook) -> None:
        self.kind = kind
        kw: dict[str, Any] = {"clock": clock, "error_hook": on_error}
        if kind == "queue":
            self.scope: Any = ZLinkSerialExecutionQueue(name="q", **kw)
            self.submit: Callable[[Any], Any] = self.scope.enqueue
        elif kind in ("per_actor", "spot_wide"):
            self.scope = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode(kind), **kw)
            self.submit = lambda w: self.scope.execute_actor("A", w)
        elif kind == "actor":
            self.scope = ZLinkActorSerialExecutor("A", **kw)
            self.submit = self.scope.execute_actor
        else:
            self.scope = ZLinkSessionSerialExecutor("s", **kw)
            self.submit = self.scope.execute_application


KINDS = ["queue", "per_actor", "spot_wide", "actor", "session"]
TEST_TIMEOUT = float(os.environ.get("ZLINK_TEST_TIMEOUT", "60"))


@pytest.fixture(params=KINDS)
def make(request: pytest.FixtureRequest) -> Callable[..., Scope]:
    return lambda clock=None, **kw: Scope(request.param, clock or VirtualClock(), **kw)


def suspender(ext: asyncio.Future[Any], t: Timeline, name: str) -> Any:
    async def work() -> Any:
        t.marks.append(("start", name))
        try:
            value = await yield_framework_call(ext)
        except asyncio.CancelledError:
            # D-8: the cancellation arrives on the work's own turn
            t.marks.append(("cancelled" if current_work() is not None else "off-turn", name))
            raise
        t.marks.append(("end", name))
        return value
    return work


# ---------------------------------------------------------------- SD-1 dispose
async def test_SD_1_dispose_on_an_empty_scope_closes_it(make: Callable[..., Scope]) -> None:
    s = make()
    s.scope.dispose()
    s.scope.dispose()  # idempotent
    with pytest.raises(ZLinkClosedError):
        s.submit(lambda: None)
    await s.scope.await_completion()
    await s.scope.await_after_cancellation()


async def test_SD_1_dispose_cancels_never_started_and_suspended_work(
    make: Callable[..., Scope],
) -> None:
    s, t, gate = make(), Timeline(), Gate()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    h_susp = s.submit(suspender(ext, t, "susp"))
    await run_until_idle()
    h_block = s.submit(t.gated("block", gate))
    h_never = s.submit(t.sync("never"))
    await run_until_idle()
    assert t.started() == ["susp"] + (["block"] if s.kind != "spot_wide" else [])
    s.scope.dispose()
    await run_until_idle()
    assert h_never.cancelled() and "never" not in t.started()
    assert h_susp.cancelled() and ("cancelled", "susp") in t.marks
    assert ext.cancelled(), "the pending external call is cut short"
    assert h_block.cancelled()
    assert s.scope.active_count() == 0 and s.scope.zombie_count() == 0
    with pytest.raises(ZLinkClosedError):
        s.submit(lambda: None)


async def test_SD_1_dispose_lets_a_running_synchronous_turn_finish() -> None:
    clock = VirtualClock()
    q = ZLinkSerialExecutionQueue(name="q", clock=clock, error_hook=hook)
    log: list[str] = []

    def work() -> None:
        q.dispose()  # from inside the running turn
        log.append("still ran to its end")

    h1 = q.enqueue(work)
    h2 = q.enqueue(lambda: log.append("never"))
    await run_until_idle()
    assert log == ["still ran to its end"]
    assert h1.outcome() == "completed" and h2.cancelled()


async def test_SD_1_every_reservation_is_released(make: Callable[..., Scope]) -> None:
    s, gate = make(), Gate()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    s.submit(suspender(ext, Timeline(), "x"))
    for _ in range(3):
        s.submit(gate.wait)
    await run_until_idle()
    s.scope.dispose()
    await run_until_idle()
    queues = s.scope._scope_queues()
    assert all(q._core.live() == 0 and q._core.app_bytes == 0 for q in queues)


# ---------------------------------------------------------------- SD-1/2 safely
async def test_SD_2_dispose_safely_turns_live_work_into_zombies_that_run_on(
    make: Callable[..., Scope],
) -> None:
    s, t, gate = make(), Timeline(), Gate()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    h_susp = s.submit(suspender(ext, t, "susp"))
    await run_until_idle()
    h_block = s.submit(t.gated("block", gate))
    h_later = s.submit(t.sync("later"))
    await run_until_idle()
    assert s.scope.active_count() == 3 and s.scope.zombie_count() == 0
    s.scope.dispose_safely()
    assert s.scope.active_count() == 0 and s.scope.zombie_count() == 3
    with pytest.raises(ZLinkClosedError):
        s.submit(lambda: None)
    await s.scope.await_completion()  # returns although zombies run (SD-3)
    assert {z.state for z in s.scope.zombies()} <= {"queued", "running", "suspended"}
    ext.set_result(1)
    gate.open()
    await s.scope.await_after_cancellation()
    assert [h.outcome() for h in (h_susp, h_block, h_later)] == ["completed"] * 3
    assert "later" in t.started(), "never-started work runs as a zombie"
    assert s.scope.zombie_count() == 0 and s.scope.zombies() == []


async def test_SD_2_a_zombie_that_finishes_leaves_the_scope() -> None:
    clock = VirtualClock()
    q = ZLinkSerialExecutionQueue(name="q", clock=clock, error_hook=hook)
    gates = [Gate(), Gate()]
    for g in gates:
        q.enqueue(g.wait)
    await run_until_idle()
    q.dispose_safely()
    assert q.zombie_count() == 2
    gates[0].open()
    await run_until_idle()
    assert q.zombie_count() == 1
    gates[1].open()
    await run_until_idle()
    assert q.zombie_count() == 0


async def test_SD_2_zombies_are_visible_with_what_they_wait_on() -> None:
    clock = VirtualClock()
    q = ZLinkSerialExecutionQueue(name="q", clock=clock, error_hook=hook)
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    q.enqueue(suspender(ext, Timeline(), "s"))
    await run_until_idle()
    clock.advance(5)
    q.dispose_safely()
    [z] = q.zombies()
    assert (z.scope, z.queue, z.state, z.since) == ("q", "q", "suspended", 5)
    assert z.awaiting is not None and "Future" in z.awaiting
    ext.set_result(0)
    await run_until_idle()


async def test_SD_6_every_scope_lists_a_suspended_zombie_with_what_it_waits_on(
    make: Callable[..., Scope],
) -> None:
    """SD-2, SD-6: a zombie suspended in a yield is listed as suspended, with its wait.

    A SpotWide Actor work is counted by its record on the Actor queue while it runs as an
    execution turn on the Spot queue; the listing must read the turn, not the record."""
    clock = VirtualClock()
    s = make(clock)
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    h = s.submit(suspender(ext, Timeline(), "s"))
    await run_until_idle()
    clock.advance(5)
    s.scope.dispose_safely()
    [z] = s.scope.zombies()
    assert (z.state, z.since) == ("suspended", 5), z
    assert z.awaiting is not None and "Future" in z.awaiting, z
    ext.set_result(0)
    await run_until_idle()
    assert s.scope.zombies() == [] and h.outcome() == "completed"


# ---------------------------------------------------------------- SD-1 timeout
async def test_SD_1_dispose_after_timeout_when_everything_finishes_early(
    make: Callable[..., Scope],
) -> None:
    clock = VirtualClock()
    s, gate = make(clock), Gate()
    h = s.submit(gate.wait)
    await run_until_idle()
    s.scope.dispose_after_timeout(100)
    assert clock.pending_timers() == 1
    with pytest.raises(ZLinkClosedError):
        s.submit(lambda: None)
    gate.open()
    await run_until_idle()
    assert h.outcome() == "completed"
    assert clock.pending_timers() == 0, "the timer outlived the work it guards"
    clock.advance(200)
    await run_until_idle()


async def test_SD_1_dispose_after_timeout_cancels_what_is_stuck(
    make: Callable[..., Scope],
) -> None:
    clock = VirtualClock()
    s, t = make(clock), Timeline()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    stuck = s.submit(suspender(ext, t, "stuck"))
    await run_until_idle()
    s.scope.dispose_after_timeout(50)
    clock.advance(49)
    await run_until_idle()
    assert not stuck.done()
    clock.advance(1)
    await run_until_idle()
    assert stuck.cancelled() and ("cancelled", "stuck") in t.marks
    await s.scope.await_after_cancellation()


async def test_SD_1_dispose_after_timeout_with_nothing_left_starts_no_timer(
    make: Callable[..., Scope],
) -> None:
    clock = VirtualClock()
    s = make(clock)
    s.scope.dispose_after_timeout(10)
    assert clock.pending_timers() == 0


async def test_SD_1_dispose_after_timeout_after_dispose_safely_cancels_the_zombies(
    make: Callable[..., Scope],
) -> None:
    """D-27: the bound applies to the zombies dispose_safely made (the seed:
    disposeAfterTimeout guarantees cancellation of what hangs)."""
    clock = VirtualClock()
    s, t = make(clock), Timeline()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    stuck = s.submit(suspender(ext, t, "stuck"))
    await run_until_idle()
    s.scope.dispose_safely()
    assert s.scope.zombie_count() == 1
    s.scope.dispose_after_timeout(50)
    clock.advance(49)
    await run_until_idle()
    assert not stuck.done() and s.scope.zombie_count() == 1, "cancelled before its time"
    clock.advance(1)
    await run_until_idle()
    assert stuck.cancelled() and ("cancelled", "stuck") in t.marks
    assert s.scope.zombie_count() == 0
    await s.scope.await_after_cancellation()


async def test_SD_1_dispose_after_timeout_bounds_the_zombies_of_every_queue() -> None:
    """D-27 on a scope with many queues: a PerActor Spot's zombies on two Actor queues
    and on the Spot queue are all cancelled when the bound is up."""
    clock = VirtualClock()
    spot = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR,
                                   clock=clock, error_hook=hook)
    t = Timeline()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    stuck = [spot.execute_actor("A", suspender(ext, t, "a")),
             spot.execute_actor("B", suspender(ext, t, "b")),
             spot.execute_spot(suspender(ext, t, "spot"))]
    await run_until_idle()
    spot.dispose_safely()
    assert spot.zombie_count() == 3
    spot.dispose_after_timeout(10)
    clock.advance(10)
    await run_until_idle()
    assert [h.outcome() for h in stuck] == ["cancelled"] * 3
    assert spot.zombie_count() == 0
    await spot.await_after_cancellation()


async def test_SD_1_dispose_after_timeout_after_dispose_safely_spares_what_finished(
    make: Callable[..., Scope],
) -> None:
    """Zombies that end before the bound end as they ended; the bound's timer goes
    with them (D-18, D-27)."""
    clock = VirtualClock()
    s, gate = make(clock), Gate()
    h = s.submit(gate.wait)
    await run_until_idle()
    s.scope.dispose_safely()
    before = clock.pending_timers()
    s.scope.dispose_after_timeout(100)
    assert clock.pending_timers() == before + 1, "no bound was set on the zombie"
    gate.open()
    await run_until_idle()
    assert h.outcome() == "completed"
    assert clock.pending_timers() == before, "the bound outlived the zombie it guards"
    clock.advance(200)
    await run_until_idle()
    assert h.outcome() == "completed"


@pytest.mark.parametrize(("bad", "error"), [(-1, ValueError), ("5", TypeError),
                                            (float("nan"), ValueError),
                                            (float("inf"), ValueError)])
async def test_SD_1_negative_or_bad_timeout_is_refused(bad: Any, error: type) -> None:
    q = ZLinkSerialExecutionQueue(name="q", clock=VirtualClock())
    with pytest.raises(error, match="timeout_ms"):
        q.dispose_after_timeout(bad)
    q.enqueue(lambda: None)  # still open: nothing happened


@pytest.mark.parametrize(("bad", "error"), [(-1, ValueError), ("5", TypeError),
                                            (float("nan"), ValueError),
                                            (float("inf"), ValueError)])
def test_SD_5_the_zombie_grace_is_a_finite_bound(bad: Any, error: type) -> None:
    with pytest.raises(error, match="zombie_grace_ms"):
        ZLinkRuntime(zombie_grace_ms=bad)
    assert ZLinkRuntime(zombie_grace_ms=0).zombie_grace_ms == 0


# ---------------------------------------------------------------- SD-3 waiting
async def test_SD_3_await_completion_returns_once_dispose_safely_leaves_only_zombies(
    make: Callable[..., Scope],
) -> None:
    """A waiter that started while work was active returns as soon as that work becomes
    a zombie: zombies do not count (SD-3), so it must not wait for them to end."""
    s, gate = make(), Gate()
    s.submit(gate.wait)
    await run_until_idle()
    waiter = asyncio.ensure_future(s.scope.await_completion())
    await run_until_idle()
    assert not waiter.done()
    s.scope.dispose_safely()
    await run_until_idle()
    assert waiter.done(), "only a zombie is left, yet await_completion still waits"
    gate.open()
    await run_until_idle()


async def test_SD_3_await_after_cancellation_before_any_disposal_is_an_error(
    make: Callable[..., Scope],
) -> None:
    s = make()
    with pytest.raises(ZLinkNotDisposedError):
        await s.scope.await_after_cancellation()


@pytest.mark.expect_errors
async def test_SD_3_zombie_failures_go_to_the_handler_with_the_scope(
    make: Callable[..., Scope],
) -> None:
    s, gates = make(on_error=lambda e, h: None), [Gate(), Gate()]

    def failing(gate: Gate, message: str) -> Any:
        async def work() -> None:
            await gate.wait()
            raise RuntimeError(message)
        return work

    s.submit(failing(gates[0], "first"))
    s.submit(failing(gates[1], "second"))
    await run_until_idle()
    s.scope.dispose_safely()
    seen: list[tuple[str, Any]] = []
    waiter = asyncio.ensure_future(
        s.scope.await_after_cancellation(lambda e, scope: seen.append((str(e), scope))))
    await run_until_idle()
    assert not waiter.done()
    for g in gates:
        g.open()
    await waiter
    assert seen == [("first", s.scope), ("second", s.scope)]


@pytest.mark.expect_errors
async def test_SD_3_without_a_handler_the_first_zombie_failure_is_raised() -> None:
    q = ZLinkSerialExecutionQueue(name="q", clock=VirtualClock(), error_hook=lambda e, h: None)
    gate = Gate()

    async def fail() -> None:
        await gate.wait()
        raise KeyError("zombie")

    q.enqueue(fail)
    q.enqueue(fail)
    await run_until_idle()
    q.dispose_safely()
    gate.open()
    with pytest.raises(KeyError, match="zombie"):
        await q.await_after_cancellation()
    await q.await_after_cancellation()  # reported once: nothing left to raise


async def test_SD_3_await_after_cancellation_after_all_zombies_ended_returns() -> None:
    q = ZLinkSerialExecutionQueue(name="q", clock=VirtualClock(), error_hook=hook)
    q.enqueue(lambda: None)
    await run_until_idle()
    q.dispose_safely()
    await q.await_after_cancellation()


# ---------------------------------------------------------------- SD-4 flags
async def test_SD_4_scopes_dispose_safely_by_default_when_destroyed(
    make: Callable[..., Scope],
) -> None:
    s, gate = make(), Gate()
    assert s.scope.dispose_safely_on_exit
    async with s.scope:
        h = s.submit(gate.wait)
        await run_until_idle()
    assert s.scope.zombie_count() == 1 and not h.done()
    gate.open()
    await run_until_idle()
    assert h.outcome() == "completed"


async def test_SD_4_as_not_safely_makes_destruction_cancel(make: Callable[..., Scope]) -> None:
    s, gate = make(), Gate()
    assert s.scope.as_not_safely() is s.scope
    async with s.scope:
        h = s.submit(gate.wait)
        await run_until_idle()
    await run_until_idle()
    assert h.cancelled()


async def test_SD_4_a_spots_actor_and_timer_queues_inherit_the_flag_later_changes_too() -> None:
    spot = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR,
                                   clock=VirtualClock(), error_hook=hook)
    gate = Gate()
    h_actor = spot.execute_actor("A", gate.wait)
    h_timer = spot.execute_timer("t", gate.wait)
    await run_until_idle()
    queues = spot._scope_queues()
    assert len(queues) == 3 and all(q.dispose_safely_on_exit for q in queues)
    spot.as_not_safely()  # made after the queues: reaches them too (D-16)
    assert not any(q.dispose_safely_on_exit for q in queues)
    spot.destroy()
    await run_until_idle()
    assert h_actor.cancelled() and h_timer.cancelled()


CHILD_KINDS: dict[str, Callable[[Any], Any]] = {
    "queue": lambda parent: ZLinkSerialExecutionQueue.inherit(parent, name="child",
                                                            error_hook=hook),
    "spot": lambda parent: ZLinkSpotSerialExecutor.inherit(
        parent, "C", mode=ZLinkUserSpotExecutionMode.SPOT_WIDE, error_hook=hook),
    "actor": lambda parent: ZLinkActorSerialExecutor.inherit(parent, "C", error_hook=hook),
    "session": lambda parent: ZLinkSessionSerialExecutor.inherit(parent, "c", error_hook=hook),
}


def _child_submit(child: Any) -> Callable[[Any], Any]:
    if isinstance(child, ZLinkSerialExecutionQueue):
        return cast(Callable[[Any], Any], child.enqueue)
    if isinstance(child, ZLinkSpotSerialExecutor):
        return lambda w: child.execute_actor("A", w)
    if isinstance(child, ZLinkActorSerialExecutor):
        return cast(Callable[[Any], Any], child.execute_actor)
    return cast(Callable[[Any], Any], child.execute_application)


@pytest.mark.parametrize("child_kind", sorted(CHILD_KINDS))
@pytest.mark.parametrize("parent_safely", [True, False], ids=["safe-parent", "not-safe-parent"])
async def test_SD_4_a_child_scope_inherits_the_safe_flag(
    make: Callable[..., Scope], child_kind: str, parent_safely: bool,
) -> None:
    """The seed's ``Scope::inherit($parent)``: a child scope has its parent's flag, so
    destroying it makes zombies of a safe parent's child and cancels a not-safe one's."""
    parent = make().scope
    if not parent_safely:
        parent.as_not_safely()
    child = CHILD_KINDS[child_kind](parent)
    assert child.dispose_safely_on_exit is parent_safely
    gate = Gate()
    h = _child_submit(child)(gate.wait)
    await run_until_idle()
    child.destroy()
    await run_until_idle()
    if parent_safely:
        assert child.zombie_count() == 1 and not h.done()
        gate.open()
        await run_until_idle()
        assert h.outcome() == "completed"
    else:
        assert h.cancelled()


async def test_SD_4_a_child_copies_the_flag_when_made() -> None:
    """D-29: the flag is copied at ``inherit``; a later change of either side stays its
    own (unlike a coordinator's own queues, D-16, which are one scope with it)."""
    parent = ZLinkActorSerialExecutor("P", clock=VirtualClock(), error_hook=hook)
    child = ZLinkActorSerialExecutor.inherit(parent, "C", error_hook=hook)
    parent.as_not_safely()
    assert child.dispose_safely_on_exit and not parent.dispose_safely_on_exit
    later = ZLinkActorSerialExecutor.inherit(parent, "L", error_hook=hook)
    assert not later.dispose_safely_on_exit
    with pytest.raises(TypeError, match="parent must be a scope"):
        ZLinkActorSerialExecutor.inherit(object(), "X")  # type: ignore[arg-type]


# ---------------------------------------------------------------- SD-5 runtime end
def test_SD_5_runtime_ends_when_no_active_work_is_left_and_cancels_stuck_zombies(
    caplog: pytest.LogCaptureFixture,
) -> None:
    events: list[str] = []

    async def main(runtime: Any) -> str:
        spot = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR)
        never: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def stuck_forever() -> None:
            events.append("stuck started")
            try:
                await yield_framework_call(never)  # an external call that never answers
            except asyncio.CancelledError:
                events.append("stuck cancelled")
                raise

        async def active_then_done() -> None:
            await asyncio.sleep(0.01)
            events.append("active done")

        spot.execute_actor("zombie", stuck_forever)
        await asyncio.sleep(0)
        spot.dispose_safely()  # the stuck work becomes a zombie
        other = ZLinkSerialExecutionQueue(name="other")
        other.enqueue(active_then_done)  # active work keeps the application alive
        return "main done"

    with caplog.at_level(logging.WARNING, logger="zlink.zombies"):
        result = run(main, zombie_grace_ms=200)
    assert result == "main done"
    assert events == ["stuck started", "active done", "stuck cancelled"]
    assert any("cancelling zombie" in r.message for r in caplog.records)


def test_SD_5_a_zombie_that_ignores_cancellation_cannot_keep_the_process_alive(
    caplog: pytest.LogCaptureFixture,
) -> None:
    captured: list[Any] = []

    async def main(runtime: Any) -> None:
        captured.append(runtime)
        q = ZLinkSerialExecutionQueue(name="stubborn")

        async def ignores_cancellation() -> None:
            while True:
                try:
                    await asyncio.sleep(3600)
                except asyncio.CancelledError:
                    continue

        q.enqueue(ignores_cancellation)
        await asyncio.sleep(0)
        q.dispose_safely()

    with caplog.at_level(logging.WARNING, logger="zlink.zombies"):
        run(main, zombie_grace_ms=50)
    report = captured[0].report
    assert [z.queue for z in report.abandoned] == ["stubborn"]
    assert any("abandoned" in r.message for r in caplog.records)


def test_SD_6_a_zombie_outliving_the_threshold_is_logged(caplog: pytest.LogCaptureFixture
                                                           ) -> None:
    async def go() -> None:
        clock = VirtualClock()
        q = ZLinkSerialExecutionQueue(name="slow", clock=clock, error_hook=hook)
        gate = Gate()
        q.enqueue(gate.wait)
        await run_until_idle()
        q._rt.zombie_warn_after_ms = 30
        q.dispose_safely()
        clock.advance(30)
        await run_until_idle()
        gate.open()
        await run_until_idle()

    with caplog.at_level(logging.WARNING, logger="zlink.zombies"):
        asyncio.run(asyncio.wait_for(go(), TEST_TIMEOUT))
    assert [r.getMessage() for r in caplog.records if r.name == "zlink.zombies"] == [
        "zombie work 0 of slow (unlabelled) still running after 30 ms"]


# ---------------------------------------------------------------- D-11 accounting
@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    kind=st.sampled_from(KINDS),
    plan=st.lists(st.sampled_from(["sync", "gated", "yield", "fail"]), min_size=1, max_size=6),
    disposal=st.sampled_from(["dispose", "dispose_safely", "timeout"]),
    when=st.integers(0, 6),
    release_first=st.booleans(),
)
def test_D_11_every_accepted_work_ends_in_exactly_one_outcome(
    kind: str, plan: list[str], disposal: str, when: int, release_first: bool
) -> None:
    async def go() -> None:
        clock = VirtualClock()
        s = Scope(kind, clock, on_error=lambda e, h: None)
        gate = Gate()
        ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        settled: dict[int, int] = {}
        handles = []
        for i, step in enumerate(plan):
            if i == when:
                await run_until_idle()
            if step == "sync":
                work: Any = lambda: None  # noqa: E731
            elif step == "gated":
                work = gate.wait
            elif step == "yield":
                work = suspender(ext, Timeline(), f"y{i}")
            else:
                def work() -> None:
                    raise ValueError("fails")
            h = s.submit(work)
            h.add_done_callback(lambda hh, i=i: settled.__setitem__(i, settled.get(i, 0) + 1))
            handles.append(h)
        await run_until_idle()
        if release_first:
            gate.open()
        if disposal == "dispose":
            s.scope.dispose()
        elif disposal == "dispose_safely":
            s.scope.dispose_safely()
        else:
            s.scope.dispose_after_timeout(5)
            clock.advance(5)
        await run_until_idle()
        gate.open()
        if not ext.done():
            ext.set_result(0)
        await run_until_idle()
        await s.scope.await_after_cancellation(lambda e, sc: None)
        await run_until_idle()
        assert all(h.done() for h in handles)
        assert sorted(settled) == list(range(len(plan))) and set(settled.values()) == {1}
        assert all(h.outcome() in ("completed", "failed", "cancelled") for h in handles)
        queues = s.scope._scope_queues()
        assert all(q._core.live() == 0 and q._core.app_bytes == 0 and q._core.zombies == 0
                   for q in queues)

    asyncio.run(asyncio.wait_for(go(), TEST_TIMEOUT))
