"""``ZLinkSerialExecutionQueue``: the asyncio shell around the protocol core.

The shell decides nothing. It calls the core's transitions, posts the drain with
``call_soon`` when the core says the queue just became busy (never running it on the
submitter's stack, SE-6.5), runs works, and feeds clock readings to the core. The only
code of this package that imports asyncio lives in ``_shell``.

One mutator (SE-6.3, decision D-7). Like every single-threaded runtime, the event-loop
thread is the only code that changes a queue's state, so each transition, admission
included, is one critical section without a lock. A submission from another thread is
handed to the loop thread (``call_soon_threadsafe``) and waits there for its verdict:
the same "accepted, or rejected with nothing inserted" answer, in one atomic step.

The queue is the top of the shell's rooms, lowest first: ``clock``, ``loop`` (the loop
binding, thread model and per-thread turn state), ``checks`` (SE-8.1), ``context``
(current work, is-current, SE-8.2), ``handle``, ``scope`` (the scope object and its
views), ``surface`` (the scope members a queue shows), ``drain`` (turns), ``drive``
(drive task, Yield, cancellation delivery) and ``queue`` (submission, close,
statistics). docs/implementers.md reads them in that order.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any, Final, cast

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import (
    CANCELLED,
    QUEUED,
    Observer,
    QueueConfig,
    QueueCore,
    is_plain,
)
from zlink_model.rules import APPLICATION_LANE, LIFECYCLE_LANE, Source

from . import checks as _checks
from . import context as _context
from .checks import require_loop
from .clock import ZLinkClock
from .drain import QueueAux
from .drive import DrivenQueue, yield_framework_call
from .handle import ErrorHook, TurnHold, Work, ZLinkWorkHandle, current_work
from .loop import QueueRuntime, running_loop, shared_runtime, thread_state
from .scope import Scope
from .surface import ScopeSurface

__all__ = [
    "ErrorHook",
    "QueueRuntime",
    "QueueStatistics",
    "TurnHold",
    "Work",
    "ZLinkSerialExecutionQueue",
    "ZLinkWorkHandle",
    "current_work",
    "yield_framework_call",
]

get_ident: Final = threading.get_ident


class QueueStatistics:
    """A point-in-time view of one queue, for tests, logs and adapters."""

    __slots__ = (
        "application_bytes",
        "application_count",
        "closed",
        "drain_scheduled",
        "draining",
        "lifecycle_bytes",
        "lifecycle_count",
        "name",
        "ready",
        "running",
        "suspended",
    )

    def __init__(self, core: QueueCore[Any]) -> None:
        self.name = core.name
        self.application_count = core.app_count
        self.application_bytes = core.app_bytes
        self.lifecycle_count = core.life_count
        self.lifecycle_bytes = core.life_bytes
        # Lengths, not ``line``: a line may hold plain works (``post``).
        self.ready = sum(len(line) for line in (core.barrier, core.life, core.app) if line)
        self.running = core.turn_holder is not None
        self.suspended = len(core.suspended) if core.suspended else 0
        self.drain_scheduled = core.drain_scheduled
        self.draining = core.draining
        self.closed = core.closed

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"QueueStatistics({fields})"



_DEFAULT_POLICY = ZLinkExecutionLanePolicy()  # frozen: one instance serves every default
_CONFIGS_KEPT = 64  # distinct (policy, clock units, yield) configurations kept for sharing


def _shared_config(policy: ZLinkExecutionLanePolicy, units_per_ms: float,
                   yield_allowed: bool) -> QueueConfig:
    """One untraced ``QueueConfig`` per policy object, clock unit and Yield flag, shared
    by the queues that ask for it (a config holds no per-queue state). A policy equal to
    a cached one but not the same object gets a config of its own, so ``queue.policy``
    is always the object the caller gave."""
    key = (policy, units_per_ms, yield_allowed)
    configs: dict[tuple[ZLinkExecutionLanePolicy, float, bool], QueueConfig] = (
        thread_state().configs)
    config = configs.get(key)
    if config is not None and config.policy is policy:
        return config
    config = QueueConfig(policy, units_per_ms=units_per_ms, yield_allowed=yield_allowed)
    if len(configs) < _CONFIGS_KEPT and key not in configs:
        configs[key] = config
    return config



class ZLinkSerialExecutionQueue(DrivenQueue, ScopeSurface):
    """One serial queue: runs accepted works one at a time, in the order the core picks.

    ``policy`` limits it (SE-6.1); ``clock`` is read between works for the time budget
    (default: the monotonic clock); ``error_hook(exc, handle)`` sees every work failure
    (default: the loop's exception handler); ``observer`` receives every transition as a
    trace event. Works run on the loop the queue was made on (the running loop, unless
    ``loop`` is given); submissions from other threads wait for the loop's verdict.
    """

    __slots__ = ()

    def __init__(
        self,
        policy: ZLinkExecutionLanePolicy | None = None,
        *,
        name: str = "queue",
        clock: ZLinkClock | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        error_hook: ErrorHook | None = None,
        observer: Observer | None = None,
        yield_allowed: bool = True,
        runtime: QueueRuntime | None = None,
        config: QueueConfig | None = None,
    ) -> None:
        if policy is None:
            policy = config.policy if config is not None else _DEFAULT_POLICY
        if not isinstance(policy, ZLinkExecutionLanePolicy):
            raise TypeError(f"policy must be a ZLinkExecutionLanePolicy, got {policy!r}")
        if not isinstance(name, str) or not name:
            raise ValueError(f"name must be a non-empty string, got {name!r}")
        if runtime is not None:
            rt = runtime
        elif clock is None and error_hook is None:
            rt = shared_runtime(loop)  # nothing of its own to keep: share (issue 16)
        else:
            rt = QueueRuntime(clock=clock, loop=loop, error_hook=error_hook)
        if config is None:
            if observer is None:
                config = _shared_config(policy, rt.clock.units_per_ms, yield_allowed)
            else:
                config = QueueConfig(
                    policy, units_per_ms=rt.clock.units_per_ms,
                    yield_allowed=yield_allowed, observer=observer,
                )
        self._rt = rt
        self._core: QueueCore[ZLinkWorkHandle[Any]] = QueueCore(config, name)
        self._aux: QueueAux | None = None  # waiters and disposal state, when any
        if runtime is None:
            # A queue not given a runtime is a scope of its own, whether its runtime is
            # its own or the shared one of default queues (that one keeps no scope state).
            self._join_registry()

    @property
    def policy(self) -> ZLinkExecutionLanePolicy:
        """The injected limits (SE-6.1)."""
        return self._core.config.policy

    @property
    def clock(self) -> ZLinkClock:
        """The clock read between works."""
        return self._rt.clock

    # ------------------------------------------------------------- submission
    def enqueue(self, work: Work) -> ZLinkWorkHandle[Any]:
        """Submit application work reserving ``fixed_work_byte_cost`` (SE-6.2)."""
        # The hot path of _submit, written out: one call fewer per submission.
        rt = self._rt
        if (get_ident() != rt.thread_id and rt.foreign()) or not callable(work):
            return self._submit(work, APPLICATION_LANE, 0, False)
        core = self._core
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(rt, core, work)
        if core.admit(rec):
            rt.loop.call_soon(self._drain)
        return rec

    def post(self, work: Work) -> None:
        """Submit application work reserving ``fixed_work_byte_cost``, with no handle
        (SE-6.2, like ``enqueue``): nothing is returned, as ``put_nowait`` returns
        nothing. A refusal raises at once (``ZLinkRejectedError``, ``ZLinkClosedError``),
        as ``enqueue`` does; a failure of the work goes to the queue's error hook (with
        a handle made for the report, already settled failed). The core admits it with
        ``admit_plain`` and keeps the work itself in line; a traced queue (an observer
        is attached), or a submission from another thread, takes ``enqueue``'s path and
        drops the handle, so traces see every work as a record."""
        rt = self._rt
        core = self._core
        # thread_id is -1 for an owner made before its loop ran (D-24): the fast test
        # alone would send every post of such an owner down enqueue's path.
        if (get_ident() != rt.thread_id and rt.foreign()) \
                or core.config.observer is not None or not callable(work):
            self._submit(work, APPLICATION_LANE, 0, False)
            return
        if core.admit_plain(work):
            rt.loop.call_soon(self._drain)


    def enqueue_with_payload_bytes(self, work: Work, payload_bytes: int) -> ZLinkWorkHandle[Any]:
        """Submit application work reserving its payload plus the fixed cost (SE-6.2)."""
        return self._submit(work, APPLICATION_LANE, _check_bytes(payload_bytes), False)

    def enqueue_lifecycle(self, work: Work) -> ZLinkWorkHandle[Any]:
        """Submit lifecycle work: it overtakes waiting application work, within the
        lifecycle burst limit (SE-6.2, SE-6.1)."""
        return self._submit(work, LIFECYCLE_LANE, 0, False)

    def enqueue_barrier_next(self, work: Work) -> ZLinkWorkHandle[Any]:
        """Submit application work that runs right after the current turn, ahead of
        queued application work; several keep their order (SE-6.2, decision D-4)."""
        return self._submit(work, APPLICATION_LANE, 0, True)

    def _submit(self, work: Work, lane: int, payload: int, barrier: bool) -> ZLinkWorkHandle[Any]:
        rt = self._rt
        if get_ident() != rt.thread_id and not rt.on_loop_thread():
            return rt.call_on_loop(lambda: self._submit(work, lane, payload, barrier))
        if not callable(work):
            raise TypeError(f"work must be a zero-argument callable, got {work!r}")
        core = self._core
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(rt, core, work)
        if core.admit(rec, lane, payload, barrier):
            rt.loop.call_soon(self._drain)
        return rec

    def _admit_record(self, rec: ZLinkWorkHandle[Any], payload: int) -> None:
        """Admit ``rec``, a handle a coordinator made for this queue (a subclass that is
        its own work: an Actor message, SE-7), as application work reserving ``payload``
        (checked by the caller) plus the fixed cost: the admission of
        ``enqueue_with_payload_bytes``. Called on the loop thread."""
        rt = self._rt
        if get_ident() != rt.thread_id:
            require_loop(rt, "admit_record")
        if self._core.admit(rec, APPLICATION_LANE, payload, False):
            rt.loop.call_soon(self._drain)

    def _transfer(self, rec: ZLinkWorkHandle[Any]) -> None:
        """Place ``rec``, the execution turn of already-accepted work, made for this
        queue by the coordinator (SpotWide, SE-4.5); its class names the gates it needs.
        Called on the loop thread by the coordinator (the thread test first: it is the
        cheap one)."""
        rt = self._rt
        if _checks.ON and get_ident() != rt.thread_id:
            require_loop(rt, "transfer")
        if self._core.transfer(rec):
            rt.loop.call_soon(self._drain)

    def _take_queued(self) -> list[tuple[ZLinkWorkHandle[Any], Work]]:
        """Take every never-started work out of the lines, in line order; their handles
        report cancellation. Returns each record with the caller's original work: the
        ``__wrapped__`` of a record that keeps it itself (an Actor message, whose work
        is the runner every message shares), else of the work (a wrapper), else the
        work."""
        if _checks.ON:
            require_loop(self._rt, "take_queued")
        core = self._records()
        taken = []
        for source in (Source.BARRIER, Source.LIFECYCLE, Source.APPLICATION):
            for rec in core.line(source):
                if rec.phase == QUEUED:
                    taken.append(rec)
        out = []
        for rec in taken:
            work = getattr(rec, "__wrapped__", None) or getattr(rec._work, "__wrapped__",
                                                                rec._work)
            core.cancel(rec)
            self._ended(rec, CANCELLED, asyncio.CancelledError("taken out of the queue"))
            out.append((rec, cast("Work", work)))
        return out

    # ------------------------------------------------------------------ scope
    def _scope(self) -> Scope:
        """This queue as a scope, made the first time it is used as one and kept with the
        queue's other seldom-needed state (``QueueAux``)."""
        aux = self._queue_aux()
        scope: Scope | None = aux.scope
        if scope is None:
            scope = aux.scope = Scope(self)
        return scope

    def _scope_queues(self) -> list[ZLinkSerialExecutionQueue]:
        return [self]

    def _scope_cancel(self, *, expire: bool) -> None:
        """``dispose`` (or the disposal timeout expired) on this queue: the core ends
        never-started works and hands back the live ones, which get cancelled."""
        if _checks.ON:
            require_loop(self._rt, "scope_cancel")
        core = self._records()
        ended, live = core.expire_timeout() if expire else core.dispose()
        for rec in ended:
            self._ended(rec, CANCELLED, asyncio.CancelledError("disposed before it started"))
        self._cancel_delivery(live)

    def _transfer_record(self, rec: ZLinkWorkHandle[Any]) -> None:
        """Place a handle made earlier (a session's final work) by transfer: it was
        accepted when it was made, so it is never refused (decision D-6)."""
        if _checks.ON:
            require_loop(self._rt, "transfer_record")
        if self._core.transfer(rec):
            self._rt.loop.call_soon(self._drain)

    # ------------------------------------------------------------------ state
    def is_current(self) -> bool:
        """True when the caller is work holding this queue's turn (SE-6.2)."""
        cur = self._core.turn_holder
        if cur is None or not self._rt.on_loop_thread():
            return False
        if is_plain(cur):
            # A plain turn holder is always running right now, synchronously, on the
            # loop thread (one that returns an awaitable is promoted before it waits):
            # the caller on this thread is that work.
            return True
        return _context.holder() is cur

    async def await_quiescence(self) -> None:
        """Return once every accepted work has ended (queued, running and suspended
        ones included). Awaited on another loop, it waits on the owner's (D-24). From a
        live work of this queue it raises ``ZLinkReentrancyError`` (SE-8.2)."""
        # The check reads the queue only: a queue that was never used as a scope is not
        # made one by it (an idle queue keeps no scope object, issue 16's memory bound).
        aux = self._aux
        scope = aux.scope if aux is not None and aux.scope is not None else Scope(self)
        scope.check_own_wait("await_quiescence", zombies_too=True)
        if running_loop() is not self._rt.loop and self._rt.foreign():
            return await self._rt.wait_on_loop(self.await_quiescence)
        await self._wait_until(True)

    def close(self) -> None:
        """Accept no new work; finish what was accepted (SE-6.2). Idempotent."""
        if not self._rt.on_loop_thread():
            self._rt.call_on_loop(self.close)
            return
        self._core.close()

    @property
    def closed(self) -> bool:
        """Whether ``close`` was called."""
        return self._core.closed

    def statistics(self) -> QueueStatistics:
        """Counts and flags right now, as one view of one state. Called from another
        thread, the view is taken on the owner's loop and returned (D-24): read field
        by field off the loop, it could mix two states."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():
            return self._rt.call_on_loop(self.statistics)
        return QueueStatistics(self._core)

    def __repr__(self) -> str:
        core = self._core
        state = "closed" if core.closed else "open"
        busy = "draining" if core.draining else ("scheduled" if core.drain_scheduled else "idle")
        return (
            f"<ZLinkSerialExecutionQueue {core.name!r} {state} {busy} "
            f"app={core.app_count}/{core.app_bytes}B life={core.life_count}/{core.life_bytes}B>"
        )



def _check_bytes(payload_bytes: int) -> int:
    if isinstance(payload_bytes, bool) or not isinstance(payload_bytes, int):
        raise TypeError(f"payload_bytes must be an integer, got {payload_bytes!r}")
    if payload_bytes < 0:
        raise ValueError(f"payload_bytes must be >= 0, got {payload_bytes} (SE-6.2)")
    return payload_bytes

