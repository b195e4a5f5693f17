"""What one Actor message costs a Spot, counted (never timed): the objects a queued
message keeps alive until its turn, which the cyclic collector walks over again and
again (docs/performance.md, "Coordinators"), and the loop callbacks a SpotWide message
posts on its way through two queues.

- SE-7.1, PerActor: a queued message is one object, its handle, which is also the
  record its queue runs (``ActorMessage``): no wrapper per message around the work.
- SE-4.5, SpotWide: a queued message is one object too, its handle, which is the record
  its Actor queue runs (``SpotWideMessage``; its work is the Spot's runner, one for every
  message): the execution turn is made only when its turn comes, and the gates the
  record needs once it holds the claim (SE-8.2) are read from its places, not kept.
- SE-4.6, SpotWide: when an execution turn ends inside the Spot queue's drain, that
  drain ends the Actor queue's held turn and places the Actor's next execution turn
  itself, instead of posting a done callback per message."""

from __future__ import annotations

import asyncio
import functools
import gc
from typing import Any

import pytest

from zlink_reference import (
    ZLinkSerialExecutionQueue,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
)
from zlink_reference.testing import VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors

N = 400  # messages queued to one Actor before any of them runs


def _spot(mode: ZLinkUserSpotExecutionMode) -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=mode, clock=VirtualClock(),
                                   error_hook=lambda exc, h: unexpected_errors.append(exc))


def _work() -> None:
    return None


async def _objects_per_queued_message(mode: ZLinkUserSpotExecutionMode) -> float:
    spot = _spot(mode)
    spot.execute_actor("A", _work)  # the Actor's queue and route exist from here
    await run_until_idle()
    gc.collect()
    gc.disable()
    try:
        before = len(gc.get_objects())
        handles = [spot.execute_actor("A", _work) for _ in range(N)]
        after = len(gc.get_objects())
    finally:
        gc.enable()
    # The caller's list of handles is one object; each handle is counted once.
    per_message = (after - before - 1) / N
    await run_until_idle()
    assert all(h.done() for h in handles)
    spot.close()
    return per_message


async def test_SE_7_1_a_queued_per_actor_message_is_one_object() -> None:
    per_message = await _objects_per_queued_message(ZLinkUserSpotExecutionMode.PER_ACTOR)
    assert per_message <= 1.01, (
        f"SE-7.1: a queued PerActor message keeps {per_message:.2f} objects alive; its "
        "handle should be the record its queue runs, taking its snapshot as it starts, "
        "with no wrapper around the work")


async def test_SE_4_5_a_queued_spot_wide_message_is_one_object() -> None:
    per_message = await _objects_per_queued_message(ZLinkUserSpotExecutionMode.SPOT_WIDE)
    assert per_message <= 1.01, (
        f"SE-4.5: a queued SpotWide message keeps {per_message:.2f} objects alive; its "
        "handle should be the record its Actor queue runs (its work shared by the Spot's "
        "messages), the execution turn made and the claim's gates read when its turn "
        "comes")


@pytest.mark.parametrize("actors", [1, 20])
async def test_SE_4_6_the_spot_drain_hands_the_claim_on_without_a_callback_per_message(
        actors: int) -> None:
    spot = _spot(ZLinkUserSpotExecutionMode.SPOT_WIDE)
    order: list[tuple[int, int]] = []
    per_actor = 30

    def work(a: int, i: int) -> Any:
        return lambda: order.append((a, i))

    loop = asyncio.get_running_loop()
    posted = 0
    call_soon = loop.call_soon

    def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
        nonlocal posted
        target = callback.func if isinstance(callback, functools.partial) else callback
        if isinstance(getattr(target, "__self__", None), ZLinkSerialExecutionQueue):
            posted += 1  # a queue's drain or held turn, not the test's own task steps
        return call_soon(callback, *args, **kwargs)

    loop.call_soon = counting  # type: ignore[method-assign]
    try:
        for i in range(per_actor):
            for a in range(actors):
                spot.execute_actor(f"a{a}", work(a, i))
        await run_until_idle()
    finally:
        del loop.call_soon
    messages = actors * per_actor
    # Each Actor's messages ran in order, one at a time through the Spot queue.
    for a in range(actors):
        assert [i for b, i in order if b == a] == list(range(per_actor))
    assert len(order) == messages
    # One Actor alone: when its execution turn ends the Spot queue has nothing left, its
    # drain is over, and the held turn's end is posted, then the next execution turn
    # wakes the Spot drain: two posts per message (and the Actor queue's first drain).
    # Several Actors keep the Spot queue busy: its drain hands the claim on itself.
    bound = 2 * messages + 1 if actors == 1 else messages // 4
    assert posted <= bound, (
        f"SE-4.6: {posted} loop callbacks for {messages} SpotWide messages of {actors} "
        f"Actors; the Spot drain that ends an execution turn should end the held Actor "
        "turn and place the next execution turn itself, not post a callback per message")
