"""Where each entry's work goes: the routing table of SE-3 and SE-4, in owner names.

The caller never picks a queue (SE-3.1); the runtime does, by the target's type, kind and
mode. Because the runner knows those from its own ``create`` and ``submit`` commands, it
can say for every work which owner must admit it, which owner's turn it must run on and,
for SpotWide wiring, which Actor claim it holds. The runner checks each event's ``owner``
against this table, so routing is checked in every case, not only in the SE-10.1 one.

Owner names are built from runner-chosen names: a target ``S`` is the owner ``S`` (a
Spot's Spot queue, or the one queue of an Actor, Session or bare queue); a Spot's Actor
queue is ``S/actor:A`` and its timer queue ``S/timer:t``.
"""

from __future__ import annotations

import dataclasses

__all__ = ["Route", "TargetInfo", "actor_owner", "route", "timer_owner"]


@dataclasses.dataclass(frozen=True, slots=True)
class TargetInfo:
    """What the runner created: a target's type and, for a Spot, its kind and mode."""

    name: str
    type: str  # spot, actor, session, queue
    kind: str | None = None  # user, entry, instance (Spots)
    mode: str | None = None  # per_actor, spot_wide (User Spots)

    @property
    def spot_wide_wiring(self) -> bool:
        """Everything passes the one Spot queue (SpotWide, and Instance Spots, SE-4.1)."""
        return self.type == "spot" and (self.kind == "instance" or self.mode == "spot_wide")

    @property
    def offers_yield(self) -> bool:
        """Entry Spots offer no Yield (SE-4.1)."""
        return not (self.type == "spot" and self.kind == "entry")


@dataclasses.dataclass(frozen=True, slots=True)
class Route:
    """The owners of one submission.

    ``admit``: the queue whose limits judge it (the ``accepted``/``rejected`` owner);
    ``run``: the queue whose turn it runs on (``started`` ... ``finished``); ``claim``: the
    Actor queue a SpotWide Actor work holds from its start to its end (SE-4.6), or None.
    """

    admit: str
    run: str
    claim: str | None = None


def actor_owner(spot: str, actor_id: str) -> str:
    """The owner name of a Spot's Actor queue."""
    return f"{spot}/actor:{actor_id}"


def timer_owner(spot: str, timer_name: str) -> str:
    """The owner name of a Spot's timer queue."""
    return f"{spot}/timer:{timer_name}"


def route(target: TargetInfo, entry: str, actor_id: str | None = None,
          timer_name: str | None = None) -> Route:
    """The owners a submission through ``entry`` of ``target`` must use (SE-3, SE-4).

    Raises ``ValueError`` for an entry the target type does not have, or a missing
    actor id or timer name.
    """
    name = target.name
    if target.type != "spot":
        if target.type == "actor" and entry in ("execute_actor", "execute_lifecycle"):
            return Route(name, name)
        if target.type == "session" and entry in (
            "execute_application", "execute_control", "execute_infrastructure", "execute_final"
        ):
            return Route(name, name)
        if target.type == "queue" and entry in (
            "enqueue", "enqueue_with_payload_bytes", "enqueue_lifecycle", "enqueue_barrier_next"
        ):
            return Route(name, name)
        raise ValueError(f"a {target.type} has no entry {entry!r}")
    wide = target.spot_wide_wiring
    if entry in ("execute_spot", "execute_lifecycle"):
        return Route(name, name)
    if entry == "execute_actor":
        if not actor_id:
            raise ValueError("execute_actor on a Spot needs an actor_id")
        own = actor_owner(name, actor_id)
        # SpotWide: the Actor queue admits (payload) and keeps the claim; the turn runs
        # on the Spot queue (SE-4.5, SE-4.6).
        return Route(own, name, own) if wide else Route(own, own)
    if entry == "execute_timer":
        if not timer_name:
            raise ValueError("execute_timer needs a timer_name")
        if wide:
            return Route(name, name)  # no timer queue in SpotWide wiring (SE-4.4)
        own = timer_owner(name, timer_name)
        return Route(own, own)
    raise ValueError(f"a spot has no entry {entry!r}")
