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
from typing import Any, Final, Generic, TypeVar, cast

from .._shell import QueuePlace, QueueRuntime, ZLinkWorkHandle, current_work

__all__ = [
    "ActorMessage",
    "ActorRegistry",
    "ActorStateCell",
    "ActorStateSnapshot",
    "current_snapshot",
    "run_message",
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
# Final: bound once, so the compiled build reads it without a module lookup.
_current: Final[contextvars.ContextVar[ActorStateSnapshot | None]] = contextvars.ContextVar(
    "zlink_snapshot", default=None
)


def current_snapshot() -> ActorStateSnapshot | None:
    """The snapshot taken for the message whose work is running here, or None. An
    ``ActorMessage`` on its turn keeps the snapshot it took when it started; any other
    message's work (a wrapped one, an async one's task) finds it in a context
    variable."""
    message = current_work()
    if isinstance(message, ActorMessage) and message.snapshot is not None:
        return message.snapshot
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


class ActorMessage(ZLinkWorkHandle[Any]):
    """One Actor message on the queue that runs it: its Actor's own queue (PerActor,
    Entry; the handle the caller gets) or the Spot queue (a SpotWide execution turn,
    SE-4.5). It keeps the caller's work, the Actor's cell and, once it started, the
    snapshot it took. Its work, the one the queue runs, is ``run_message``, one function shared by
    every message, so a queued message is one object instead of a handle and a
    wrapper (fewer objects alive per queued message, fewer collector passes), and
    ``current_snapshot()`` finds the snapshot on the message holding the turn, with no
    context variable set and reset per message. Admitted with ``admit_record``.
    ``__wrapped__`` is the caller's work until the message starts (relocation hands it
    back)."""

    __slots__ = ("__wrapped__", "_read", "snapshot")

    def __init__(self, rt: QueueRuntime, place: QueuePlace,
                 read: Callable[[], ActorStateSnapshot], work: Callable[[], Any]) -> None:
        ZLinkWorkHandle.__init__(self, rt, place, run_message)
        self._read = read
        self.__wrapped__: Callable[[], Any] | None = work
        self.snapshot: ActorStateSnapshot | None = None  # taken when it starts (SE-7)


def run_message() -> Any:
    """The work of every ``ActorMessage``: the queue runs it on the message's turn, so
    the message is the work holding the turn (``current_work()``). Take its Actor's
    snapshot now, as it starts, and run the caller's work (SE-7); an async work's task
    gets the snapshot in its context, as with ``with_snapshot``."""
    message = cast(ActorMessage, current_work())
    work = message.__wrapped__
    message.__wrapped__ = None  # started: the handle no longer keeps the work alive
    assert work is not None, "an Actor message runs once"
    snap = message.snapshot = message._read()
    result = work()
    if result is not None and hasattr(result, "__await__"):
        return _await_with(snap, result)
    return result


async def _await_with(snap: ActorStateSnapshot, aw: Awaitable[Any]) -> Any:
    _current.set(snap)  # in the task that runs the work
    return await aw
