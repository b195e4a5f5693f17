"""The event loop as the rest of the runtime names it, and what each loop thread keeps.

``QueueRuntime`` binds the queues of one owner to their loop: the loop whose thread is
the only mutator (D-7), the clock, the error hook, and the thread model (D-24: what an
entry point does when called from a thread that is not the loop's).

The coordinators take a loop and cancel a session's final work, but decide nothing about
scheduling; they name the loop's type and its cancellation through this module so that
only the shell (and disposal, which runs a loop of its own) imports asyncio, and a
layering test can say so.

Owners may live on any thread (decision D-24), so what a thread's loop is doing right now
is a fact of that thread, never of the process: ``thread_state()`` is this thread's
``ThreadState``, which holds the record whose synchronous work runs on it, and the caches
a thread's queues share. No module of the shell keeps anything else that changes.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Awaitable, Callable
from typing import Any, ClassVar, Final, TypeVar, cast

from zlink_model.errors import ZLinkUsageError

from .clock import MonotonicClock, ZLinkClock

__all__ = [
    "Cancelled",
    "EventLoop",
    "QueueRuntime",
    "ScopeState",
    "ThreadState",
    "running_loop",
    "shared_runtime",
    "thread_state",
]

T = TypeVar("T")

EventLoop = asyncio.AbstractEventLoop
Cancelled = asyncio.CancelledError
# The loop running on the calling thread, or None (asyncio's C accessor, no error when
# none runs): the cheap test of "is this call on the owner's loop" (D-24).
running_loop = asyncio.events._get_running_loop


class TurnState:
    """The turn a thread runs right now: ``sync`` is the record whose synchronous work
    runs on this thread (None otherwise). The drain sets and clears it around each
    synchronous call; ``current_work`` and ``is_current`` read it. One per thread, so an
    owner on another thread never sees it (D-24)."""

    __slots__ = ("sync",)

    def __init__(self) -> None:
        self.sync: Any = None


class ThreadState:
    """What the shell keeps per thread: the running turn, the shared runtime of default
    queues made here (``shared_runtime``), the shared queue configurations, the drive
    tasks' runners at rest, and the order zombie failures are kept in. Each thread gets
    its own on first use (``thread_state``)."""

    __slots__ = ("configs", "error_order", "resting", "shared_rt", "turn")

    def __init__(self) -> None:
        self.turn = TurnState()
        self.shared_rt: QueueRuntime | None = None
        self.configs: dict[Any, Any] = {}
        self.resting: list[Any] = []
        self.error_order = itertools.count()


# Per thread, one attribute: ``state``, that thread's ThreadState. The threads' states
# are plain objects reached through one ``threading.local`` rather than a subclass of it:
# compiled, a subclass would be a native class whose fields are one set for every
# thread (mypyc lays them out in the object, where ``threading.local`` never looks).
_LOCAL: Final = threading.local()


def thread_state() -> ThreadState:
    """This thread's ``ThreadState`` (made at its first use on the thread). Read it where
    it is used, never once at import: the object differs per thread."""
    try:
        state: ThreadState = _LOCAL.state
    except AttributeError:
        state = _LOCAL.state = ThreadState()
    return state


class ScopeState:
    """Disposal state of one scope (created on first disposal), kept by the runtime the
    scope's queues share; scope.py drives it."""

    __slots__ = ("disposed_at", "timer", "warn_timer")

    def __init__(self) -> None:
        self.disposed_at: float | None = None
        self.timer: Any = None
        self.warn_timer: Any = None


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
    # True for a runtime that serves bare queues each as an owner of its own: the shared
    # one of default queues and the private copy one of them takes (``owned``). A work's
    # owner is then its queue, not the runtime (SE-8.2, D-14).
    _per_queue: ClassVar[bool] = False

    def __init__(
        self,
        *,
        clock: ZLinkClock | None = None,
        loop: asyncio.AbstractEventLoop | None = None,
        error_hook: Callable[[BaseException, Any], None] | None = None,
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
        self.thread_id = self.maker_id if running_loop() is self.loop else -1
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
        if running_loop() is self.loop:
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

    async def next_turn(self) -> None:
        """Give the loop one turn. A wait that goes round again awaits this first, so no
        wait of the runtime holds the loop, whatever the counts it reads say (SE-6.3)."""
        await asyncio.sleep(0)

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
    (``Scope.own_runtime``), so no queue's scope ever shows through another's."""

    shared = True
    _per_queue = True

    def __setattr__(self, name: str, value: object) -> None:
        if hasattr(self, name):
            raise ZLinkUsageError(
                f"the runtime of default queues is shared: {name} cannot change here "
                "(take the queue's own runtime first)")
        object.__setattr__(self, name, value)

    def scope_state(self, scope: object) -> ScopeState:
        raise ZLinkUsageError(
            "the runtime of default queues is shared: a scope's state cannot be kept "
            "here (take the queue's own runtime first)")

    def owned(self) -> QueueRuntime:
        rt = _CopiedRuntime(clock=self.clock, loop=self.loop, error_hook=self.error_hook,
                            foreign_submit_timeout=self.foreign_submit_timeout,
                            zombie_warn_after_ms=self.zombie_warn_after_ms)
        # The copy belongs to the same loop and start as this one (D-24).
        rt.maker_id = self.maker_id
        rt.thread_id = self.thread_id
        rt.dispose_safely_on_exit = self.dispose_safely_on_exit
        return rt


class _CopiedRuntime(QueueRuntime):
    """The private copy of the shared runtime one default queue takes before it writes
    per-owner state: that queue's alone, so its works' owner is still the queue."""

    __slots__ = ()
    _per_queue = True


_MONOTONIC = MonotonicClock()  # the clock of the shared runtimes (it keeps no state)


def shared_runtime(loop: asyncio.AbstractEventLoop | None) -> QueueRuntime:
    """The shared runtime for ``loop`` (the running loop if None) on this thread, made
    anew when the thread's last one belongs to another loop, a closed one or another
    start (made while the loop ran here, or before: D-24's ``thread_id``).

    The thread holds its last shared runtime strongly, not through a weak reference: the
    compiled runtime is a native class, which no weak reference can point at, and a
    holder of another kind would cost every default queue a pointer. What the strong
    reference keeps is bounded, one runtime (and the loop it names) per thread, until
    the thread makes a default queue for another loop or ends; a runtime of the shared
    kind holds no state of any queue (its writes are refused), so a later queue that
    reuses it inherits nothing."""
    if loop is None:
        loop = asyncio.get_running_loop()
    here = thread_state()
    rt: QueueRuntime | None = here.shared_rt
    if rt is not None and rt.loop is loop and not loop.is_closed() and (
            rt.thread_id == (rt.maker_id if running_loop() is loop else -1)):
        return rt
    rt = _SharedRuntime(clock=_MONOTONIC, loop=loop)
    here.shared_rt = rt
    return rt
