"""``ZLinkSessionSerialExecutor``: one per STREAM session; exactly one queue (SE-2.3).

Lanes (decision D-12, specs/decisions.md): packets for the session callback
(``execute_application``) use the application lane and reserve their payload; session
control commands (``execute_control``) and connection-state updates
(``execute_infrastructure``) use the lifecycle lane, so they overtake a backlog of
packets, in the order they were submitted among themselves. ``execute_final`` closes
the session to new work and runs its work after every work accepted before it.
"""

from __future__ import annotations

from functools import partial
from threading import get_ident
from typing import Any

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import Observer

from .._shell import (
    Cancelled,
    ErrorHook,
    EventLoop,
    QueueStatistics,
    ScopeQueue,
    Work,
    ZLinkClock,
    ZLinkWorkHandle,
    accept_held,
    cancel_unplaced,
    checks,
    place_record,
    require_loop,
    when_idle,
)
from ._base import Coordinator, check_id, check_payload, check_work

__all__ = ["ZLinkSessionSerialExecutor"]


class ZLinkSessionSerialExecutor(Coordinator):
    """The serial executor of one STREAM session."""

    def __init__(
        self,
        session_id: str,
        *,
        policy: ZLinkExecutionLanePolicy | None = None,
        clock: ZLinkClock | None = None,
        loop: EventLoop | None = None,
        error_hook: ErrorHook | None = None,
        observer: Observer | None = None,
    ) -> None:
        check_id("session_id", session_id)
        super().__init__(f"session:{session_id}", clock=clock, loop=loop,
                         error_hook=error_hook, observer=observer)
        self._queue = self._make_queue(self._name, self._config(policy))
        # The final work from its acceptance until it is placed in the queue or ends
        # unplaced (cancelled by a disposal): held back, and counted all along (D-22).
        self._final: ZLinkWorkHandle[Any] | None = None

    def execute_application(self, work: Work, payload_bytes: int = 0) -> ZLinkWorkHandle[Any]:
        """A packet for the session callback: application lane, payload reserved."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_application, work, payload_bytes))
        self._check_open()
        check_work(work)
        return self._queue.enqueue_with_payload_bytes(work, check_payload(payload_bytes))

    def execute_control(self, work: Work) -> ZLinkWorkHandle[Any]:
        """A session control command: lifecycle lane (overtakes queued packets)."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_control, work))
        self._check_open()
        return self._queue.enqueue_lifecycle(check_work(work))

    def execute_infrastructure(self, work: Work) -> ZLinkWorkHandle[Any]:
        """A connection-state update or similar: lifecycle lane, in order with control."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_infrastructure, work))
        self._check_open()
        return self._queue.enqueue_lifecycle(check_work(work))

    def execute_final(self, work: Work) -> ZLinkWorkHandle[Any]:
        """The last work of the session. From this call on the session accepts nothing
        (later submissions get ``ZLinkClosedError``); the final work is admitted once
        every work accepted before it has ended, so it runs after all of them, and the
        queue closes behind it. A second ``execute_final`` is rejected as closed. From
        another thread the whole call is one step on the owner's loop (D-24).

        The final work is a work from this call on (D-22): ``active_count()`` counts it,
        every wait waits for it, a safe disposal makes it a zombie, and the disposal
        timer and the runtime end bound it, before its turn is due as after."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_final, work))
        self._check_open()
        check_work(work)
        queue = self._queue
        handle = accept_held(queue, work)
        self._final = handle
        self._closed = True  # the coordinator refuses new work from now on
        queue.close()

        when_idle(queue, True, partial(self._place_final, handle))
        return handle

    def _place_final(self, handle: ZLinkWorkHandle[Any]) -> None:
        """Every work accepted before the final one ended: place it (D-12)."""
        if checks.ON:
            require_loop(self._rt, "place the final work")
        if self._final is handle:
            self._final = None  # from here on its queue holds it
        if handle.done():  # cancelled by a disposal before its turn came
            return
        place_record(self._queue, handle)

    def _held(self) -> list[tuple[ScopeQueue, ZLinkWorkHandle[Any]]]:
        final = self._final
        return [] if final is None or final.done() else [(self._queue, final)]

    def _scope_cancelling(self) -> None:
        # A final work not placed yet was accepted: it ends cancelled, never runs.
        if checks.ON:
            require_loop(self._rt, "cancel the final work")
        final = self._final
        if final is not None and not final.done():
            self._final = None
            cancel_unplaced(final, Cancelled("disposed before it started"))

    def close(self) -> None:
        """No new work; accepted work (a pending final work included) finishes."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            self._rt.call_on_loop(self.close)
            return
        if not self._closed:
            self._lane.run(self._close_queues)

    def statistics(self) -> QueueStatistics:
        """The queue's statistics, one view (taken on the owner's loop, D-24)."""
        return self._queue.statistics()
