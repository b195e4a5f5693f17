"""State-space agreement: a breadth-first enumeration of the pure core that reproduces TLC's
state counts for the SerialQueue runs of ``models/manifest.json``.

TLC explores ``models/SerialQueue.tla`` under the bounds of a run (``MCSerialQueue.tla``
and a ``.cfg``). This module explores the same space by driving ``QueueCore`` itself:
every state is an image of a core plus the model-only variables, every successor is
made by calling the core transition the TLA+ action names. If the core and the model
agree, the numbers of distinct states and of generated states equal TLC's; a transition
that does more, less or something else than its action changes the numbers (or is
caught earlier, when the core's verdict differs from the action's guard).

Abstraction function (core -> model state)
==========================================

The model files are read by ``zlink_tool.statespace`` (``load_bounds``);
this module is the enumeration itself, in the model package so that the conformance
kit's graph strategy walks the same graph (``zlink_conformance.explore.graph``).

A model state is the tuple of the 21 variables of ``SerialQueue.tla``, in this order:

=================================  =========================================================
variable                           taken from
=================================  =========================================================
``app``, ``life``, ``barrier``     ``QueueCore.app``, ``.life``, ``.barrier``: the model ids
                                   of the records in line, head first (``None`` is ``<<>>``)
``appCount``, ``appBytes``         ``.app_count``, ``.app_bytes``
``lifeCount``, ``lifeBytes``       ``.life_count``, ``.life_bytes``
``nextSeq``                        ``.next_seq``
``drainScheduled``, ``draining``   ``.drain_scheduled``, ``.draining``
``current``                        the model id of ``.current``, 0 for ``None``
``streak``                         ``.streak``
``closed``                         ``.closed``
``suspended``                      the model ids of ``.suspended_records()``
``phase[w]``                       ``WorkRecord.phase`` of a live record by name
                                   (``queued``, ``running``, ``suspended``, ``requeued``);
                                   ``done`` once finished; ``new`` and ``rejected`` are the
                                   environment's (not submitted yet, refused)
``wid[w]``, ``seq[w]``             ``WorkRecord.wid``, ``.seq`` while live, else -1
``resumes[w]``                     ``WorkRecord.resumes`` while live, else 0
``returned``, ``yields[w]``,       model-only (the environment): suspended works whose
``budgetUsed``                     external call returned; yields so far (0 once done);
                                   whether the slice's budget is used
=================================  =========================================================

``slice_started_at`` is not part of the image: the core reads time only to compare it
with the budget, so a state is explored with ``now`` equal to the slice's start when
``budgetUsed`` is FALSE and to start + budget when it is TRUE.

Concretization (model state -> core): a fresh ``QueueCore`` with the run's policy, one
record per live work with the fields above (``nbytes`` = payload + fixed cost, lane and
barrier from the work's lane), lines, counters and flags set from the image. Each
successor is the image of such a core after one transition.

Actions and their transitions: ``Admit(s)``/``Reject(s)`` call ``admit`` for the next work
of submitter ``s`` (the core decides which: accepted is Admit, a rejection is Reject;
the model's guard ``~closed /\\ Room(w)`` must give the same answer); ``EnterDrain``,
``TakeNext``, ``Finish(w)``, ``YieldTurn(w)``, ``Requeue(w)``, ``EndSlice``,
``ExitDrain`` and ``Close`` call the core method of that name; ``CallReturns(w)`` and
``BudgetExpires`` change only model-only variables; ``Terminated`` is a stuttering step.
An action is enabled when its guard (docs/models.md, "State-space agreement") holds;
for the part of a guard that is core state, the core is asked too, and must refuse the
transition exactly when the guard is false.

Counting as TLC does: distinct states are the images reached; generated states are 1
for the initial state plus, for every distinct state, one per enabled action instance
(``Terminated`` included).
"""

from __future__ import annotations

import dataclasses
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from functools import partial
from typing import Final

from .errors import ZLinkProtocolError, ZLinkRejectedError
from .invariants import check_core
from .policy import ZLinkExecutionLanePolicy
from .queue import (
    PHASE_NAMES,
    QUEUED,
    REQUEUED,
    RUNNING,
    SUSPENDED,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from .rules import APPLICATION_LANE, LIFECYCLE_LANE

__all__ = [
    "BUDGET_MS",
    "SERIAL_QUEUE_CI",
    "AgreementError",
    "Exploration",
    "Graph",
    "SerialQueueBounds",
    "State",
    "abstract",
    "concretize",
    "explore",
    "graph",
    "initial",
    "state_of",
]

BUDGET_MS: Final = 10  # any positive budget: only "used or not" matters


class AgreementError(AssertionError):
    """The core and the model disagree about a step (which transition is enabled, or
    what it does)."""


@dataclasses.dataclass(frozen=True)
class SerialQueueBounds:
    """The constants of one SerialQueue run (``MCSerialQueue.tla`` + its ``.cfg``)."""

    works: tuple[int, ...]
    lane: Mapping[int, str]  # "app", "life" or "barrier"
    payload: Mapping[int, int]
    max_yields: Mapping[int, int]
    script: Mapping[str, tuple[int, ...]]  # submitter -> its works, in order
    app_count_cap: int
    app_byte_cap: int
    life_count_cap: int
    life_byte_cap: int
    fixed_cost: int
    burst_limit: int
    close_allowed: bool

    def policy(self) -> ZLinkExecutionLanePolicy:
        """The core's policy for these bounds."""
        return ZLinkExecutionLanePolicy(
            application_message_capacity=self.app_count_cap,
            application_byte_capacity=self.app_byte_cap,
            lifecycle_message_capacity=self.life_count_cap,
            lifecycle_byte_capacity=self.life_byte_cap,
            fixed_work_byte_cost=self.fixed_cost,
            lifecycle_burst_limit=self.burst_limit,
            owner_time_budget_ms=BUDGET_MS,
        )


# --------------------------------------------------------------------- the states
@dataclasses.dataclass(frozen=True, slots=True)
class State:
    """One model state: the 21 variables of SerialQueue.tla (per-work ones as tuples
    indexed by work id - 1)."""

    app: tuple[int, ...]
    life: tuple[int, ...]
    barrier: tuple[int, ...]
    app_count: int
    app_bytes: int
    life_count: int
    life_bytes: int
    next_seq: int
    drain_scheduled: bool
    draining: bool
    current: int
    streak: int
    closed: bool
    suspended: frozenset[int]
    phase: tuple[str, ...]
    wid: tuple[int, ...]
    seq: tuple[int, ...]
    resumes: tuple[int, ...]
    returned: frozenset[int]
    yields: tuple[int, ...]
    budget_used: bool


class _Rec(WorkRecord):
    """A record that knows its model id."""

    __slots__ = ("mid",)

    def __init__(self, mid: int) -> None:
        super().__init__()
        self.mid = mid

    def place(self, wid: int, seq: int, lane: int, barrier: bool, nbytes: int, phase: int,
              resumes: int) -> None:
        """Set the core's fields as an image of the model says they are. The fields are
        read-only through their public names (SE-6.3), so a record of this class sets
        its own slots, as the core would have at insertion and since."""
        self._wid, self._seq, self._lane, self._barrier = wid, seq, lane, barrier
        self._nbytes, self._phase, self._resumes, self._zombie = nbytes, phase, resumes, False


_LIVE: Final = ("queued", "running", "suspended", "requeued")
_PHASE_CODE: Final = {"queued": QUEUED, "running": RUNNING, "suspended": SUSPENDED,
                      "requeued": REQUEUED}


def initial(bounds: SerialQueueBounds) -> State:
    """The model's Init."""
    n = len(bounds.works)
    return State((), (), (), 0, 0, 0, 0, 0, False, False, 0, 0, False, frozenset(),
                 ("new",) * n, (-1,) * n, (-1,) * n, (0,) * n, frozenset(), (0,) * n,
                 False)


def state_of(values: Mapping[str, object], bounds: SerialQueueBounds) -> State:
    """A model state from the values of SerialQueue.tla's variables by name (as
    ``zlink_tool.tla.counterexample`` reads them from TLC: sequences as tuples, sets as
    frozensets). Variables of a harness beyond the 21 are ignored."""
    n = len(bounds.works)

    def per_work(name: str) -> tuple[object, ...]:
        value = values[name]
        if isinstance(value, dict):
            value = tuple(value[w] for w in bounds.works)
        if not isinstance(value, tuple) or len(value) != n:
            raise ValueError(f"{name}: expected one value per work, got {value!r}")
        return value

    def ints(name: str) -> tuple[int, ...]:
        return tuple(int(str(v)) for v in per_work(name))

    def line(name: str) -> tuple[int, ...]:
        value = values[name]
        if not isinstance(value, tuple):
            raise ValueError(f"{name}: expected a sequence, got {value!r}")
        return tuple(int(str(v)) for v in value)

    def works(name: str) -> frozenset[int]:
        value = values[name]
        if not isinstance(value, frozenset):
            raise ValueError(f"{name}: expected a set, got {value!r}")
        return frozenset(int(str(v)) for v in value)

    def num(name: str) -> int:
        return int(str(values[name]))

    return State(
        line("app"), line("life"), line("barrier"), num("appCount"), num("appBytes"),
        num("lifeCount"), num("lifeBytes"), num("nextSeq"), values["drainScheduled"] is True,
        values["draining"] is True, num("current"), num("streak"), values["closed"] is True,
        works("suspended"), tuple(str(p) for p in per_work("phase")), ints("wid"),
        ints("seq"), ints("resumes"), works("returned"), ints("yields"),
        values["budgetUsed"] is True)


def concretize(state: State, bounds: SerialQueueBounds, config: QueueConfig
               ) -> tuple[QueueCore[_Rec], dict[int, _Rec]]:
    """A core in the image's state, and its records by model id."""
    core: QueueCore[_Rec] = QueueCore(config, "q")
    recs: dict[int, _Rec] = {}
    for w in bounds.works:
        phase = state.phase[w - 1]
        if phase not in _LIVE:
            continue
        rec = recs[w] = _Rec(w)
        lane = bounds.lane[w]
        rec.place(state.wid[w - 1], state.seq[w - 1],
                  LIFECYCLE_LANE if lane == "life" else APPLICATION_LANE, lane == "barrier",
                  bounds.payload[w] + bounds.fixed_cost, _PHASE_CODE[phase],
                  state.resumes[w - 1])
    if state.app:
        core.app = deque(recs[w] for w in state.app)
    if state.life:
        core.life = deque(recs[w] for w in state.life)
    if state.barrier:
        core.barrier = deque(recs[w] for w in state.barrier)
    core.app_count, core.app_bytes = state.app_count, state.app_bytes
    core.life_count, core.life_bytes = state.life_count, state.life_bytes
    core.next_seq = state.next_seq
    core.drain_scheduled, core.draining = state.drain_scheduled, state.draining
    core.current = recs[state.current] if state.current else None
    core.streak = state.streak
    core.closed = state.closed
    core.suspended = {recs[w] for w in state.suspended} or None
    core.slice_started_at = 0
    return core, recs


def abstract(core: QueueCore[_Rec], env: State, bounds: SerialQueueBounds) -> State:
    """The image of a core, with the model-only variables of ``env`` (the abstraction
    function of the module docstring)."""
    phase = list(env.phase)
    wid = [-1] * len(phase)
    seq = [-1] * len(phase)
    resumes = [0] * len(phase)
    yields = list(env.yields)
    held: set[int] = set()
    for rec in core.live_records():
        mid = rec.mid
        held.add(mid)
        phase[mid - 1] = PHASE_NAMES[rec.phase]
        wid[mid - 1], seq[mid - 1], resumes[mid - 1] = rec.wid, rec.seq, rec.resumes
    for w in bounds.works:
        if phase[w - 1] in _LIVE and w not in held:
            phase[w - 1] = "done"  # the core dropped it: it finished
        if phase[w - 1] not in _LIVE:
            yields[w - 1] = 0

    def ids(line: deque[_Rec] | None) -> tuple[int, ...]:
        return tuple(r.mid for r in line) if line else ()

    cur = core.current
    return State(
        ids(core.app), ids(core.life), ids(core.barrier),
        core.app_count, core.app_bytes, core.life_count, core.life_bytes, core.next_seq,
        core.drain_scheduled, core.draining,
        cur.mid if cur is not None else 0,
        core.streak, core.closed,
        frozenset(r.mid for r in core.suspended_records()),
        tuple(phase), tuple(wid), tuple(seq), tuple(resumes), env.returned, tuple(yields),
        env.budget_used)


# -------------------------------------------------------------------- the actions
def _next_of(state: State, bounds: SerialQueueBounds, submitter: str) -> int:
    for w in bounds.script[submitter]:
        if state.phase[w - 1] == "new":
            return w
    return 0


def _room(state: State, bounds: SerialQueueBounds, w: int) -> bool:
    res = bounds.payload[w] + bounds.fixed_cost
    if bounds.lane[w] == "life":
        return state.life_count < bounds.life_count_cap and \
            state.life_bytes + res <= bounds.life_byte_cap
    return state.app_count < bounds.app_count_cap and \
        state.app_bytes + res <= bounds.app_byte_cap


def _replace_at(t: tuple[str, ...] | tuple[int, ...], i: int, v: object) -> tuple[object, ...]:
    return (*t[:i], v, *t[i + 1:])


def _on_record(method: Callable[[QueueCore[_Rec], _Rec], object], w: int, core: QueueCore[_Rec],
               recs: dict[int, _Rec]) -> object:
    """Call a per-work transition on work ``w``'s record (a stranger record when ``w`` is
    not live, which every guard refuses)."""
    return method(core, recs[w] if w in recs else _Rec(w))


class _Explorer:
    def __init__(self, bounds: SerialQueueBounds) -> None:
        self.bounds = bounds
        self.config = QueueConfig(bounds.policy(), units_per_ms=1)
        self.budget = self.config.budget

    def now(self, state: State) -> float:
        return self.budget if state.budget_used else 0

    def successors(self, state: State) -> Iterator[tuple[str, State]]:
        """Every enabled action instance and its successor."""
        b = self.bounds
        yield from self._submissions(state)
        probe, precs = concretize(state, b, self.config)
        now = self.now(state)
        has_ready = bool(state.app or state.life or state.barrier)
        free = state.draining and state.current == 0
        # EnterDrain
        yield from self._core_step(
            "EnterDrain", state, probe, state.drain_scheduled and not state.draining,
            lambda c, r: c.enter_drain(now), budget_used=False)
        # TakeNext (the guard includes ~budgetUsed: the core checks the clock)
        yield from self._core_step(
            "TakeNext", state, probe, free and not state.budget_used and has_ready,
            lambda c, r: c.take_next(now))
        # EndSlice
        yield from self._core_step(
            "EndSlice", state, probe, free and state.budget_used,
            lambda c, r: c.end_slice(now), budget_used=False)
        # ExitDrain: the core's guard lacks ~budgetUsed (next_step tests the budget
        # first); that part is the environment's.
        yield from self._core_step(
            "ExitDrain", state, probe, free and not has_ready,
            lambda c, r: c.exit_drain(now), env_guard=not state.budget_used)
        # Close
        if b.close_allowed and not state.closed:
            core, _ = concretize(state, b, self.config)
            core.close()
            yield "Close", abstract(core, state, b)
        for w in b.works:
            holds = state.current == w
            # Finish(w)
            yield from self._core_step(
                f"Finish({w})", state, probe, holds,
                partial(_on_record, QueueCore.finish, w),
                probe_recs=precs)
            # YieldTurn(w)
            yield from self._core_step(
                f"YieldTurn({w})", state, probe, holds,
                partial(_on_record, QueueCore.yield_turn, w),
                env_guard=state.yields[w - 1] < b.max_yields[w],
                yields_of=w, probe_recs=precs)
            # Requeue(w): the core accepts a suspended work; the environment must have
            # returned its call.
            yield from self._core_step(
                f"Requeue({w})", state, probe, state.phase[w - 1] == "suspended",
                partial(_on_record, QueueCore.requeue, w),
                env_guard=w in state.returned, returned_of=w, probe_recs=precs)
            # CallReturns(w): environment
            if w in state.suspended and w not in state.returned:
                yield f"CallReturns({w})", dataclasses.replace(
                    state, returned=state.returned | {w})
        # BudgetExpires: environment
        if state.draining and not state.budget_used:
            yield "BudgetExpires", dataclasses.replace(state, budget_used=True)
        # Terminated: stuttering
        if all(p in ("done", "rejected") for p in state.phase) and not state.draining \
                and not state.drain_scheduled:
            yield "Terminated", state

    def _submissions(self, state: State) -> Iterator[tuple[str, State]]:
        b = self.bounds
        for s in b.script:
            w = _next_of(state, b, s)
            if not w:
                continue
            core, _ = concretize(state, b, self.config)
            rec = _Rec(w)
            lane = b.lane[w]
            guard = not state.closed and _room(state, b, w)
            try:
                core.admit(rec, LIFECYCLE_LANE if lane == "life" else APPLICATION_LANE,
                           b.payload[w], lane == "barrier")
            except ZLinkRejectedError:
                if guard:
                    raise AgreementError(f"Admit({s}): the core rejects work {w}, the "
                                         f"model admits it, in {state}") from None
                phase = _replace_at(state.phase, w - 1, "rejected")
                yield f"Reject({s})", dataclasses.replace(state, phase=phase)  # type: ignore[arg-type]
                continue
            if not guard:
                raise AgreementError(f"Reject({s}): the core admits work {w}, the model "
                                     f"rejects it, in {state}")
            env = dataclasses.replace(
                state, phase=_replace_at(state.phase, w - 1, "queued"))  # type: ignore[arg-type]
            yield f"Admit({s})", abstract(core, env, b)

    def _core_step(self, name: str, state: State, probe: QueueCore[_Rec], core_guard: bool,
                   step: Callable[[QueueCore[_Rec], dict[int, _Rec]], object], *,
                   env_guard: bool = True, budget_used: bool | None = None,
                   yields_of: int = 0, returned_of: int = 0,
                   probe_recs: dict[int, _Rec] | None = None
                   ) -> Iterator[tuple[str, State]]:
        if not core_guard:
            # The core must refuse what the model's guard refuses (no change made).
            try:
                step(probe, probe_recs or {})
            except ZLinkProtocolError:
                return
            raise AgreementError(f"{name}: the core takes a step the model's guard refuses, "
                                 f"in {state}")
        if not env_guard:
            return
        core, recs = concretize(state, self.bounds, self.config)
        try:
            step(core, recs)
        except ZLinkProtocolError as exc:
            raise AgreementError(f"{name}: the core refuses a step the model allows "
                                 f"({exc}), in {state}") from None
        env = state
        if budget_used is not None:
            env = dataclasses.replace(env, budget_used=budget_used)
        if yields_of:
            env = dataclasses.replace(env, yields=_replace_at(  # type: ignore[arg-type]
                env.yields, yields_of - 1, env.yields[yields_of - 1] + 1))
        if returned_of:
            env = dataclasses.replace(env, returned=env.returned - {returned_of})
        yield name, abstract(core, env, self.bounds)


@dataclasses.dataclass(frozen=True)
class Exploration:
    """What an enumeration found."""

    distinct: int
    total: int
    deadlocks: int
    violations: tuple[str, ...]
    seconds: float


def _model_invariants(state: State, bounds: SerialQueueBounds) -> list[str]:
    """The history part of NoResumeWithoutRequeue (yields = resumes while running),
    which the core's state alone does not decide."""
    out = []
    for w in bounds.works:
        if state.phase[w - 1] == "running" and state.yields[w - 1] != state.resumes[w - 1]:
            out.append(f"NoResumeWithoutRequeue: work {w} runs after {state.yields[w - 1]} "
                       f"yield(s) and {state.resumes[w - 1]} resume(s)")
    return out


def explore(bounds: SerialQueueBounds, *, check_invariants: bool = True,
            max_states: int | None = None,
            on_step: Callable[[State, str, State], None] | None = None) -> Exploration:
    """Breadth-first search from Init over every enabled action, as TLC does with one
    worker. With ``check_invariants`` every distinct state's core is checked against
    the queue invariants (``zlink_model.invariants.check_core``) too; ``on_step`` is
    told every transition (state, action instance, successor), each once."""
    started = time.perf_counter()
    explorer = _Explorer(bounds)
    first = initial(bounds)
    seen = {first}
    frontier = deque([first])
    total = 1
    deadlocks = 0
    violations: list[str] = []
    while frontier:
        state = frontier.popleft()
        if check_invariants and len(violations) < 20:
            core, _ = concretize(state, bounds, explorer.config)
            violations += [str(v) for v in check_core(core)]
            violations += _model_invariants(state, bounds)
        enabled = 0
        for name, nxt in explorer.successors(state):
            enabled += 1
            if on_step is not None:
                on_step(state, name, nxt)
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
                if max_states is not None and len(seen) > max_states:
                    raise RuntimeError(f"more than {max_states} states")
        total += enabled
        if not enabled:
            deadlocks += 1
    return Exploration(len(seen), total, deadlocks, tuple(violations),
                       time.perf_counter() - started)




@dataclasses.dataclass(frozen=True)
class Graph:
    """The bounded state graph of a run: its states (``states[0]`` is Init) and every
    transition as (source index, action instance, target index), in the order of the
    breadth-first search. ``len(steps)`` is TLC's generated count less one (Init)."""

    bounds: SerialQueueBounds
    states: tuple[State, ...]
    steps: tuple[tuple[int, str, int], ...]


def graph(bounds: SerialQueueBounds) -> Graph:
    """The whole graph of ``bounds`` (the enumeration of ``explore``, kept)."""
    index: dict[State, int] = {}
    steps: list[tuple[int, str, int]] = []

    def number(state: State) -> int:
        found = index.get(state)
        if found is None:
            found = index[state] = len(index)
        return found

    number(initial(bounds))

    def keep(state: State, name: str, nxt: State) -> None:
        steps.append((number(state), name, number(nxt)))

    explore(bounds, check_invariants=False, on_step=keep)
    return Graph(bounds, tuple(index), tuple(steps))


SERIAL_QUEUE_CI: Final = SerialQueueBounds(
    works=(1, 2, 3, 4),
    lane={1: "app", 2: "life", 3: "barrier", 4: "life"},
    payload={1: 1, 2: 0, 3: 0, 4: 0},
    max_yields={1: 1, 2: 1, 3: 1, 4: 0},
    script={"s1": (1, 4), "s2": (3, 2)},
    app_count_cap=2, app_byte_cap=2, life_count_cap=1, life_byte_cap=2,
    fixed_cost=1, burst_limit=1, close_allowed=True,
)
"""The bounds of the ci profile's ``SerialQueue`` run (``models/MCSerialQueue.cfg`` and
the catalogue of ``MCSerialQueue.tla``), for the packages that ship without the model
files (the conformance kit). ``tests/symbolic/test_state_space.py`` holds it equal to
what ``zlink_tool.statespace.load_bounds`` reads from those files."""
