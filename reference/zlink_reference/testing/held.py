"""A held queue: a bare serial queue whose runtime takes none of its own steps until told.

A runtime left to itself takes some steps alone and at once: it enters a drain it
scheduled, takes the next turn, ends a slice whose budget is spent, leaves a drain with
nothing ready, and queues the resume permit of a work whose call returned. A test (or a
conformance walk of the model's graph, the adapter protocol's capability
``held_steps``) that wants to stand *between* two of those steps cannot ask for it from
outside: no command comes between two turns of one drain. ``HeldQueue`` is the
instrumented build of ``ZLinkSerialExecutionQueue`` that can: each of those steps waits
until ``step`` names it, and then the queue's own code takes it. Everything else (a
work's code, admission, close, the clock) runs as it always does.

Why a subclass and an instrumented core, not a switch in the shell: the drain is the
runtime's hot path, and a hold point there would cost every queue a branch. The hold
lives in two overrides the shell already calls through: ``_HeldCore.next_step`` ends the
previous turn (``finish``, the work's own step) and then, unless a step was granted,
leaves the drain where it is (draining, no turn held) and hands back nothing, so the
shell's drain loop stops as if the slice were over without changing a flag; and
``HeldQueue._drain``, which the shell posts whenever the core says the queue just became
busy, does nothing: the core's ``drain_scheduled`` already says a drain is due. A work's
requeue waits in ``HeldQueue._yield``, which gives the shell's own ``_yield`` an
awaitable that ends only once the call returned *and* ``step`` granted the requeue.
The step itself runs the shell's own code through its seam: ``enter_posted_drain`` (the
drain posting, run now), ``continue_drain`` (the drain's next step with no turn held, as
after a yield) and ``yield_turn_until`` (the shell's Yield). Nothing of this is imported
by the runtime; a queue that is not a ``HeldQueue`` runs the code it always ran.

The seam needs the interpreted build: a compiled core and shell do not dispatch to an
interpreted subclass (``AVAILABLE`` is False there, and the module has no ``HeldQueue``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import Any, TypeVar

from zlink_model.errors import ZLinkUsageError
from zlink_model.queue import COMPLETED, QueueCore
from zlink_model.rules import slice_expired
from zlink_model.vocabulary import END_SLICE, ENTER_DRAIN, EXIT_DRAIN, REQUEUE, TAKE_NEXT

from .._shell import (
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    continue_drain,
    enter_posted_drain,
    yield_turn_until,
)

__all__ = ["AVAILABLE", "HeldQueue", "HeldStepError"]

T = TypeVar("T")


class HeldStepError(ZLinkUsageError):
    """A step was asked for that the held queue cannot take now (it is not enabled in
    the queue's state): the caller's view of the queue and the queue's own differ."""


def _trace_nothing(queue: str, event: str, fields: dict[str, object]) -> None:
    """The observer of a held queue made without one: a traced queue admits every work
    as a record, so each of its steps is the core's general transition."""


class _Requeue:
    """A yielded work's call and the grant its requeue waits for."""

    __slots__ = ("call", "grant")

    def __init__(self, call: asyncio.Future[Any], grant: asyncio.Future[None]) -> None:
        self.call = call
        self.grant = grant


AVAILABLE = True
"""Whether held queues can be made in this build (the interpreted one)."""

try:  # the compiled build refuses an interpreted subclass of its core and queue
    class _HeldCore(QueueCore[ZLinkWorkHandle[Any]]):
        """The core of a held queue: the drain's step after a turn waits for a grant."""

        __slots__ = ("granted",)

        def __init__(self, config: Any, name: str) -> None:
            super().__init__(config, name)
            self.granted: str | None = None  # the drain step ``step`` granted, once

        def next_step(self, now: float, prev: Any = None, outcome: int = COMPLETED) -> Any:
            """End ``prev``'s turn (the work's own step, Finish); then the granted drain
            step, or none: the drain stays entered with no turn held, and the shell's loop
            returns, as it does when a slice ends, until ``HeldQueue.step`` goes on."""
            if prev is not None:
                self.finish(prev, outcome)
            if self.granted is None:
                return None
            self.granted = None
            return super().next_step(now, None, outcome)

        def due(self, now: float) -> str | None:
            """The drain step the core would take now (None: none is enabled)."""
            if self.drain_scheduled and not self.draining:
                return ENTER_DRAIN
            if not self.draining or self.turn_holder is not None:
                return None
            if slice_expired(now, self.slice_started_at, self.config.budget):
                return END_SLICE
            if not (self.app or self.life or self.barrier):
                return EXIT_DRAIN
            return TAKE_NEXT

    class HeldQueue(ZLinkSerialExecutionQueue):
        """A ``ZLinkSerialExecutionQueue`` whose own steps wait for ``step`` (module
        text). Made like the queue (the same arguments); a queue made without an
        observer gets one that records nothing, so every work is a record."""

        __slots__ = ("_requeues",)

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            if kwargs.get("observer") is None and kwargs.get("config") is None:
                kwargs["observer"] = _trace_nothing
            super().__init__(*args, **kwargs)
            core = self._core
            self._core = _HeldCore(core.config, core.name)
            self._requeues: dict[ZLinkWorkHandle[Any], _Requeue] = {}

        # ---------------------------------------------------------------- the holds
        def _drain(self) -> None:
            """Posted when the queue became busy: the drain is due (the core's
            ``drain_scheduled`` says so) and is entered on ``step(ENTER_DRAIN)``."""

        async def _yield(self, rec: ZLinkWorkHandle[Any], awaitable: Awaitable[T]) -> T:
            call: asyncio.Future[T] = asyncio.ensure_future(awaitable)
            if call.done():
                return call.result()
            return await yield_turn_until(self, rec, self._granted(rec, call))

        async def _granted(self, rec: ZLinkWorkHandle[Any], call: asyncio.Future[T]) -> T:
            """The call's outcome, once the call ended and ``step(REQUEUE, rec)`` granted the
            requeue that follows it (a cancellation passes at once: a disposal waits for
            no grant)."""
            grant: asyncio.Future[None] = self._rt.loop.create_future()
            self._requeues[rec] = _Requeue(call, grant)
            try:
                try:
                    await asyncio.shield(call)
                except asyncio.CancelledError:
                    if not call.cancelled():
                        call.cancel()
                    raise
                except BaseException:
                    await grant
                    raise
                await grant
            finally:
                self._requeues.pop(rec, None)
            return call.result()

        # ---------------------------------------------------------------- the command
        def step(self, name: str, work: ZLinkWorkHandle[Any] | None = None) -> None:
            """Take the runtime's own step ``name`` now (one of
            ``zlink_model.vocabulary.HELD_STEPS``; ``REQUEUE`` names the work whose call
            returned). Raises ``HeldStepError`` when that step is not enabled. A step's
            effects that run on the loop (a work's code that begins on its turn, a requeue
            in the work's task) happen on the loop's next turns, as they would have."""
            core = self._held_core()
            if name == REQUEUE:
                waiting = self._requeues.get(work) if work is not None else None
                if waiting is None or not waiting.call.done() or waiting.grant.done():
                    raise HeldStepError(f"{core.name}: no requeue of work "
                                        f"{getattr(work, 'wid', work)} is due: it has not "
                                        "yielded, its call has not returned, or its requeue "
                                        "was granted already")
                waiting.grant.set_result(None)
                return
            due = core.due(self._rt.now())
            if due != name:
                raise HeldStepError(f"{core.name}: step {name} is not enabled; the drain's "
                                    f"step now is {due or 'none'}")
            if name == ENTER_DRAIN:
                enter_posted_drain(self)
                return
            core.granted = name
            try:
                continue_drain(self)
            finally:
                core.granted = None

        def _held_core(self) -> _HeldCore:
            core = self._core
            assert isinstance(core, _HeldCore)
            return core

except TypeError:  # pragma: no cover - the compiled build: no interpreted subclass
    AVAILABLE = False
