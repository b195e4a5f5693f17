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
from collections.abc import Iterator, Mapping
from typing import Any, Final

__all__ = [
    "LIFECYCLE_ENTRIES", "PAYLOAD_ENTRIES", "Route", "Submission", "TargetInfo",
    "actor_owner", "route", "submissions", "timer_owner",
]

LIFECYCLE_ENTRIES: Final = frozenset(
    {"execute_lifecycle", "enqueue_lifecycle", "execute_control", "execute_infrastructure"})
"""Entries whose work takes the lifecycle lane (SE-6.2)."""
PAYLOAD_ENTRIES: Final = frozenset(
    {"execute_actor", "execute_application", "enqueue_with_payload_bytes"})
"""Entries whose work reserves its ``payload_bytes`` besides the fixed cost (SE-6.2)."""


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


@dataclasses.dataclass(frozen=True, slots=True)
class Submission:
    """One work as a runner's ``submit`` made it: where it goes and what it reserves.

    Every judge of a transcript (the kit's model oracle, TLC through the trace checker)
    reads submissions the same way, so they are read here once."""

    work: str
    target: TargetInfo
    entry: str
    route: Route
    lifecycle: bool  # the lifecycle lane (LIFECYCLE_ENTRIES), else the application lane
    payload: int  # payload bytes beyond the fixed cost (PAYLOAD_ENTRIES), else 0
    barrier: bool  # enqueue_barrier_next

    @property
    def final(self) -> bool:
        """A Session's final work (D-12: placed after the Session's other work)."""
        return self.target.type == "session" and self.entry == "execute_final"

    @property
    def moved(self) -> bool:
        """A SpotWide Actor work: admitted by its Actor queue, run on the Spot queue."""
        return self.route.claim is not None


def submissions(sub: Mapping[str, Any], targets: Mapping[str, TargetInfo]
                ) -> Iterator[Submission]:
    """The work a ``submit`` (or one of ``submit_concurrent``'s) names, then every work
    its script submits, depth first, routed by the table above.

    A work the table cannot route (an unknown target, an entry its type lacks, a missing
    actor id or timer name) is skipped with its script: the adapter must refuse it, and
    the runner's own checks say so; there is nothing for a judge to place."""
    work, target, entry = sub.get("work"), targets.get(str(sub.get("target"))), \
        sub.get("entry")
    if not isinstance(work, str) or target is None or not isinstance(entry, str):
        return
    try:
        r = route(target, entry, sub.get("actor_id"), sub.get("timer_name"))
    except ValueError:
        return
    payload = sub.get("payload_bytes", 0) if entry in PAYLOAD_ENTRIES else 0
    yield Submission(work, target, entry, r, entry in LIFECYCLE_ENTRIES,
                     payload if isinstance(payload, int) else 0,
                     entry == "enqueue_barrier_next")
    for op in sub.get("script", []) or []:
        if isinstance(op, dict) and op.get("op") == "submit":
            yield from submissions(op, targets)
