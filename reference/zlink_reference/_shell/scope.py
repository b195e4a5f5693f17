"""Scopes: shutting down a group of accepted works (SD-1 .. SD-4, SD-6).

A queue, or a coordinator with every queue it owns, is a *scope*; its accepted works play
the part TrueAsync gives to a scope's coroutines. The protocol core owns the counters and
the modes (``QueueCore.dispose``, ``dispose_safely``, ``dispose_after_timeout``,
``expire_timeout``); this module drives them for all of a scope's queues at once, cancels
tasks, runs the disposal timer on the scope's clock, keeps zombie failures for
``await_after_cancellation`` and logs zombies that outlive a threshold. Decisions are in
``specs/disposal.md``.

=========================  ==========================================================
call                       effect
=========================  ==========================================================
dispose()                  close; never-started works never start (their handles
                           report cancellation); started async works get
                           ``CancelledError`` at their await point, on their own turn
                           (D-8); a synchronous turn already running finishes
dispose_safely()           close; cancel nothing; every live work is a zombie (active
                           -1, zombie +1 each) and runs on, in order
dispose_after_timeout(ms)  close; after ``ms`` on the scope's clock, cancel what is
                           left as dispose() does; no timer when nothing is left;
                           after dispose_safely, the zombies are what is left (D-27)
await_completion()         returns once no active work is left (zombies don't count)
await_after_cancellation   waits for zombies too; only after a disposal; reports each
                           zombie failure to the handler, or raises the first
=========================  ==========================================================

``Scope`` is the object that does all of it. The queue or coordinator it belongs to
(its host) holds one, and the scope sees that host only through ``ScopeHost`` and each
of the host's queues only through ``ScopeQueue``: two small named views, so this module
never imports the queue or a coordinator. The public face both kinds of host show
(``dispose``, ``await_completion``, ``inherit``, ``async with`` ...) is ``ScopeSurface``
(surface.py, the room above this one): each of its members hands the call to the host's
``Scope``. A scope's disposal state (``ScopeState``) is kept by the owner's runtime,
made on first disposal, so an idle queue stays small.
"""

from __future__ import annotations

import dataclasses
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol, cast

from zlink_model.errors import ZLinkUsageError
from zlink_model.queue import (
    MODE_CANCELLED,
    MODE_OPEN,
    MODE_SAFELY,
    MODE_TIMEOUT,
    PHASE_NAMES,
    SUSPENDED,
    QueueCore,
    WorkRecord,
)

from . import checks as _checks
from . import context as _context
from .checks import require_loop
from .loop import ScopeState, running_loop, thread_state

if TYPE_CHECKING:
    from .handle import ZLinkWorkHandle
    from .loop import QueueRuntime

__all__ = [
    "ErrorHandler",
    "Scope",
    "ScopeHost",
    "ScopeQueue",
    "ZLinkNotDisposedError",
    "ZombieInfo",
    "record_zombie_failure",
]

log = logging.getLogger("zlink.zombies")

ErrorHandler = Callable[[BaseException, Any], None]

class ScopeQueue(Protocol):
    """What a scope sees of each of its queues: the core's modes and counters, the
    records of its live works, its quiescence waiters and zombie failures, and the one
    step that cancels it. A ``ZLinkSerialExecutionQueue`` is one (queue.py); this module
    never imports it."""

    _core: QueueCore[Any]

    @property
    def name(self) -> str: ...

    @property
    def _aux(self) -> Any: ...

    def _records(self) -> QueueCore[Any]: ...

    def _queue_aux(self) -> Any: ...

    def _check_waiters(self) -> None: ...

    async def _wait_until(self, zombies_too: bool) -> None: ...

    def _scope_cancel(self, *, expire: bool) -> None: ...


class ZLinkNotDisposedError(ZLinkUsageError):
    """``await_after_cancellation`` before the scope was disposed (SD-3)."""


@dataclasses.dataclass(frozen=True, slots=True)
class ZombieInfo:
    """One zombie, while it runs (SD-6: zombies are visible)."""

    scope: str
    queue: str
    work: int  # -1 for a held work, not placed in its queue yet (D-22)
    label: str
    since: float  # clock reading when the scope was disposed safely
    state: str  # queued, running, suspended, requeued
    awaiting: str | None  # what a suspended zombie waits on


class ScopeHost(Protocol):
    """What a scope sees of the queue or coordinator that holds it: the owner's runtime
    (made the scope's own before per-owner state is written to it), the name, the
    queues, the works held back from their queue, and the hooks below. ``ScopeSurface``
    (surface.py) gives every hook but ``_scope_queues`` a default; a ``ZLinkSerialExecutionQueue``
    and each coordinator are hosts. This module never imports either."""

    _rt: QueueRuntime

    @property
    def name(self) -> str: ...

    def _scope_queues(self) -> Sequence[ScopeQueue]:
        """The queues of the scope (a queue: itself)."""
        ...

    def _scope_closing(self) -> None:
        """Called first, in the same step as every disposal: the scope closes to new
        work (a coordinator closes its entries and empties its maps there)."""
        ...

    def _scope_cancelling(self) -> None:
        """Called when the scope cancels what is left (dispose, or the timeout
        expired)."""
        ...

    def _held(self) -> list[tuple[ScopeQueue, ZLinkWorkHandle[Any]]]:
        """The works the scope accepted and holds back from their queue (a session's
        final work before its turn is due), each with the queue it will be placed
        in. They count from acceptance (D-22)."""
        ...

    def _counts(self, queue: ScopeQueue, rec: WorkRecord) -> bool:
        """Whether the live record ``rec`` of ``queue`` is a work of its own (a SpotWide
        execution turn is not: its Actor record is the work)."""
        ...

    def _running_as(self, queue: ScopeQueue, rec: WorkRecord) -> WorkRecord:
        """The record whose phase says where the counted work ``rec`` is (SD-6)."""
        ...


class Scope:
    """One scope: a queue, or a coordinator with every queue it owns (SD). Held by that
    host (``ScopeHost``), made on first use; its disposal state lives in the owner's
    runtime (``ScopeState``, made on first disposal).

    A *held* work (``host._held()``) is one the scope accepted and has not placed in a
    queue yet: a session's final work waits, outside its queue, for the works accepted
    before it to end (D-12). It is a work from its acceptance (SE-3, D-22): counted as
    active (or, once the scope is disposed safely, as a zombie), listed by ``zombies()``,
    awaited by every wait, and bounded by the disposal timer and the runtime end.
    """

    __slots__ = ("host",)

    def __init__(self, host: ScopeHost) -> None:
        self.host = host

    @property
    def rt(self) -> QueueRuntime:
        """The runtime of the scope's owner."""
        return self.host._rt

    def live_held(self, zombies_too: bool) -> list[ZLinkWorkHandle[Any]]:
        """The held works not ended yet (the zombies among them only if asked)."""
        return [rec for _, rec in self.host._held()
                if not rec.done() and (zombies_too or not rec.zombie)]

    def state(self) -> ScopeState:
        """This scope's disposal state, kept by its own runtime."""
        return self.own_runtime().scope_state(self.host)

    def own_runtime(self) -> QueueRuntime:
        """The runtime, made this scope's own first if it is the shared runtime of
        default queues: per-owner state (scope state, flags) is only ever written to a
        runtime no other scope uses."""
        host = self.host
        rt = host._rt
        if rt.shared:
            rt = host._rt = rt.owned()
        return rt

    # ------------------------------------------------------------ disposal
    def dispose(self) -> None:
        """``ScopeSurface.dispose``: close and cancel everything now (SD-1)."""
        host = self.host
        if not host._rt.on_loop_thread():
            host._rt.call_on_loop(self.dispose)
            return
        host._scope_closing()
        host._scope_cancelling()
        for q in host._scope_queues():
            if q._core.mode != MODE_CANCELLED:
                q._scope_cancel(expire=False)
        self.stop_timers()

    def dispose_safely(self) -> None:
        """``ScopeSurface.dispose_safely``: close, cancel nothing (SD-1, SD-2)."""
        host = self.host
        if not host._rt.on_loop_thread():
            host._rt.call_on_loop(self.dispose_safely)
            return
        host._scope_closing()
        marked = 0
        for q in host._scope_queues():
            if q._core.mode == MODE_OPEN:
                marked += len(q._records().dispose_safely())
                # Marking zombies lowers the active count without any work ending: wake
                # the await_completion waiters whose condition now holds (SD-3).
                q._check_waiters()
        for q, rec in host._held():
            # A held work is live too: it becomes a zombie with its queue, and its
            # queue marks it again when it places it (QueueCore.transfer, D-22).
            if q._core.mode == MODE_SAFELY and not rec.done() and not rec.zombie:
                rec._hold_as_zombie()
                marked += 1
        state = self.state()
        rt = host._rt
        if state.disposed_at is None:
            state.disposed_at = rt.now()
        warn = rt.zombie_warn_after_ms
        if marked and warn is not None and state.warn_timer is None:
            state.warn_timer = rt.clock.call_later(warn, self.warn_zombies)

    def dispose_after_timeout(self, timeout_ms: float) -> None:
        """``ScopeSurface.dispose_after_timeout``: close now, cancel what is left after
        ``timeout_ms`` on the scope's clock (SD-1, D-27)."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float):
            raise TypeError(f"timeout_ms must be a number, got {timeout_ms!r}")
        if not math.isfinite(timeout_ms) or timeout_ms < 0:
            # A bound that never expires is no bound: dispose_safely is that call.
            raise ValueError(f"timeout_ms must be a finite number >= 0 (infinity is not "
                             f"allowed), got {timeout_ms} (SD-1)")
        host = self.host
        if not host._rt.on_loop_thread():
            host._rt.call_on_loop(lambda: self.dispose_after_timeout(timeout_ms))
            return
        host._scope_closing()
        queues = host._scope_queues()
        for q in queues:
            if q._core.mode == MODE_OPEN:
                q._core.dispose_after_timeout()
        state = self.state()
        bounded = (MODE_TIMEOUT, MODE_SAFELY)
        if state.timer is None and (
            any(q._core.mode in bounded and q._core.live() for q in queues)
            or any(q._core.mode in bounded and not rec.done() for q, rec in host._held())
        ):
            state.timer = host._rt.clock.call_later(timeout_ms, self.expire)
            for q in queues:
                q._queue_aux().on_end = self.maybe_stop_timer

    def expire(self) -> None:
        """The disposal timer fired: cancel what is left, as ``dispose`` does."""
        host = self.host
        if _checks.ON:
            require_loop(host._rt, "expire")
        self.state().timer = None
        host._scope_cancelling()
        for q in host._scope_queues():
            if q._core.mode == MODE_TIMEOUT:
                q._scope_cancel(expire=True)
            elif q._core.mode == MODE_SAFELY:
                # The bound set on zombies after dispose_safely (D-27): as dispose.
                q._scope_cancel(expire=False)

    def maybe_stop_timer(self, _queue: ScopeQueue) -> None:
        """Everything finished before the timeout: the timer has nothing left to do."""
        state = self.state()
        # A held work still to come keeps the timer: it is what the bound is for (D-22).
        if state.timer is not None \
                and all(q._core.live() == 0 for q in self.host._scope_queues()) \
                and not self.live_held(True):
            state.timer.cancel()
            state.timer = None

    def stop_timers(self) -> None:
        """Cancel the disposal timer, if one runs."""
        state = self.host._rt.peek_scope_state(self.host)
        if state is not None and state.timer is not None:
            state.timer.cancel()
            state.timer = None

    def destroy(self) -> None:
        """``dispose_safely`` or ``dispose``, by the owner's flag (SD-4)."""
        if self.host._rt.dispose_safely_on_exit:
            self.dispose_safely()
        else:
            self.dispose()

    def as_not_safely(self) -> None:
        """Destruction cancels from now on, for every queue of the owner (SD-4, D-16)."""
        self.own_runtime().dispose_safely_on_exit = False

    # ------------------------------------------------------------- waiting
    def check_own_wait(self, wait: str, *, zombies_too: bool) -> None:
        """SE-8.2: refuse, at once, a wait from work that this wait waits for."""
        _context.check_scope_wait(
            # Every live record of a queue is a work handle, which is a turn record.
            (cast(_context.TurnRecord, rec) for _, rec in self.counted()
             if zombies_too or not rec.zombie),
            wait=wait, scope=self.host.name)

    async def await_completion(self) -> None:
        """``ScopeSurface.await_completion``: no active work left (SD-3)."""
        self.check_own_wait("await_completion", zombies_too=False)
        host = self.host
        rt = host._rt
        if running_loop() is not rt.loop and rt.foreign():  # D-24
            return await rt.wait_on_loop(self.await_completion)
        while True:
            busy = [q for q in host._scope_queues() if q._core.active()]
            if not busy:
                if not self.live_held(False):
                    return
                # A held work whose queue just emptied is placed on the next turn
                # of the loop (D-22): look again then.
                await rt.next_turn()
                continue
            for q in busy:
                await q._wait_until(False)

    async def await_after_cancellation(self, error_handler: ErrorHandler | None,
                                       scope: object) -> None:
        """``ScopeSurface.await_after_cancellation``: every live work, zombies too, then
        the zombies' failures, each passed to ``error_handler(error, scope)`` (SD-3)."""
        host = self.host
        rt = host._rt
        if running_loop() is not rt.loop and rt.foreign():  # D-24
            return await rt.wait_on_loop(
                lambda: self.await_after_cancellation(error_handler, scope))
        queues = host._scope_queues()
        if all(q._core.mode == MODE_OPEN for q in queues):
            raise ZLinkNotDisposedError(
                f"{host.name}: await_after_cancellation needs the scope cancelled or "
                "disposed first (SD-3)"
            )
        self.check_own_wait("await_after_cancellation", zombies_too=True)
        while True:
            busy = [q for q in host._scope_queues() if q._core.live()]
            if not busy:
                if not self.live_held(True):
                    break
                await rt.next_turn()  # a held work is placed then (D-22)
                continue
            for q in busy:
                await q._wait_until(True)
        errors: list[tuple[int, BaseException]] = []
        for q in queues:
            aux = q._aux
            if aux is not None and aux.zombie_errors:
                errors += [(order, exc) for order, exc, _ in aux.zombie_errors]
                aux.zombie_errors = []
        errors.sort(key=lambda item: item[0])
        if error_handler is not None:
            for _, exc in errors:
                error_handler(exc, scope)
        elif errors:
            raise errors[0][1]

    # --------------------------------------------------------- accounting
    def live(self) -> Iterator[tuple[ScopeQueue, WorkRecord]]:
        """Every live record of the scope's queues (each queue's own, SpotWide turns
        included), then the held works not ended yet (D-22)."""
        host = self.host
        for q in host._scope_queues():
            for rec in q._records().live_records():
                yield q, rec
        for q, held in host._held():
            if not held.done():
                yield q, held

    def counted(self) -> Iterator[tuple[ScopeQueue, WorkRecord]]:
        """Live works of the scope, each once (``host._counts``), held works included."""
        counts = self.host._counts
        for q, rec in self.live():
            if counts(q, rec):
                yield q, rec

    def zombies(self) -> list[ZombieInfo]:
        """``ScopeSurface.zombies``: the zombies running now (SD-6)."""
        host = self.host
        state = host._rt.peek_scope_state(host)
        since = state.disposed_at if state is not None and state.disposed_at is not None else 0
        out = []
        for q, rec in self.counted():
            if not rec.zombie:
                continue
            # Where the work is: its own record, or the turn it runs as (SpotWide).
            run = host._running_as(q, rec)
            awaiting = None
            aux = getattr(run, "_aux", None)
            if run.phase == SUSPENDED and aux is not None and aux.awaiting is not None:
                awaiting = repr(aux.awaiting)
            out.append(ZombieInfo(host.name, q.name, rec.wid, getattr(rec, "label", ""),
                                  since, PHASE_NAMES[run.phase], awaiting))
        return out

    def warn_zombies(self) -> None:
        """Log every zombie still running once the threshold passed (SD-6)."""
        rt = self.host._rt
        if _checks.ON:
            require_loop(rt, "warn_zombies")
        state = self.state()
        state.warn_timer = None
        now = rt.now()
        units = rt.clock.units_per_ms
        for z in self.zombies():
            age = (now - z.since) / units
            log.warning(
                "zombie work %s of %s (%s) still %s after %.0f ms%s", z.work, z.queue,
                z.label or "unlabelled", z.state, age,
                f", waiting on {z.awaiting}" if z.awaiting else "",
            )


def record_zombie_failure(aux_errors: list[tuple[int, BaseException, WorkRecord]],
                          exc: BaseException, rec: WorkRecord) -> None:
    """Keep a zombie's failure, in global order, for ``await_after_cancellation``."""
    aux_errors.append((next(thread_state().error_order), exc, rec))

