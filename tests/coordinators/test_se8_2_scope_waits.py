"""SE-8.2 (SE-10.13) for waits on a whole scope: ``await_quiescence``,
``await_completion`` and ``await_after_cancellation`` of the coordinator or queue whose
work is waiting would wait for the waiter itself. The seed asks for "an immediate
exception, not a deadlock": each raises ``ZLinkReentrancyError`` at the call. Waits that
can end (on another coordinator, or a zombie's ``await_completion``, which zombies do not
count) stay legal. The yield path is covered too: ``yield_framework_call`` on a handle
the yielding work holds a turn or claim for raises as well.

Every wait the check would miss deadlocks; it is bounded in real time so the test fails
instead of hanging."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from zlink_reference import (
    ZLinkActorSerialExecutor,
    ZLinkReentrancyError,
    ZLinkSerialExecutionQueue,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
    yield_framework_call,
)
from zlink_reference.testing import VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors

HANG = 1.0  # real seconds: far longer than any of these waits takes when it is legal

Scope = ZLinkSpotSerialExecutor | ZLinkActorSerialExecutor | ZLinkSerialExecutionQueue
Submit = Callable[[Callable[[], Any]], ZLinkWorkHandle[Any]]


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


def spot(mode: ZLinkUserSpotExecutionMode) -> tuple[Scope, Submit]:
    s = ZLinkSpotSerialExecutor("S", mode=mode, clock=VirtualClock(), error_hook=hook)
    return s, lambda w: s.execute_actor("A", w)


def spot_queue() -> tuple[Scope, Submit]:
    s = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.SPOT_WIDE,
                                clock=VirtualClock(), error_hook=hook)
    return s, s.execute_spot


def actor() -> tuple[Scope, Submit]:
    a = ZLinkActorSerialExecutor("A", clock=VirtualClock(), error_hook=hook)
    return a, a.execute_actor


def queue() -> tuple[Scope, Submit]:
    q = ZLinkSerialExecutionQueue(name="q", clock=VirtualClock(), error_hook=hook)
    return q, q.enqueue


SCOPES: dict[str, Callable[[], tuple[Scope, Submit]]] = {
    "spot_per_actor": lambda: spot(ZLinkUserSpotExecutionMode.PER_ACTOR),
    "spot_wide_actor": lambda: spot(ZLinkUserSpotExecutionMode.SPOT_WIDE),
    "spot_queue": spot_queue,
    "actor": actor,
    "queue": queue,
}


def wait_of(scope: Scope, name: str) -> Awaitable[None]:
    """The scope wait ``name``; ``await_after_cancellation`` after the scope was
    disposed safely (it needs a disposal first, SD-3), which leaves the waiter a
    zombie that the wait still counts."""
    if name == "await_after_cancellation":
        scope.dispose_safely()
        return scope.await_after_cancellation()
    wait: Callable[[], Awaitable[None]] = getattr(scope, name)
    return wait()


async def outcome(handle: ZLinkWorkHandle[Any]) -> Any:
    """The work's result, from outside any work, failing the test on a hang."""
    return await asyncio.wait_for(asyncio.shield(handle), HANG * 2)


WAITS = ("await_quiescence", "await_completion", "await_after_cancellation")


@pytest.mark.parametrize("kind", sorted(SCOPES))
@pytest.mark.parametrize("wait", WAITS)
async def test_SE_8_2_scope_wait_from_its_own_work_raises_at_once(kind: str, wait: str) -> None:
    scope, submit = SCOPES[kind]()

    async def work() -> str:
        try:
            async with asyncio.timeout(HANG):  # in the work's own task
                await wait_of(scope, wait)
        except ZLinkReentrancyError:
            return "raised"
        except TimeoutError:
            return "hung"
        return "returned"

    assert await outcome(submit(work)) == "raised"
    await run_until_idle()


@pytest.mark.parametrize("kind", sorted(SCOPES))
@pytest.mark.parametrize("wait", ("await_quiescence", "await_completion"))
async def test_SE_8_2_scope_wait_through_a_yield_raises(kind: str, wait: str) -> None:
    """The waiter gave its turn back, but it is still live and the wait counts it."""
    scope, submit = SCOPES[kind]()

    async def work() -> str:
        try:
            async with asyncio.timeout(HANG):  # in the work's own task
                await yield_framework_call(wait_of(scope, wait))
        except ZLinkReentrancyError:
            return "raised"
        except TimeoutError:
            return "hung"
        return "returned"

    assert await outcome(submit(work)) == "raised"
    await run_until_idle()


@pytest.mark.parametrize("wait", WAITS)
async def test_SE_8_2_scope_wait_on_another_coordinator_is_legal(wait: str) -> None:
    a, _ = actor()
    _b, submit_b = actor()
    if wait == "await_after_cancellation":
        a.dispose_safely()
    a_wait: Callable[[], Awaitable[None]] = getattr(a, wait)

    async def work() -> str:
        await a_wait()
        return "returned"

    assert await outcome(submit_b(work)) == "returned"


async def test_SE_8_2_zombie_awaiting_completion_of_its_scope_is_legal() -> None:
    """Zombies do not count for ``await_completion`` (SD-3): a zombie's wait ends."""
    a, submit = actor()

    async def work() -> str:
        a.dispose_safely()  # this work is a zombie from here on
        await a.await_completion()
        return "returned"

    assert await outcome(submit(work)) == "returned"


async def test_SE_8_2_yield_on_its_own_handle_raises() -> None:
    """``yield_framework_call`` on the yielding work's own handle waits for itself."""
    _a, submit = actor()
    mine: list[ZLinkWorkHandle[Any]] = []

    async def work() -> str:
        try:
            async with asyncio.timeout(HANG):  # in the work's own task
                await yield_framework_call(mine[0])
        except ZLinkReentrancyError:
            return "raised"
        except TimeoutError:
            return "hung"
        return "returned"

    mine.append(submit(work))
    assert await outcome(mine[0]) == "raised"


async def test_SE_8_2_yield_on_a_handle_of_its_own_actor_queue_raises() -> None:
    """A SpotWide Actor work gives the Spot turn back in a yield but keeps its Actor
    claim; a later work of the same Actor needs that claim, so the yield never ends."""
    _s, submit = spot(ZLinkUserSpotExecutionMode.SPOT_WIDE)

    async def work() -> str:
        try:
            later = submit(lambda: "later")
            async with asyncio.timeout(HANG):  # in the work's own task
                await yield_framework_call(later)
        except ZLinkReentrancyError:
            return "raised"
        except TimeoutError:
            return "hung"
        return "returned"

    assert await outcome(submit(work)) == "raised"
    await run_until_idle()
