"""The drive task and Yield (SE-6.7): how async works run and give their turn back.

The first work of a slice that returns an awaitable moves the drain role into a drive
task, which runs that work (so the work keeps the turn while it awaits anything that is
not a framework call) and goes on draining after it. Every later async work of the slice
starts inside that task at once, with no task of its own: one that ends without waiting
is ended like a synchronous work, one that waits is driven on in the task. Each async
work runs in a context of its own (a copy of the drive task's), so what it sets never
reaches the works after it; ``asyncio.current_task()`` is the drive task from its first
step to its end, which keeps ``asyncio.timeout`` and cancellation working. When a work
calls ``yield_framework_call`` and the call is pending, the core records ``yield_turn``,
the drain role is handed to a freshly posted callback, and the task stays with the work:
it awaits the external call, queues its resume permit (``requeue``) and waits until the
drain gives the permit the turn.

Why not a task per async work, started eagerly (asyncio's eager task factory)? Python
3.11 has none: ``Task()`` always schedules its first step, a first step run outside a
task sees no ``current_task()`` (``asyncio.timeout`` raises at once), and a coroutine
moved into a task made when it first suspends would see its task change under it (a
timeout entered on the first step cancels the wrong task). The drive task gives the same
view at no per-work cost: the task is made once per slice, not per work.

Cancellation is delivered here too (SD-1, D-8): a disposal cancels a live work's task,
and a work that outlives its cancellation becomes a zombie (SD-3a).
"""

from __future__ import annotations

import asyncio
import contextvars
import types
import warnings
from collections.abc import Awaitable, Callable, Generator
from functools import partial
from types import CoroutineType
from typing import Any, Final, TypeVar, cast

from zlink_model.errors import ZLinkNotOnTurnError, ZLinkYieldNotSupportedError
from zlink_model.queue import CANCELLED, COMPLETED, FAILED, MODE_CANCELLED, RUNNING

from . import context as _context
from .drain import DrainingQueue, DriveSteps
from .handle import ZLinkWorkHandle
from .loop import thread_state
from .scope import log as zombie_log

__all__ = ["DrivenQueue", "yield_framework_call"]

T = TypeVar("T")

_copy_context: Final = contextvars.copy_context


async def yield_framework_call(awaitable: Awaitable[T]) -> T:
    """Await an external call while giving this work's turn back (SE-6.7).

    If the call is already done, its result is returned without yielding. Otherwise the
    turn is given back, the call is awaited, the work queues again (``requeue``) and
    continues only when the drain gives it the turn. A cancellation while suspended is
    delivered the same way: on the work's own turn, after requeue.
    """
    rec = cast("ZLinkWorkHandle[Any] | None", _context.async_current.get())
    if rec is None or rec._task is not asyncio.current_task() or rec.phase != RUNNING:
        raise ZLinkNotOnTurnError("yield_framework_call outside a work that holds its turn")
    # The queue is the one whose drive task runs this work: it answers (drive.py).
    queue = cast(DrivenQueue, await _post_from_drive(None))
    if not queue._core.config.yield_allowed:
        raise ZLinkYieldNotSupportedError(
            f"{queue.name} offers no Yield (an Entry Spot has none, SE-4.1)"
        )
    if isinstance(awaitable, ZLinkWorkHandle):
        if awaitable.done():
            return cast(T, awaitable.result())
        _context.check_reentrancy(awaitable, held_turn=False)
    if isinstance(awaitable, asyncio.Future) and awaitable.done():
        return cast(T, awaitable.result())
    return await queue._yield(rec, awaitable)



class DrivenQueue(DrainingQueue):
    """A draining queue that runs async works in drive tasks and lets them Yield."""

    __slots__ = ()

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
                    # Posted here, in this task's context, not in the work's; the work
                    # is told which queue's drive task runs it.
                    if step.callback is not None:
                        self._rt.loop.call_soon(step.callback)
                    step = run(send, self)
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

    def _cancel_delivery(self, records: list[ZLinkWorkHandle[Any]]) -> None:
        """Cancel the live works the core handed back (dispose): each async work gets
        ``CancelledError`` at its await point, delivered on its own turn (D-8). A
        synchronous turn that is running finishes; a SpotWide Actor record follows
        the outcome of its execution turn instead."""
        for handle in records:
            if handle._reported_elsewhere():
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
                    rec.wid, self._core.name)
                self._check_waiters()
                # A SpotWide Actor work is one work: its record on the Actor queue, which
                # holds the claim for this execution turn, is a zombie with it (D-21).
                aux = rec._aux
                if aux is not None and aux.parked is not None and aux.parked_rec is not None:
                    cast(DrainingQueue, aux.parked)._claim_survives(aux.parked_rec)

        self._rt.loop.call_soon(check)



class _Steps(DriveSteps):
    """A drive task's runner and what it and the runner pass each other (the fields of
    ``DriveSteps``): the work running now, its context, and, once it ended, its result
    or exception. Used by one drive task at a time, for every work that task runs."""

    __slots__ = ("runner",)

    def __init__(self, task: asyncio.Task[Any]) -> None:
        self.task = task
        self.rec = None
        self.value = None
        self.turn = thread_state().turn  # one thread's steps: see take
        self.runner = runner = _runner(self)
        runner.send(None)
        self.send = runner.send

    @staticmethod
    def take(task: asyncio.Task[Any]) -> _Steps:
        """A runner at rest for the drive task ``task``: one a drive task that ended
        left behind, or a new one. Making a runner (a generator, started) is most of
        what a drive task costs beyond asyncio's own task."""
        resting = thread_state().resting  # this thread's: no other thread takes from it
        if resting:
            steps: _Steps = resting.pop()
            steps.task = task
            return steps
        return _Steps(task)

    def rest(self) -> None:
        """The drive task ends with its runner between works: keep the runner for the
        next one (a few are kept; nothing of the last work is)."""
        resting = thread_state().resting
        if len(resting) < 16:
            self.rec = self.value = None
            self.task = None
            resting.append(self)

    def start(self, rec: ZLinkWorkHandle[Any], aw: Awaitable[Any]) -> Any:
        """Run ``rec``'s work up to its first wait, in a copy of the calling context (the
        drive task's): returns what it waits on, ``self`` if it completed, ``_FAILED``
        if it raised. ``DrainingQueue._run_turns`` has the same lines written out (a call
        less per work)."""
        rec._task = self.task
        self.rec = rec
        self.run = run = _copy_context().run
        return run(self.send, aw)

    def failed(self, queue: DrainingQueue) -> tuple[int, Any]:
        """The outcome of the work that raised. A cancellation of the drive task itself
        (disposal, loop shutdown) and an exception that is no ``Exception`` end the work
        and pass the drain role to a posted callback, then propagate: the task ends."""
        exc = self.value
        self.value = None
        rec = cast("ZLinkWorkHandle[Any]", self.rec)
        if isinstance(exc, asyncio.CancelledError):
            if not cast("asyncio.Task[Any]", self.task).cancelling():
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
    work's, or (``callback`` None) only which queue the drive task drains."""

    __slots__ = ("callback",)

    def __init__(self, callback: Callable[[], None] | None) -> None:
        self.callback = callback


_FAILED: Final = _DriveSignal(None)


@types.coroutine
def _post_from_drive(callback: Callable[[], None] | None) -> Generator[Any, Any, Any]:
    """Ask the drive task running this work to post ``callback`` (if any); it does so at
    once and the work goes on without giving the loop a turn. Returns the queue whose
    drive task it is: the work's own, which a handle does not hold."""
    return (yield _DriveSignal(callback))


def _runner(steps: _Steps) -> Generator[Any, Any, None]:
    """Run the async works of one drive task one after another, each to its end: the
    work whose awaitable is sent to it (its record is ``steps.rec``), delegated to with
    ``yield from`` its ``__await__()`` (what ``await`` does), so its steps cost what an
    ``await`` costs and no ``StopIteration`` is raised per work (driving it with
    ``coro.send`` would). Yields what the work waits on, then ``steps`` when it
    completed or ``_FAILED`` when it raised. Started once, then used by one drive task
    after another (``_Steps.take``); the driver enters the work's context around every
    step. A plain generator, driven by ``send`` and ``throw`` and never awaited, so the
    compiled build compiles it too."""
    set_current = _context.async_current.set
    aw = yield steps  # each send from here on starts a work: its awaitable
    while True:
        set_current(steps.rec)
        try:
            steps.value = yield from aw.__await__()
        except GeneratorExit:
            raise
        except BaseException as exc:
            steps.value = exc
            aw = yield _FAILED
            continue
        aw = yield steps

