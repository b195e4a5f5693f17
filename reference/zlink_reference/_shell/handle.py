"""``ZLinkWorkHandle``: an accepted work's place in the core and, once it ends, its
outcome and the awaiters and callbacks waiting for it.

A handle holds two things of where it was accepted, never the queue: the owner's
runtime (loop and thread model, D-24) and the queue's ``QueuePlace``, through which it
reads the queue's name and which, by identity alone, names the turn its work needs.
Awaiting a handle from work that holds a turn the awaited work needs raises at once
(SE-8.2, ``context``).
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable, Generator
from typing import Any, Final, Generic, Protocol, TypeVar, cast

from zlink_model.errors import ZLinkUsageError
from zlink_model.queue import (
    CANCELLED,
    COMPLETED,
    FAILED,
    OUTCOME_NAMES,
    PHASE_NAMES,
    WorkRecord,
)

from . import context as _context
from .loop import QueueRuntime

__all__ = [
    "PENDING",
    "ErrorHook",
    "QueuePlace",
    "TurnHold",
    "Work",
    "ZLinkWorkHandle",
    "current_work",
]

T = TypeVar("T")

Work = Callable[[], Any]
"""A zero-argument callable returning ``None``, a value, or an awaitable."""

ErrorHook = Callable[[BaseException, "ZLinkWorkHandle[Any]"], None]

PENDING: Final = -1  # the outcome of a work that has not ended

get_ident: Final = threading.get_ident


class QueuePlace(Protocol):
    """What a handle sees of the queue that accepted it, besides the owner's runtime:
    the queue's name, and, by identity alone, the queue's turn (the turn its work needs,
    SE-8.2). The queue's core (``zlink_model.queue.QueueCore``) is one: one per queue,
    holding the turn. The handle never holds the queue itself."""

    @property
    def name(self) -> str: ...


class _HandleAux:
    """The parts of a handle most works never need, allocated on first use."""

    __slots__ = ("awaiting", "callbacks", "label", "parked", "parked_rec", "permit",
                 "waiters")

    def __init__(self) -> None:
        self.awaiting: object = None  # what the work waits on while suspended
        # One future per awaiter of the handle: cancelling one awaiter (a timeout, a
        # cancelled task) cancels its own future only, never the others' or the work.
        self.waiters: list[asyncio.Future[None]] | None = None
        self.callbacks: list[Callable[[Any], None]] | None = None
        self.permit: asyncio.Future[None] | None = None
        self.label = ""
        # The drain parked on this work (a ``TurnHold``): the queue whose turn is held
        # (``parked``) and its record holding it (``parked_rec``; a SpotWide Actor
        # queue's, whose held turn is the Actor's claim, SE-4.6). When this work ends,
        # that drain goes on; should this work outlive its cancellation (SD-3a), that
        # record is a zombie too (D-21). Two fields, not a pair: no tuple per hold. The
        # queue is typed loosely: the drain room sits above this one.
        self.parked: Any = None
        self.parked_rec: ZLinkWorkHandle[Any] | None = None


class ZLinkWorkHandle(WorkRecord, Generic[T]):
    """An accepted work: its place in the core and, once it ends, its outcome.

    Await it for the work's result (or exception, or ``CancelledError``). Awaiting it
    from inside work that holds a turn the awaited work needs raises
    ``ZLinkReentrancyError`` at once (SE-8.2). Await it on the queue's loop.
    """

    __slots__ = ("_aux", "_outcome", "_place", "_rt", "_task", "_value", "_work")

    _task: asyncio.Task[Any] | None  # the task running it, once it is an async work
    _value: Any  # result or exception, once settled

    def __init__(self, rt: QueueRuntime, place: QueuePlace, work: Work) -> None:
        # The core sets the WorkRecord fields at insertion; ``_value`` and ``_task``
        # are set before they are read (at settle, and when an async work starts).
        self._rt = rt
        self._place = place
        self._work: Work | None = work
        self._outcome = PENDING
        self._aux: _HandleAux | None = None

    def _extra(self) -> _HandleAux:
        aux = self._aux
        if aux is None:
            aux = self._aux = _HandleAux()
        return aux

    @property
    def _gates(self) -> tuple[object, ...]:
        """Turns and claims this work needs, first the turn it takes, each named by its
        queue's place (``QueuePlace``): its own queue's turn. A coordinator's record
        that needs more says so in its class (a SpotWide Actor work needs the Spot gate
        and its Actor claim, from its place and its claim: no tuple kept per work); the
        reentrancy check compares these by identity. Internal: no public member hands a
        queue's place out (SE-2.5, D-23)."""
        return (self._place,)

    def _reported_elsewhere(self) -> bool:
        """Whether this work's failure is reported by another queue, the one that ran
        its code, so its own queue reports nothing (a SpotWide Actor record's is the
        Spot queue's to report, once). No, for a work that runs its own code; a
        coordinator's record class says otherwise."""
        return False

    @property
    def label(self) -> str:
        """A free-form name for logs and traces ("" unless set)."""
        return "" if self._aux is None else self._aux.label

    @label.setter
    def label(self, value: str) -> None:
        self._extra().label = value

    def _hold_as_zombie(self) -> None:
        """Mark a held work (accepted, not placed in its queue yet: a session's final
        work) as a zombie of a scope disposed safely (SD-2, D-22). Before placement the
        record is the shell's alone; the core sets the flag again, from its queue's
        mode, when it places the work (``QueueCore.transfer``)."""
        self._zombie = True

    @property
    def queue_name(self) -> str:
        """The name of the queue this work was accepted by, as traces and errors spell
        it. Only the name: the queue itself is the owner's, and no public member hands
        it out (SE-2.5, SE-3.1, SE-10.1; decision D-23)."""
        return self._place.name

    @property
    def _owner(self) -> object:
        """The owner that accepted the work: the shell runtime its coordinator's queues
        share, or, for a bare queue whose runtime is its scope's alone or the shared one
        of default queues, the queue's place (bare queues with nothing of their own
        share one runtime, issue 16, and are still separate owners). The SE-8.2 check
        compares it (D-14)."""
        rt = self._rt
        return self._place if rt._per_queue else rt

    # -------------------------------------------------------------- outcome
    def done(self) -> bool:
        """The work ended (completed, failed or cancelled)."""
        return self._outcome != PENDING

    def cancelled(self) -> bool:
        """The work ended cancelled: never started, or cancelled at an await point."""
        return self._outcome == CANCELLED

    def outcome(self) -> str | None:
        """``"completed"``, ``"failed"``, ``"cancelled"``, or None while running."""
        return None if self._outcome == PENDING else OUTCOME_NAMES[self._outcome]

    def result(self) -> T:
        """The work's result; raises its exception, ``CancelledError``, or
        ``InvalidStateError`` while it has not ended."""
        if self._outcome == PENDING:
            raise asyncio.InvalidStateError(f"work {self.wid} of {self._place.name} has not ended")
        if self._outcome == COMPLETED:
            return cast(T, self._value)
        if self._outcome == CANCELLED:
            exc = self._value
            raise exc if isinstance(exc, asyncio.CancelledError) else asyncio.CancelledError()
        raise cast(BaseException, self._value)

    def exception(self) -> BaseException | None:
        """The exception the work failed with (None if it completed)."""
        if self._outcome == PENDING:
            raise asyncio.InvalidStateError(f"work {self.wid} of {self._place.name} has not ended")
        if self._outcome == CANCELLED:
            raise asyncio.CancelledError()
        return cast("BaseException | None", self._value if self._outcome == FAILED else None)

    def add_done_callback(self, callback: Callable[[ZLinkWorkHandle[T]], None]) -> None:
        """Call ``callback(handle)`` on the loop once the work has ended. From another
        thread the registration is posted to the owner's loop and the call returns at
        once (D-24)."""
        rt = self._rt
        if get_ident() != rt.thread_id and rt.foreign():
            try:
                rt.loop.call_soon_threadsafe(self.add_done_callback, callback)
            except RuntimeError as exc:
                raise ZLinkUsageError(f"the owner's event loop is closed ({exc})") from None
            return
        if self._outcome != PENDING:
            self._rt.loop.call_soon(callback, self)
            return
        aux = self._extra()
        if aux.callbacks is None:
            aux.callbacks = []
        aux.callbacks.append(callback)

    def __await__(self) -> Generator[Any, None, T]:
        if (self._outcome == PENDING and get_ident() != self._rt.thread_id
                and self._rt.foreign()):
            yield from _await_elsewhere(self).__await__()
        if self._outcome == PENDING:
            _context.check_reentrancy(self, held_turn=True)
            aux = self._extra()
            fut: asyncio.Future[None] = self._rt.loop.create_future()
            if aux.waiters is None:
                aux.waiters = []
            aux.waiters.append(fut)
            try:
                yield from fut.__await__()
            finally:
                if aux.waiters is not None and fut in aux.waiters:
                    aux.waiters.remove(fut)  # this awaiter gave up (cancelled)
        return self.result()

    def _settle(self, outcome: int, value: Any) -> None:
        self._outcome = outcome
        self._value = value
        self._work = None
        aux = self._aux
        if aux is not None:
            waiters, aux.waiters = aux.waiters, None
            for fut in waiters or ():
                if not fut.done():
                    fut.set_result(None)
            if aux.parked is not None:
                # The drain parked on this work goes on in a posted callback, unless
                # the drain that ended this work took it over already (drain._ended).
                drain, held = aux.parked, aux.parked_rec
                aux.parked = aux.parked_rec = None
                self._rt.loop.call_soon(drain._held_done, held, self)
            if aux.callbacks is not None:
                loop = self._rt.loop
                for cb in aux.callbacks:
                    loop.call_soon(cb, self)
                aux.callbacks = None

    def __repr__(self) -> str:
        pending = self._outcome == PENDING
        state = PHASE_NAMES[self.phase] if pending else OUTCOME_NAMES[self._outcome]
        label = f" {self.label!r}" if self.label else ""
        return f"<ZLinkWorkHandle {self._place.name}#{self.wid}{label} {state}>"


async def _await_elsewhere(handle: ZLinkWorkHandle[Any]) -> None:
    """Wait on the running loop (not the handle's owner's) until ``handle`` ends: the
    owner's loop tells this loop through a future of this loop's own (D-24). No work
    of the owner runs on this loop, so no turn of it is held here (SE-8.2)."""
    here = asyncio.get_running_loop()
    fut: asyncio.Future[None] = here.create_future()

    def wake() -> None:
        if not fut.done():
            fut.set_result(None)

    def ended(_handle: ZLinkWorkHandle[Any]) -> None:
        with contextlib.suppress(RuntimeError):  # the waiting loop is gone
            here.call_soon_threadsafe(wake)

    rt = handle._rt
    try:
        rt.loop.call_soon_threadsafe(handle.add_done_callback, ended)
    except RuntimeError as exc:
        raise ZLinkUsageError(f"the owner's event loop is closed ({exc})") from None
    await fut



def current_work() -> ZLinkWorkHandle[Any] | None:
    """The handle of the work running on a turn in this context, or None."""
    return cast("ZLinkWorkHandle[Any] | None", _context.holder())


class TurnHold:
    """Returned by a work to keep its turn until another work ends, without a task: the
    drain parks and goes on when ``handle`` settles, ending this work with the same
    outcome. A SpotWide Actor queue's turn returns one for the execution turn it placed
    on the Spot queue: that held turn is the Actor's claim (SE-4.6)."""

    __slots__ = ("handle",)

    def __init__(self, handle: ZLinkWorkHandle[Any]) -> None:
        self.handle = handle

