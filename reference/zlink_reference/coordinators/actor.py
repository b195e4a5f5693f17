"""``ZLinkActorSerialExecutor``: one per Actor; exactly one queue, no map (SE-2.3)."""

from __future__ import annotations

from functools import partial
from threading import get_ident
from typing import Any

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import Observer

from .._shell import (
    ErrorHook,
    EventLoop,
    QueueStatistics,
    Work,
    ZLinkClock,
    ZLinkWorkHandle,
)
from ._base import Coordinator, check_id, check_payload, check_work
from .snapshot import ActorRegistry, ActorStateCell, ActorStateSnapshot, with_snapshot

__all__ = ["ZLinkActorSerialExecutor"]


class ZLinkActorSerialExecutor(Coordinator):
    """The serial executor of one Actor: handler work on the application lane, the
    Actor's lifecycle control on the lifecycle lane of the same queue."""

    def __init__(
        self,
        actor_id: str,
        *,
        policy: ZLinkExecutionLanePolicy | None = None,
        actor_type: str | None = None,
        clock: ZLinkClock | None = None,
        loop: EventLoop | None = None,
        error_hook: ErrorHook | None = None,
        observer: Observer | None = None,
    ) -> None:
        check_id("actor_id", actor_id)
        super().__init__(f"actor:{actor_id}", clock=clock, loop=loop, error_hook=error_hook,
                         observer=observer)
        self._actor_id = actor_id
        self._queue = self._make_queue(self._name, self._config(policy))
        self._registry = ActorRegistry(ActorStateCell)
        self._registry.register(actor_id, actor_type, {})
        # The snapshot read of every message: the Actor's cell (SE-7).
        self._read = self._registry.cell(actor_id)

    @property
    def actor_id(self) -> str:
        """The Actor this executor serves."""
        return self._actor_id

    def execute_actor(self, work: Work, payload_bytes: int = 0) -> ZLinkWorkHandle[Any]:
        """Run one handler work; it sees the Actor's state through
        ``current_snapshot()`` (SE-7)."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_actor, work, payload_bytes))
        self._check_open()
        if not callable(work):
            check_work(work)
        payload = (payload_bytes if type(payload_bytes) is int and payload_bytes >= 0
                   else check_payload(payload_bytes))
        wrapped = with_snapshot(self._read, work)
        if payload:
            return self._queue.enqueue_with_payload_bytes(wrapped, payload)
        return self._queue.enqueue(wrapped)  # the same admission, one call shorter

    def execute_lifecycle(self, work: Work) -> ZLinkWorkHandle[Any]:
        """Run the Actor's lifecycle control on the lifecycle lane."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_lifecycle, work))
        self._check_open()
        return self._queue.enqueue_lifecycle(check_work(work))

    def update_registration(self, **values: Any) -> None:
        """Change registered values, all in one lane turn (SE-7.2)."""
        self._lane.run(lambda: self._registry.update(self._actor_id, values))

    def snapshot(self) -> ActorStateSnapshot:
        """The Actor's state, read in one lane turn."""
        return self._lane.run(lambda: self._registry.snapshot(self._actor_id))

    def close(self) -> None:
        """No new work; accepted work finishes. Idempotent."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            self._rt.call_on_loop(self.close)
            return
        if not self._closed:
            self._lane.run(self._close_queues)

    def statistics(self) -> QueueStatistics:
        """The queue's statistics, one view (taken on the owner's loop, D-24)."""
        return self._queue.statistics()
