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
"""

from __future__ import annotations

import contextvars
import dataclasses
import logging
import math
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Protocol, Self, cast

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
    "ScopeMixin",
    "ZLinkNotDisposedError",
    "ZombieInfo",
    "scope_registry",
]

log = logging.getLogger("zlink.zombies")

ErrorHandler = Callable[[BaseException, Any], None]

# The runtime end (zlink_reference.disposal) sets this to its registry of scopes; every
# scope made while it is set joins it (SD-5: the scheduler keeps a registry of work).
scope_registry: contextvars.ContextVar[list[ScopeMixin] | None] = contextvars.ContextVar(
    "zlink_scope_registry", default=None
)


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

    def _cancel_delivery(self, records: list[Any]) -> None: ...


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


class ScopeMixin:
    """The scope surface shared by ``ZLinkSerialExecutionQueue`` and the coordinators.

    Subclasses provide ``_rt`` (their QueueRuntime), ``name``, ``_scope_queues()`` and
    may override ``_scope_closing()`` (called first, in the same step as the disposal:
    a coordinator closes its entries and empties its maps there),
    ``_scope_cancelling()`` and ``_held()``.

    A *held* work (``_held()``) is one the scope accepted and has not placed in a queue
    yet: a session's final work waits, outside its queue, for the works accepted before
    it to end (D-12). It is a work from its acceptance (SE-3, D-22): counted as active
    (or, once the scope is disposed safely, as a zombie), listed by ``zombies()``,
    awaited by every wait, and bounded by the disposal timer and the runtime end.
    """

    __slots__ = ()

    _rt: QueueRuntime

    if TYPE_CHECKING:
        @property
        def name(self) -> str: ...

    def _scope_queues(self) -> Sequence[ScopeQueue]:
        raise NotImplementedError

    def _scope_closing(self) -> None:
        """Hook: the scope closes to new work (every disposal call)."""

    def _scope_cancelling(self) -> None:
        """Hook: the scope cancels what is left (dispose, or the timeout expired)."""

    def _held(self) -> list[tuple[ScopeQueue, ZLinkWorkHandle[Any]]]:
        """Hook: the works this scope accepted and holds back from their queue (a
        session's final work before its turn is due), each with the queue it will be
        placed in; none by default. They count from acceptance (D-22)."""
        return []

    def _live_held(self, zombies_too: bool) -> list[ZLinkWorkHandle[Any]]:
        """The held works not ended yet (the zombies among them only if asked)."""
        return [rec for _, rec in self._held()
                if not rec.done() and (zombies_too or not rec.zombie)]

    def _scope_state(self) -> ScopeState:
        """This scope's disposal state, kept by its own runtime."""
        return self._own_runtime().scope_state(self)

    def _own_runtime(self) -> QueueRuntime:
        """The runtime, made this scope's own first if it is the shared runtime of
        default queues: per-owner state (scope state, flags) is only ever written to a
        runtime no other scope uses."""
        rt = self._rt
        if rt.shared:
            rt = self._rt = rt.owned()  # type: ignore[misc]  # the subclass's slot
        return rt

    def _join_registry(self) -> None:
        registry = scope_registry.get()
        if registry is not None:
            registry.append(self)

    # ------------------------------------------------------------ disposal
    def dispose(self) -> None:
        """Close and cancel everything now (SD-1). Idempotent once cancelled."""
        if not self._rt.on_loop_thread():
            self._rt.call_on_loop(self.dispose)
            return
        self._scope_closing()
        self._scope_cancelling()
        for q in self._scope_queues():
            if q._core.mode != MODE_CANCELLED:
                q._scope_cancel(expire=False)
        self._stop_timers()

    def dispose_safely(self) -> None:
        """Close and cancel nothing: live works go on as zombies (SD-1, SD-2). Does
        nothing on a scope already disposed."""
        if not self._rt.on_loop_thread():
            self._rt.call_on_loop(self.dispose_safely)
            return
        self._scope_closing()
        marked = 0
        for q in self._scope_queues():
            if q._core.mode == MODE_OPEN:
                marked += len(q._records().dispose_safely())
                # Marking zombies lowers the active count without any work ending: wake
                # the await_completion waiters whose condition now holds (SD-3).
                q._check_waiters()
        for q, rec in self._held():
            # A held work is live too: it becomes a zombie with its queue, and its
            # queue marks it again when it places it (QueueCore.transfer, D-22).
            if q._core.mode == MODE_SAFELY and not rec.done() and not rec.zombie:
                rec._hold_as_zombie()
                marked += 1
        state = self._scope_state()
        if state.disposed_at is None:
            state.disposed_at = self._rt.now()
        warn = self._rt.zombie_warn_after_ms
        if marked and warn is not None and state.warn_timer is None:
            state.warn_timer = self._rt.clock.call_later(warn, self._warn_zombies)

    def dispose_after_timeout(self, timeout_ms: float) -> None:
        """Close now; after ``timeout_ms`` on the scope's clock cancel what is left, as
        ``dispose`` does (SD-1). With nothing left, no timer is started. After
        ``dispose_safely`` it bounds the zombies: they are cancelled when the time is
        up (D-27). A bound already running stays the one that holds."""
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float):
            raise TypeError(f"timeout_ms must be a number, got {timeout_ms!r}")
        if not math.isfinite(timeout_ms) or timeout_ms < 0:
            # A bound that never expires is no bound: dispose_safely is that call.
            raise ValueError(f"timeout_ms must be a finite number >= 0 (infinity is not "
                             f"allowed), got {timeout_ms} (SD-1)")
        if not self._rt.on_loop_thread():
            self._rt.call_on_loop(lambda: self.dispose_after_timeout(timeout_ms))
            return
        self._scope_closing()
        queues = self._scope_queues()
        for q in queues:
            if q._core.mode == MODE_OPEN:
                q._core.dispose_after_timeout()
        state = self._scope_state()
        bounded = (MODE_TIMEOUT, MODE_SAFELY)
        if state.timer is None and (
            any(q._core.mode in bounded and q._core.live() for q in queues)
            or any(q._core.mode in bounded and not rec.done() for q, rec in self._held())
        ):
            state.timer = self._rt.clock.call_later(timeout_ms, self._expire)
            for q in queues:
                q._queue_aux().on_end = self._maybe_stop_timer

    def _expire(self) -> None:
        if _checks.ON:
            require_loop(self._rt, "expire")
        self._scope_state().timer = None
        self._scope_cancelling()
        for q in self._scope_queues():
            if q._core.mode == MODE_TIMEOUT:
                q._scope_cancel(expire=True)
            elif q._core.mode == MODE_SAFELY:
                # The bound set on zombies after dispose_safely (D-27): as dispose.
                q._scope_cancel(expire=False)

    def _maybe_stop_timer(self, _queue: ScopeQueue) -> None:
        """Everything finished before the timeout: the timer has nothing left to do."""
        state = self._scope_state()
        # A held work still to come keeps the timer: it is what the bound is for (D-22).
        if state.timer is not None and all(q._core.live() == 0 for q in self._scope_queues()) \
                and not self._live_held(True):
            state.timer.cancel()
            state.timer = None

    def _stop_timers(self) -> None:
        state = self._rt.peek_scope_state(self)
        if state is not None and state.timer is not None:
            state.timer.cancel()
            state.timer = None

    # ------------------------------------------------------------- waiting
    def _check_own_wait(self, wait: str, *, zombies_too: bool) -> None:
        """SE-8.2: refuse, at once, a wait from work that this wait waits for."""
        _context.check_scope_wait(
            # Every live record of a queue is a work handle, which is a turn record.
            (cast(_context.TurnRecord, rec) for _, rec in self._counted()
             if zombies_too or not rec.zombie),
            wait=wait, scope=self.name)

    async def await_completion(self) -> None:
        """Return once no active work is left; zombies do not count (SD-3). From an
        active work of this scope it raises ``ZLinkReentrancyError`` (SE-8.2)."""
        self._check_own_wait("await_completion", zombies_too=False)
        if running_loop() is not self._rt.loop and self._rt.foreign():  # D-24
            return await self._rt.wait_on_loop(self.await_completion)
        while True:
            busy = [q for q in self._scope_queues() if q._core.active()]
            if not busy:
                if not self._live_held(False):
                    return
                # A held work whose queue just emptied is placed on the next turn
                # of the loop (D-22): look again then.
                await self._rt.next_turn()
                continue
            for q in busy:
                await q._wait_until(False)

    async def await_after_cancellation(self, error_handler: ErrorHandler | None = None) -> None:
        """Wait for every live work, zombies included; only after a disposal (SD-3).

        Each failure of a zombie is passed to ``error_handler(error, scope)``, in the
        order they happened; without a handler the first one is raised once nothing is
        left running. A failure is reported once, to the first call that returns.
        From a live work of this scope it raises ``ZLinkReentrancyError`` (SE-8.2).
        """
        if running_loop() is not self._rt.loop and self._rt.foreign():  # D-24
            return await self._rt.wait_on_loop(
                lambda: self.await_after_cancellation(error_handler))
        queues = self._scope_queues()
        if all(q._core.mode == MODE_OPEN for q in queues):
            raise ZLinkNotDisposedError(
                f"{self.name}: await_after_cancellation needs the scope cancelled or "
                "disposed first (SD-3)"
            )
        self._check_own_wait("await_after_cancellation", zombies_too=True)
        while True:
            busy = [q for q in self._scope_queues() if q._core.live()]
            if not busy:
                if not self._live_held(True):
                    break
                await self._rt.next_turn()  # a held work is placed then (D-22)
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
                error_handler(exc, self)
        elif errors:
            raise errors[0][1]

    # -------------------------------------------------------------- flags
    @property
    def dispose_safely_on_exit(self) -> bool:
        """True (the default): destroying this scope (leaving its ``async with`` block,
        runtime end) turns its works into zombies; False: it cancels them (SD-4)."""
        return self._rt.dispose_safely_on_exit

    def as_not_safely(self) -> Self:
        """Make destruction cancel instead of making zombies (SD-4). Applies to every
        queue of the scope, those made later and those already made (D-16)."""
        self._own_runtime().dispose_safely_on_exit = False
        return self

    @classmethod
    def inherit(cls, parent: ScopeMixin, *args: Any, **kwargs: Any) -> Self:
        """A child scope of ``parent`` (the seed's ``Scope::inherit($parent)``, SD-4):
        made like ``cls(*args, **kwargs)``, on the parent's loop unless ``loop`` is
        given, with the parent's dispose-safely flag as it is now. A parent made
        ``as_not_safely()`` makes children that cancel on destruction; a child may
        still call ``as_not_safely()`` itself. The flag is copied, not shared: a later
        change to the parent leaves its children as they were (decision D-29)."""
        if not isinstance(parent, ScopeMixin):
            raise TypeError(
                f"parent must be a scope (a queue or a coordinator), got {parent!r}")
        kwargs.setdefault("loop", parent._rt.loop)
        child = cls(*args, **kwargs)
        if not parent.dispose_safely_on_exit:
            child.as_not_safely()
        return child

    def destroy(self) -> None:
        """Destroy the scope: ``dispose_safely`` or ``dispose``, by the flag (SD-4)."""
        if self._rt.dispose_safely_on_exit:
            self.dispose_safely()
        else:
            self.dispose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.destroy()

    # --------------------------------------------------------- accounting
    def _counted(self) -> Iterator[tuple[ScopeQueue, WorkRecord]]:
        """Live works of the scope, each once (a coordinator skips duplicates), held
        works included (D-22)."""
        for q in self._scope_queues():
            for rec in q._records().live_records():
                yield q, rec
        for q, held in self._held():
            if not held.done():
                yield q, held

    def active_count(self) -> int:
        """Live works that are not zombies (SD-2)."""
        return sum(1 for _, rec in self._counted() if not rec.zombie)

    def zombie_count(self) -> int:
        """Live zombies (SD-2)."""
        return sum(1 for _, rec in self._counted() if rec.zombie)

    def zombies(self) -> list[ZombieInfo]:
        """The zombies running now, with where they are and since when (SD-6)."""
        state = self._rt.peek_scope_state(self)
        since = state.disposed_at if state is not None and state.disposed_at is not None else 0
        out = []
        for q, rec in self._counted():
            if not rec.zombie:
                continue
            # Where the work is: its own record, or the turn it runs as (SpotWide).
            run = self._running_as(q, rec)
            awaiting = None
            aux = getattr(run, "_aux", None)
            if run.phase == SUSPENDED and aux is not None and aux.awaiting is not None:
                awaiting = repr(aux.awaiting)
            out.append(ZombieInfo(self.name, q.name, rec.wid, getattr(rec, "label", ""),
                                  since, PHASE_NAMES[run.phase], awaiting))
        return out

    def _running_as(self, queue: ScopeQueue, rec: WorkRecord) -> WorkRecord:
        """The record whose phase says where the counted work ``rec`` is. A work runs
        as its own record here; a coordinator whose works run as a turn placed on
        another queue (SpotWide) returns that turn, so a suspended work is listed as
        suspended with what it waits on, not as its holder's "running" (SD-6)."""
        return rec

    def _warn_zombies(self) -> None:
        if _checks.ON:
            require_loop(self._rt, "warn_zombies")
        state = self._scope_state()
        state.warn_timer = None
        now = self._rt.now()
        units = self._rt.clock.units_per_ms
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

