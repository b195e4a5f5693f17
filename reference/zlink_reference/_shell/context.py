"""The turn context: which work runs right now, and the SE-8.2 reentrancy check.

A work runs either synchronously, inside the drain (then this thread's ``TurnState``
names it, loop.py), or as async code in a drive task (then the context variable
``async_current`` of the work's own context names it, and the running task must be the
one driving it). ``current_work``, ``is_current`` and the reentrancy check all ask
``holder`` or ``turn_in_context``; nothing here is kept per process (D-24).

Which records these are is the handle's business: here a record is anything with the
few fields the checks read (``TurnRecord``).
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Iterable
from typing import Any, Final, Protocol, cast

from zlink_model.errors import ZLinkReentrancyError
from zlink_model.queue import DONE, RUNNING

from .loop import thread_state

__all__ = [
    "TurnRecord",
    "async_current",
    "check_reentrancy",
    "check_scope_wait",
    "holder",
    "turn_in_context",
]


class TurnRecord(Protocol):
    """What the turn context reads of a work's record (a ``ZLinkWorkHandle``)."""

    _task: Any  # the task driving it, once it is an async work

    @property
    def wid(self) -> int: ...

    @property
    def phase(self) -> int: ...

    @property
    def _gates(self) -> tuple[object, ...]: ...

    @property
    def queue_name(self) -> str: ...

    @property
    def _owner(self) -> object:
        """The coordinator (or bare queue) that accepted the work: one identity per
        owner, shared by all the queues a coordinator made (SE-8.2, D-14)."""
        ...


# The record an async work belongs to, in that work's task context. The record whose
# synchronous work runs right now is per thread: thread_state().turn.sync, set and
# cleared by the drain around each synchronous call (D-24).
async_current: Final[contextvars.ContextVar[Any]] = contextvars.ContextVar(
    "zlink_current_work", default=None
)


def holder() -> TurnRecord | None:
    """The work whose code is running right now, if that work holds its turn."""
    sync = thread_state().turn.sync
    if sync is not None:
        return cast(TurnRecord, sync)
    rec = cast("TurnRecord | None", async_current.get())
    if rec is None or rec.phase != RUNNING or rec._task is not asyncio.current_task():
        return None
    return rec


def turn_in_context() -> TurnRecord | None:
    """The work a wait started here waits on behalf of, while that work holds its turn:
    the running synchronous work, or the async work of this context. Tasks inherit the
    context of the code that made them, so a wait in a task the work started (directly,
    or through ``wait_for``, ``shield``, ``gather``, ``as_completed``, a task group) is
    the work's wait. Once the work gave its turn back (it ended, or yielded) the task's
    wait is its own (SE-8.2, decision D-14)."""
    sync = thread_state().turn.sync
    if sync is not None:
        return cast(TurnRecord, sync)
    rec = cast("TurnRecord | None", async_current.get())
    if rec is None or rec.phase != RUNNING:
        return None
    return rec


def check_reentrancy(target: TurnRecord, *, held_turn: bool) -> None:
    """SE-8.2: waiting, from work, for work that needs a turn or claim the waiter holds
    can never end; raise at the call instead. ``held_turn`` False means the waiter gave
    its turn back (a yield) and keeps only its claims.

    Holding its turn, the waiter may not wait for any work of its own coordinator, on
    whichever queue (D-14, the seed's words: a synchronous wait on the same
    coordinator's ``execute*`` raises at once): a wait on another of its queues ends
    only while no cycle of such waits forms, which nothing would detect."""
    holder = turn_in_context() if held_turn else async_current.get()
    if holder is None:
        return
    if held_turn and target._owner is holder._owner:
        raise ZLinkReentrancyError(
            f"work {holder.wid} of {holder.queue_name} waits, holding its turn, for work "
            f"{target.wid} of {target.queue_name} of the same coordinator (SE-8.2, D-14)"
        )
    held = holder._gates if held_turn else holder._gates[1:]
    if target is holder or any(g in held for g in target._gates):
        raise ZLinkReentrancyError(
            f"work {holder.wid} of {holder.queue_name} waits for work {target.wid} of "
            f"{target.queue_name}, which needs a turn the waiter holds (SE-8.2)"
        )



def check_scope_wait(counted: Iterable[TurnRecord], *, wait: str, scope: str) -> None:
    """SE-8.2 (SE-10.13) for a wait on a whole scope (a queue's or coordinator's
    ``await_quiescence``, ``await_completion``, ``await_after_cancellation``): the
    wait ends only once every work in ``counted`` (the works it waits for) ended. A
    wait started in a live work's context, whether the work holds its turn or gave it
    back in a yield, is that work's wait (D-14); if the work is itself among
    ``counted``, or holds a turn or claim one of them needs, the wait can never end,
    so it raises at the call instead. ``counted`` is read only when there is such a
    work: a wait from outside any work costs nothing more."""
    sync = thread_state().turn.sync
    waiter = cast("TurnRecord | None", sync if sync is not None else async_current.get())
    if waiter is None or waiter.phase == DONE:
        return
    held = waiter._gates if waiter.phase == RUNNING else waiter._gates[1:]
    for rec in counted:
        if rec is waiter or any(g in held for g in rec._gates):
            raise ZLinkReentrancyError(
                f"work {waiter.wid} of {waiter.queue_name} waits in {wait} of {scope}, "
                f"which waits for {'itself' if rec is waiter else f'work {rec.wid}'} "
                f"(SE-8.2: an immediate exception, not a deadlock)"
            )
