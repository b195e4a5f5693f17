"""A handle shows its work's place and outcome, and nothing written through it reaches
the queue's accounting (SE-6.3, D-23): the record fields the core counts with are
read-only views on a handle, so an assignment raises instead of corrupting the counts."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from zlink_model.queue import LIFECYCLE_LANE, QUEUED
from zlink_reference import ZLinkActorSerialExecutor, ZLinkSerialExecutionQueue
from zlink_reference.testing import VirtualClock

from helpers import Gate

CORE_FIELDS = ("lane", "nbytes", "phase", "zombie", "seq", "wid", "barrier", "resumes")
WRITES: dict[str, object] = {
    "lane": LIFECYCLE_LANE, "nbytes": 1 << 20, "phase": QUEUED, "zombie": True,
    "seq": 10**6, "wid": 10**6, "barrier": True, "resumes": 3,
}


@pytest.mark.parametrize("field", CORE_FIELDS)
async def test_SE_6_3_a_handle_refuses_writes_to_the_cores_fields(field: str) -> None:
    q = ZLinkSerialExecutionQueue(name="q", clock=VirtualClock())
    gate = Gate()
    running = q.enqueue(gate.wait)
    queued = q.enqueue_with_payload_bytes(lambda: "done", 5)
    await asyncio.sleep(0)
    before = (q.statistics().application_count, q.statistics().application_bytes)
    for h in (running, queued):
        seen = getattr(h, field)  # readable
        with pytest.raises(AttributeError):
            setattr(h, field, WRITES[field])
        assert getattr(h, field) == seen, f"SE-6.3: a refused write changed {field}"
    assert (q.statistics().application_count, q.statistics().application_bytes) == before
    gate.open()
    assert await queued == "done"
    await asyncio.wait_for(q.await_quiescence(), 1)
    stats = q.statistics()
    assert (stats.application_count, stats.application_bytes) == (0, 0), (
        "SE-6.3: the counts did not return to zero after every work ended")


async def test_SE_6_3_a_lane_write_on_a_handle_cannot_freeze_quiescence() -> None:
    # The probe of the issue: one assignment used to move a work's release to the
    # lifecycle lane, leave the counts wrong for good and make the coordinator's
    # quiescence wait go round without end.
    actor = ZLinkActorSerialExecutor("a", clock=VirtualClock())
    gate = Gate()
    handle: Any = actor.execute_actor(gate.wait)
    with pytest.raises(AttributeError):
        handle.lane = LIFECYCLE_LANE
    gate.open()
    await handle
    await asyncio.wait_for(actor.await_quiescence(), 1)


async def test_SE_6_3_a_zombie_write_on_a_handle_cannot_hide_active_work() -> None:
    actor = ZLinkActorSerialExecutor("a", clock=VirtualClock())
    gate = Gate()
    handle: Any = actor.execute_actor(gate.wait)
    await asyncio.sleep(0)
    with pytest.raises(AttributeError):
        handle.zombie = True
    waiting = asyncio.ensure_future(actor.await_completion())
    await asyncio.sleep(0)
    await asyncio.sleep(0)
    assert not waiting.done(), "SE-6.3: await_completion ended while the work still runs"
    gate.open()
    await handle
    await asyncio.wait_for(waiting, 1)
