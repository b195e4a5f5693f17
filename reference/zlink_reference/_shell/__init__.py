"""Shells: the only code that imports asyncio. They drive the core and decide nothing.

This file is the shell's seam: ``__all__`` names everything the rest of the runtime
(the package's public surface, the coordinators, disposal and the testing helpers) may
use of the shell, and ``tests/test_layering.py`` fails on any other import from the
shell or any private member of a shell object touched from outside it. The functions
below are the few internal steps those packages need, each named for what it does
rather than for the member it reaches.

The rooms, lowest first (each imports only rooms before it): ``clock``, ``loop``,
``checks``, ``context``, ``handle``, ``scope``, ``surface``, ``drain``, ``drive``,
``queue``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any, TypeVar, cast

from zlink_model.queue import CANCELLED, MODE_CANCELLED, QueueCore, WorkRecord

from . import checks
from .checks import ownership_checks, require_loop, set_ownership_checks
from .clock import MonotonicClock, ZLinkClock
from .drain import DrainingQueue
from .drive import DrivenQueue
from .handle import ErrorHook, QueuePlace, TurnHold, Work, ZLinkWorkHandle, current_work
from .loop import Cancelled, EventLoop, QueueRuntime, running_loop
from .queue import QueueStatistics, ZLinkSerialExecutionQueue, yield_framework_call
from .scope import Scope, ScopeQueue, ZLinkNotDisposedError, ZombieInfo
from .surface import ScopeSurface, scope_registry

__all__ = [
    "Cancelled",
    "ErrorHook",
    "EventLoop",
    "MonotonicClock",
    "QueuePlace",
    "QueueRuntime",
    "QueueStatistics",
    "Scope",
    "ScopeQueue",
    "ScopeSurface",
    "TurnHold",
    "Work",
    "ZLinkClock",
    "ZLinkNotDisposedError",
    "ZLinkSerialExecutionQueue",
    "ZLinkWorkHandle",
    "ZombieInfo",
    "accept_held",
    "admit_record",
    "cancel_unplaced",
    "checks",
    "continue_drain",
    "current_work",
    "dispose_with_survivors",
    "enter_posted_drain",
    "ownership_checks",
    "place_record",
    "queue_core",
    "queue_place",
    "queue_records",
    "require_loop",
    "running_loop",
    "scope_registry",
    "set_ownership_checks",
    "take_queued",
    "transfer",
    "when_idle",
    "yield_framework_call",
    "yield_turn_until",
]

T = TypeVar("T")


def queue_core(queue: ZLinkSerialExecutionQueue) -> QueueCore[Any]:
    """The model's state of ``queue``, for code that reads it (quiescence, checkers)."""
    return queue._core


def queue_records(queue: ZLinkSerialExecutionQueue) -> QueueCore[Any]:
    """The model's state of ``queue`` with every live posted work made a record, for
    code that must see each live work as one (accounting, checkers)."""
    return queue._records()


def queue_place(queue: ZLinkSerialExecutionQueue) -> QueuePlace:
    """What names ``queue``'s turn in a work's gates (SE-8.2): its ``QueuePlace``, the
    one thing of the queue a handle holds besides the runtime."""
    return queue._core


def admit_record(queue: ZLinkSerialExecutionQueue, rec: ZLinkWorkHandle[Any],
                 payload_bytes: int) -> None:
    """Admit ``rec`` into ``queue`` as ``enqueue_with_payload_bytes`` admits a work:
    ``rec`` is a handle made for ``queue`` (with its runtime and ``queue_place``) by a
    coordinator whose messages are handles that run their own work (SE-7: an Actor
    message reads its snapshot as it starts). ``payload_bytes`` is checked already.
    Raises as ``enqueue`` does when refused (nothing is inserted)."""
    queue._admit_record(rec, payload_bytes)


def transfer(queue: ZLinkSerialExecutionQueue, rec: ZLinkWorkHandle[Any]) -> None:
    """Place ``rec``, an execution turn of already-accepted work, on ``queue`` (SpotWide,
    SE-4.5): never refused. ``rec`` is a handle made for ``queue`` (with its runtime and
    ``queue_place``) by the coordinator, whose class names the turns and claims it needs
    (``_gates``, SE-8.2): an Actor message, which reads its snapshot as it starts
    (SE-7)."""
    queue._transfer(rec)


def take_queued(queue: ZLinkSerialExecutionQueue) -> list[tuple[ZLinkWorkHandle[Any], Work]]:
    """Take every never-started work out of ``queue``, in line order (SE-4.7)."""
    return queue._take_queued()


def when_idle(queue: ZLinkSerialExecutionQueue, zombies_too: bool,
              callback: Callable[[], None]) -> None:
    """Call ``callback`` once ``queue`` has no live (``zombies_too``) or no active
    work left."""
    queue._when(zombies_too, callback)


def place_record(queue: ZLinkSerialExecutionQueue, handle: ZLinkWorkHandle[Any]) -> None:
    """Place a handle made earlier (a session's final work) by transfer (D-6, D-12)."""
    queue._transfer_record(handle)


def accept_held(queue: ZLinkSerialExecutionQueue, work: Work) -> ZLinkWorkHandle[Any]:
    """A handle for a work accepted now and placed in ``queue`` later (a session's final
    work, D-12): live from now, not in any line yet (no sequence number, queued, not a
    zombie) until ``place_record`` places it."""
    handle: ZLinkWorkHandle[Any] = ZLinkWorkHandle(queue._rt, queue._core, work)
    WorkRecord.__init__(handle)
    return handle


def cancel_unplaced(handle: ZLinkWorkHandle[Any], exc: BaseException) -> None:
    """End a handle that was accepted but never placed (a session's final work when
    its scope is cancelled first) as cancelled."""
    handle._settle(CANCELLED, exc)


def dispose_with_survivors(scope: ScopeSurface) -> None:
    """``dispose`` the scope, then cancel once more the zombies of queues it had
    cancelled before (works that outlived that cancellation, SD-3a): the runtime end
    cancels every zombie (SD-5)."""
    queues = cast("list[ZLinkSerialExecutionQueue]", list(scope._scope_queues()))
    survivors: list[tuple[ZLinkSerialExecutionQueue, list[Any]]] = [
        (q, [r for r in q._records().live_records() if r.zombie])
        for q in queues if q._core.mode == MODE_CANCELLED]
    scope.dispose()
    for q, recs in survivors:
        q._cancel_delivery(recs)


def enter_posted_drain(queue: ZLinkSerialExecutionQueue) -> None:
    """Run ``queue``'s posted drain now: enter the drain and go on as the drain goes on.
    The queue's own ``_drain`` is not called, so a held queue (``testing.held``), whose
    posted drain waits, is entered here on its ``step``."""
    DrainingQueue._drain(queue)


def continue_drain(queue: ZLinkSerialExecutionQueue) -> None:
    """Go on with ``queue``'s entered drain, with no turn held: its next step (end the
    slice, leave the drain, or take the next turn and run it), as after a yield."""
    DrainingQueue._continue(queue)


def yield_turn_until(queue: ZLinkSerialExecutionQueue, rec: ZLinkWorkHandle[Any],
                     awaitable: Awaitable[T]) -> Coroutine[Any, Any, T]:
    """The shell's own Yield of ``rec`` on ``queue`` until ``awaitable`` ends (give the
    turn back, requeue, wait for the turn again), for a queue that overrides its
    ``_yield`` to pass it another awaitable (``testing.held``)."""
    return DrivenQueue._yield(queue, rec, awaitable)
