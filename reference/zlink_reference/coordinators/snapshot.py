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
    lane turn). Each change builds the Actor's next frozen snapshot, so reading one for
    a message is a lookup, and a snapshot already handed out never changes."""

    __slots__ = ("_snapshots",)

    def __init__(self) -> None:
        self._snapshots: dict[str, ActorStateSnapshot] = {}

    def register(self, actor_id: str, actor_type: str | None, values: Mapping[str, Any]) -> None:
        old = self._snapshots.get(actor_id)
        version = old.version + 1 if old is not None else 1
        self._snapshots[actor_id] = ActorStateSnapshot(
            actor_id, True, actor_type, types.MappingProxyType(dict(values)), version
        )

    def update(self, actor_id: str, values: Mapping[str, Any]) -> None:
        old = self._snapshots.get(actor_id)
        if old is None:
            self.register(actor_id, None, values)
            return
        merged = {**old.registration, **values}
        self._snapshots[actor_id] = dataclasses.replace(
            old, registration=types.MappingProxyType(merged), version=old.version + 1
        )

    def unregister(self, actor_id: str) -> None:
        self._snapshots.pop(actor_id, None)

    def snapshot(self, actor_id: str) -> ActorStateSnapshot:
        snap = self._snapshots.get(actor_id)
        if snap is None:
            return ActorStateSnapshot(actor_id, False, None, _EMPTY, 0)
        return snap


_EMPTY: Mapping[str, Any] = types.MappingProxyType({})
_current: contextvars.ContextVar[ActorStateSnapshot | None] = contextvars.ContextVar(
    "zlink_snapshot", default=None
)


def current_snapshot() -> ActorStateSnapshot | None:
    """The snapshot taken for the message whose work is running here, or None."""
    return _current.get()


class with_snapshot:  # noqa: N801 - used like a function
    """Wrap an Actor work: when it starts, read its snapshot in one lane turn (``read``)
    and make it visible to the work, synchronous or async. ``__wrapped__`` is the
    caller's work (relocation hands it back)."""

    __slots__ = ("__wrapped__", "_read")

    def __init__(self, read: Callable[[], ActorStateSnapshot], work: Callable[[], Any]) -> None:
        self._read = read
        self.__wrapped__ = work

    def __call__(self) -> Any:
        snap = self._read()
        token = _current.set(snap)
        try:
            result = self.__wrapped__()
        finally:
            _current.reset(token)
        if result is not None and hasattr(result, "__await__"):
            return _await_with(snap, result)
        return result


async def _await_with(snap: ActorStateSnapshot, aw: Awaitable[Any]) -> Any:
    _current.set(snap)  # in the task that runs the work
    return await aw
