"""The replay engine: a report of what a runtime did, replayed through the core over
every state the runtime may be in.

Theory of operation
===================

A checker replays a runtime's report through ``QueueCore`` transitions: each reported
step becomes a transition (or a few), applied to the state the replay has reached; the
report is wrong at the first step the core refuses. A *world* is one such state (the
checker decides what it holds: one core and its records, or every queue of a case). The
engine knows nothing of reports: it keeps the set of worlds and advances them by steps
the checker gives as functions of a world (changing it, or raising an error the engine
counts as *illegal*).

When the report shows every core step (a trace: ``zlink_model.replay``), there is one
world and nothing to choose: each step changes it in place. When the report leaves some
core steps out (the conformance kit's wire log does not show a work moving between two
queues, a resume permit being queued, a session placing its final work), the checker
names those *hidden steps* (``hidden(world)``: the steps enabled in a world), and the
engine keeps every world they can reach:

* ``closure`` adds, to the current worlds, every world reachable by hidden steps (each
  applied to a copy; a hidden step that raises an illegal error is not enabled there).
  Worlds with the same ``key()`` count once. Past ``max_worlds`` worlds the engine stops
  with ``UndecidedError``: it does not guess.
* ``advance(step)`` applies an observed step to every world of the closure and keeps the
  worlds in which it is legal. When none is left the step diverges: the engine returns
  each world's error, for the checker to explain, and the report is judged there.
* ``restrict(check)`` keeps the worlds of the closure in which ``check`` (which changes
  nothing) finds no error, with the same verdict when none is left; ``keep`` limits the
  closure first (e.g. to the worlds in which no hidden step is still pending).

The one-world replay and the many-world replay are the same code: with no hidden steps
the closure of one world is that world, and a step with one candidate world is applied
to it directly (it is copied first only when there are several: a failed step ends the
replay, so nothing needs a world as it was; a checker that tries alternatives from the
same worlds takes ``fork()`` first). Keys are computed only when there is something to
compare.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Final, Generic, Protocol, Self, TypeVar

__all__ = ["MAX_WORLDS", "Failure", "ReplayEngine", "UndecidedError", "World"]

MAX_WORLDS: Final = 4096
"""Worlds past which ``ReplayEngine`` stops judging (``UndecidedError``)."""


class World(Protocol):
    """What the engine needs of a world: an independent copy, and a key that tells two
    worlds apart (equal keys: the same possible state)."""

    def copy(self) -> Self:
        """A copy that evolves independently."""
        ...

    def key(self) -> Hashable:
        """Equal for worlds that are the same possible state."""
        ...


W = TypeVar("W", bound=World)

Step = Callable[[W], object]
"""A step: changes the world it is given, or raises one of the engine's illegal errors."""

Failure = tuple[W, BaseException]
"""A world in which a step was illegal, and the error it raised there."""


class UndecidedError(Exception):
    """The worlds multiplied past the engine's limit: the replay stops judging."""


class ReplayEngine(Generic[W]):
    """A set of possible worlds, advanced by observed steps (see the module's theory).

    ``hidden`` lists the hidden steps enabled in a world (None: the report shows every
    step). ``illegal`` are the errors that make a step illegal in a world; any other
    error propagates. ``peak`` is the largest closure so far (what ``max_worlds``
    bounds)."""

    __slots__ = ("hidden", "illegal", "max_worlds", "peak", "worlds")

    def __init__(self, world: W, *,
                 hidden: Callable[[W], Iterable[Step[W]]] | None = None,
                 illegal: tuple[type[BaseException], ...],
                 max_worlds: int = MAX_WORLDS) -> None:
        self.worlds: list[W] = [world]
        self.hidden = hidden
        self.illegal = illegal
        self.max_worlds = max_worlds
        self.peak = 1

    def fork(self) -> list[W]:
        """Copies of the current worlds, to restore ``worlds`` from after trying a
        branch (``advance`` may change a lone world in place)."""
        return [w.copy() for w in self.worlds]

    def closure(self, keep: Callable[[W], bool] | None = None) -> list[W]:
        """The current worlds and every world reachable from them by hidden steps, each
        once; with ``keep``, only the worlds for which it is true. Raises
        ``UndecidedError`` past ``max_worlds``."""
        worlds = self.worlds
        hidden = self.hidden
        if hidden is None and len(worlds) == 1:
            out = list(worlds)  # one world, nothing hidden: nothing to compare
        else:
            illegal = self.illegal
            seen: dict[Hashable, W] = {}
            frontier: list[W] = []
            for w in worlds:
                k = w.key()
                if k not in seen:
                    seen[k] = w
                    frontier.append(w)
            while frontier and hidden is not None:
                world = frontier.pop()
                for step in hidden(world):
                    nxt = world.copy()
                    try:
                        step(nxt)
                    except illegal:
                        continue
                    k = nxt.key()
                    if k not in seen:
                        seen[k] = nxt
                        frontier.append(nxt)
                        if len(seen) > self.max_worlds:
                            raise UndecidedError(f"more than {self.max_worlds} possible states")
            out = list(seen.values())
        if keep is not None:
            out = [w for w in out if keep(w)]
        self.peak = max(self.peak, len(out))
        return out

    def advance(self, step: Step[W]) -> list[Failure[W]]:
        """Apply an observed step to every world of the closure and keep those in which
        it is legal (each distinct state once). Returns [] when some world is left;
        otherwise every candidate world with its error, in closure order, and the
        worlds stay as they were (a lone world, and a world the closure made, may have
        been changed in place by the step that failed there)."""
        worlds = self.worlds
        if self.hidden is None and len(worlds) == 1:
            # A trace's replay: the closure is this world (see ``closure``), and the
            # step changes it in place; the general loop below would do the same with
            # a list, a set and a peak update per event.
            world = worlds[0]
            try:
                step(world)
            except self.illegal as exc:
                return [(world, exc)]
            return []
        candidates = self.closure()
        single = len(candidates) == 1
        # Only the current worlds need a copy to stay as they were: a world the closure
        # made by a hidden step is nobody else's, so the step may change it in place
        # (most of a replay's copies were of those).
        current = {id(w) for w in worlds}
        illegal = self.illegal
        survivors: list[W] = []
        failures: list[Failure[W]] = []
        seen: set[Hashable] = set()
        for world in candidates:
            nxt = world if single or id(world) not in current else world.copy()
            try:
                step(nxt)
            except illegal as exc:
                failures.append((world, exc))
                continue
            if not single:
                k = nxt.key()
                if k in seen:
                    continue
                seen.add(k)
            survivors.append(nxt)
        if not survivors:
            return failures
        self.worlds = survivors
        return []

    def restrict(self, check: Step[W], keep: Callable[[W], bool] | None = None
                 ) -> list[Failure[W]]:
        """Keep the worlds of the closure (limited by ``keep``) in which ``check``, which
        must not change a world, raises no illegal error. Returns the failures when
        none is left (the worlds then stay as they were), else []."""
        survivors: list[W] = []
        failures: list[Failure[W]] = []
        for world in self.closure(keep):
            try:
                check(world)
            except self.illegal as exc:
                failures.append((world, exc))
                continue
            survivors.append(world)
        if not survivors:
            return failures
        self.worlds = survivors
        return []

    def replace(self, worlds: Sequence[W]) -> None:
        """Set the current worlds (after trying branches, or to start over)."""
        self.worlds = list(worlds)
