"""One SpotWide Actor message, as the records its two queues run (SE-4.5, SE-4.6, SE-5.3).

A SpotWide message is admitted on its Actor queue as a ``SpotWideMessage``: the handle
the caller gets, which keeps the caller's work and the Actor's cell, and whose work is
the Spot's ``SpotWideRunner``, one object for every message of the Spot. So a queued
message keeps one object alive, as a PerActor message does (fewer objects for the
collector to walk, issue 25).

When the message reaches the head of its Actor queue, the runner, run on the message's
turn, places the execution turn on the Spot queue: a ``SpotWideTurn``, an Actor message
of the Spot queue that takes the snapshot as it starts (SE-7) and names the Actor
record as its ``claim``. The Actor queue's turn is held until that turn ends
(``TurnHold``): the held turn is the Actor's claim, so when the work yields, other
Actors, the Spot handler and timers go on, but the same Actor's next message cannot
start (SE-4.6).

Neither record keeps a queue (D-23): the gates each needs are read from the places they
hold (their own queue's, the Spot's, the claim's), not kept in a tuple per message.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from .._shell import (
    QueuePlace,
    QueueRuntime,
    TurnHold,
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    current_work,
    queue_place,
    transfer,
)
from .snapshot import ActorMessage, ActorStateSnapshot

__all__ = ["SpotWideMessage", "SpotWideRunner", "SpotWideTurn"]


class SpotWideMessage(ZLinkWorkHandle[Any]):
    """A SpotWide message on its Actor queue: the caller's handle. It keeps the caller's
    work until its turn places the execution turn, and the Actor's cell, which that turn
    reads as it starts (SE-7). ``__wrapped__`` is the caller's work while the message is
    queued (relocation hands it back, SE-4.7).

    From its turn on it holds the Actor's claim for the execution turn and needs the
    Spot gate too (``gate``, SE-8.2), and its failure is the Spot queue's to report,
    once. Queued, it needs only its own turn: a wait that could meet the Spot gate in a
    queued record's gates comes from a work holding that gate, a work of the same Spot,
    and such a wait raises already (a wait on a handle of the same owner while holding a
    turn, D-14; a scope wait counts the waiter itself)."""

    __slots__ = ("__wrapped__", "_read", "gate")

    def __init__(self, rt: QueueRuntime, place: QueuePlace,
                 read: Callable[[], ActorStateSnapshot], work: Callable[[], Any],
                 runner: SpotWideRunner) -> None:
        ZLinkWorkHandle.__init__(self, rt, place, runner)
        self._read = read
        self.__wrapped__: Callable[[], Any] | None = work
        self.gate: QueuePlace | None = None  # the Spot queue's place, once it holds the claim

    @property
    def _gates(self) -> tuple[object, ...]:
        gate = self.gate
        return (self._place,) if gate is None else (self._place, gate)

    def _reported_elsewhere(self) -> bool:
        return self.gate is not None

    def _claim(self) -> QueuePlace:
        """What names the Actor's claim in its execution turn's gates: its own queue's
        place (the Actor queue's turn, held until that turn ends)."""
        return self._place


class SpotWideTurn(ActorMessage):
    """The execution turn of a SpotWide message on the Spot queue: an Actor message
    (``run_message`` takes the snapshot as it starts and runs the caller's work, SE-7)
    that needs the Spot gate, its own turn, and the Actor's claim: the turn of the Actor
    record that placed it (``claim``)."""

    __slots__ = ("claim",)

    def __init__(self, rt: QueueRuntime, place: QueuePlace,
                 read: Callable[[], ActorStateSnapshot], work: Callable[[], Any],
                 claim: SpotWideMessage) -> None:
        ActorMessage.__init__(self, rt, place, read, work)
        self.claim = claim

    @property
    def _gates(self) -> tuple[object, ...]:
        return (self._place, self.claim._claim())


class SpotWideRunner:
    """The Actor queue's work of every SpotWide message of one Spot: run on a message's
    turn, it finds the message as the work holding the turn (``current_work()``),
    places its execution turn on the Spot queue (a ``transfer``: fixed cost only, never
    refused, decision D-6) and keeps the Actor queue's turn, the claim, until that turn
    ends (SE-4.5, SE-4.6). One per Spot, so a queued message allocates no work of its
    own."""

    __slots__ = ("rt", "spot")

    def __init__(self, rt: QueueRuntime, spot: ZLinkSerialExecutionQueue) -> None:
        self.rt = rt
        self.spot = spot

    def __call__(self) -> TurnHold:
        message = cast(SpotWideMessage, current_work())
        spot = self.spot
        gate = message.gate = queue_place(spot)  # from now on it holds the claim
        work = message.__wrapped__
        message.__wrapped__ = None  # started: the execution turn keeps the work
        assert work is not None, "a SpotWide message places its turn once"
        execution = SpotWideTurn(self.rt, gate, message._read, work, message)
        transfer(spot, execution)
        return TurnHold(execution)
