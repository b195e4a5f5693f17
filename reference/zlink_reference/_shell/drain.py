"""The drain: the turns of one queue, run in the order the core picks (SE-6.3 .. SE-6.7).

The drain role is held by exactly one piece of code at a time: the posted drain
callback, a drive task (drive.py), or a resumed work's task. Synchronous works run
inline in the drain loop (``_run_turns``), with this thread's ``TurnState`` naming the
running record (D-24). The first work that returns an awaitable moves the drain role
into a drive task; a work that returns a ``TurnHold`` parks the drain until the held
work ends (SE-4.6). Whoever ends a turn carries the drain role on. Between works the
drain reads the clock and hands it to the core, which decides whether the slice ends
(SE-6.4); a slice that ends with work left is posted again, so other owners' drains run
first (SE-6.5).

``DrainingQueue`` is the part of a queue that holds the drain role: its core, its
runtime, its per-queue extras (``QueueAux``: quiescence waiters, zombie failures) and
the loop that ends one turn and starts the next. ``drive.DrivenQueue`` adds the drive
task and Yield; ``queue.ZLinkSerialExecutionQueue`` adds submission, close and
statistics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from types import CoroutineType
from typing import Any, Final, cast

from zlink_model.queue import (
    COMPLETED,
    FAILED,
    MODE_CANCELLED,
    QueueCore,
    WorkRecord,
)

from . import checks as _checks
from .checks import require_loop
from .context import async_current
from .handle import PENDING, TurnHold, Work, ZLinkWorkHandle
from .loop import QueueRuntime, TurnState, thread_state
from .scope import record_zombie_failure

__all__ = ["DrainingQueue", "DriveSteps", "QueueAux"]

_copy_context: Final = __import__("contextvars").copy_context


class QueueAux:
    """Per-queue state most queues never need: waiters for "no live work" or "no active
    work" (quiescence, SD-3), zombie failures kept for ``await_after_cancellation``, the
    queue's ``Scope`` once it is used as one (kept here, not on every queue, so an idle
    queue stays small), and a hook the scope layer uses to notice work ending."""

    __slots__ = ("on_end", "scope", "waiters", "zombie_errors")

    def __init__(self) -> None:
        self.waiters: list[tuple[bool, asyncio.Future[None]]] = []
        self.zombie_errors: list[tuple[int, BaseException, WorkRecord]] = []
        self.scope: Any = None  # the queue's Scope (the scope room sits above this one)
        self.on_end: Callable[[Any], None] | None = None



class DriveSteps:
    """What a drive task (drive.py) and the drain pass each other about the async work
    the task runs: the task, the work's record, the ``Context.run`` of the context the
    work runs in, the runner's ``send`` (sent a work's awaitable, it starts the work),
    the work's result once it ended, and the ``TurnState`` of the thread the task runs
    on. The drain starts a work in the task through it (``_run_turns``); drive.py's
    runner adds the rest. A class of its own, here, so the drain reads and writes these
    fields as fields (compiled, natively) without importing the room above it."""

    __slots__ = ("rec", "run", "send", "task", "turn", "value")

    task: asyncio.Task[Any] | None  # the drive task (None while the runner rests)
    rec: ZLinkWorkHandle[Any] | None  # the work running in the task now
    value: Any  # the work's result, or what it raised
    run: Callable[..., Any]  # the running work's Context.run
    send: Callable[[Any], Any]  # the runner's send
    turn: TurnState  # the turn state of the thread whose drive tasks use these steps



class DrainingQueue:
    """The part of a queue that holds the drain role (see the module's text)."""

    __slots__ = ("_aux", "_core", "_rt")

    _rt: QueueRuntime
    _core: QueueCore[ZLinkWorkHandle[Any]]
    _aux: QueueAux | None

    @property
    def name(self) -> str:
        """The queue's name, as it appears in traces and errors."""
        return self._core.name

    def _plain_record(self, work: Work) -> ZLinkWorkHandle[Any]:
        """The handle a plain work becomes when the core promotes it."""
        return ZLinkWorkHandle(self._rt, self._core, work)

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
                thread_state().turn.sync = core.turn_holder
                self._queue_aux()
        return core

    def _plain_failed(self, work: Work, exc: BaseException) -> None:
        """A posted work raised: report it to the error hook with a handle made now,
        settled failed (it never had a place in the trace: the queue is untraced)."""
        rec: ZLinkWorkHandle[Any] = ZLinkWorkHandle(self._rt, self._core, work)
        WorkRecord.__init__(rec)
        rec._settle(FAILED, exc)
        self._report(rec, exc)

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
        """Move the drain role into a drive task that runs ``rec``'s awaitable ``aw``
        (drive.py)."""
        raise NotImplementedError

    def _run_turns(
        self, prev: ZLinkWorkHandle[Any] | None, outcome: int, value: Any, skew: float = 0,
        steps: DriveSteps | None = None,
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
        if steps is None:
            turn = thread_state().turn  # this thread's running turn (D-24)
            if async_current.get() is not None:
                # The drain role may have been posted from a work's task, whose context
                # the callback copied: the works run here are no children of that work.
                async_current.set(None)
        else:
            # In a drive task: its steps keep its thread's turn state, and its own
            # context names no work (the task was made after the check above, and each
            # work runs in a copy of it).
            turn = steps.turn
        core = self._core
        clock = self._rt.now  # read as clock() - skew: the time the owner held the loop
        # The plain work (post) whose turn just ended, in place of ``prev``: it has no
        # handle to settle. Apart, so that ``prev`` and ``rec`` only ever hold records.
        prev_work: Work | None = None
        while True:
            if prev_work is not None and self._aux is not None \
                    and core.turn_holder is not prev_work:
                # The plain work was promoted while it ran (code inside it asked for the
                # scope's records: a disposal, a count of works; _records then makes the
                # aux state): it ends as the record the core now holds on its turn.
                prev = core.turn_holder
                prev_work = None
                turn.sync = None
            step: Any = core.next_step(clock() - skew,
                                       prev if prev_work is None else prev_work,
                                       outcome)  # a record, a plain work, or None
            if prev_work is not None:
                # Settle after the reservation is released (inside next_step), so a
                # waiter woken by it sees the room.
                if outcome != COMPLETED:
                    self._plain_failed(prev_work, value)
                elif self._aux is not None:
                    self._after_end()
                prev_work = None
            elif prev is not None:
                if outcome == COMPLETED and prev._aux is None:
                    prev._outcome = COMPLETED
                    prev._value = value
                    prev._work = None
                    if self._aux is not None:
                        self._after_end()
                else:
                    self._ended(prev, outcome, value, True)
                prev = None
            if step is None:
                if core.drain_scheduled:
                    # end_slice with work left scheduled the next slice: post it, so
                    # other owners' ready drains run first (SE-6.4).
                    self._rt.loop.call_soon(self._drain)
                return None
            if isinstance(step, ZLinkWorkHandle):  # a record: a queue's records are handles
                rec: ZLinkWorkHandle[Any] = step
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
            else:
                # A plain work (post): run it; it becomes a handle only if it turns out
                # to need one (it returned an awaitable or a TurnHold). While works
                # complete with None and more wait in the application line, the core's
                # next_plain ends each turn and hands out the next plain work in one
                # step; when it hands out none, the turn is already given back and
                # next_step goes on. With the line empty, next_step alone ends the turn
                # and the drain (one core call, not two, for a queue that got one work).
                # A queue with aux state (waiters, a disposal, a promotion while a work
                # ran: see _records) ends each turn through the general step below.
                work: Any = step  # a plain work (None once next_plain gave its turn back)
                try:
                    while (result := work()) is None and core.app is not None \
                            and self._aux is None:
                        work = core.next_plain(clock() - skew, work)
                        if work is None:
                            break  # next_plain gave its turn back: no turn left to end
                except BaseException as exc:
                    if not isinstance(exc, Exception):
                        self._hand_off(work, FAILED, exc)
                        raise
                    prev_work, outcome, value = work, FAILED, exc
                    continue
                if result is None:
                    prev_work, outcome, value = work, COMPLETED, None
                    continue
                if type(result) is not TurnHold and not (
                        type(result) is CoroutineType or hasattr(result, "__await__")):
                    prev_work, outcome, value = work, COMPLETED, result
                    continue
                promoted = self._core.promote_current(self._plain_record)
                if promoted is None:
                    # Promoted while it ran (it counted or disposed its scope, _records):
                    # the turn holder is its record already, and its synchronous run
                    # is over.
                    promoted = core.turn_holder
                    turn.sync = None
                rec = cast("ZLinkWorkHandle[Any]", promoted)
            # A work (a record, or a plain one promoted above) returned a TurnHold or an
            # awaitable.
            if type(result) is TurnHold:
                # The drain parks with ``rec`` holding the turn (SE-4.6); it goes on when
                # the held work ends (``_ended``).
                held = result.handle
                if held._outcome != PENDING:
                    self._rt.loop.call_soon(self._held_done, rec, held)
                else:
                    aux = held._extra()
                    aux.parked = self
                    aux.parked_rec = rec
                return None
            if steps is None:
                return rec, result  # the caller makes a drive task for it
            # Started here, in a copy of the drive task's context (drive.py's _Steps.start
            # written out: a call less per work).
            rec._task = steps.task
            steps.rec = rec
            steps.run = run = _copy_context().run
            step = run(steps.send, result)
            if step is not steps:
                return rec, step  # it waits (or failed): the drive task goes on with it
            prev, outcome, value = rec, COMPLETED, steps.value
            continue

    def _held_done(self, rec: ZLinkWorkHandle[Any], target: ZLinkWorkHandle[Any]) -> None:
        """The work ``rec``'s turn was held for ended (a posted callback): end ``rec``
        the same way and take the drain role back."""
        if _checks.ON:
            require_loop(self._rt, "held_done")
        self._hold_ended(rec, target)

    def _hold_ended(self, rec: ZLinkWorkHandle[Any], target: ZLinkWorkHandle[Any]) -> None:
        """``_held_done`` without its SE-8.1 check, for the drain that ended ``target``
        on the loop thread (``_ended``)."""
        outcome, value = target._outcome, target._value
        nxt = self._run_turns(rec, outcome, value)
        if nxt is not None:
            self._start_drive(*nxt, 0)

    def _claim_survives(self, rec: ZLinkWorkHandle[Any]) -> None:
        """The work ``rec``'s turn is held for outlived its cancellation (SD-3a). If
        ``rec`` is a SpotWide Actor record (it holds the Actor's claim, SE-4.6) of a
        cancelled queue, it is one work with it: a zombie too, counted and waited for
        as one (D-21)."""
        core = self._core
        held = core.current
        if held is None or held is not rec or not rec._reported_elsewhere():
            return
        if core.mode == MODE_CANCELLED and core.survive_cancel(held):
            self._check_waiters()

    def _hand_off(self, rec: Any, outcome: int, value: Any) -> None:
        """End ``rec``'s turn (a record, or a plain work: typed Any for that) outside the
        drain loop and pass the drain role to a posted callback (the code holding it is
        about to stop)."""
        if not isinstance(rec, WorkRecord):  # a plain work
            holder = self._core.turn_holder
            if holder is rec or not isinstance(holder, WorkRecord):
                self._core.finish_plain(rec, outcome)
                self._plain_failed(rec, value)
                self._rt.loop.call_soon(self._continue)
                return
            thread_state().turn.sync = None
            rec = holder  # promoted while it ran (see _records): it ends as its record
        self._core.finish(rec, outcome)
        self._ended(rec, outcome, value)
        self._rt.loop.call_soon(self._continue)

    def _ended(self, rec: ZLinkWorkHandle[Any], outcome: int, value: Any,
               hand_on: bool = False) -> None:
        """``rec``'s turn ended: settle it, report a failure, wake waiters. With
        ``hand_on`` (the drain loop ended it and the core gave this queue's turn to the
        next step, so the drain role stays here), a drain parked on ``rec`` (a
        ``TurnHold``: a SpotWide Actor queue's claim, SE-4.6) goes on here and now
        instead of in a posted callback: the Actor queue's next work places its
        execution turn while this queue still drains. Otherwise ``_settle`` posts it."""
        aux = rec._aux
        parked: Any = None  # the parked drain's queue (a DrainingQueue)
        held: ZLinkWorkHandle[Any] | None = None  # its record holding the turn
        if hand_on and aux is not None and aux.parked is not None and self._core.draining:
            parked, held = aux.parked, aux.parked_rec
            aux.parked = aux.parked_rec = None
        rec._settle(outcome, value)
        if outcome == FAILED and not rec._reported_elsewhere():
            exc = cast(BaseException, value)
            if rec.zombie:
                # kept for await_after_cancellation (SD-3)
                record_zombie_failure(self._queue_aux().zombie_errors, exc, rec)
            self._report(rec, exc)
        if self._aux is not None:
            self._after_end()
        if parked is not None and held is not None:
            cast(DrainingQueue, parked)._hold_ended(held, rec)

    def _after_end(self) -> None:
        """A work ended: wake waiters whose condition now holds, tell the scope."""
        self._check_waiters()
        aux = self._aux
        if aux is not None and aux.on_end is not None:
            aux.on_end(self)

    def _report(self, rec: ZLinkWorkHandle[Any], exc: BaseException) -> None:
        hook = self._rt.error_hook
        if hook is None:
            self._rt.loop.call_exception_handler(
                {"message": f"work failed on {self._core.name}", "exception": exc, "handle": rec}
            )
            return
        try:
            hook(exc, rec)
        except Exception as hook_exc:  # a broken hook must not stop the drain
            self._rt.loop.call_exception_handler(
                {"message": f"error hook of {self._core.name} raised", "exception": hook_exc}
            )

