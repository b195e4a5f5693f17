"""SE-8.2 under the wrappers callers put around a wait: ``wait_for``, ``asyncio.timeout``,
``shield``, ``gather``, ``as_completed``, child tasks and task groups. A wait that work
holding a turn starts, in its own task or in a task it started, for work that needs that
turn raises ``ZLinkReentrancyError`` at once. A wait started once the turn was given back
(the work ended, or yielded) is legal. Holding its turn, a work may not wait for any
work of its own coordinator (D-14, after the seed), only for another coordinator's."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from zlink_reference import (
    ZLinkReentrancyError,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    yield_framework_call,
)
from zlink_reference.testing import VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors
from helpers import Gate

PER_ACTOR = ZLinkUserSpotExecutionMode.PER_ACTOR
SPOT_WIDE = ZLinkUserSpotExecutionMode.SPOT_WIDE

# A wait the check misses deadlocks: bound it in real time so the test fails instead.
HANG = 1.0

Wrapper = Callable[[Awaitable[Any]], Awaitable[Any]]


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


def make_spot(mode: ZLinkUserSpotExecutionMode) -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=mode, clock=VirtualClock(), error_hook=hook)


async def _await(aw: Awaitable[Any]) -> Any:
    return await aw


async def via_wait_for(aw: Awaitable[Any]) -> Any:
    return await asyncio.wait_for(aw, HANG)


async def via_timeout(aw: Awaitable[Any]) -> Any:
    async with asyncio.timeout(HANG):
        return await aw


async def via_shield(aw: Awaitable[Any]) -> Any:
    return await asyncio.shield(aw)


async def via_gather(aw: Awaitable[Any]) -> Any:
    return (await asyncio.gather(aw))[0]


async def via_as_completed(aw: Awaitable[Any]) -> Any:
    for first in asyncio.as_completed([aw]):
        return await first
    raise AssertionError("as_completed yielded nothing")


async def via_child_task(aw: Awaitable[Any]) -> Any:
    return await asyncio.create_task(_await(aw))


async def via_task_group(aw: Awaitable[Any]) -> Any:
    try:
        async with asyncio.TaskGroup() as tg:
            task = tg.create_task(_await(aw))
    except BaseExceptionGroup as group:
        raise group.exceptions[0] from None
    return task.result()


async def via_nested(aw: Awaitable[Any]) -> Any:
    """A child task's child, under a timeout: the holder is inherited twice."""
    return await asyncio.wait_for(asyncio.create_task(via_gather(aw)), HANG)


WRAPPERS: dict[str, Wrapper] = {
    "wait_for": via_wait_for,
    "timeout": via_timeout,
    "shield": via_shield,
    "gather": via_gather,
    "as_completed": via_as_completed,
    "child_task": via_child_task,
    "task_group": via_task_group,
    "nested": via_nested,
}


async def outcome_of(handle: Awaitable[Any]) -> Any:
    """The work's result, from outside any work, failing the test on a hang."""
    return await asyncio.wait_for(_await(handle), HANG * 2)


def waiting_work(wrapper: Wrapper, target: Callable[[], Any]) -> Callable[[], Any]:
    """Work that submits ``target()`` and waits for it through ``wrapper``."""
    async def work() -> str:
        try:
            await wrapper(target())
        except ZLinkReentrancyError:
            return "raised"
        return "waited"
    return work


@pytest.mark.parametrize("name", sorted(WRAPPERS))
async def test_SE_8_2_wrapped_wait_on_the_same_spotwide_spot_raises_at_once(name: str) -> None:
    s = make_spot(SPOT_WIDE)
    h = s.execute_spot(waiting_work(WRAPPERS[name], lambda: s.execute_spot(lambda: "inner")))
    assert await outcome_of(h) == "raised"
    await run_until_idle()


@pytest.mark.parametrize("name", sorted(WRAPPERS))
async def test_SE_8_2_wrapped_wait_from_a_spotwide_actor_on_another_actor_raises(
    name: str,
) -> None:
    s = make_spot(SPOT_WIDE)
    h = s.execute_actor("A", waiting_work(WRAPPERS[name],
                                          lambda: s.execute_actor("B", lambda: "inner")))
    assert await outcome_of(h) == "raised"
    await run_until_idle()


@pytest.mark.parametrize("name", sorted(WRAPPERS))
async def test_SE_8_2_wrapped_wait_on_the_same_per_actor_queue_raises(name: str) -> None:
    s = make_spot(PER_ACTOR)
    h = s.execute_actor("A", waiting_work(WRAPPERS[name],
                                          lambda: s.execute_actor("A", lambda: "inner")))
    assert await outcome_of(h) == "raised"
    await run_until_idle()


@pytest.mark.parametrize("name", sorted(WRAPPERS))
async def test_SE_8_2_wrapped_wait_across_per_actor_queues_raises(name: str) -> None:
    """D-14 (the seed: any synchronous wait on the same coordinator's execute* raises):
    another Actor's queue is the same coordinator's, whatever wrapper the wait is in."""
    s, gate = make_spot(PER_ACTOR), Gate()
    # B's work is still running when the wait starts (a wrapper's task starts a step
    # later, by when a plain work would have ended and left nothing to wait for).
    h = s.execute_actor("A", waiting_work(WRAPPERS[name],
                                          lambda: s.execute_actor("B", gate.wait)))
    assert await outcome_of(h) == "raised"
    gate.open()
    await run_until_idle()


@pytest.mark.parametrize("name", sorted(WRAPPERS))
async def test_SE_8_2_wrapped_wait_on_another_coordinator_is_legal(name: str) -> None:
    s, other = make_spot(PER_ACTOR), make_spot(PER_ACTOR)
    h = s.execute_actor("A", waiting_work(WRAPPERS[name],
                                          lambda: other.execute_actor("A", lambda: "inner")))
    assert await outcome_of(h) == "waited"


async def test_SE_8_2_child_task_waiting_after_its_parent_work_ended_is_legal() -> None:
    s = make_spot(SPOT_WIDE)
    gate = Gate()
    children: list[asyncio.Task[Any]] = []

    async def target() -> str:
        await gate.wait()
        return "inner"

    async def parent() -> None:
        inner = s.execute_spot(target)
        # The child's first step runs after this work has ended and given the turn back.
        children.append(asyncio.create_task(via_wait_for(inner)))

    await outcome_of(s.execute_spot(parent))
    await run_until_idle()
    assert not children[0].done()  # waiting for ``target``, which holds the turn now
    gate.open()
    assert await asyncio.wait_for(children[0], HANG) == "inner"


async def test_SE_8_2_child_task_waiting_while_its_parent_yielded_is_legal() -> None:
    s = make_spot(SPOT_WIDE)
    ext: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def parent() -> Any:
        child = asyncio.create_task(via_gather(s.execute_spot(lambda: "inner")))
        await yield_framework_call(ext)  # gives the Spot queue's turn back
        return await child  # the child's wait began while the turn was given back

    h = s.execute_spot(parent)
    await run_until_idle()
    ext.set_result("ext")
    assert await outcome_of(h) == "inner"


async def test_SE_8_2_child_task_of_a_sync_work_on_another_queue_is_not_blamed() -> None:
    """A work holding A's turn submits to B; B's synchronous work starts a task that waits
    for A's work. That task is no child of A's work: the wait is legal."""
    s = make_spot(PER_ACTOR)
    gate = Gate()
    seen: list[Any] = []

    def on_b() -> None:
        async def child() -> None:
            seen.append(await via_wait_for(s.execute_actor("A", lambda: "a2")))
        seen.append(asyncio.create_task(child()))

    async def on_a() -> None:
        s.execute_actor("B", on_b)
        await gate.wait()  # holds A's turn while B's child starts its wait

    h = s.execute_actor("A", on_a)
    await run_until_idle()
    gate.open()
    await outcome_of(h)
    await asyncio.wait_for(seen[0], HANG)
    assert seen[1:] == ["a2"]
