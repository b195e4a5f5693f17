"""Named profiles and what a runtime's capabilities let it run.

A *profile* names the capabilities of a kind of runtime; ``--profile core`` keeps the
cases a runtime with only the basic serial guarantee can run: an Actor executor, a User
PerActor Spot and an Entry Spot whose works can wait synchronously for another work
(``synchronous_wait``, the ``wait_for`` op, which any runtime whose code can block on a
future offers), nothing more (no capacity policy beyond what those cases set, no virtual
clock, no Yield, no disposal, no lanes of its own, no reentrancy detection). Those cases
check per-owner FIFO, owners that are independent (more owners than a pool has threads,
each one parked), routing, capacities, closing, the drain that never runs on the
submitter's stack, and the self-wait SE-8.2 forbids to deadlock.

``coverage`` answers, for a handshake's capabilities, how many cases will run and what
each missing capability would add: the cases that need that one capability and no other
the runtime lacks.
"""

from __future__ import annotations

import collections
import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from typing import Final

from .catalog import Case

__all__ = ["PROFILES", "Coverage", "coverage", "in_profile"]

PROFILES: Final[Mapping[str, tuple[str, ...]]] = {
    "core": ("actor", "spot.user.per_actor", "spot.entry", "synchronous_wait"),
}


def in_profile(cases: Iterable[Case], profile: str) -> list[Case]:
    """The cases whose capabilities the profile has (``KeyError`` for an unknown name)."""
    have = set(PROFILES[profile])
    return [c for c in cases if set(c.capabilities) <= have]


@dataclasses.dataclass(frozen=True, slots=True)
class Coverage:
    """What a set of capabilities runs of a set of cases."""

    capabilities: tuple[str, ...]
    total: int
    runs: int
    runs_required: int
    required: int
    # missing capability -> (cases it alone would add, of which required), most first
    would_add: tuple[tuple[str, int, int], ...]
    need_several: int  # cases that need two or more missing capabilities

    def lines(self) -> list[str]:
        """The report ``list --capabilities`` prints."""
        caps = ", ".join(self.capabilities) or "none"
        out = [f"with capabilities {caps}: {self.runs} of {self.total} cases run "
               f"({self.runs_required} of {self.required} required)"]
        if self.would_add:
            out.append("each missing capability would add:")
            out += [f"  {cap:28s} +{n} ({req} required)" for cap, n, req in self.would_add]
        if self.need_several:
            out.append(f"  and {self.need_several} case(s) need two or more missing "
                       f"capabilities")
        return out


def coverage(cases: Sequence[Case], capabilities: Iterable[str]) -> Coverage:
    """How many of ``cases`` a runtime with ``capabilities`` runs, and what each missing
    capability would add."""
    have = tuple(dict.fromkeys(capabilities))
    runs = [c for c in cases if not c.missing(have)]
    adds: collections.Counter[str] = collections.Counter()
    adds_required: collections.Counter[str] = collections.Counter()
    several = 0
    for case in cases:
        missing = case.missing(have)
        if len(missing) == 1:
            adds[missing[0]] += 1
            adds_required[missing[0]] += case.required
        elif missing:
            several += 1
    order = sorted(adds, key=lambda cap: (-adds[cap], cap))
    return Coverage(have, len(cases), len(runs), sum(c.required for c in runs),
                    sum(c.required for c in cases),
                    tuple((cap, adds[cap], adds_required[cap]) for cap in order), several)
