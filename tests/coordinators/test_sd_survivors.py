"""SD-3a: a work that does not end within its cancellation (it catches ``CancelledError``
and waits again) becomes a zombie: counted and logged as one, ``await_completion`` no
longer waits for it, and the runtime end (SD-5) cancels it again and abandons it in
bounded time. A work that honours its cancellation, however many steps that takes, is
never marked."""

from __future__ import annotations

import asyncio
import logging
import threading
from typing import Any

import pytest

from zlink_reference import (
    ZLinkSerialExecutionQueue,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    yield_framework_call,
)
from zlink_reference.disposal import run
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors
from helpers import Gate

KINDS = [ZLinkUserSpotExecutionMode.PER_ACTOR, ZLinkUserSpotExecutionMode.SPOT_WIDE]


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


def make_spot(mode: ZLinkUserSpotExecutionMode, trace: TraceRecorder | None = None
              ) -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=mode, clock=VirtualClock(), error_hook=hook,
                                   observer=trace)


def survivor(gate: Gate, log: list[str]) -> Any:
    """Work that catches its cancellation and waits at ``gate`` again."""
    async def work() -> str:
        while True:
            try:
                await gate.wait()
                log.append("gate opened")
                return "done"
            except asyncio.CancelledError:
                log.append("cancel caught")
                task = asyncio.current_task()
                assert task is not None
                task.uncancel()
    return work


@pytest.mark.parametrize("mode", KINDS)
async def test_SD_3_a_work_that_survives_dispose_becomes_a_zombie(
    mode: ZLinkUserSpotExecutionMode, caplog: pytest.LogCaptureFixture,
) -> None:
    trace = TraceRecorder()
    s = make_spot(mode, trace)
    gate, log = Gate(), []
    h = s.execute_actor("A", survivor(gate, log))
    await run_until_idle()
    try:
        with caplog.at_level(logging.WARNING, logger="zlink.zombies"):
            s.dispose()
            await run_until_idle()
        assert log == ["cancel caught"]
        assert (s.active_count(), s.zombie_count()) == (0, 1)
        assert [z.state for z in s.zombies()] == ["running"]
        assert "did not end within its cancellation" in caplog.text
        # SpotWide: the execution turn and the Actor queue's record holding its claim.
        marks = 2 if mode is ZLinkUserSpotExecutionMode.SPOT_WIDE else 1
        assert [e.event for e in trace].count("survive_cancel") == marks
        await asyncio.wait_for(s.await_completion(), 1.0)  # only a zombie is left
    finally:
        gate.open()  # a survivor left waiting would keep the test's loop from closing
    await asyncio.wait_for(s.await_after_cancellation(), 1.0)
    assert h.result() == "done" and s.zombie_count() == 0


async def test_SD_3_a_yielded_work_surviving_its_cancel_on_its_turn_is_a_zombie() -> None:
    s = make_spot(ZLinkUserSpotExecutionMode.PER_ACTOR)
    ext: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    gate, log = Gate(), []

    async def work() -> str:
        try:
            await yield_framework_call(ext)
        except asyncio.CancelledError:
            log.append("cancel caught")
        return await survivor(gate, log)()

    h = s.execute_actor("A", work)
    await run_until_idle()
    try:
        s.dispose()
        await run_until_idle()
        assert log == ["cancel caught"]
        assert (s.active_count(), s.zombie_count()) == (0, 1)
        await asyncio.wait_for(s.await_completion(), 1.0)
    finally:
        gate.open()
    await asyncio.wait_for(s.await_after_cancellation(), 1.0)
    assert h.result() == "done"


async def test_SD_3_a_work_honouring_its_cancel_in_several_steps_is_no_zombie() -> None:
    """The cancellation goes down through a child task that takes steps to end, and the
    work's cleanup awaits nothing new: it ends cancelled, never marked."""
    trace = TraceRecorder()
    s = make_spot(ZLinkUserSpotExecutionMode.PER_ACTOR, trace)
    gate, log = Gate(), []

    async def child() -> None:
        try:
            await gate.wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0)  # ending takes the child a few steps
            await asyncio.sleep(0)
            log.append("child ended")
            raise

    async def work() -> None:
        try:
            await asyncio.create_task(child())
        finally:
            log.append("work ended")

    h = s.execute_actor("A", work)
    await run_until_idle()
    s.dispose()
    await run_until_idle()
    assert log == ["child ended", "work ended"]
    assert h.cancelled() and s.zombie_count() == 0
    assert "survive_cancel" not in [e.event for e in trace]


def test_SD_5_runtime_end_abandons_a_survivor_of_dispose_in_bounded_time(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Before: ``run`` waited for the survivor as active work, for ever."""
    captured: list[Any] = []
    log: list[str] = []

    async def main(runtime: Any) -> None:
        captured.append(runtime)
        q = ZLinkSerialExecutionQueue(name="stubborn")
        q.enqueue(survivor(Gate(), log))
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        q.dispose()

    def end() -> None:
        with caplog.at_level(logging.WARNING, logger="zlink.zombies"):
            run(main, zombie_grace_ms=50)

    thread = threading.Thread(target=end, daemon=True)
    thread.start()
    thread.join(5.0)
    assert not thread.is_alive(), "the runtime end waited for a work that survived dispose"
    report = captured[0].report
    assert [z.queue for z in report.cancelled_zombies] == ["stubborn"]
    assert [z.queue for z in report.abandoned] == ["stubborn"]
    assert log[:2] == ["cancel caught", "cancel caught"]  # cancelled again at the end
