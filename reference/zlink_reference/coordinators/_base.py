"""What the three coordinators share: one runtime (loop, clock, error hook), a state
lane, the closed flag, argument checks, and waiting for quiescence over every queue the
coordinator ever made."""

from __future__ import annotations

from typing import Any

from zlink_model.errors import ZLinkClosedError
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import Observer, QueueConfig

from .._shell import (
    ErrorHook,
    EventLoop,
    QueueRuntime,
    Scope,
    ScopeSurface,
    Work,
    ZLinkClock,
    ZLinkSerialExecutionQueue,
    queue_core,
    running_loop,
)
from .lane import ZLinkStateLane

__all__ = ["Coordinator", "check_id", "check_payload", "check_work"]


def check_id(kind: str, value: object) -> str:
    """Actor ids and timer names are non-empty strings."""
    if not isinstance(value, str):
        raise TypeError(f"{kind} must be a string, got {value!r}")
    if not value:
        raise ValueError(f"{kind} must not be empty")
    return value


def check_payload(payload_bytes: object) -> int:
    """Payload sizes are non-negative integers (SE-6.2)."""
    if isinstance(payload_bytes, bool) or not isinstance(payload_bytes, int):
        raise TypeError(f"payload_bytes must be an integer, got {payload_bytes!r}")
    if payload_bytes < 0:
        raise ValueError(f"payload_bytes must be >= 0, got {payload_bytes} (SE-6.2)")
    return payload_bytes


def check_work(work: object) -> Work:
    """A work is a zero-argument callable."""
    if not callable(work):
        raise TypeError(f"work must be a zero-argument callable, got {work!r}")
    return work


class Coordinator(ScopeSurface):
    """Base of the Spot, Actor and Session coordinators. Not a public surface: callers
    use the ``execute_*`` entries of the subclasses (SE-3). A coordinator is one scope
    (SD): disposing it disposes every queue it made."""

    def __init__(
        self,
        name: str,
        *,
        clock: ZLinkClock | None,
        loop: EventLoop | None,
        error_hook: ErrorHook | None,
        observer: Observer | None,
    ) -> None:
        self._name = name
        self._rt = QueueRuntime(clock=clock, loop=loop, error_hook=error_hook)
        self._observer = observer
        self._lane = ZLinkStateLane(name, self._rt)
        self._closed = False
        # Queues made by this coordinator that may still hold accepted work. Kept so
        # close, disposal and quiescence reach every one, including queues dropped
        # from a map.
        self._made: list[ZLinkSerialExecutionQueue] = []
        self._scope_object = Scope(self)  # the coordinator as one scope (SD)
        self._join_registry()

    @property
    def name(self) -> str:
        """The coordinator's name; its queues' names start with it."""
        return self._name

    @property
    def closed(self) -> bool:
        """Whether the coordinator was closed (or removed)."""
        return self._closed

    def _config(self, policy: ZLinkExecutionLanePolicy | None, *, yield_allowed: bool = True
                ) -> QueueConfig:
        policy = policy if policy is not None else ZLinkExecutionLanePolicy()
        if not isinstance(policy, ZLinkExecutionLanePolicy):
            raise TypeError(f"policy must be a ZLinkExecutionLanePolicy, got {policy!r}")
        return QueueConfig(policy, units_per_ms=self._rt.clock.units_per_ms,
                           yield_allowed=yield_allowed, observer=self._observer)

    def _make_queue(self, name: str, config: QueueConfig) -> ZLinkSerialExecutionQueue:
        q = ZLinkSerialExecutionQueue(name=name, runtime=self._rt, config=config)
        self._made.append(q)
        return q

    def _check_open(self) -> None:
        if self._closed:
            raise ZLinkClosedError(self._name)

    def _close_queues(self) -> None:
        """One lane turn: mark closed and close every queue (SE-2.4)."""
        self._lane.require("close")  # always on: D-24's history (D-25)
        self._closed = True
        for q in self._made:
            q.close()
        self._drop_maps()

    def _drop_maps(self) -> None:
        """Hook: empty the coordinator's queue maps (a Spot has two)."""

    # --------------------------------------------------------------- scope
    def _scope(self) -> Scope:
        return self._scope_object

    def _scope_queues(self) -> list[ZLinkSerialExecutionQueue]:
        return list(self._made)

    def _scope_closing(self) -> None:
        def closing() -> None:
            self._closed = True
            self._drop_maps()

        if self._lane.is_on_lane():
            closing()
        else:
            self._lane.run(closing)

    async def await_quiescence(self) -> None:
        """Return once every work accepted by any of this coordinator's queues ended.
        Awaited on another loop, it waits on the owner's (D-24). From a live work of
        this coordinator it raises ``ZLinkReentrancyError`` (SE-8.2)."""
        scope = self._scope_object
        scope.check_own_wait("await_quiescence", zombies_too=True)
        if running_loop() is not self._rt.loop and self._rt.foreign():
            return await self._rt.wait_on_loop(self.await_quiescence)
        while True:
            busy = [q for q in self._made if not queue_core(q).is_idle()]
            if not busy:
                if not scope.live_held(True):
                    return
                # A held work (a session's final work) whose queue just emptied is
                # placed on the next turn of the loop (D-22): look again then.
                await self._rt.next_turn()
                continue
            for q in busy:
                await q.await_quiescence()
            # A queue's wait ends once its live count is zero; should its core still
            # not be idle (counts that disagree), going round at once would hold the
            # loop for ever. Give the loop a turn first, so a timeout around this wait
            # and every other owner still run.
            await self._rt.next_turn()

    def _forget_idle_closed(self) -> None:
        self._made = [q for q in self._made if not (q.closed and queue_core(q).is_idle())]

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._name!r}{' closed' if self._closed else ''}>"

    def _describe(self) -> dict[str, Any]:
        return {"name": self._name, "closed": self._closed, "queues": len(self._made)}
