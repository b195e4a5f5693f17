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
from typing import Any, Generic, TypeVar

__all__ = [
    "ActorRegistry",
    "ActorStateCell",
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


class ActorStateCell:
    """The snapshot a message of one Actor takes when it starts: the registration's
    current frozen snapshot, replaced (never changed in place) at every registration
    change. Calling the cell reads it, so a message's read is one attribute load
    whatever the Actor's state, and the snapshot of one registration version is built
    once, not once per message (SE-7.1, issue 16). A cell lives as long as its
    registry: a message already queued holds it and must see the registration as it
    is when the message starts, whatever changed in between (SE-7)."""

    __slots__ = ("snapshot",)

    def __init__(self, snapshot: ActorStateSnapshot) -> None:
        self.snapshot = snapshot

    def __call__(self) -> ActorStateSnapshot:
        return self.snapshot


C = TypeVar("C", bound=ActorStateCell)


class ActorRegistry(Generic[C]):
    """Actor registrations of one coordinator; owned by its state lane (callers hold a
    lane turn). Each change builds the Actor's next frozen snapshot and puts it in the
    Actor's cell, so reading one for a message is a lookup, and a snapshot already
    handed out never changes.

    ``make_cell`` makes a cell from its first snapshot: a coordinator may keep more per
    Actor in a subclass of ``ActorStateCell`` (a Spot keeps the Actor's queue there),
    so one map entry serves both. ``cells`` is that map, read by the owner's lookups on
    the loop thread (one read is a lane turn by itself) and changed only here."""

    __slots__ = ("_make", "cells")

    def __init__(self, make_cell: Callable[[ActorStateSnapshot], C]) -> None:
        self._make = make_cell
        self.cells: dict[str, C] = {}

    def cell(self, actor_id: str) -> C:
        """The Actor's cell, made (holding the unregistered snapshot) on first use."""
        cell = self.cells.get(actor_id)
        if cell is None:
            cell = self.cells[actor_id] = self._make(_unregistered(actor_id))
        return cell

    def register(self, actor_id: str, actor_type: str | None, values: Mapping[str, Any]) -> None:
        cell = self.cell(actor_id)
        old = cell.snapshot
        version = old.version + 1 if old.registered else 1
        cell.snapshot = ActorStateSnapshot(
            actor_id, True, actor_type, types.MappingProxyType(dict(values)), version
        )

    def update(self, actor_id: str, values: Mapping[str, Any]) -> None:
        cell = self.cell(actor_id)
        old = cell.snapshot
        if not old.registered:
            self.register(actor_id, None, values)
            return
        merged = {**old.registration, **values}
        cell.snapshot = dataclasses.replace(
            old, registration=types.MappingProxyType(merged), version=old.version + 1
        )

    def unregister(self, actor_id: str) -> None:
        cell = self.cells.get(actor_id)
        if cell is not None and cell.snapshot.registered:
            cell.snapshot = _unregistered(actor_id)

    def snapshot(self, actor_id: str) -> ActorStateSnapshot:
        cell = self.cells.get(actor_id)
        return cell.snapshot if cell is not None else _unregistered(actor_id)


def _unregistered(actor_id: str) -> ActorStateSnapshot:
    return ActorStateSnapshot(actor_id, False, None, _EMPTY, 0)


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
