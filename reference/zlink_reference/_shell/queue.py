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

How a work runs (SE-6.7). The drain role is held by exactly one piece of code at a
time: the posted drain callback, a drive task, or a resumed work's task. Synchronous
works run inline in the drain loop. The first work that returns an awaitable moves the
drain role into a drive task, which runs that work (so the work keeps the turn while it
awaits anything that is not a framework call) and goes on draining after it. Every later
async work of the slice starts inside that task at once, with no task of its own: one
that ends without waiting is ended like a synchronous work, one that waits is driven on
in the task. Each async work runs in a context of its own (a copy of the drive task's),
so what it sets never reaches the works after it; ``asyncio.current_task()`` is the drive
task from its first step to its end, which keeps ``asyncio.timeout`` and cancellation
working. When a work calls ``yield_framework_call`` and the call is pending, the core
records ``yield_turn``, the drain role is handed to a freshly posted callback, and the
task stays with the work: it awaits the external call, queues its resume permit
(``requeue``) and waits until the drain gives the permit the turn. Whoever ends a turn
carries the drain role on.

Why not a task per async work, started eagerly (asyncio's eager task factory)? Python
3.11 has none: ``Task()`` always schedules its first step, a first step run outside a
task sees no ``current_task()`` (``asyncio.timeout`` raises at once), and a coroutine
moved into a task made when it first suspends would see its task change under it (a
timeout entered on the first step cancels the wrong task). The drive task gives the same
view at no per-work cost: the task is made once per slice, not per work.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import threading
import types
import warnings
import weakref
from collections.abc import Awaitable, Callable, Generator
from functools import partial
from types import CoroutineType
from typing import Any, ClassVar, Generic, TypeVar, cast

from zlink_model.errors import (
    ZLinkNotOnTurnError,
    ZLinkReentrancyError,
    ZLinkUsageError,
    ZLinkYieldNotSupportedError,
)
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import (
    CANCELLED,
    COMPLETED,
    FAILED,
    MODE_CANCELLED,
    OUTCOME_NAMES,
    PHASE_NAMES,
    QUEUED,
    RUNNING,
    Observer,
    QueueConfig,
    QueueCore,
    WorkRecord,
    is_plain,
)
from zlink_model.rules import APPLICATION_LANE, LIFECYCLE_LANE, Source

from . import checks as _checks
from .checks import require_loop
from .clock import MonotonicClock, ZLinkClock
from .loop import thread_state
from .scope import ScopeMixin, ScopeState, record_zombie_failure
from .scope import log as zombie_log

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

T = TypeVar("T")

Work = Callable[[], Any]
"""A zero-argument callable returning ``None``, a value, or an awaitable."""

ErrorHook = Callable[[BaseException, "ZLinkWorkHandle[Any]"], None]

PENDING = -1

# The record whose synchronous work runs right now is per thread: thread_state().turn.sync
# (loop.py), set and cleared around each synchronous call (D-24). The record an async
# work belongs to, in that work's task context.
_async_current: contextvars.ContextVar[ZLinkWorkHandle[Any] | None] = contextvars.ContextVar(
    "zlink_current_work", default=None
)
_get_running_loop = asyncio.events._get_running_loop
get_ident = threading.get_ident
_THREAD = thread_state()  # this thread's turn and caches (one object, per-thread fields)


class _HandleAux:
    """The parts of a handle most works never need, allocated on first use."""

    __slots__ = ("awaiting", "callbacks", "gates", "label", "permit", "quiet", "waiters")

    def __init__(self) -> None:
        self.quiet = False
        self.awaiting: object = None  # what the work waits on while suspended
        # One future per awaiter of the handle: cancelling one awaiter (a timeout, a
        # cancelled task) cancels its own future only, never the others' or the work.
        self.waiters: list[asyncio.Future[None]] | None = None
        self.callbacks: list[Callable[[Any], None]] | None = None
        self.permit: asyncio.Future[None] | None = None
        self.gates: tuple[object, ...] | None = None
        self.label = ""


class ZLinkWorkHandle(WorkRecord, Generic[T]):
    """An accepted work: its place in the core and, once it ends, its outcome.

    Await it for the work's result (or exception, or ``CancelledError``). Awaiting it
    from inside work that holds a turn the awaited work needs raises
    ``ZLinkReentrancyError`` at once (SE-8.2). Await it on the queue's loop.
    """

    __slots__ = ("_aux", "_outcome", "_queue", "_task", "_value", "_work")

    _task: asyncio.Task[Any] | None  # the task running it, once it is an async work
    _value: Any  # result or exception, once settled

    def __init__(self, queue: ZLinkSerialExecutionQueue, work: Work) -> None:
        # The core sets the WorkRecord fields at insertion; ``_value`` and ``_task``
        # are set before they are read (at settle, and when an async work starts).
        self._queue = queue
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
        """Turns and claims this work needs, first the queue whose turn it takes.
        Coordinators widen it (a SpotWide Actor work needs the Spot gate and its
        Actor claim); the reentrancy check compares these. Internal: these are queues,
        and no public member hands one out (SE-2.5, D-23)."""
        aux = self._aux
        if aux is None or aux.gates is None:
            return (self._queue,)
        return aux.gates

    @_gates.setter
    def _gates(self, value: tuple[object, ...]) -> None:
        self._extra().gates = value

    @property
    def label(self) -> str:
        """A free-form name for logs and traces ("" unless set)."""
        return "" if self._aux is None else self._aux.label

    @label.setter
    def label(self, value: str) -> None:
        self._extra().label = value

    def _quiet(self) -> None:
        """Do not report this work's failure to the error hook: the queue that ran the
        failing code already did (a SpotWide Actor queue's record)."""
        self._extra().quiet = True

    @property
    def queue_name(self) -> str:
        """The name of the queue this work was accepted by, as traces and errors spell
        it. Only the name: the queue itself is the owner's, and no public member hands
        it out (SE-2.5, SE-3.1, SE-10.1; decision D-23)."""
        return self._queue._core.name

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
            raise asyncio.InvalidStateError(f"work {self.wid} of {self._queue.name} has not ended")
        if self._outcome == COMPLETED:
            return cast(T, self._value)
        if self._outcome == CANCELLED:
            exc = self._value
            raise exc if isinstance(exc, asyncio.CancelledError) else asyncio.CancelledError()
        raise cast(BaseException, self._value)

    def exception(self) -> BaseException | None:
        """The exception the work failed with (None if it completed)."""
        if self._outcome == PENDING:
            raise asyncio.InvalidStateError(f"work {self.wid} of {self._queue.name} has not ended")
        if self._outcome == CANCELLED:
            raise asyncio.CancelledError()
        return cast("BaseException | None", self._value if self._outcome == FAILED else None)

    def add_done_callback(self, callback: Callable[[ZLinkWorkHandle[T]], None]) -> None:
        """Call ``callback(handle)`` on the loop once the work has ended. From another
        thread the registration is posted to the owner's loop and the call returns at
        once (D-24)."""
        rt = self._queue._rt
        if get_ident() != rt.thread_id and rt.foreign():
            try:
                rt.loop.call_soon_threadsafe(self.add_done_callback, callback)
            except RuntimeError as exc:
                raise ZLinkUsageError(f"the owner's event loop is closed ({exc})") from None
            return
        if self._outcome != PENDING:
            self._queue._rt.loop.call_soon(callback, self)
            return
        aux = self._extra()
        if aux.callbacks is None:
            aux.callbacks = []
        aux.callbacks.append(callback)

    def __await__(self) -> Generator[Any, None, T]:
        if (self._outcome == PENDING and get_ident() != self._queue._rt.thread_id
                and self._queue._rt.foreign()):
            yield from _await_elsewhere(self).__await__()
        if self._outcome == PENDING:
            _check_reentrancy(self, held_turn=True)
            aux = self._extra()
            fut: asyncio.Future[None] = self._queue._rt.loop.create_future()
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
            if aux.callbacks is not None:
                loop = self._queue._rt.loop
                for cb in aux.callbacks:
                    loop.call_soon(cb, self)
                aux.callbacks = None

    def __repr__(self) -> str:
        pending = self._outcome == PENDING
        state = PHASE_NAMES[self.phase] if pending else OUTCOME_NAMES[self._outcome]
        label = f" {self.label!r}" if self.label else ""
        return f"<ZLinkWorkHandle {self._queue.name}#{self.wid}{label} {state}>"


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

    rt = handle._queue._rt
    try:
        rt.loop.call_soon_threadsafe(handle.add_done_callback, ended)
    except RuntimeError as exc:
        raise ZLinkUsageError(f"the owner's event loop is closed ({exc})") from None
    await fut


def _holder() -> ZLinkWorkHandle[Any] | None:
    """The work whose code is running right now, if that work holds its turn."""
    sync = _THREAD.turn.sync
    if sync is not None:
        return cast("ZLinkWorkHandle[Any]", sync)
    rec = _async_current.get()
    if rec is None or rec.phase != RUNNING or rec._task is not asyncio.current_task():
        return None
    return rec


def current_work() -> ZLinkWorkHandle[Any] | None:
    """The handle of the work running on a turn in this context, or None."""
    return _holder()


def _turn_in_context() -> ZLinkWorkHandle[Any] | None:
    """The work a wait started here waits on behalf of, while that work holds its turn:
    the running synchronous work, or the async work of this context. Tasks inherit the
    context of the code that made them, so a wait in a task the work started (directly,
    or through ``wait_for``, ``shield``, ``gather``, ``as_completed``, a task group) is
    the work's wait. Once the work gave its turn back (it ended, or yielded) the task's
    wait is its own (SE-8.2, decision D-14)."""
    sync = _THREAD.turn.sync
    if sync is not None:
        return cast("ZLinkWorkHandle[Any]", sync)
    rec = _async_current.get()
    if rec is None or rec.phase != RUNNING:
        return None
    return rec


def _check_reentrancy(target: ZLinkWorkHandle[Any], *, held_turn: bool) -> None:
    """SE-8.2: waiting, from work, for work that needs a turn or claim the waiter holds
    can never end; raise at the call instead. ``held_turn`` False means the waiter gave
    its turn back (a yield) and keeps only its claims."""
    holder = _turn_in_context() if held_turn else _async_current.get()
    if holder is None:
        return
    held = holder._gates if held_turn else holder._gates[1:]
    if target is holder or any(g in held for g in target._gates):
        raise ZLinkReentrancyError(
            f"work {holder.wid} of {holder._queue.name} waits for work {target.wid} of "
            f"{target._queue.name}, which needs a turn the waiter holds (SE-8.2)"
        )


async def yield_framework_call(awaitable: Awaitable[T]) -> T:
    """Await an external call while giving this work's turn back (SE-6.7).

    If the call is already done, its result is returned without yielding. Otherwise the
    turn is given back, the call is awaited, the work queues again (``requeue``) and
    continues only when the drain gives it the turn. A cancellation while suspended is
    delivered the same way: on the work's own turn, after requeue.
    """
    rec = _async_current.get()
    if rec is None or rec._task is not asyncio.current_task() or rec.phase != RUNNING:
        raise ZLinkNotOnTurnError("yield_framework_call outside a work that holds its turn")
    queue = rec._queue
    if not queue._core.config.yield_allowed:
        raise ZLinkYieldNotSupportedError(
            f"{queue.name} offers no Yield (an Entry Spot has none, SE-4.1)"
        )
    if isinstance(awaitable, ZLinkWorkHandle):
        if awaitable.done():
            return cast(T, awaitable.result())
        _check_reentrancy(awaitable, held_turn=False)
    if isinstance(awaitable, asyncio.Future) and awaitable.done():
        return cast(T, awaitable.result())
    return await queue._yield(rec, awaitable)


class TurnHold:
    """Returned by a work to keep its turn until another work ends, without a task: the
    drain parks and goes on when ``handle`` settles, ending this work with the same
    outcome. A SpotWide Actor queue's turn returns one for the execution turn it placed
    on the Spot queue: that held turn is the Actor's claim (SE-4.6)."""

    __slots__ = ("handle",)

    def __init__(self, handle: ZLinkWorkHandle[Any]) -> None:
        self.handle = handle


class QueueAux:
    """Per-queue state most queues never need: waiters for "no live work" or "no active
    work" (quiescence, SD-3), zombie failures kept for ``await_after_cancellation``, the
    disposal timer, and a hook the scope layer uses to notice work ending."""

    __slots__ = ("on_end", "timer", "waiters", "zombie_errors")

    def __init__(self) -> None:
        self.waiters: list[tuple[bool, asyncio.Future[None]]] = []
        self.zombie_errors: list[tuple[int, BaseException, WorkRecord]] = []
        self.timer: Any = None
        self.on_end: Callable[[ZLinkSerialExecutionQueue], None] | None = None


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


class QueueRuntime:
    """What the queues of one owner share in the shell: the loop (whose thread is the
    only mutator), the clock and the error hook. Shared so an idle queue stays small.

    ``foreign_submit_timeout`` bounds how long a submission from another thread waits
    for the loop thread's verdict (None waits as long as it takes).
    """

    __slots__ = (
        "_scopes",
        "clock",
        "dispose_safely_on_exit",
        "error_hook",
        "foreign_submit_timeout",
        "loop",
        "maker_id",
        "now",
        "thread_id",
        "zombie_warn_after_ms",
    )
    shared: ClassVar[bool] = False  # True for the runtime of default queues (_SharedRuntime)

    def __init__(
        self,
        *,
        clock: ZLinkClock | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        error_hook: ErrorHook | None = None,
        foreign_submit_timeout: float | None = 60.0,
        zombie_warn_after_ms: float | None = 10_000,
    ) -> None:
        self.clock: ZLinkClock = clock if clock is not None else MonotonicClock()
        self.now = self.clock.now
        self.loop = loop if loop is not None else asyncio.get_running_loop()
        # ``thread_id`` is the entry points' fast test (D-24): a caller on this thread
        # is on the owner's loop. That holds only for an owner made on its running loop;
        # one made elsewhere (``loop=`` a loop that runs on another thread, or not yet)
        # gets -1, no thread's id, so every call takes the full test (``foreign``).
        # ``maker_id`` is the thread that may set the owner up while its loop runs
        # nowhere.
        self.maker_id = threading.get_ident()
        self.thread_id = self.maker_id if _get_running_loop() is self.loop else -1
        self.error_hook = error_hook
        self.foreign_submit_timeout = foreign_submit_timeout
        # Scope flags and state, shared by every queue of one owner (SD-4, D-16).
        self.dispose_safely_on_exit = True
        self.zombie_warn_after_ms = zombie_warn_after_ms
        self._scopes: dict[int, tuple[object, ScopeState]] | None = None

    def scope_state(self, scope: object) -> ScopeState:
        """Disposal state of a scope using this runtime (made on first use)."""
        if self._scopes is None:
            self._scopes = {}
        entry = self._scopes.get(id(scope))
        if entry is None:
            entry = self._scopes[id(scope)] = (scope, ScopeState())
        return entry[1]

    def peek_scope_state(self, scope: object) -> ScopeState | None:
        """The scope's disposal state if it has any."""
        entry = self._scopes.get(id(scope)) if self._scopes is not None else None
        return None if entry is None else entry[1]

    def on_loop_thread(self) -> bool:
        """Whether the caller may change queue state directly: it runs on the owner's
        loop, or on the thread that made the runtime while the loop is not running
        anywhere (setup code before the loop starts, or between its runs). Decision
        D-24."""
        if _get_running_loop() is self.loop:
            return True
        if self.loop.is_running():
            return False  # it runs on another thread (or another loop runs here)
        return threading.get_ident() == self.maker_id

    def foreign(self) -> bool:
        """The opposite of ``on_loop_thread``. Entry points test
        ``get_ident() != thread_id`` first (the cheapest test there is), and this only
        when it holds."""
        return not self.on_loop_thread()

    def call_on_loop(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` on the loop thread and return its result (or raise its error),
        waiting for it; called from any other thread (D-24). If the wait times out,
        ``fn`` is withdrawn: it will not run later. A closed loop can take no call:
        ``ZLinkUsageError`` at once."""
        if self.on_loop_thread():
            return fn()
        done = threading.Event()
        state = threading.Lock()
        box: list[Any] = []
        withdrawn = False

        def run() -> None:
            with state:
                if withdrawn:
                    return
                try:
                    box.append((True, fn()))
                except BaseException as exc:
                    box.append((False, exc))
                finally:
                    done.set()

        try:
            self.loop.call_soon_threadsafe(run)
        except RuntimeError as exc:  # the loop is closed
            raise ZLinkUsageError(
                f"the owner's event loop is closed; nothing can be submitted ({exc})"
            ) from None
        if not done.wait(self.foreign_submit_timeout):
            with state:
                if not done.is_set():
                    withdrawn = True
                    raise ZLinkUsageError(
                        f"the event loop did not take the call within "
                        f"{self.foreign_submit_timeout} s (is it running, or blocked?)"
                    )
        ok, value = box[0]
        if not ok:
            raise value
        return cast(T, value)

    def owned(self) -> QueueRuntime:
        """This runtime, for a caller that is about to change per-owner state in it (scope
        state, the scope flags): a runtime made for one owner is that owner's already.
        The shared runtime of default queues answers with a private copy instead."""
        return self

    async def wait_on_loop(self, make: Callable[[], Awaitable[T]]) -> T:
        """Await ``make()`` on the owner's loop from a coroutine running on another
        loop (another thread), and deliver its outcome here (D-24). Cancelling the
        caller cancels only this wait."""
        async def on_owner() -> T:
            return await make()

        try:
            fut = asyncio.run_coroutine_threadsafe(on_owner(), self.loop)
        except RuntimeError as exc:
            raise ZLinkUsageError(f"the owner's event loop is closed ({exc})") from None
        return await asyncio.wrap_future(fut)


class _SharedRuntime(QueueRuntime):
    """The runtime every queue built without ``runtime``, ``clock`` and ``error_hook``
    shares with the other such queues made on the same thread for the same loop: the
    defaults are the same for all of them, so one object serves them all and an idle
    default queue stays as small as a coordinator's (issue 16). Its fields never change
    once made (a write raises ``ZLinkUsageError``): a queue that needs per-owner state
    (a disposal's scope state, ``as_not_safely``) first takes a private copy
    (``ScopeMixin._own_runtime``), so no queue's scope ever shows through another's."""

    __slots__ = ("__weakref__",)
    shared = True

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise ZLinkUsageError(
                f"the runtime of default queues is shared: {name} cannot change here "
                "(take the queue's own runtime first)")
        object.__setattr__(self, name, value)

    def owned(self) -> QueueRuntime:
        rt = QueueRuntime.__new__(QueueRuntime)
        for field in QueueRuntime.__slots__:
            setattr(rt, field, getattr(self, field))
        return rt


_MONOTONIC = MonotonicClock()  # the clock of the shared runtimes (it keeps no state)
_DEFAULT_POLICY = ZLinkExecutionLanePolicy()  # frozen: one instance serves every default
_CONFIGS_KEPT = 64  # distinct (policy, clock units, yield) configurations kept for sharing


def _shared_runtime(loop: asyncio.AbstractEventLoop | None) -> QueueRuntime:
    """The shared runtime for ``loop`` (the running loop if None) on this thread, made
    when the last one is gone or belongs to another loop or another start (made while
    the loop ran here, or before: D-24's ``thread_id``)."""
    if loop is None:
        loop = asyncio.get_running_loop()
    here = _THREAD  # per thread: a weak reference to its last shared runtime
    ref: weakref.ref[QueueRuntime] | None = here.shared_rt
    rt = ref() if ref is not None else None
    if rt is not None and rt.loop is loop and (
            rt.thread_id == (rt.maker_id if _get_running_loop() is loop else -1)):
        return rt
    rt = _SharedRuntime(clock=_MONOTONIC, loop=loop)
    here.shared_rt = weakref.ref(rt)
    return rt


def _shared_config(policy: ZLinkExecutionLanePolicy, units_per_ms: float,
                   yield_allowed: bool) -> QueueConfig:
    """One untraced ``QueueConfig`` per policy object, clock unit and Yield flag, shared
    by the queues that ask for it (a config holds no per-queue state). A policy equal to
    a cached one but not the same object gets a config of its own, so ``queue.policy``
    is always the object the caller gave."""
    key = (policy, units_per_ms, yield_allowed)
    configs: dict[tuple[ZLinkExecutionLanePolicy, float, bool], QueueConfig] = _THREAD.configs
    config = configs.get(key)
    if config is not None and config.policy is policy:
        return config
    config = QueueConfig(policy, units_per_ms=units_per_ms, yield_allowed=yield_allowed)
    if len(configs) < _CONFIGS_KEPT and key not in configs:
        configs[key] = config
    return config


class ZLinkSerialExecutionQueue(ScopeMixin):
    """One serial queue: runs accepted works one at a time, in the order the core picks.

    ``policy`` limits it (SE-6.1); ``clock`` is read between works for the time budget
    (default: the monotonic clock); ``error_hook(exc, handle)`` sees every work failure
    (default: the loop's exception handler); ``observer`` receives every transition as a
    trace event. Works run on the loop the queue was made on (the running loop, unless
    ``loop`` is given); submissions from other threads wait for the loop's verdict.
    """

    __slots__ = ("_aux", "_core", "_rt")

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
            rt = _shared_runtime(loop)  # nothing of its own to keep: share (issue 16)
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
    def name(self) -> str:
        """The queue's name, as it appears in traces and errors."""
        return self._core.name

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
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(self, work)
        if self._core.admit(rec):
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

    def _plain_record(self, work: Work) -> ZLinkWorkHandle[Any]:
        """The handle a plain work becomes when the core promotes it."""
        return ZLinkWorkHandle(self, work)

    def _records(self) -> QueueCore[ZLinkWorkHandle[Any]]:
        """The core, with every live plain work promoted to a handle: for code that
        must see every live work as a record (disposal, accounting)."""
        core = self._core
        if core.has_plain():
            running = core.turn_holder
            core.promote_plain(self._plain_record)
            if running is not None and running is not core.turn_holder:
                # A plain turn holder runs right now, synchronously (code inside it
                # asked for this): from here on it is that record's synchronous run, for
                # is_current and current_work; the drain ends it as the record. The aux
                # state sends the drain's plain loop to its general step, which looks.
                _THREAD.turn.sync = core.turn_holder
                self._queue_aux()
        return core

    def _plain_failed(self, work: Work, exc: BaseException) -> None:
        """A posted work raised: report it to the error hook with a handle made now,
        settled failed (it never had a place in the trace: the queue is untraced)."""
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(self, work)
        WorkRecord.__init__(rec)
        rec._settle(FAILED, exc)
        self._report(rec, exc)

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
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(self, work)
        if self._core.admit(rec, lane, payload, barrier):
            rt.loop.call_soon(self._drain)
        return rec

    def _transfer(self, work: Work, gates: tuple[object, ...]) -> ZLinkWorkHandle[Any]:
        """Place an execution turn of already-accepted work (SpotWide, SE-4.5). Called
        on the loop thread by the coordinator."""
        if _checks.ON:
            require_loop(self._rt, "transfer")
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(self, work)
        rec._gates = gates
        if self._core.transfer(rec):
            self._rt.loop.call_soon(self._drain)
        return rec

    def _take_queued(self) -> list[tuple[ZLinkWorkHandle[Any], Work]]:
        """Take every never-started work out of the lines, in line order; their handles
        report cancellation. Returns each record with the caller's original work."""
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
            work = rec._work
            core.cancel(rec)
            self._ended(rec, CANCELLED, asyncio.CancelledError("taken out of the queue"))
            out.append((rec, cast("Work", getattr(work, "__wrapped__", work))))
        return out

    def _queue_aux(self) -> QueueAux:
        aux = self._aux
        if aux is None:
            aux = self._aux = QueueAux()
        return aux

    def _when(self, zombies_too: bool, callback: Callable[[], None]) -> None:
        """Call ``callback`` once no live work (``zombies_too``) or no active work is
        left; at once if that is already so."""
        if _checks.ON:
            require_loop(self._rt, "when")
        core = self._core
        if (core.live() if zombies_too else core.active()) == 0:
            callback()
            return
        fut: asyncio.Future[None] = self._rt.loop.create_future()
        fut.add_done_callback(lambda _f: callback())
        self._queue_aux().waiters.append((zombies_too, fut))

    async def _wait_until(self, zombies_too: bool) -> None:
        if _checks.ON:
            require_loop(self._rt, "wait_until")
        core = self._core
        if (core.live() if zombies_too else core.active()) == 0:
            return
        fut: asyncio.Future[None] = self._rt.loop.create_future()
        self._queue_aux().waiters.append((zombies_too, fut))
        await fut

    def _check_waiters(self) -> None:
        aux = self._aux
        if aux is None or not aux.waiters:
            return
        core = self._core
        active = core.active()
        if active:
            return  # every wait needs no active work (and zombies-too waits none live)
        live = core.live()
        keep = []
        for zombies_too, fut in aux.waiters:
            if (live if zombies_too else active) == 0:
                if not fut.done():
                    fut.set_result(None)
            else:
                keep.append((zombies_too, fut))
        aux.waiters = keep

    # ------------------------------------------------------------------ scope
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
        return _holder() is cur

    async def await_quiescence(self) -> None:
        """Return once every accepted work has ended (queued, running and suspended
        ones included). Awaited on another loop, it waits on the owner's (D-24)."""
        if _get_running_loop() is not self._rt.loop and self._rt.foreign():
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

    # ------------------------------------------------------------------ drain
    def _drain(self) -> None:
        if _checks.ON:
            require_loop(self._rt, "drain")
        self._core.enter_drain(self._rt.now())
        nxt = self._run_turns(None, COMPLETED, None)  # _continue, without a second check
        if nxt is not None:
            self._start_drive(*nxt, 0)

    def _continue(self, skew: float = 0) -> None:
        if _checks.ON:
            require_loop(self._rt, "continue")
        nxt = self._run_turns(None, COMPLETED, None, skew)
        if nxt is not None:
            self._start_drive(*nxt, skew)

    def _start_drive(self, rec: ZLinkWorkHandle[Any], aw: Awaitable[Any], skew: float) -> None:
        rt = self._rt
        task = rt.loop.create_task(self._drive(rec, aw, rt.now(), skew))
        # The work holds the turn from now, a loop turn before the task first runs: a
        # disposal meanwhile must reach it through this task (SD-1), and a task
        # cancelled before its first step never enters _drive, so the work is ended
        # when the task is.
        rec._task = task
        task.add_done_callback(partial(self._drive_never_ran, rec, aw))

    def _drive_never_ran(self, rec: ZLinkWorkHandle[Any], aw: Awaitable[Any],
                         task: asyncio.Task[Any]) -> None:
        """``rec``'s drive task ended without running it (cancelled before its first
        step, by a disposal or the loop's shutdown): the work never started, so it ends
        cancelled, and the drain goes on in a posted callback. A drive task that ran
        ended its works itself, so ``rec`` is no longer running then."""
        if rec.phase != RUNNING or not task.cancelled() or self._core.turn_holder is not rec:
            return
        if isinstance(aw, CoroutineType):
            # Never started, and never will be: the disposal discards it on purpose. A
            # wrapper (a coordinator's snapshot pin) drops the work's own coroutine as
            # it closes, unawaited; that is no mistake of the application's to warn of.
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", "coroutine .* was never awaited",
                                        RuntimeWarning)
                aw.close()
        self._hand_off(rec, CANCELLED, asyncio.CancelledError())

    def _run_turns(
        self, prev: ZLinkWorkHandle[Any] | None, outcome: int, value: Any, skew: float = 0,
        steps: _Steps | None = None,
    ) -> tuple[ZLinkWorkHandle[Any], Any] | None:
        """Hold the drain role: end ``prev``'s turn, then run synchronous works until the
        drain leaves, a resumed work takes the turn, or a work returns an awaitable
        (returned, for the caller to await on a task). Called by a drive task
        (``steps``), it starts an async work at once instead, in that task: one that ends
        without waiting is ended like a synchronous one, and one that waits is returned
        with what it waits on.

        ``skew`` is how long this slice's drain role waited for its task to start; the
        core is given clock readings minus it, so the time budget counts the time the
        owner held the loop, not the time it waited behind other owners (D-13)."""
        turn = _THREAD.turn  # this thread's running turn (D-24)
        if _async_current.get() is not None:
            # The drain role may have been posted from a work's task, whose context the
            # callback copied: the works run here are no children of that work.
            _async_current.set(None)
        core = self._core
        clock = self._rt.now
        now: Callable[[], float] = clock
        if skew:
            def now() -> float:
                return clock() - skew
        next_step = core.next_step
        next_plain = core.next_plain
        prev_plain = False  # prev is a plain work (post): it has no handle to settle
        while True:
            if prev_plain and self._aux is not None and core.turn_holder is not prev:
                # The plain work was promoted while it ran (code inside it asked for the
                # scope's records: a disposal, a count of works; _records then makes the
                # aux state): it ends as the record the core now holds on its turn. (With
                # prev None, no turn is held: next_plain gave it back.)
                prev = core.turn_holder
                prev_plain = False
                turn.sync = None
            rec: ZLinkWorkHandle[Any] | None = next_step(now(), prev, outcome)
            if prev is not None:
                # Settle after the reservation is released (inside next_step), so a
                # waiter woken by it sees the room.
                if prev_plain:
                    if outcome != COMPLETED:
                        self._plain_failed(cast("Work", prev), value)
                    elif self._aux is not None:
                        self._after_end()
                elif outcome == COMPLETED and prev._aux is None:
                    prev._outcome = COMPLETED
                    prev._value = value
                    prev._work = None
                    if self._aux is not None:
                        self._after_end()
                else:
                    self._ended(prev, outcome, value)
            if rec is None:
                if core.drain_scheduled:
                    # end_slice with work left scheduled the next slice: post it, so
                    # other owners' ready drains run first (SE-6.4).
                    self._rt.loop.call_soon(self._drain)
                return None
            if not isinstance(rec, WorkRecord):
                # A plain work (post): run it; it becomes a handle only if it turns out
                # to need one (it returned an awaitable or a TurnHold). While works
                # complete with None and more wait in the application line, the core's
                # next_plain ends each turn and hands out the next plain work in one
                # step; when it hands out none, the turn is already given back and
                # next_step goes on. With the line empty, next_step alone ends the turn
                # and the drain (one core call, not two, for a queue that got one work).
                # A queue with aux state (waiters, a disposal, a promotion while a work
                # ran: see _records) ends each turn through the general step below.
                prev_plain = True
                try:
                    while (result := rec()) is None and core.app is not None \
                            and self._aux is None:
                        nxt = next_plain(now(), rec)
                        if nxt is None:
                            rec = None  # next_plain gave its turn back
                            break
                        rec = nxt
                except BaseException as exc:
                    if not isinstance(exc, Exception):
                        self._hand_off(rec, FAILED, exc)
                        raise
                    prev, outcome, value = rec, FAILED, exc
                    continue
                if result is None:
                    prev, outcome, value = rec, COMPLETED, None
                    continue
                if type(result) is not TurnHold and not (
                        type(result) is CoroutineType or hasattr(result, "__await__")):
                    prev, outcome, value = rec, COMPLETED, result
                    continue
                prev_plain = False
                promoted = self._core.promote_current(self._plain_record)
                if promoted is None:
                    # Promoted while it ran (it counted or disposed its scope, _records):
                    # the turn holder is its record already, and its synchronous run
                    # is over.
                    promoted = core.turn_holder
                    turn.sync = None
                rec = cast("ZLinkWorkHandle[Any]", promoted)
            else:
                prev_plain = False
                if rec.resumes:
                    # A resume permit: the suspended work continues on its own task.
                    permit = cast("asyncio.Future[None]", rec._extra().permit)
                    rec._extra().permit = None
                    permit.set_result(None)
                    return None
                turn.sync = rec
                try:
                    result = rec._work()  # type: ignore[misc]
                except BaseException as exc:
                    turn.sync = None
                    if not isinstance(exc, Exception):
                        # The process is being torn down: end this turn, keep the drain
                        # role alive on a posted callback, and let the exception through.
                        self._hand_off(rec, FAILED, exc)
                        raise
                    prev, outcome, value = rec, FAILED, exc
                    continue
                turn.sync = None
                if result is None:
                    prev, outcome, value = rec, COMPLETED, None
                    continue
                if type(result) is not TurnHold and not (
                        type(result) is CoroutineType or hasattr(result, "__await__")):
                    prev, outcome, value = rec, COMPLETED, result
                    continue
            # A work (plain and promoted above, or a record) returned a TurnHold or an
            # awaitable.
            if type(result) is TurnHold:
                # The drain parks with ``rec`` holding the turn (SE-4.6).
                result.handle.add_done_callback(partial(self._held_done, rec))
                return None
            if steps is None:
                return rec, result  # the caller makes a drive task for it
            # Started here, in a copy of the drive task's context (_Steps.start inline).
            rec._task = steps.task
            steps.rec = rec
            steps.aw = result
            steps.run = run = _copy_context().run
            step = run(steps.send, None)
            if step is not steps:
                return rec, step  # it waits (or failed): the drive task goes on with it
            prev, outcome, value = rec, COMPLETED, steps.value
            continue

    async def _drive(self, rec: ZLinkWorkHandle[Any], aw: Awaitable[Any], parked_at: float,
                     skew: float) -> None:
        """The drive task: one per slice that met an async work, not one per work."""
        await self._drive_works(rec, aw, parked_at, skew)

    @types.coroutine
    def _drive_works(self, rec: ZLinkWorkHandle[Any], aw: Awaitable[Any], parked_at: float,
                     skew: float) -> Generator[Any, Any, None]:
        """Run ``rec``'s work, then hold the drain role in this task: every later async
        work of the slice starts here at once (``_run_turns`` with ``steps``), and the
        one that waits is driven here to its end.

        Each work runs in a context of its own, a copy of this task's, entered around
        every step of the work: what a work sets, it sets for itself and the tasks it
        makes, never for the works after it. ``asyncio.current_task()`` is this task
        from the work's first step to its last, so ``asyncio.timeout`` and cancellation
        reach the work through it. What the work waits on is passed to the task
        unchanged, and what the task delivers (a result, a cancellation) is passed back
        into the work."""
        steps = _Steps.take(asyncio.current_task())  # type: ignore[arg-type]
        # The work took the turn when the drain made this task; the task starts a loop
        # turn later, after other owners' callbacks. That wait is not the owner's time.
        skew += self._rt.now() - parked_at
        send = steps.send
        throw = steps.runner.throw
        step = steps.start(rec, aw)
        while True:
            run = steps.run
            while step is not steps:
                if type(step) is _DriveSignal:
                    if step is _FAILED:
                        outcome, value = steps.failed(self)
                        break
                    # Posted here, in this task's context, not in the work's.
                    self._rt.loop.call_soon(cast("Callable[[], None]", step.callback))
                    step = run(send, None)
                    continue
                try:
                    sent = yield step
                except GeneratorExit:
                    run(steps.runner.close)  # the loop is being destroyed: close the work
                    raise
                except BaseException as exc:
                    step = run(throw, exc)
                else:
                    step = run(send, sent)
            else:
                outcome, value = COMPLETED, steps.value
            nxt = self._run_turns(rec, outcome, value, skew, steps)
            if nxt is None:
                steps.rest()
                return
            rec, step = nxt

    def _held_done(self, rec: ZLinkWorkHandle[Any], target: ZLinkWorkHandle[Any]) -> None:
        """The work ``rec``'s turn was held for ended: end ``rec`` the same way and take
        the drain role back."""
        if _checks.ON:
            require_loop(self._rt, "held_done")
        outcome, value = target._outcome, target._value
        nxt = self._run_turns(rec, outcome, value)
        if nxt is not None:
            self._start_drive(*nxt, 0)

    def _hand_off(self, rec: ZLinkWorkHandle[Any], outcome: int, value: Any) -> None:
        """End ``rec``'s turn outside the drain loop and pass the drain role to a posted
        callback (the code holding it is about to stop)."""
        if not isinstance(rec, WorkRecord):  # a plain work
            holder = self._core.turn_holder
            if holder is rec or not isinstance(holder, WorkRecord):
                self._core.finish_plain(rec, outcome)
                self._plain_failed(rec, value)
                self._rt.loop.call_soon(self._continue)
                return
            _THREAD.turn.sync = None
            rec = holder  # promoted while it ran (see _records): it ends as its record
        self._core.finish(rec, outcome)
        self._ended(rec, outcome, value)
        self._rt.loop.call_soon(self._continue)

    async def _yield(self, rec: ZLinkWorkHandle[Any], awaitable: Awaitable[T]) -> T:
        fut = asyncio.ensure_future(awaitable)
        if fut.done():
            return fut.result()
        rt = self._rt
        self._core.yield_turn(rec)
        # The drain role moves on without this work, posted from the drive task's
        # context: the works it runs must not see what this work set.
        await _post_from_drive(self._continue)
        rec._extra().awaiting = awaitable
        cancel: asyncio.CancelledError | None = None
        error: BaseException | None = None
        result: Any = None
        try:
            result = await fut
        except asyncio.CancelledError as exc:
            cancel = exc
        except GeneratorExit:
            raise  # the abandoned work's coroutine is being closed: touch nothing
        except BaseException as exc:
            error = exc
        # Queue again, whatever happened: the work's code continues only on its turn.
        permit: asyncio.Future[None] = rt.loop.create_future()
        aux = rec._extra()
        aux.permit = permit
        aux.awaiting = None
        if self._core.requeue(rec):
            await _post_from_drive(self._drain)
        while not permit.done():
            try:
                await asyncio.shield(permit)
            except asyncio.CancelledError as exc:
                cancel = cancel or exc
        if cancel is not None:
            if self._core.mode == MODE_CANCELLED:
                # The disposal's cancellation is delivered now, on the work's own turn.
                self._watch_survivor(rec, cast("asyncio.Task[Any]", asyncio.current_task()),
                                     None)
            raise cancel
        if error is not None:
            raise error
        return cast(T, result)

    def _ended(self, rec: ZLinkWorkHandle[Any], outcome: int, value: Any) -> None:
        rec._settle(outcome, value)
        if outcome == FAILED and not (rec._aux is not None and rec._aux.quiet):
            exc = cast(BaseException, value)
            if rec.zombie:
                # kept for await_after_cancellation (SD-3)
                record_zombie_failure(self._queue_aux().zombie_errors, exc, rec)
            self._report(rec, exc)
        if self._aux is not None:
            self._after_end()

    def _after_end(self) -> None:
        """A work ended: wake waiters whose condition now holds, tell the scope."""
        self._check_waiters()
        aux = self._aux
        if aux is not None and aux.on_end is not None:
            aux.on_end(self)

    def _cancel_delivery(self, records: list[ZLinkWorkHandle[Any]]) -> None:
        """Cancel the live works the core handed back (dispose): each async work gets
        ``CancelledError`` at its await point, delivered on its own turn (D-8). A
        synchronous turn that is running finishes; a SpotWide Actor record follows
        the outcome of its execution turn instead."""
        for handle in records:
            if handle._aux is not None and handle._aux.quiet:
                continue
            task = getattr(handle, "_task", None)
            if task is not None and not task.done():
                running = handle.phase == RUNNING
                waiting_on = getattr(task, "_fut_waiter", None)
                task.cancel()
                if running:
                    # A suspended work meets the cancellation when it resumes: _yield
                    # watches it then.
                    self._watch_survivor(handle, task, waiting_on)

    def _watch_survivor(self, rec: ZLinkWorkHandle[Any], task: asyncio.Task[Any],
                        waiting_on: object) -> None:
        """SD-3a: after the cancellation reached ``rec``'s task, a work that is still live
        and waits again (on anything but what it waited on when cancelled, still being
        cancelled) did not end within its cancellation: it becomes a zombie, counted
        and logged as one, and no longer keeps ``await_completion`` waiting."""
        def check(_f: object = None) -> None:
            if rec.done() or task.done():
                return
            waiter: asyncio.Future[Any] | None = getattr(task, "_fut_waiter", None)
            if waiter is not None and waiter is waiting_on and not waiter.done():
                # The cancellation is still on its way down (it awaits a task that is
                # ending): look again once that ended and the work took its step.
                waiter.add_done_callback(check)
                return
            if self._core.survive_cancel(rec):
                zombie_log.warning(
                    "work %s of %s did not end within its cancellation: a zombie now",
                    rec.wid, self.name)
                self._check_waiters()
                # A SpotWide Actor work is one work: its record on the Actor queue, which
                # holds the claim for this execution turn, is a zombie with it (D-21).
                for gate in rec._gates[1:]:
                    if not isinstance(gate, ZLinkSerialExecutionQueue):
                        continue
                    held = gate._core.current
                    if (held is not None and held._aux is not None and held._aux.quiet
                            and gate._core.mode == MODE_CANCELLED
                            and gate._core.survive_cancel(held)):
                        gate._check_waiters()

        self._rt.loop.call_soon(check)

    def _report(self, rec: ZLinkWorkHandle[Any], exc: BaseException) -> None:
        hook = self._rt.error_hook
        if hook is None:
            self._rt.loop.call_exception_handler(
                {"message": f"work failed on {self.name}", "exception": exc, "handle": rec}
            )
            return
        try:
            hook(exc, rec)
        except Exception as hook_exc:  # a broken hook must not stop the drain
            self._rt.loop.call_exception_handler(
                {"message": f"error hook of {self.name} raised", "exception": hook_exc}
            )


class _Steps:
    """A drive task's runner and what it and the runner pass each other: the work
    running now, its context, and, once it ended, its result or exception. Used by one
    drive task at a time, for every work that task runs."""

    __slots__ = ("aw", "rec", "run", "runner", "send", "task", "value")

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.rec: ZLinkWorkHandle[Any] | None = None
        self.aw: Any = None  # the work's awaitable (a coroutine, mostly)
        self.value: Any = None
        self.runner = runner = _runner(self)
        runner.send(None)
        self.send = runner.send
        self.run: Callable[..., Any]  # the running work's Context.run, set by start

    @staticmethod
    def take(task: asyncio.Task[Any]) -> _Steps:
        """A runner at rest for the drive task ``task``: one a drive task that ended
        left behind, or a new one. Making a runner (a generator, started) is most of
        what a drive task costs beyond asyncio's own task."""
        resting = _THREAD.resting  # this thread's: no other thread takes from it
        if resting:
            steps: _Steps = resting.pop()
            steps.task = task
            return steps
        return _Steps(task)

    def rest(self) -> None:
        """The drive task ends with its runner between works: keep the runner for the
        next one (a few are kept; nothing of the last work is)."""
        resting = _THREAD.resting
        if len(resting) < 16:
            self.rec = self.aw = self.value = None
            self.task = None  # type: ignore[assignment]
            resting.append(self)

    def start(self, rec: ZLinkWorkHandle[Any], aw: Awaitable[Any]) -> Any:
        """Run ``rec``'s work up to its first wait, in a copy of the calling context (the
        drive task's): returns what it waits on, ``self`` if it completed, ``_FAILED``
        if it raised. ``_run_turns`` has the same lines written out (a call less per
        work)."""
        rec._task = self.task
        self.rec = rec
        self.aw = aw
        self.run = run = _copy_context().run
        return run(self.send, None)

    def failed(self, queue: ZLinkSerialExecutionQueue) -> tuple[int, Any]:
        """The outcome of the work that raised. A cancellation of the drive task itself
        (disposal, loop shutdown) and an exception that is no ``Exception`` end the work
        and pass the drain role to a posted callback, then propagate: the task ends."""
        exc = self.value
        self.value = None
        rec = cast("ZLinkWorkHandle[Any]", self.rec)
        if isinstance(exc, asyncio.CancelledError):
            if not self.task.cancelling():
                return CANCELLED, exc  # the work raised it itself
            queue._hand_off(rec, CANCELLED, exc)
            raise exc
        if not isinstance(exc, Exception):
            queue._hand_off(rec, FAILED, exc)
            raise exc
        return FAILED, exc


class _DriveSignal:
    """Yielded up to a drive task, never to asyncio: by a runner whose work raised
    (``_FAILED``, the exception is in ``_Steps.value``), or by a work's code asking the
    drive task to post ``callback`` from the drive task's context rather than the
    work's."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[], None] | None) -> None:
        self.callback = callback


_FAILED = _DriveSignal(None)
_copy_context = contextvars.copy_context


@types.coroutine
def _post_from_drive(callback: Callable[[], None]) -> Generator[Any, Any, None]:
    """Ask the drive task running this work to post ``callback``; it does so at once and
    the work goes on without giving the loop a turn."""
    yield _DriveSignal(callback)


async def _await_other(aw: Awaitable[Any]) -> Any:
    """An awaitable that is no coroutine, as a coroutine the runner can delegate to."""
    return await aw


@types.coroutine
def _runner(steps: _Steps) -> Generator[Any, Any, None]:
    """Run the async works of one drive task one after another, each to its end: the
    work named by ``steps``, delegated to with ``yield from``, so its steps cost what an
    ``await`` costs and no ``StopIteration`` is raised per work (driving it with
    ``coro.send`` would). Yields what the work waits on, then ``steps`` when it
    completed or ``_FAILED`` when it raised. Started once, then used by one drive task
    after another (``_Steps.take``); the driver enters the work's context around every
    step."""
    yield steps
    set_current = _async_current.set
    while True:
        set_current(steps.rec)
        aw = steps.aw
        try:
            steps.value = yield from (
                aw if type(aw) is CoroutineType else _await_other(aw))
        except GeneratorExit:
            raise
        except BaseException as exc:
            steps.value = exc
            yield _FAILED
            continue
        yield steps


def _check_bytes(payload_bytes: int) -> int:
    if isinstance(payload_bytes, bool) or not isinstance(payload_bytes, int):
        raise TypeError(f"payload_bytes must be an integer, got {payload_bytes!r}")
    if payload_bytes < 0:
        raise ValueError(f"payload_bytes must be >= 0, got {payload_bytes} (SE-6.2)")
    return payload_bytes
