"""Per-message state snapshots (SE-7).

Everything one message needs is read in one state-lane turn into a frozen
``<Target>StateSnapshot`` and carried along: values read separately could come from
different moments (an Actor re-registered in between) and the message would see a mix of
old and new. The runtime takes the snapshot when the message's work starts and makes it
available to that work through ``current_snapshot()``.
"""

from __future__ import annotations

import contextvars
import dataclasses
import types
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

__all__ = [
    "ActorRegistry",
    "ActorStateSnapshot",
    "current_snapshot",
    "with_snapshot",
]


@dataclasses.dataclass(frozen=True, slots=True)
class ActorStateSnapshot:
    """An Actor's registration as one message sees it (SE-7.1)."""

    actor_id: str
    registered: bool
    actor_type: str | None
    registration: Mapping[str, Any]
    version: int  # bumps on every registration change; equal versions, equal values

    def __getitem__(self, key: str) -> Any:
        return self.registration[key]


class ActorRegistry:
    """Actor registrations of one coordinator; owned by its state lane (callers hold a
    lane turn). Values are copied in and out, so a snapshot never changes."""

    __slots__ = ("_entries",)

    def __init__(self) -> None:
        self._entries: dict[str, tuple[str | None, dict[str, Any], int]] = {}

    def register(self, actor_id: str, actor_type: str | None, values: Mapping[str, Any]) -> None:
        _, _, version = self._entries.get(actor_id, (None, {}, 0))
        self._entries[actor_id] = (actor_type, dict(values), version + 1)

    def update(self, actor_id: str, values: Mapping[str, Any]) -> None:
        actor_type, current, version = self._entries.get(actor_id, (None, {}, 0))
        merged = {**current, **values}
        self._entries[actor_id] = (actor_type, merged, version + 1)

    def unregister(self, actor_id: str) -> None:
        self._entries.pop(actor_id, None)

    def snapshot(self, actor_id: str) -> ActorStateSnapshot:
        entry = self._entries.get(actor_id)
        if entry is None:
            return ActorStateSnapshot(actor_id, False, None, types.MappingProxyType({}), 0)
        actor_type, values, version = entry
        return ActorStateSnapshot(
            actor_id, True, actor_type, types.MappingProxyType(dict(values)), version
        )


_current: contextvars.ContextVar[ActorStateSnapshot | None] = contextvars.ContextVar(
    "zlink_snapshot", default=None
)


def current_snapshot() -> ActorStateSnapshot | None:
    """The snapshot taken for the message whose work is running here, or None."""
    return _current.get()


def with_snapshot(read: Callable[[], ActorStateSnapshot], work: Callable[[], Any]) -> Callable[
    [], Any
]:
    """Wrap an Actor work: when it starts, read its snapshot in one lane turn (``read``)
    and make it visible to the work, synchronous or async."""

    def run() -> Any:
        snap = read()
        token = _current.set(snap)
        try:
            result = work()
        finally:
            _current.reset(token)
        if result is not None and hasattr(result, "__await__"):
            return _await_with(snap, result)
        return result

    run.__wrapped__ = work  # type: ignore[attr-defined]
    return run


async def _await_with(snap: ActorStateSnapshot, aw: Awaitable[Any]) -> Any:
    _current.set(snap)  # in the task that runs the work
    return await aw
