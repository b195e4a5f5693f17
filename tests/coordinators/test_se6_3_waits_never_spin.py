"""A coordinator's wait gives the loop back while it waits, whatever its queues' counts
say (SE-6.3: the accounting decides when a wait ends; a wait that cannot end must still
let the loop run, so a timeout around it fires instead of the loop freezing)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from zlink_reference import ZLinkActorSerialExecutor
from zlink_reference._shell import queue_core
from zlink_reference.testing import VirtualClock

from coordinator_errors import unexpected_errors
from helpers import Gate


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


async def test_SE_6_3_await_quiescence_on_disagreeing_counts_yields_and_times_out() -> None:
    # A queue whose counts disagree (live() is zero while the core is not idle) is a
    # corrupted or stuck state: the queue's own wait returns at once and the core stays
    # busy. The coordinator's wait must not go round synchronously for ever: a timeout
    # around it has to fire, and other callbacks on the loop have to run meanwhile.
    actor = ZLinkActorSerialExecutor("a", clock=VirtualClock(), error_hook=hook)
    gate = Gate()
    handle = actor.execute_actor(gate.wait)
    await asyncio.sleep(0)
    core = queue_core(actor._scope_queues()[0])  # the Actor's one queue
    assert core.live() == 1
    core.life_count -= 1  # counts that disagree: live() == 0, is_idle() is False
    assert core.live() == 0 and not core.is_idle()
    ticks = 0

    def tick() -> None:
        nonlocal ticks
        ticks += 1

    asyncio.get_running_loop().call_soon(tick)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(actor.await_quiescence(), 0.05)
    assert ticks == 1, "SE-6.3: the loop ran no other callback while the wait went round"
    core.life_count += 1  # restore the counts, then let the work end
    gate.open()
    await handle
    await asyncio.wait_for(actor.await_quiescence(), 1)
