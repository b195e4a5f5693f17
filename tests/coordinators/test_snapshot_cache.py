"""SE-7: a message's state snapshot is read when the message starts, from the Actor's
cached snapshot. The cache holds one frozen snapshot per registration version (not one
per message), and every registration change of that Actor, and only of that Actor,
replaces it: a message queued before the change and started after it sees the new
registration. A Spot keeps that cache and the Actor's queue in one entry of one map
(SE-2.2, SE-2.4): a registration makes no queue, and the queues are listed, taken and
dropped as before."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from zlink_reference import (
    ActorStateSnapshot,
    ZLinkActorSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    current_snapshot,
)
from zlink_reference.testing import VirtualClock, run_until_idle

from coordinator_errors import unexpected_errors

MODES = [ZLinkUserSpotExecutionMode.PER_ACTOR, ZLinkUserSpotExecutionMode.SPOT_WIDE]


def _spot(mode: ZLinkUserSpotExecutionMode) -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=mode, clock=VirtualClock(),
                                   error_hook=lambda exc, h: unexpected_errors.append(exc))


async def _snapshots(submit: Callable[[Callable[[], None]], Any], n: int,
                     change: Callable[[], None] | None = None) -> list[ActorStateSnapshot]:
    """Submit ``n`` messages, apply ``change`` before any of them starts, run them, and
    return the snapshot each one saw."""
    seen: list[ActorStateSnapshot] = []

    def record() -> None:
        snap = current_snapshot()
        assert snap is not None
        seen.append(snap)

    for _ in range(n):
        submit(record)
    if change is not None:
        change()
    await run_until_idle()
    assert len(seen) == n
    return seen


def _one_version(snaps: list[ActorStateSnapshot]) -> ActorStateSnapshot:
    """All messages of one registration version share one snapshot object."""
    first = snaps[0]
    assert all(s is first for s in snaps), "a snapshot was built per message"
    return first


@pytest.mark.parametrize("mode", MODES)
async def test_SE_7_1_spot_snapshot_cache_is_replaced_exactly_at_registration_changes(
    mode: ZLinkUserSpotExecutionMode,
) -> None:
    s = _spot(mode)

    def to_a(work: Callable[[], None]) -> Any:
        return s.execute_actor("A", work)

    unregistered = _one_version(await _snapshots(to_a, 3))
    assert (unregistered.registered, unregistered.version) == (False, 0)
    # the queue exists now: what follows reaches messages through the cached cell
    registered = _one_version(await _snapshots(
        to_a, 3, lambda: s.register_actor("A", "player", host="h1", port=1)))
    assert (registered.registered, registered.actor_type, dict(registered.registration),
            registered.version) == (True, "player", {"host": "h1", "port": 1}, 1)
    # another Actor's change leaves A's snapshot as it is
    same = _one_version(await _snapshots(to_a, 2, lambda: s.register_actor("B", host="x")))
    assert same is registered
    updated = _one_version(await _snapshots(
        to_a, 2, lambda: s.update_actor_registration("A", port=2)))
    assert (dict(updated.registration), updated.version) == ({"host": "h1", "port": 2}, 2)
    assert dict(registered.registration) == {"host": "h1", "port": 1}  # frozen
    gone = _one_version(await _snapshots(to_a, 2, lambda: s.unregister_actor("A")))
    assert (gone.registered, dict(gone.registration), gone.version) == (False, {}, 0)
    again = _one_version(await _snapshots(
        to_a, 2, lambda: s.register_actor("A", "npc", host="h3")))
    assert (again.registered, again.actor_type, dict(again.registration),
            again.version) == (True, "npc", {"host": "h3"}, 1)
    assert s.actor_snapshot("A") is again  # the query reads the same cache
    s.close()


async def test_SE_7_1_actor_executor_snapshot_cache_is_replaced_at_each_update() -> None:
    a = ZLinkActorSerialExecutor("A", actor_type="player", clock=VirtualClock(),
                                 error_hook=lambda exc, h: unexpected_errors.append(exc))
    first = _one_version(await _snapshots(a.execute_actor, 3))
    assert (first.registered, first.actor_type, dict(first.registration),
            first.version) == (True, "player", {}, 1)
    assert _one_version(await _snapshots(a.execute_actor, 2)) is first
    updated = _one_version(await _snapshots(
        a.execute_actor, 3, lambda: a.update_registration(host="h1")))
    assert (dict(updated.registration), updated.version) == ({"host": "h1"}, 2)
    again = _one_version(await _snapshots(
        a.execute_actor, 2, lambda: a.update_registration(host="h2", port=7)))
    assert (dict(again.registration), again.version) == ({"host": "h2", "port": 7}, 3)
    assert a.snapshot() is again
    a.close()


async def test_SE_2_2_registration_makes_no_queue_and_queues_keep_their_creation_order() -> None:
    s = _spot(ZLinkUserSpotExecutionMode.PER_ACTOR)
    s.register_actor("B", "player", host="b")
    s.register_actor("C", "player")
    assert s.actor_ids() == []  # a registration alone makes no queue
    s.execute_actor("A", lambda: None)
    s.execute_actor("B", lambda: None)
    await run_until_idle()
    assert s.actor_ids() == ["A", "B"]  # in the order the queues were made
    s.unregister_actor("A")
    assert s.actor_ids() == ["A", "B"]  # the queue stays with the Spot
    assert s.take_actor_pending("C") == []
    assert s.actor_ids() == ["A", "B"]  # taking nothing made no queue
    assert sorted(s.statistics()) == ["spot:S", "spot:S/actor:A", "spot:S/actor:B"]
    s.close()
    assert s.actor_ids() == []  # the queue map is emptied on close ...
    assert s.actor_snapshot("B").registration["host"] == "b"  # ... the registrations stay
