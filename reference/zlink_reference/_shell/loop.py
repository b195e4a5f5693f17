"""The event loop as the rest of the runtime names it, and what each loop thread keeps.

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
from typing import Any

__all__ = ["Cancelled", "EventLoop", "ThreadState", "running_loop", "thread_state"]

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


class ThreadState(threading.local):
    """What the shell keeps per thread: the running turn, the shared runtime of default
    queues made here (a weak reference), the shared queue configurations, the drive
    tasks' runners at rest, and the order zombie failures are kept in. Each thread gets
    its own on first use (``threading.local``)."""

    turn: TurnState
    shared_rt: Any
    configs: dict[Any, Any]
    resting: list[Any]
    error_order: itertools.count[int]

    def __init__(self) -> None:
        self.turn = TurnState()
        self.shared_rt = None
        self.configs = {}
        self.resting = []
        self.error_order = itertools.count()


_THREAD = ThreadState()


def thread_state() -> ThreadState:
    """This thread's ``ThreadState``."""
    return _THREAD
