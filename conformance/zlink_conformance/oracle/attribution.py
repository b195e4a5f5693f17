"""Which of its case's rules a check observes, derived from the check's kind and fields.

A case names several rules: the scenario it is built for (an SE-10 rule), the decisions
that fix what the spec leaves open (D-), and the base rules under them. A check that
names no rule of its own must still lead its failure with the rule it is about, never
with the case's first rule by default. Its kind says which rules it can observe at all:
an ``overlap`` check observes owners that are independent (SE-4.2, SE-10.2, SE-10.5), a
``rejected`` check with reason ``closed`` observes closing (SE-6.2, SD-1, D-12, ...), one
with a capacity reason the capacities (SE-5.1, SE-10.6, ...), a ``waiter`` the waits of
SD-3 and SD-5, and so on.

Each kind (or kind and field) has its rules in *tiers*, the most specific first: the
scenario rule that states exactly what the check looks at, then the decision that fixes
it, then the base rule. The first tier that holds one of the case's rules decides: one
rule there is the check's rule; two or more are genuinely the same observation (the
check's failure breaks each of them), and the line leads with ``[A or B]`` of exactly
those. A case none of whose rules is in any tier leaves the check with no rule of its
own (the evidence of the log, the model's divergence, decides then, as before).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

__all__ = ["TIERS", "candidates"]

Tiers = tuple[tuple[str, ...], ...]

# Capacity refusals (count or bytes): the scenario rules, the rules and decisions about
# what a reservation holds and when, then the two axes with what a byte counts (D-3),
# then the one-step admission.
_CAPACITY: Final[Tiers] = (
    ("SE-10.6", "SE-10.7", "SE-10.8"),
    ("SE-5.2", "SE-5.3", "SE-4.5", "D-2", "D-4", "D-9"),
    ("SE-5.1", "D-3"),
    ("SE-6.3",),
)
# Refusals and cancellations because a target closed or was disposed.
_CLOSED: Final[Tiers] = (
    ("D-12", "D-22"),
    ("SE-6.2", "SD-1", "SD-4", "SD-5"),
)
_CANCELLED: Final[Tiers] = (
    ("D-22",),
    ("D-17", "D-8", "D-15", "D-18"),
    ("SD-1", "SD-4", "SD-5"),
)
_REENTRANCY: Final[Tiers] = (("SE-10.13",), ("SE-8.2", "D-14"))
# What a status check observes when no scenario rule and no outcome above decides: a
# decision that fixes an outcome, the disposal rules alike, then the base rules alike.
_STATUS_LAST: Final[Tiers] = (
    ("D-1", "D-2", "D-3", "D-4", "D-6", "D-9", "D-12", "D-18", "D-22"),
    ("SD-1", "SD-2", "SD-3", "SD-4", "SD-5", "SD-6"),
)

# kind -> tiers; ``status``, ``rejected``, ``errors`` and ``waiter`` also look at fields
# (``candidates``).
TIERS: Final[Mapping[str, Tiers]] = {
    "overlap": (("SE-10.2", "SE-10.5"), ("SE-4.2", "SE-4.1")),
    "no_overlap": (("SE-10.3", "SE-10.5"), ("SE-4.3", "SE-4.6"), ("SE-4.4",), ("SE-1.1",)),
    "start_order": (
        ("SE-10.4", "SE-10.5", "SE-10.9", "SE-10.10", "D-1", "D-4", "D-5", "D-12", "D-13"),
        ("SE-6.2", "SE-6.4", "SE-6.6", "SE-6.7", "SE-4.5", "SE-4.6"),
        ("SE-2.3", "SE-4.1", "SE-4.2", "SE-10.2", "D-11", "SD-1", "SD-2"),
    ),
    "order": (
        ("SE-10.9", "SE-10.11", "D-1", "D-8", "D-12", "D-15", "D-22"),
        ("SE-6.5", "SE-6.7", "SE-4.2", "SD-1", "SD-2"),
    ),
    "events": (
        ("D-17", "D-8", "D-15", "D-22", "D-21"),
        ("SE-6.7", "SE-10.11", "D-11", "SD-1"),
    ),
    "failed": (("SE-6.7", "SD-3"), ("D-11", "D-21")),
    "waited": (("D-14",), ("SE-10.13", "SE-8.2")),
    "snapshots": (("SE-10.12",), ("SE-7.2", "SE-7.1")),
    "zombies": (("SD-1", "SD-4"), ("SD-2", "SD-3")),
    # A status check names how far each work got: the case's scenario rule says what
    # that must be (capacity and closing statuses are judged as refusals, below).
    "status": ((
        "SE-10.1", "SE-10.2", "SE-10.3", "SE-10.4", "SE-10.5", "SE-10.6", "SE-10.7",
        "SE-10.8", "SE-10.9", "SE-10.10", "SE-10.11", "SE-10.12", "SE-10.13"),),
}


def _tiers(kind: str, fields: Mapping[str, Any]) -> Tiers:
    if kind == "rejected":
        return _CLOSED if fields.get("reason") == "closed" else _CAPACITY
    if kind == "errors":
        kinds = set(fields.get("kinds", []))
        if kinds == {"reentrancy"}:
            return _REENTRANCY
        if not kinds:  # a wait that must be allowed: what the detection does not cover
            return (("D-14",), ("SE-10.13", "SE-8.2"))
        if kinds == {"yield_not_supported"}:
            return (("SE-4.1",),)
        if kinds == {"not_disposed"}:
            return (("D-19",), ("SD-3",))
        if kinds == {"closed"}:
            return _CLOSED
        return ()
    if kind == "waiter":
        if fields.get("error") == "not_disposed":
            return (("D-19",), ("SD-3",))
        if "abandoned" in fields or "cancelled" in fields:
            return (("D-20",), ("SD-5",))
        return (("SD-3", "SD-5"),)
    if kind == "status":
        statuses = set(fields.get("works", {}).values())
        tiers = TIERS["status"]
        if "cancelled" in statuses:
            tiers += _CANCELLED
        if "rejected" in statuses:
            tiers += _CLOSED + _CAPACITY
        if "failed" in statuses:
            tiers += (("D-11", "D-21"),)
        return tiers + _STATUS_LAST
    return TIERS.get(kind, ())


def candidates(kind: str, fields: Mapping[str, Any], case_rules: Sequence[str]
               ) -> tuple[str, ...]:
    """The case rules the check observes (module docstring): one rule, several that are
    the same observation, or none when its kind tells none of the case's rules apart."""
    for tier in _tiers(kind, fields):
        found = tuple(r for r in case_rules if r in tier)
        if found:
            return found
    return ()
