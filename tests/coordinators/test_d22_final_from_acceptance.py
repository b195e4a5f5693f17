"""D-22: a session's final work is a work from the moment ``execute_final`` accepts it.

The final work waits outside its queue until every work accepted before it has ended
(D-12), and is placed on the loop turn after that. Before this rule the wait was a gap:
``active_count()`` left it out, an ``await_completion()`` started before it was placed
returned while it was pending, ``dispose_after_timeout`` stopped its timer when the
earlier works ended (so a final work that hangs was never cancelled and ``run()`` never
returned), and under ``run()`` a final work submitted by the session's last packet was
cancelled without running and without a word. Each test here failed then.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from zlink_reference import ZLinkSessionSerialExecutor
from zlink_reference.disposal import ZLinkRuntime, run
from zlink_reference.testing import VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors
from helpers import Gate

RUN_BOUND_S = 20.0  # far above what run() needs; only a hang reaches it


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


def session(clock: VirtualClock | None = None) -> ZLinkSessionSerialExecutor:
    return ZLinkSessionSerialExecutor("s", clock=clock or VirtualClock(), error_hook=hook)


def gated(gate: Gate, marks: list[str], name: str) -> Any:
    async def work() -> str:
        marks.append(f"start {name}")
        await gate.wait()  # holds the turn
        marks.append(f"end {name}")
        return name
    return work


async def test_D_22_a_final_work_is_active_from_acceptance() -> None:
    s, marks, gate = session(), [], Gate()
    s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    final = s.execute_final(lambda: marks.append("final"))
    assert s.active_count() == 2, (
        f"D-22: active_count() is {s.active_count()} with a running packet and an "
        "accepted final work: the final work counts from its acceptance (SE-3)")
    gate.open()
    await run_until_idle()
    assert final.done() and marks[-1] == "final" and s.active_count() == 0


async def test_D_22_await_completion_started_before_the_final_is_placed_waits_for_it(
) -> None:
    s, marks, gate = session(), [], Gate()
    s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    seen: list[bool] = []
    finals: list[Any] = []

    async def waiter() -> None:
        await s.await_completion()
        seen.append(finals[0].done())

    task = asyncio.create_task(waiter())
    await run_until_idle()  # the wait has begun, on the packet
    final_gate = Gate("final")
    final = s.execute_final(gated(final_gate, marks, "final"))
    finals.append(final)
    gate.open()
    await run_until_idle()
    assert "start final" in marks
    assert not task.done(), (
        "D-22 / SD-3: await_completion returned while the final work it was started "
        "before was still running")
    final_gate.open()
    await run_until_idle()
    assert seen == [True]


async def test_D_22_await_quiescence_started_before_the_final_is_placed_waits_for_it(
) -> None:
    s, marks, gate = session(), [], Gate()
    s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    seen: list[bool] = []
    finals: list[Any] = []

    async def waiter() -> None:
        await s.await_quiescence()
        seen.append(finals[0].done())

    task = asyncio.create_task(waiter())
    await run_until_idle()  # the wait has begun, on the packet
    final_gate = Gate("final")
    finals.append(s.execute_final(gated(final_gate, marks, "final")))
    gate.open()
    await run_until_idle()
    assert not task.done(), "D-22: await_quiescence returned while the final work was pending"
    final_gate.open()
    await run_until_idle()
    assert seen == [True]


async def test_D_22_await_after_cancellation_waits_for_a_held_zombie_final_work() -> None:
    s, marks, gate = session(), [], Gate()
    s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    final_gate = Gate("final")
    final = s.execute_final(gated(final_gate, marks, "final"))
    s.dispose_safely()
    seen: list[bool] = []

    async def waiter() -> None:
        await s.await_after_cancellation()
        seen.append(final.done())

    task = asyncio.create_task(waiter())
    await run_until_idle()
    gate.open()
    await run_until_idle()
    assert not task.done(), "D-22: await_after_cancellation returned before the final work"
    final_gate.open()
    await run_until_idle()
    assert seen == [True]


async def test_D_22_a_held_final_work_becomes_a_listed_zombie() -> None:
    clock = VirtualClock()
    s, marks, gate = session(clock), [], Gate()
    s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    final = s.execute_final(lambda: marks.append("final"))
    s.dispose_safely()
    assert (s.active_count(), s.zombie_count()) == (0, 2), (
        "D-22 / SD-2: dispose_safely must make the held final work a zombie too")
    listed = s.zombies()
    assert len(listed) == 2 and listed[-1].state == "queued", listed
    await s.await_completion()  # only zombies: returns at once (SD-3)
    gate.open()
    await run_until_idle()
    assert final.done() and marks[-1] == "final", "the zombie final runs last (D-22)"
    assert s.zombie_count() == 0


async def test_D_22_dispose_after_timeout_cancels_a_final_work_that_hangs() -> None:
    clock = VirtualClock()
    s, marks, gate = session(clock), [], Gate()
    s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    final = s.execute_final(gated(Gate("never"), marks, "final"))
    s.dispose_after_timeout(50)
    gate.open()  # the packet ends well within the bound; the final work then hangs
    await run_until_idle()
    assert "start final" in marks and not final.done()
    assert clock.pending_timers() == 1, (
        "D-22 / SD-1: the disposal timer stopped while the final work was still to run")
    clock.advance(50)
    await run_until_idle()
    assert final.cancelled(), "SD-1: a final work that hangs is cancelled after the timeout"
    assert s.active_count() == 0


async def test_D_22_dispose_after_timeout_cancels_a_final_work_still_held() -> None:
    clock = VirtualClock()
    s, marks, gate = session(clock), [], Gate()
    packet = s.execute_application(gated(gate, marks, "packet"))
    await run_until_idle()
    final = s.execute_final(lambda: marks.append("final"))
    s.dispose_after_timeout(50)
    clock.advance(50)
    await run_until_idle()
    assert packet.cancelled() and final.cancelled() and "final" not in marks


def _bounded_run(main: Any, **kw: Any) -> tuple[Any, ZLinkRuntime]:
    """``run(main)`` on a thread of its own, failing the test (instead of hanging it)
    when it has not returned after ``RUN_BOUND_S``."""
    out: dict[str, Any] = {}

    async def wrapped(runtime: ZLinkRuntime) -> Any:
        out["runtime"] = runtime
        return await main(runtime)

    def body() -> None:
        try:
            out["result"] = run(wrapped, **kw)
        except BaseException as exc:  # reported below
            out["error"] = exc

    t = threading.Thread(target=body, daemon=True)
    t.start()
    t.join(RUN_BOUND_S)
    assert not t.is_alive(), f"SD-5: run() did not return within {RUN_BOUND_S} s"
    if "error" in out:
        raise out["error"]
    return out.get("result"), out["runtime"]


def test_D_22_a_final_work_submitted_by_the_last_packet_runs_under_run() -> None:
    ran: list[str] = []
    handles: list[Any] = []

    async def main(runtime: ZLinkRuntime) -> None:
        s = ZLinkSessionSerialExecutor("s")

        async def last_packet() -> None:
            await asyncio.sleep(0.005)  # ends after the runtime end began to wait
            ran.append("packet")
            handles.append(s.execute_final(lambda: ran.append("final")))

        s.execute_application(last_packet)

    _bounded_run(main, zombie_grace_ms=50)
    assert ran == ["packet", "final"], (
        f"SD-5 / D-22: the final work accepted from the last packet did not run ({ran})")
    assert handles[0].outcome() == "completed"


def test_D_22_run_returns_when_a_final_work_hangs_under_dispose_after_timeout() -> None:
    handles: list[Any] = []

    async def main(runtime: ZLinkRuntime) -> None:
        s = ZLinkSessionSerialExecutor("s")

        async def hangs() -> None:
            await asyncio.Event().wait()  # a plain await: holds the turn for ever

        async def last_packet() -> None:
            handles.append(s.execute_final(hangs))
            await asyncio.sleep(0.005)  # ends well within the bound

        s.execute_application(last_packet)
        while not handles:
            await asyncio.sleep(0)
        s.dispose_after_timeout(30)

    _bounded_run(main, zombie_grace_ms=50)
    assert handles[0].outcome() == "cancelled", (
        "SD-1: dispose_after_timeout must cancel a final work that hangs")
