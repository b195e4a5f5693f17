"""``ZLinkSpotSerialExecutor``: one per Spot; owns the Spot queue and, in maps owned by
its state lane, one Actor queue per actor id and one timer queue per timer name (SE-2.2).

Which queue a work goes to is decided here, never by the caller (SE-3.1):

================  ============================  =====================================
entry             PerActor (User) / Entry       SpotWide (User) / Instance
================  ============================  =====================================
execute_spot      Spot queue                    Spot queue
execute_lifecycle Spot queue, lifecycle lane    Spot queue, lifecycle lane
execute_actor     that Actor's queue            Actor queue (claim, payload), then one
                                                execution turn on the Spot queue
execute_timer     that timer's queue            Spot queue (no timer queue is made)
================  ============================  =====================================

SpotWide (SE-4.5, SE-4.6, SE-5.3). The Actor queue admits the work and reserves its
payload. When the work reaches the head of its Actor queue, the Actor queue's turn
places one execution turn on the Spot queue (a ``transfer``: fixed cost only, never
refused, decision D-6) and keeps its own turn until that work ends. That held turn is
the Actor's *claim*: when the work yields it gives back the Spot gate, so other Actors,
the Spot handler and timers go on, but the same Actor's next record cannot start. The
queues are never merged, so one Actor's pending work can be taken out on its own
(``take_actor_pending``, the building block of relocation, SE-4.7). The records of a
SpotWide message, and the work that places its execution turn, are in ``spot_wide``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from functools import partial
from threading import get_ident
from typing import Any

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import RUNNING, Observer, WorkRecord

from .._shell import (
    ErrorHook,
    EventLoop,
    QueueStatistics,
    ScopeQueue,
    Work,
    ZLinkClock,
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    admit_record,
    queue_place,
    take_queued,
)
from ._base import Coordinator, check_id, check_payload, check_work
from .snapshot import (
    ActorMessage,
    ActorRegistry,
    ActorStateCell,
    ActorStateSnapshot,
)
from .spot_wide import SpotWideMessage, SpotWideRunner, SpotWideTurn

__all__ = [
    "ZLinkPendingWork",
    "ZLinkSpotKind",
    "ZLinkSpotSerialExecutor",
    "ZLinkUserSpotExecutionMode",
]


class ZLinkSpotKind(enum.StrEnum):
    """The kinds of Spot (SE-4.1). Only a User Spot chooses an execution mode."""

    USER = "user"
    ENTRY = "entry"  # Actor path like PerActor, no Yield
    INSTANCE = "instance"  # one gate for the whole Spot, like SpotWide


class ZLinkUserSpotExecutionMode(enum.StrEnum):
    """A User Spot's execution mode, fixed at registration (SE-1.2, SE-4)."""

    PER_ACTOR = "per_actor"
    SPOT_WIDE = "spot_wide"


@dataclasses.dataclass(frozen=True, slots=True)
class ZLinkPendingWork:
    """One never-started work taken out of an Actor queue for relocation (SE-4.7). Its
    original handle reports cancellation; submit ``work`` with ``payload_bytes`` where
    the Actor now lives."""

    actor_id: str
    work: Work
    payload_bytes: int
    handle: ZLinkWorkHandle[Any]


class _ActorRoute(ActorStateCell):
    """Everything one Actor of a Spot needs per message, found with one lookup of one
    lane-owned map (the Spot's registry): the Actor's state cell (it is one: calling it
    reads the snapshot a message starts with, SE-7) and its queue once it has one.
    Registration and queue share one map entry and one object per Actor, so an idle
    Actor stays small (issue 16). The SpotWide gates are not kept here: a SpotWide
    record reads them from the places it holds (spot_wide.py)."""

    __slots__ = ("queue",)

    def __init__(self, snapshot: ActorStateSnapshot) -> None:
        super().__init__(snapshot)
        self.queue: ZLinkSerialExecutionQueue | None = None  # made on first use


class ZLinkSpotSerialExecutor(Coordinator):
    """The serial executor of one Spot.

    ``policy`` limits the Spot queue, ``actor_policy`` each Actor queue and
    ``timer_policy`` each timer queue (defaults: the seed's values). ``clock``,
    ``error_hook`` and ``observer`` are shared by every queue of the Spot.
    """

    def __init__(
        self,
        spot_id: str,
        *,
        kind: ZLinkSpotKind = ZLinkSpotKind.USER,
        mode: ZLinkUserSpotExecutionMode | None = None,
        policy: ZLinkExecutionLanePolicy | None = None,
        actor_policy: ZLinkExecutionLanePolicy | None = None,
        timer_policy: ZLinkExecutionLanePolicy | None = None,
        clock: ZLinkClock | None = None,
        loop: EventLoop | None = None,
        error_hook: ErrorHook | None = None,
        observer: Observer | None = None,
    ) -> None:
        check_id("spot_id", spot_id)
        kind = ZLinkSpotKind(kind)
        if kind is ZLinkSpotKind.USER:
            if mode is None:
                raise ValueError(
                    "a User Spot needs its execution mode (PER_ACTOR or SPOT_WIDE), "
                    "fixed at registration (SE-1.2, SE-4.1)"
                )
            mode = ZLinkUserSpotExecutionMode(mode)
        elif mode is not None:
            raise ValueError(f"the execution mode is for User Spots only, not {kind} (SE-4.1)")
        super().__init__(f"spot:{spot_id}", clock=clock, loop=loop, error_hook=error_hook,
                         observer=observer)
        self._kind = kind
        self._mode = mode
        self._wide = kind is ZLinkSpotKind.INSTANCE or mode is ZLinkUserSpotExecutionMode.SPOT_WIDE
        yield_allowed = kind is not ZLinkSpotKind.ENTRY
        self._spot = self._make_queue(self._name, self._config(policy, yield_allowed=yield_allowed))
        # The Actor queues' work of every SpotWide message (spot_wide.py).
        self._runner = SpotWideRunner(self._rt, self._spot)
        self._actor_config = self._config(actor_policy, yield_allowed=yield_allowed)
        self._timer_config = self._config(timer_policy, yield_allowed=yield_allowed)
        # Owned by the state lane (SE-2.4): read and changed only inside lane turns.
        # The registry's cells are the Actors' routes: registration and queue map in
        # one (``_routes`` is the registry's map, for the entry points' lookup).
        self._registry: ActorRegistry[_ActorRoute] = ActorRegistry(_ActorRoute)
        self._routes = self._registry.cells
        self._timer_queues: dict[str, ZLinkSerialExecutionQueue] = {}

    # ------------------------------------------------------------ properties
    @property
    def kind(self) -> ZLinkSpotKind:
        """The Spot's kind."""
        return self._kind

    @property
    def mode(self) -> ZLinkUserSpotExecutionMode | None:
        """A User Spot's execution mode (None for Entry and Instance Spots)."""
        return self._mode

    # ----------------------------------------------------------- entry points
    def execute_spot(self, work: Work) -> ZLinkWorkHandle[Any]:
        """Run Spot handler work on the Spot queue."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_spot, work))
        self._check_open()
        return self._spot.enqueue(check_work(work))

    def execute_lifecycle(self, work: Work) -> ZLinkWorkHandle[Any]:
        """Run lifecycle control (join, leave, relocation) on the Spot queue's lifecycle
        lane: it overtakes waiting application work within the burst limit."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_lifecycle, work))
        self._check_open()
        return self._spot.enqueue_lifecycle(check_work(work))

    def execute_actor(
        self, actor_id: str, work: Work, payload_bytes: int = 0
    ) -> ZLinkWorkHandle[Any]:
        """Run one Actor handler work; the queue path follows the Spot's mode (SE-4).
        The work sees the Actor's state through ``current_snapshot()`` (SE-7)."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_actor, actor_id, work, payload_bytes))
        self._check_open()
        if type(actor_id) is not str or not actor_id:
            check_id("actor_id", actor_id)
        if not callable(work):
            check_work(work)
        payload = check_payload(payload_bytes) if payload_bytes else 0
        # On the loop thread a single read of a lane-owned value is a lane turn by
        # itself; making an Actor's queue and route changes the maps: a lane turn.
        route = self._routes.get(actor_id)
        if route is None or (queue := route.queue) is None:
            route, queue = self._lane.run(partial(self._actor_route, actor_id))
        message: ZLinkWorkHandle[Any]
        if self._wide:
            message = SpotWideMessage(self._rt, queue_place(queue), route, work, self._runner)
        else:
            message = ActorMessage(self._rt, queue_place(queue), route, work)
        admit_record(queue, message, payload)
        return message

    def execute_timer(self, timer_name: str, work: Work) -> ZLinkWorkHandle[Any]:
        """Run a timer callback: on its own timer queue (PerActor, Entry), or straight
        on the Spot queue (SpotWide, Instance: no timer queue is made, SE-4.4). The
        closed check, the timer queue's creation and the admission are one step on the
        owner's loop, whatever thread calls (D-24)."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            return self._rt.call_on_loop(partial(self.execute_timer, timer_name, work))
        self._check_open()
        check_id("timer_name", timer_name)
        check_work(work)
        if self._wide:
            return self._spot.enqueue(work)
        queue = self._timer_queues.get(timer_name)
        if queue is None:
            queue = self._lane.run(partial(self._timer_queue, timer_name))
        return queue.enqueue(work)

    # ------------------------------------------------------- lane-owned maps
    def _actor_queue(self, actor_id: str) -> ZLinkSerialExecutionQueue:
        """The Actor's queue, made on first use (in a lane turn)."""
        self._lane.require("actor queue map")  # always on: D-24's history (D-25)
        route = self._registry.cell(actor_id)
        q = route.queue
        if q is None:
            q = route.queue = self._make_queue(
                f"{self._name}/actor:{actor_id}", self._actor_config
            )
        return q

    def _actor_route(self, actor_id: str) -> tuple[_ActorRoute, ZLinkSerialExecutionQueue]:
        """The Actor's route and queue (in a lane turn). The route keeps whatever queue
        ``_actor_queue`` answers, so that one method decides an Actor's queue for
        every message, not only for the first."""
        queue = self._actor_queue(actor_id)
        route = self._registry.cell(actor_id)
        route.queue = queue
        return route, queue

    def _timer_queue(self, timer_name: str) -> ZLinkSerialExecutionQueue:
        self._lane.require("timer queue map")  # always on: D-24's history (D-25)
        q = self._timer_queues.get(timer_name)
        if q is None:
            q = self._timer_queues[timer_name] = self._make_queue(
                f"{self._name}/timer:{timer_name}", self._timer_config
            )
        return q

    # ----------------------------------------------------------- registrations
    def register_actor(self, actor_id: str, actor_type: str | None = None,
                       **values: Any) -> None:
        """Register (or re-register) an Actor with its type and values, in one lane
        turn. A message already running keeps the snapshot it started with (SE-7.2)."""
        check_id("actor_id", actor_id)
        self._lane.run(lambda: self._registry.register(actor_id, actor_type, values))

    def update_actor_registration(self, actor_id: str, **values: Any) -> None:
        """Change some of an Actor's registered values, all in one lane turn."""
        check_id("actor_id", actor_id)
        self._lane.run(lambda: self._registry.update(actor_id, values))

    def unregister_actor(self, actor_id: str) -> None:
        """Forget an Actor's registration (its queue, if any, stays with the Spot)."""
        check_id("actor_id", actor_id)
        self._lane.run(lambda: self._registry.unregister(actor_id))

    def actor_snapshot(self, actor_id: str) -> ActorStateSnapshot:
        """Read an Actor's state in one lane turn (SE-7.1)."""
        check_id("actor_id", actor_id)
        return self._lane.run(lambda: self._registry.snapshot(actor_id))

    # ------------------------------------------------------------ relocation
    def take_actor_pending(self, actor_id: str) -> list[ZLinkPendingWork]:
        """Take one Actor's never-started works out of its queue, in order, leaving
        every other queue untouched (SE-4.7). The work that already holds the Actor's
        turn (and, in SpotWide, its execution turn on the Spot queue) stays."""
        check_id("actor_id", actor_id)

        def take() -> list[ZLinkPendingWork]:
            route = self._routes.get(actor_id)
            q = route.queue if route is not None else None
            if q is None:
                return []
            fixed = q.policy.fixed_work_byte_cost
            out = []
            for rec, work in take_queued(q):
                out.append(ZLinkPendingWork(actor_id, work, rec.nbytes - fixed, rec))
            return out

        return self._lane.run(take)

    # ------------------------------------------------------------- lifetime
    def close(self) -> None:
        """Remove the Spot: no new work on any entry; every queue is closed and the
        maps are emptied in the same lane turn (SE-2.2, SE-2.4). Accepted work still
        runs to its end. Idempotent."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():  # D-24
            self._rt.call_on_loop(self.close)
            return
        if not self._closed:
            self._lane.run(self._close_queues)

    def _drop_maps(self) -> None:
        self._lane.require("drop maps")  # always on: D-24's history (D-25)
        for route in self._routes.values():  # the registrations stay
            route.queue = None
        self._timer_queues.clear()

    def _counts(self, queue: ScopeQueue, rec: WorkRecord) -> bool:
        # A SpotWide Actor work is one work seen twice: its record on the Actor queue
        # and its execution turn on the Spot queue. Count the Actor record.
        return not (self._wide and queue is self._spot and type(rec) is SpotWideTurn)

    def _running_as(self, queue: ScopeQueue, rec: WorkRecord) -> WorkRecord:
        # A SpotWide Actor record that holds its queue's turn (the claim) runs as the
        # execution turn it placed on the Spot queue: that turn is queued, running,
        # suspended in a yield or requeued, and holds what it waits on (SD-6).
        if not self._wide or queue is self._spot or rec.phase != RUNNING:
            return rec
        for q, turn in self._scope().live():  # every live record, the turns included
            if q is self._spot and type(turn) is SpotWideTurn and turn.claim is rec:
                return turn
        return rec

    def statistics(self) -> Mapping[str, QueueStatistics]:
        """Per-queue statistics, keyed by queue name, all taken in one step on the
        owner's loop (from another thread too, D-24)."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():
            return self._rt.call_on_loop(self.statistics)
        return {q.name: q.statistics() for q in self._made}

    def actor_ids(self) -> list[str]:
        """Actors that have a queue, in creation order."""
        def ids() -> list[str]:
            owner = {id(r.queue): a for a, r in self._routes.items() if r.queue is not None}
            return [owner[id(q)] for q in self._made if id(q) in owner]

        return self._lane.run(ids)

    def timer_names(self) -> list[str]:
        """Timers that have a queue, in creation order (always empty in SpotWide)."""
        return self._lane.run(lambda: list(self._timer_queues))
