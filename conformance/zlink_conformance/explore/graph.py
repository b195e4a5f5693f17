"""The ``graph`` strategy: walk the model's bounded state graph and drive the adapter
along paths that cover every transition the protocol can bring about, as Mocket does
with TLC's graph.

The graph is the ci profile's ``SerialQueue`` run (``zlink_model.statespace``: 12,817
states, 35,466 transitions, TLC's own counts), one bare queue with four works of three
lanes, two submitters, capacities, a burst limit, a time budget and close. Its actions
fall in two kinds:

- the **environment's**, which a protocol command or script op brings about: ``Admit``
  and ``Reject`` (a ``submit``), ``Finish`` and ``YieldTurn`` (a work held at a gate is
  let go, and its script ends or makes a call), ``CallReturns`` (``complete``),
  ``BudgetExpires`` (``advance`` by the budget while a work holds the turn) and ``Close``;
- the **runtime's**, which it takes alone and at once: ``EnterDrain``, ``TakeNext``,
  ``EndSlice``, ``ExitDrain`` and ``Requeue``.

A state in which no runtime action is enabled is one the runtime *rests* in: after a
``settle`` it is there, and stays there until the next command. A *move* is one
environment transition from a resting state, followed by the runtime's transitions until
it rests again (in every resting state the graph reaches, that chain is unique: exactly
one runtime action is enabled at each of its states, which ``_Walk`` checks). Each move
is one command and a ``settle``; every transition of a move is one the protocol brings
about on any adapter that keeps the settle contract. A transition out of a state the
runtime does not rest in (an admission between the drain being scheduled and entered, a
step between two turns, anything between a call's return and its requeue) is an
interleaving the runtime decides alone: it is listed with that reason, never driven.

Paths are chosen so that every move is taken at least once: for each move not yet taken,
the shortest walk of moves from the initial state to its source, the move, then moves
not yet taken from there for as long as there are some and the path is shorter than
``max_steps``. Each path is a scenario: the queue with the run's policy, every work's
script made from the turns the path gives it (a gate at the start of each turn, then a
``call`` if the turn ends in a yield), and one command and one ``settle`` a move.

**Held steps.** An adapter that declares ``held_steps`` (specs/adapter-protocol.md,
"Held steps") offers a queue whose runtime takes none of its own steps until a ``step``
command names one. Then every state of the graph is one the runtime rests in, every
transition is a move of its own (a runtime action is a ``step`` command: EnterDrain
``enter_drain``, TakeNext ``take_next``, EndSlice ``end_slice``, ExitDrain ``exit_drain``,
Requeue ``requeue`` of the work), and the walk reaches the whole graph, past the bound
of a runtime driven from outside (``_Walk._ceiling``), which the coverage still prints.
A held path ends where every work it admitted has ended and the drain is idle, so it
needs no releasing tail (which a held runtime would not act on); a ``settle`` follows
only the moves after which the runtime's loop has work of its own (a turn taken, a
requeue, a gate opened), and comes before each ``close``.

The log of each scenario is judged by the oracle like every scenario; then its events
(``accepted``, ``rejected``, ``started``, ``resumed``, ``yielded``, ``finished``) are
compared with the path's: the moves before the first difference are *driven* (a move
with no event of its own, a call's return say, counts when no event before it differed),
and the first difference is reported with the model state where code and model part
(a command the adapter refused, a held step not enabled in its state, say, is the
difference at its move).
"""

from __future__ import annotations

import collections
import dataclasses
import functools
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from zlink_model.statespace import BUDGET_MS, SERIAL_QUEUE_CI, Graph, State, graph
from zlink_model.vocabulary import HELD_STEPS, tla_actions

from ..catalog import needed_capabilities
from ..oracle.log import CaseLog
from ..protocol.wire import CLOSE_COMMAND
from .generate import Declared
from .scenario import Scenario

__all__ = ["GraphCoverage", "GraphStrategy"]

RUNTIME_ACTIONS: Final = ("EnterDrain", "TakeNext", "EndSlice", "ExitDrain", "Requeue")
# Why a state the runtime does not rest in is left at once, by the runtime action enabled.
_TRANSIENT: Final[Mapping[str, str]] = {
    "Requeue": "a call has returned and its work is not requeued yet: the runtime "
               "requeues it at once",
    "EnterDrain": "the drain is scheduled and not yet entered: the runtime enters it at "
                  "once",
    "TakeNext": "between two turns of a drain: the runtime takes the next turn at once",
    "EndSlice": "between two turns of a drain whose budget is spent: the runtime ends "
                "the slice at once",
    "ExitDrain": "between the last turn of a drain and its end: the runtime leaves the "
                 "drain at once",
}
_UNREACHED: Final = ("its source state is reached only through one of the interleavings "
                     "the runtime decides alone (no path of moves from a resting state "
                     "leads there)")
# The runtime actions enabled only between two turns of a drain: a runtime driven from
# outside never rests there, however finely its adapter holds it between commands.
_BETWEEN_TURNS: Final = frozenset({"TakeNext", "EndSlice", "ExitDrain"})
_QUEUE: Final = "Q"
# The held moves after which the runtime's loop has work of its own to do before the
# next command (a work's code runs on the turn taken, to its gate, call or end; a
# requeue happens in the work's task): a settle waits for it. Every other held move
# (a submission, a call's return, a clock move, a close, a drain step with no work to
# run) is done when its command is answered.
_SETTLED: Final = frozenset({"TakeNext", "Requeue", "Finish", "YieldTurn"})
# A held path ends where every work it admitted has ended: each phase one of these.
_AT_HOME: Final = frozenset({"new", "done", "rejected"})
# How far a held path looks for a move not taken yet before it heads home.
_SEARCH: Final = 4
# The wire events of the graph's actions, from the vocabulary's rows (TLA+ action name ->
# row): the first of each row's events is the one a path shows (an admission's
# ``accepted``, a finish's ``finished``, a take's ``started``; a take of a resume permit
# shows the second, ``resumed``).
_ROW: Final = {row.action: row for row in tla_actions("SerialQueue").values()}
_EVENT_OF: Final[Mapping[str, str]] = {
    action: _ROW[action].wire[0] for action in ("Admit", "Reject", "YieldTurn", "Finish")}
_STARTED, _RESUMED = _ROW["TakeNext"].wire
_WATCHED: Final = frozenset({*_EVENT_OF.values(), _STARTED, _RESUMED})
# A held runtime's own steps, as the step command names them: the core transition of
# each action's row (the vocabulary's HELD_STEPS).
_STEP_OF: Final[Mapping[str, str]] = {action: _ROW[action].event
                                      for action in RUNTIME_ACTIONS}
assert set(_STEP_OF.values()) == set(HELD_STEPS)


def _kind(action: str) -> str:
    return action.split("(", 1)[0]


@dataclasses.dataclass(frozen=True, slots=True)
class _Move:
    """One environment transition from a resting state and the runtime's chain after it."""

    action: str
    source: int
    target: int
    steps: tuple[int, ...]  # indices into Graph.steps, the environment's first


class _Walk:
    """The graph cut into moves, and the paths that cover them. ``held``: the adapter
    holds its runtime's own steps (capability ``held_steps``), so every state is one it
    rests in and every transition is a move of its own, the runtime's included."""

    def __init__(self, g: Graph, allowed: frozenset[str], held: bool = False) -> None:
        self.g = g
        self.held = held
        out: dict[int, list[int]] = collections.defaultdict(list)
        for i, (src, _action, _dst) in enumerate(g.steps):
            out[src].append(i)
        self.out = out
        self.resting = set(range(len(g.states))) if held else {
            s for s in range(len(g.states)) if not self._runtime(s)}
        self.moves: list[_Move] = []
        self.moves_from: dict[int, list[int]] = collections.defaultdict(list)
        self.visited: set[int] = {0}  # states some move passes through
        seen = {0}
        todo = [0]
        while todo:
            here = todo.pop()
            for i in out[here]:
                action = g.steps[i][1]
                if (_kind(action) in RUNTIME_ACTIONS and not held) \
                        or _kind(action) not in allowed:
                    continue
                steps = [i]
                state = g.steps[i][2]
                while state not in self.resting:
                    self.visited.add(state)
                    chain = self._runtime(state)
                    if len(chain) != 1:
                        raise AssertionError(f"state {state}: {len(chain)} runtime actions "
                                             "enabled in a chain; a move would not be "
                                             "the protocol's to choose")
                    steps.append(chain[0])
                    state = g.steps[chain[0]][2]
                self.moves_from[here].append(len(self.moves))
                self.moves.append(_Move(action, here, state, tuple(steps)))
                if state not in seen:
                    seen.add(state)
                    todo.append(state)
        self.visited |= seen
        self.drivable = frozenset(i for m in self.moves for i in m.steps)
        self.ceiling = self._ceiling()

    def _runtime(self, state: int) -> list[int]:
        return [i for i in self.out[state] if _kind(self.g.steps[i][1]) in RUNTIME_ACTIONS]

    def _ceiling(self) -> frozenset[int]:
        """The transitions any runtime driven from outside could be brought to take.

        A runtime held as finely as an adapter can hold it (after every command, before
        its drain is entered, before a returned call is requeued) still runs the turns of
        one drain back to back: no command comes between two of them. So the bound is
        what is reachable from Init with every environment transition out of a state
        between two turns removed; the rest of the graph is out of reach of any
        protocol, not of this one only.
        """
        steps = self.g.steps
        reached: set[int] = set()
        seen = {0}
        todo = [0]
        while todo:
            here = todo.pop()
            between = any(_kind(steps[i][1]) in _BETWEEN_TURNS for i in self.out[here])
            for i in self.out[here]:
                if between and _kind(steps[i][1]) not in RUNTIME_ACTIONS:
                    continue
                reached.add(i)
                if steps[i][2] not in seen:
                    seen.add(steps[i][2])
                    todo.append(steps[i][2])
        return frozenset(reached)

    def reason(self, step: int, allowed: frozenset[str], missing: Mapping[str, str]) -> str:
        """Why a transition no move takes is out of the protocol's reach."""
        src, action, _ = self.g.steps[step]
        if _kind(action) not in allowed and _kind(action) not in RUNTIME_ACTIONS:
            return missing.get(_kind(action), "not declared by the adapter")
        if src not in self.visited:
            return _UNREACHED
        for name in RUNTIME_ACTIONS:
            if any(_kind(self.g.steps[i][1]) == name for i in self.out[src]):
                return _TRANSIENT[name]
        return _UNREACHED

    def _tree(self) -> dict[int, int]:
        """State -> the move that first reaches it from Init, breadth first (-1: Init)."""
        parent: dict[int, int] = {0: -1}
        frontier = collections.deque([0])
        while frontier:
            here = frontier.popleft()
            for m in self.moves_from[here]:
                there = self.moves[m].target
                if there not in parent:
                    parent[there] = m
                    frontier.append(there)
        return parent

    def paths(self, max_steps: int) -> list[list[int]]:
        """Paths of moves from the initial state that take every move at least once."""
        if self.held:
            return self._held_paths(max_steps)
        parent = self._tree()
        taken: set[int] = set()
        out: list[list[int]] = []
        for first in range(len(self.moves)):
            if first in taken:
                continue
            prefix: list[int] = []
            state = self.moves[first].source
            while parent[state] != -1:
                prefix.append(parent[state])
                state = self.moves[parent[state]].source
            path = [*reversed(prefix), first]
            here = self.moves[first].target
            while len(path) < max_steps:
                fresh = [m for m in self.moves_from[here] if m not in taken and m not in path]
                if not fresh:
                    break
                path.append(fresh[0])
                here = self.moves[fresh[0]].target
            taken.update(path)
            out.append(path)
        return out


    def _held_paths(self, max_steps: int) -> list[list[int]]:
        """Paths for a held runtime, each from Init to a state where no accepted work is
        live and the drain is idle, so that every work a path admits ends on it and the
        scenario needs no releasing tail (a held runtime would not take the steps a tail
        leaves to it). For each move not taken yet: the shortest walk to its source, the
        move, then moves not taken yet (from where the path is, or a few moves on) until
        the path has ``max_steps`` moves, then the shortest way home, taking moves not
        taken yet where they lead as close."""
        parent = self.tree = self._tree()
        moves = self.moves
        home = self.home = self._home()
        taken = bytearray(len(moves))
        fresh = [0] * len(self.g.states)  # state -> moves out of it not taken yet
        for move in moves:
            fresh[move.source] += 1

        def take(m: int) -> None:
            if not taken[m]:
                taken[m] = 1
                fresh[moves[m].source] -= 1

        out: list[list[int]] = []
        # the moves in the graph's breadth-first order: the shallow ones first, whose
        # paths then go on deeper through moves not taken yet
        for first in sorted(range(len(moves)), key=lambda m: moves[m].steps[0]):
            if taken[first]:
                continue
            prefix: list[int] = []
            state = moves[first].source
            while parent[state] != -1:
                prefix.append(parent[state])
                state = moves[parent[state]].source
            path = [*reversed(prefix), first]
            for m in path:
                take(m)
            here = moves[first].target
            while len(path) < max_steps:
                step = next((m for m in self.moves_from[here] if not taken[m]), None)
                route = [step] if step is not None else self._towards_fresh(here, fresh)
                if not route:
                    break
                for m in route:
                    path.append(m)
                    take(m)
                here = moves[route[-1]].target
            while home[here][0]:
                near = home[here][0]
                m = next((m for m in self.moves_from[here] if not taken[m]
                          and home[moves[m].target][0] < near), home[here][1])
                path.append(m)
                take(m)
                here = moves[m].target
            out.append(path)
        return out

    def through(self, m: int) -> list[int]:
        """The shortest held path through move ``m``: the shortest walk of moves from
        Init to its source, the move, and the shortest way home from its target (after
        ``paths``)."""
        prefix: list[int] = []
        state = self.moves[m].source
        while self.tree[state] != -1:
            prefix.append(self.tree[state])
            state = self.moves[self.tree[state]].source
        path = [*reversed(prefix), m]
        here = self.moves[m].target
        while self.home[here][0]:
            path.append(self.home[here][1])
            here = self.moves[path[-1]].target
        return path

    def _home(self) -> dict[int, tuple[int, int]]:
        """State -> (moves to the nearest state where no accepted work is live and the
        drain is idle, the first of them); every state of the graph has a way there."""
        states = self.g.states
        into: dict[int, list[int]] = collections.defaultdict(list)
        for m, move in enumerate(self.moves):
            into[move.target].append(m)
        home: dict[int, tuple[int, int]] = {}
        frontier: collections.deque[int] = collections.deque()
        for s in self.visited:
            st = states[s]
            if not st.draining and not st.drain_scheduled \
                    and all(p in _AT_HOME for p in st.phase):
                home[s] = (0, -1)
                frontier.append(s)
        while frontier:
            here = frontier.popleft()
            for m in into[here]:
                src = self.moves[m].source
                if src not in home:
                    home[src] = (home[here][0] + 1, m)
                    frontier.append(src)
        lost = self.visited - set(home)
        if lost:
            raise AssertionError(f"{len(lost)} state(s) have no way to a quiet state")
        return home

    def _towards_fresh(self, here: int, fresh: list[int]) -> list[int]:
        """The shortest walk (at most a few moves) to a state with a move not taken yet."""
        seen: dict[int, int] = {here: -1}
        frontier = collections.deque([(here, 0)])
        while frontier:
            state, depth = frontier.popleft()
            if fresh[state] and state != here:
                route = []
                while seen[state] != -1:
                    route.append(seen[state])
                    state = self.moves[seen[state]].source
                return route[::-1]
            if depth >= _SEARCH:
                continue
            for m in self.moves_from[state]:
                there = self.moves[m].target
                if there not in seen:
                    seen[there] = m
                    frontier.append((there, depth + 1))
        return []


class GraphCoverage:
    """The fraction of the graph's transitions driven, and why the rest were not."""

    def __init__(self, walk: _Walk | None, allowed: frozenset[str],
                 missing: Mapping[str, str], unavailable: str | None) -> None:
        self.walk = walk
        self.allowed = allowed
        self.missing = missing
        self.unavailable = unavailable
        self.driven: set[int] = set()
        self.parted: list[tuple[int, str]] = []  # (scenario, where code and model part)

    @property
    def total(self) -> int:
        return len(self.walk.g.steps) if self.walk else len(_ci_graph().steps)

    def not_drivable(self) -> dict[str, list[int]]:
        """Reason -> the transitions it keeps out of reach."""
        out: dict[str, list[int]] = collections.defaultdict(list)
        if self.walk is None:
            out[self.unavailable or "no plan"] = list(range(self.total))
            return out
        for i in range(self.total):
            if i not in self.walk.drivable:
                out[self.walk.reason(i, self.allowed, self.missing)].append(i)
        return out

    def report(self) -> dict[str, Any]:
        """The JSON form: counts, and every transition out of reach by reason."""
        g = self.walk.g if self.walk else _ci_graph()
        drivable = len(self.walk.drivable) if self.walk else 0
        return {
            "graph": "SerialQueue (ci profile)", "states": len(g.states),
            "transitions": self.total, "drivable": drivable,
            "driven": len(self.driven),
            "driven_of_drivable": round(len(self.driven) / drivable, 4) if drivable else 0.0,
            "driven_of_all": round(len(self.driven) / self.total, 4),
            "reachable_from_outside": len(self.walk.ceiling) if self.walk else 0,
            "held_steps": bool(self.walk and self.walk.held),
            "drivable_not_driven": sorted(
                f"{g.steps[i][0]}:{g.steps[i][1]}" for i in
                (self.walk.drivable - self.driven if self.walk else ())),
            "not_drivable": {why: [f"{g.steps[i][0]}:{g.steps[i][1]}" for i in steps]
                             for why, steps in self.not_drivable().items()},
            "left_the_path": [{"scenario": n, "where": w} for n, w in self.parted],
        }

    def lines(self) -> list[str]:
        """The printed form: driven over drivable and over all, the rest by reason."""
        g = self.walk.g if self.walk else _ci_graph()
        drivable = self.walk.drivable if self.walk else frozenset()
        n = len(self.driven)
        out = [f"graph transitions (SerialQueue, ci profile: {len(g.states):,} states, "
               f"{self.total:,} transitions): {n:,} driven = "
               f"{_pct(n, len(drivable))} of the {len(drivable):,} the protocol can bring "
               f"about, {_pct(n, self.total)} of all"]
        if self.walk and self.walk.held:
            bound = len(self.walk.ceiling)
            out.append(f"  held steps (capability held_steps): the runtime's own steps "
                       f"were commands too; without them at most {bound:,} "
                       f"({_pct(bound, self.total)} of all) can be reached by driving any "
                       f"runtime from outside, and {n:,} driven is "
                       f"{_pct(n, bound)} of that bound")
        elif self.walk:
            bound = len(self.walk.ceiling)
            out.append(f"  at most {bound:,} ({_pct(bound, self.total)} of all) can be "
                       "reached by driving any runtime from outside, however finely held: "
                       "no command comes between two turns of one drain")
        left = sorted(drivable - self.driven)
        if left:
            shown = ", ".join(f"{g.steps[i][1]} from state {g.steps[i][0]}" for i in left[:5])
            out.append(f"  NOT driven although the protocol can: {len(left):,} ({shown}"
                       f"{', ...' if len(left) > 5 else ''})")
        for why, steps in sorted(self.not_drivable().items(), key=lambda kv: -len(kv[1])):
            kinds = collections.Counter(_kind(g.steps[i][1]) for i in steps)
            out.append(f"  out of the protocol's reach: {len(steps):,} ({why}): "
                       + ", ".join(f"{k} {v}" for k, v in kinds.most_common()))
        if self.parted:
            out.append(f"  {len(self.parted)} scenario(s) left their path; first: scenario "
                       f"{self.parted[0][0]}: {self.parted[0][1]}")
        return out


def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "0 %"


@functools.cache
def _ci_graph() -> Graph:
    """The ci profile's SerialQueue graph (about a second to enumerate), made once."""
    return graph(SERIAL_QUEUE_CI)


@functools.cache
def _walk(allowed: frozenset[str], held: bool = False) -> _Walk:
    """The moves of the ci graph with the actions ``allowed`` (made once)."""
    return _Walk(_ci_graph(), allowed, held)


@functools.cache
def _paths(allowed: frozenset[str], max_steps: int, held: bool = False
           ) -> tuple[list[int], ...]:
    """The paths over those moves (made once; each strategy copies the list)."""
    return tuple(_walk(allowed, held).paths(max_steps))


class GraphStrategy:
    """Scenarios that walk the bounded graph (see the module docstring)."""

    name = "graph"

    def __init__(self, declared: Declared, seed: int, max_steps: int = 24) -> None:
        self.seed = seed
        self.max_steps = max(1, max_steps)
        self.bounds = SERIAL_QUEUE_CI
        self.g = _ci_graph()
        self.allowed, missing, unavailable = self._reach(declared)
        # Capability held_steps: the runtime's own steps are commands too, so the walk
        # can stand in every state of the graph.
        self.held = unavailable is None and "held_steps" in declared.capabilities
        if self.held:
            self.allowed = self.allowed | frozenset(RUNTIME_ACTIONS)
        self.walk = _walk(self.allowed, self.held) if unavailable is None else None
        self.coverage = GraphCoverage(self.walk, self.allowed, missing, unavailable)
        self.paths = list(_paths(self.allowed, self.max_steps, self.held)) \
            if self.walk else []

    @property
    def unavailable(self) -> str | None:
        """Why no scenario can be made (None when there are paths to drive)."""
        return self.coverage.unavailable

    def _reach(self, declared: Declared) -> tuple[frozenset[str], dict[str, str], str | None]:
        """The environment actions the adapter's declarations let a scenario bring about,
        why each other one is out of reach, and why nothing is (if so)."""
        if not any(k.type == "queue" for k in declared.kinds):
            return frozenset(), {}, ("the adapter declares no bare queue (capability "
                                     "queue): the graph is one queue's")
        entries = declared.entries.get("queue", ())
        lacking = sorted({self._entry(w) for w in self.bounds.works} - set(entries))
        fields = sorted(set(self._policy()) - set(declared.policy_fields))
        if lacking or fields:
            return frozenset(), {}, ("the graph's works and bounds need "
                                     + ", ".join([*(f"entry {e}" for e in lacking),
                                                  *(f"policy field {f}" for f in fields)])
                                     + ", which the adapter does not offer")
        caps = declared.capabilities
        samples: Mapping[str, list[dict[str, Any]]] = {
            "YieldTurn": [self._create(), {"cmd": "submit", "target": _QUEUE, "work": "w",
                                           "entry": "enqueue",
                                           "script": [{"op": "call", "call": "c"}]}],
            "BudgetExpires": [{"cmd": "advance", "ms": BUDGET_MS}],
            "Close": [self._create(), {"cmd": "settle"},
                      {"cmd": CLOSE_COMMAND, "target": _QUEUE}],
        }
        allowed = {"Admit", "Reject", "Finish", "CallReturns", "Terminated"}
        missing: dict[str, str] = {}
        for action, steps in samples.items():
            needs = [c for c in needed_capabilities(steps) if c not in caps]
            if needs:
                missing[action] = (f"needs capability {', '.join(needs)}, which the adapter "
                                   "does not declare")
            else:
                allowed.add(action)
        if "YieldTurn" not in allowed:
            allowed.discard("CallReturns")
        return frozenset(allowed), missing, None

    # ------------------------------------------------------------ scenarios
    def _entry(self, w: int) -> str:
        lane = self.bounds.lane[w]
        if lane == "life":
            return "enqueue_lifecycle"
        if lane == "barrier":
            return "enqueue_barrier_next"
        return "enqueue_with_payload_bytes" if self.bounds.payload[w] else "enqueue"

    def _policy(self) -> dict[str, int]:
        b = self.bounds
        return {"application_message_capacity": b.app_count_cap,
                "application_byte_capacity": b.app_byte_cap,
                "lifecycle_message_capacity": b.life_count_cap,
                "lifecycle_byte_capacity": b.life_byte_cap,
                "fixed_work_byte_cost": b.fixed_cost,
                "lifecycle_burst_limit": b.burst_limit,
                "owner_time_budget_ms": BUDGET_MS}

    def _create(self) -> dict[str, Any]:
        create: dict[str, Any] = {"cmd": "create", "target": _QUEUE, "type": "queue",
                                  "policy": self._policy()}
        if getattr(self, "held", False):
            create["held"] = True
        return create

    def shorter(self, scenario: Scenario) -> list[Scenario]:
        """Shorter model paths to try in place of a failing held path, shortest first:
        for each of its moves, the shortest path through it (``_Walk.through``). Each is a
        path of the model, so every step it asks for is enabled on a runtime that
        follows the model: the shrinker of a held scenario (which cannot drop commands)
        keeps the shortest that still fails the same way."""
        if not self.held or self.walk is None or scenario.index >= len(self.paths):
            return []
        path = self.paths[scenario.index]
        found = {tuple(self.walk.through(m)) for m in path}
        return [Scenario(self._body(p), self.seed, scenario.index, self.name)
                for p in sorted(found, key=lambda p: (len(p), p)) if len(p) < len(path)]

    def scenario(self, index: int) -> Scenario | None:
        """Path ``index`` as a scenario; None past the last path."""
        if index >= len(self.paths):
            return None
        return Scenario(self._body(self.paths[index]), self.seed, index, self.name)

    def _turns(self, path: Sequence[int]) -> dict[int, list[str]]:
        """Work -> how each of its turns on the path ends ("call", "end", or "" when
        the path stops while the work holds the turn)."""
        turns: dict[int, list[str]] = collections.defaultdict(list)
        for m in path:
            for i in self.walk.moves[m].steps if self.walk else ():
                src, action, dst = self.g.steps[i]
                kind = _kind(action)
                if kind == "TakeNext":
                    turns[self.g.states[dst].current].append("")
                elif kind in ("YieldTurn", "Finish"):
                    w = self.g.states[src].current
                    turns[w][-1] = "call" if kind == "YieldTurn" else "end"
        return turns

    def _body(self, path: Sequence[int], at: list[int] | None = None
              ) -> list[dict[str, Any]]:
        """The scenario of ``path``; ``at`` (if given) gets, for each command, the
        number of the move it belongs to (-1 before the first)."""
        assert self.walk is not None
        turns = self._turns(path)
        scripts: dict[int, list[dict[str, Any]]] = {}
        for w in self.bounds.works:
            ops: list[dict[str, Any]] = []
            for k, end in enumerate(turns.get(w, [])):
                ops.append({"op": "gate", "gate": f"g{w}_{k}"})
                if end == "call":
                    ops.append({"op": "call", "call": f"c{w}_{k}"})
            scripts[w] = ops
        body: list[dict[str, Any]] = [self._create(), {"cmd": "settle"}]
        gate_turn: dict[int, int] = collections.Counter()  # work -> turns begun
        last_call: dict[int, str] = {}
        for n, m in enumerate(path):
            if at is not None:
                at.extend([n - 1] * (len(body) - len(at)))
            move = self.walk.moves[m]
            src = self.g.states[move.source]
            kind = _kind(move.action)
            if kind in ("Admit", "Reject"):
                submitter = move.action[len(kind) + 1:-1]
                w = next(x for x in self.bounds.script[submitter]
                         if src.phase[x - 1] == "new")
                sub: dict[str, Any] = {"cmd": "submit", "target": _QUEUE, "work": f"w{w}",
                                       "entry": self._entry(w), "script": scripts[w]}
                if self.bounds.payload[w]:
                    sub["payload_bytes"] = self.bounds.payload[w]
                body.append(sub)
            elif kind in ("Finish", "YieldTurn"):
                w = src.current
                k = gate_turn[w]
                body.append({"cmd": "open", "gate": f"g{w}_{k}"})
                gate_turn[w] = k + 1
                if kind == "YieldTurn":
                    last_call[w] = f"c{w}_{k}"
            elif kind == "CallReturns":
                w = int(move.action[len(kind) + 1:-1])
                body.append({"cmd": "complete", "call": last_call[w]})
            elif kind == "BudgetExpires":
                body.append({"cmd": "advance", "ms": BUDGET_MS})
            elif kind == "Close":
                if self.held and body[-1]["cmd"] != "settle":
                    body.append({"cmd": "settle"})  # a close comes after a settle
                body.append({"cmd": CLOSE_COMMAND, "target": _QUEUE})
            elif kind in _STEP_OF:
                step: dict[str, Any] = {"cmd": "step", "target": _QUEUE,
                                        "step": _STEP_OF[kind]}
                if kind == "Requeue":
                    step["work"] = f"w{move.action[len(kind) + 1:-1]}"
                body.append(step)
            else:  # Terminated: the run rests at its end; nothing to send
                continue
            if not self.held or kind in _SETTLED:
                body.append({"cmd": "settle"})
        if at is not None:
            at.extend([len(path) - 1] * (len(body) - len(at)))
        return body

    # ------------------------------------------------------------ judging the path
    def _expected(self, path: Sequence[int]) -> Iterator[tuple[int, int, tuple[str, str]]]:
        """(move number, step, (event, work)) of every event the path shows."""
        assert self.walk is not None
        started: set[int] = set()
        for n, m in enumerate(path):
            for i in self.walk.moves[m].steps:
                src, action, dst = self.g.steps[i]
                kind = _kind(action)
                if kind == "TakeNext":
                    w = self.g.states[dst].current
                    yield n, i, (_RESUMED if w in started else _STARTED, f"w{w}")
                    started.add(w)
                elif kind in ("Admit", "Reject"):
                    submitter = action[len(kind) + 1:-1]
                    w = next(x for x in self.bounds.script[submitter]
                             if self.g.states[src].phase[x - 1] == "new")
                    yield n, i, (_EVENT_OF[kind], f"w{w}")
                elif kind in ("YieldTurn", "Finish"):
                    yield n, i, (_EVENT_OF[kind], f"w{self.g.states[src].current}")

    def _refused(self, path: Sequence[int], log: CaseLog | None
                 ) -> tuple[int, str] | None:
        """(the move, the message) of the first command of ``path`` the adapter
        refused, if any."""
        found = _refused_command(log)
        if found is None:
            return None
        at: list[int] = []
        body = self._body(path, at)
        k, message = found
        if not 0 <= k < len(body) or at[k] < 0:
            return None
        return at[k], message

    def expected(self, index: int) -> list[tuple[str, str]]:
        """The events (name, work) path ``index`` shows, in order."""
        return [event for _, _, event in self._expected(self.paths[index])]

    def observe(self, scenario: Scenario, log: CaseLog | None) -> str | None:
        """Count the moves the log shows were driven; where code and model part, say so
        (None when the log follows the whole path)."""
        if self.walk is None or scenario.index >= len(self.paths):
            return None
        path = self.paths[scenario.index]
        seen = [(ev.name, ev.work or "") for _, ev in (log.events if log else [])
                if ev.name in _WATCHED]
        expected = list(self._expected(path))
        parted: str | None = None
        good_moves = len(path)
        refused = self._refused(path, log)
        if refused is not None:
            # a command the adapter refused (a held step not enabled in the runtime's
            # state, say): the moves before its own are all that can count
            n, message = refused
            expected = [e for e in expected if e[0] < n]
            good_moves = n
            step = self.walk.moves[path[n]].steps[0]
            parted = (f"move {n + 1} of {len(path)} ({self.walk.moves[path[n]].action}): "
                      f"the adapter refused its command ({message}); the model state "
                      f"there: {_describe(self.g.states[self.g.steps[step][0]])}")
        for k, (n, step, want) in enumerate(expected):
            got = seen[k] if k < len(seen) else None
            if got != want:
                good_moves = n
                state = self.g.states[self.g.steps[step][0]]
                parted = (f"move {n + 1} of {len(path)} ({self.walk.moves[path[n]].action}), "
                          f"at {self.g.steps[step][1]}: the model's next event is "
                          f"{want[0]}:{want[1]}, the runtime's "
                          f"{f'{got[0]}:{got[1]}' if got else 'none'}; the model state "
                          f"there: {_describe(state)}")
                break
        for m in path[:good_moves]:
            self.coverage.driven.update(self.walk.moves[m].steps)
        if parted is not None:
            self.coverage.parted.append((scenario.index, parted))
        return parted


def _refused_command(log: CaseLog | None) -> tuple[int, str] | None:
    """(the number of the scenario's command, the message) of the first command the
    adapter refused, counting from the scenario's first command (after the reset)."""
    if log is None:
        return None
    k = -2  # the reset that readies the adapter comes first
    for direction, msg in log.entries:
        if direction == "sent":
            k += 1
        elif msg.get("ok") is False and "re" in msg:
            error = msg.get("error") or {}
            return k, f"{error.get('kind')}: {error.get('message')}"
    return None


def _describe(s: State) -> str:
    """A model state in a line: the lines, the turn, the flags and the phases."""
    phases = " ".join(f"w{i + 1}={p}" for i, p in enumerate(s.phase))
    return (f"app={list(s.app)} life={list(s.life)} barrier={list(s.barrier)} "
            f"current={f'w{s.current}' if s.current else 'none'} streak={s.streak} "
            f"draining={s.draining} scheduled={s.drain_scheduled} closed={s.closed} "
            f"budget_used={s.budget_used} {phases}")
