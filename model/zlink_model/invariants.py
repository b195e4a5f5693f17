"""The invariants of the serial executor as Python predicates, named like their TLA+ twins.

Every invariant the TLA+ models check (``models/*.tla``) has a predicate here with the same
name, so a violation reported by TLC, by a Hypothesis machine, by the model replay or by
``zlink trace check`` can be found in every other layer by grep. Each predicate's docstring
names its rule IDs (``specs/``) and its TLA+ twin.

Two things can be checked, and each predicate takes whichever it is given:

``core``
    A ``QueueCore``: the state the protocol core keeps. Invariants that the models state
    over variables the core also keeps (counters, flags, lines, the turn holder) are
    checked on it directly.

``trace``
    The trace events of one or more queues (``TraceEvent``, ``specs/trace-format.md``).
    The models also use *history* the core does not keep: how often a work yielded
    (``yields``), how often it ended (``ends``), which works were accepted when the scope
    closed (``acceptedAtClose``), which works a disposal marked as zombies. The Python
    twins of those invariants are defined over the trace: ``TraceImage`` folds one
    queue's events into the models' variables, history included, and the predicate is
    evaluated after every event, so a state that was wrong only for a moment is seen too.

Given both (the core of one queue and that queue's trace), a predicate also compares the
two where the model combines core state with history: a work the core dropped without an
ending event (``EveryAcceptedWorkEndsOnce``), zombie flags the trace does not explain
(``ZombiesCounted``), counters that are not the sum of the reservations the trace reports
(``ReservationsBalanced``). Without a policy, the trace-only checks of limits
(``CapacityRespected``, ``LifecycleBurstBounded``, ``SliceBounded``) are skipped.

The SpotWide invariants span several queues of one Spot; they take a ``SpotWideView``
(the Spot queue's core, each Actor queue's core and which Spot records are execution
turns of which Actor).

For other code (the model replay, the conformance kit, ``zlink trace check``):
``check_queue`` and ``check_spot_wide`` return every violation with a message, and
``TraceChecker`` does the same incrementally, one event at a time.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from typing import Any, Final

from .policy import ZLinkExecutionLanePolicy
from .queue import (
    DONE,
    PHASE_NAMES,
    QUEUED,
    REQUEUED,
    RUNNING,
    SUSPENDED,
    QueueCore,
    WorkRecord,
)
from .rules import LIFECYCLE_LANE, Source, reservation_bytes, select_next
from .trace import TraceEvent
from .vocabulary import (
    ADMIT,
    CANCEL,
    CLOSE,
    DISPOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    END_SLICE,
    ENTER_DRAIN,
    EXIT_DRAIN,
    EXPIRE_TIMEOUT,
    FINISH,
    REJECT,
    REQUEUE,
    SURVIVE_CANCEL,
    TAKE_NEXT,
    TRANSFER,
    YIELD_TURN,
    dispatch_table,
)

__all__ = [
    "INVARIANTS",
    "AwaitCompletionIgnoresZombies",
    "CancellationOnOwnTurn",
    "CapacityRespected",
    "EveryAcceptedWorkEndsOnce",
    "FifoWithinLane",
    "Invariant",
    "LifecycleBurstBounded",
    "NoDoubleDrain",
    "NoLostWakeup",
    "NoResumeWithoutRequeue",
    "NoWorkAcceptedAfterClose",
    "OneTurnHoldsSpotGate",
    "PayloadReservedOnce",
    "PolicyFor",
    "QueueChecker",
    "ReservationsBalanced",
    "SliceBounded",
    "SpotQueueReservesFixedCostOnly",
    "SpotWideView",
    "TraceChecker",
    "TraceImage",
    "Violation",
    "WellFormedTrace",
    "YieldedActorKeepsClaim",
    "ZombiesCounted",
    "check_core",
    "check_queue",
    "check_spot_wide",
    "expected_reservation",
]


# ------------------------------------------------------------------------ registry
@dataclasses.dataclass(frozen=True, slots=True)
class Invariant:
    """One invariant: its name (= the TLA+ operator), rule IDs, TLA+ module, what it
    says, and what the Python twin is evaluated over ("core", "trace", "spot")."""

    name: str
    rules: str
    model: str
    holds_when: str
    over: tuple[str, ...]


_SQ: Final = "models/SerialQueue.tla"
_SW: Final = "models/SpotWide.tla"
_DI: Final = "models/Disposal.tla"

INVARIANTS: Final[Mapping[str, Invariant]] = {
    i.name: i
    for i in (
        Invariant("NoDoubleDrain", "SE-6.5, D-10", _SQ,
                  "never both drain-scheduled and draining: at most one drain is scheduled "
                  "or running", ("core", "trace")),
        Invariant("FifoWithinLane", "SE-6.6, D-1", _SQ,
                  "every line (barrier, lifecycle, application) holds and serves its items "
                  "in sequence-number order, resume permits included", ("core", "trace")),
        Invariant("LifecycleBurstBounded", "SE-6.1, SE-10 item 9, D-4, D-5", _SQ,
                  "the lifecycle streak never passes lifecycle_burst_limit; the streak "
                  "and the line each take serves are derived from the takes and the "
                  "lines (a barrier-next take resets the streak, D-4)",
                  ("core", "trace")),
        Invariant("NoResumeWithoutRequeue", "SE-6.7", _SQ,
                  "the turn holder is running, a running work holds the turn, and a work "
                  "that yielded runs again only through a resume permit it queued",
                  ("core", "trace")),
        Invariant("NoLostWakeup", "SE-6.5, D-10", _SQ,
                  "ready work always has a drain scheduled or running", ("core", "trace")),
        Invariant("CapacityRespected", "SE-5.1, SE-6.3, D-6", _SQ,
                  "each lane's admitted works stay within its count and byte limits "
                  "(SpotWide execution turns, never refused, excepted)", ("core", "trace")),
        Invariant("ReservationsBalanced", "SE-5.2, D-2, D-9", _SQ,
                  "each lane's count and bytes are exactly those of its accepted, "
                  "unfinished works", ("core", "trace")),
        Invariant("SliceBounded", "SE-6.4", _SQ,
                  "no turn is taken once the slice's time budget is used (the guard "
                  "~budgetUsed of TakeNext; no operator of its own)", ("trace",)),
        Invariant("OneTurnHoldsSpotGate", "SE-4.3, SE-10 item 3", _SW,
                  "in SpotWide, work runs only under the Spot gate: every Actor queue's "
                  "turn holder has its execution turn on the Spot queue", ("spot",)),
        Invariant("YieldedActorKeepsClaim", "SE-4.6, SE-10 item 11", _SW,
                  "an execution turn on the Spot queue (waiting, running, yielded or "
                  "requeued) holds its Actor's claim: one turn per Actor, its queue's turn "
                  "held", ("spot",)),
        Invariant("PayloadReservedOnce", "SE-5.3", _SW,
                  "bytes reserved over all queues = each live item's reservation once + "
                  "fixed_work_byte_cost per execution turn", ("spot",)),
        Invariant("SpotQueueReservesFixedCostOnly", "SE-5.3, SE-10 item 8", _SW,
                  "the Spot queue holds fixed_work_byte_cost per execution turn and the "
                  "reservations of its own submissions, nothing else", ("spot",)),
        Invariant("NoWorkAcceptedAfterClose", "SD-1, SE-6.2", _DI,
                  "once closed, no work is admitted (a SpotWide turn or a session's final "
                  "work is moved, not admitted, D-6)", ("trace",)),
        Invariant("AwaitCompletionIgnoresZombies", "SD-2, SD-3", _DI,
                  "the active count (what await_completion waits on) is the number of live "
                  "works that are not zombies", ("core", "trace")),
        Invariant("ZombiesCounted", "SD-2", _DI,
                  "the zombie count is the number of live zombies, and the zombies are "
                  "the works live when the scope was disposed safely", ("core", "trace")),
        Invariant("EveryAcceptedWorkEndsOnce", "D-11, SE-6.2", _DI,
                  "a work ends at most once, does nothing after its end, and the core "
                  "holds exactly the works that have not ended", ("core", "trace")),
        Invariant("CancellationOnOwnTurn", "D-8, SD-1", _DI,
                  "a cancellation reaches a never-started work by cancel (it never "
                  "starts) and a started work only on its own turn", ("trace",)),
        Invariant("WellFormedTrace", "specs/trace-format.md", "-",
                  "every event is one the format defines, with its fields, about a work "
                  "the queue knows, at a moment the model allows", ("trace",)),
    )
}


@dataclasses.dataclass(frozen=True, slots=True)
class Violation:
    """One broken invariant: which, where, why, and the trace event it was seen at
    (``seq``; None when found in a core's state)."""

    invariant: str
    queue: str
    message: str
    seq: int | None = None

    @property
    def rules(self) -> str:
        """The rule IDs of the invariant."""
        info = INVARIANTS.get(self.invariant)
        return info.rules if info is not None else ""

    def __str__(self) -> str:
        at = f" at event {self.seq}" if self.seq is not None else ""
        return f"{self.invariant} ({self.rules}) on {self.queue}{at}: {self.message}"


PolicyFor = ZLinkExecutionLanePolicy | Callable[[str], ZLinkExecutionLanePolicy | None] | None
"""A policy for every queue, a function giving each queue's policy by name, or None."""


def _policy_of(policy: PolicyFor, queue: str) -> ZLinkExecutionLanePolicy | None:
    if policy is None or isinstance(policy, ZLinkExecutionLanePolicy):
        return policy
    return policy(queue)


# ---------------------------------------------------------------------- core state
_SOURCES: Final = (Source.BARRIER, Source.LIFECYCLE, Source.APPLICATION)
_SOURCE_NAMES: Final = {Source.BARRIER: "barrier", Source.LIFECYCLE: "lifecycle",
                        Source.APPLICATION: "application"}


def _lane_records(core: QueueCore[Any]) -> tuple[list[WorkRecord], list[WorkRecord]]:
    app: list[WorkRecord] = []
    life: list[WorkRecord] = []
    for rec in core.live_records():
        (life if rec.lane == LIFECYCLE_LANE else app).append(rec)
    return app, life


def check_core(core: QueueCore[Any], *, transferred: Collection[int] = (),
               records: Iterable[WorkRecord] = ()) -> list[Violation]:
    """Every invariant that the core's own state decides, for one queue.

    ``transferred`` names the live works (by id) that came in by ``transfer``: SpotWide
    execution turns, which are never refused and so are not held to the lane limits
    (D-6). A trace knows them (``TraceImage.transferred``); the core does not.

    ``records`` are work records the caller holds (a replay's, a model state's): the
    core keeps only the records in its lines, its suspended set and its turn, so a
    record that says it is running while it does not hold the turn is invisible to it
    and is found only among these (``NoResumeWithoutRequeue``: a running work holds
    the turn).
    """
    out: list[Violation] = []
    name = core.name

    def bad(inv: str, msg: str) -> None:
        out.append(Violation(inv, name, msg))

    if core.drain_scheduled and core.draining:
        bad("NoDoubleDrain", "drain-scheduled and draining at once")
    for source in _SOURCES:
        line = core.line(source)
        for a, b in itertools.pairwise(line):
            if a.seq >= b.seq:
                bad("FifoWithinLane", f"{_SOURCE_NAMES[source]} line holds work {a.wid} "
                                      f"(pos {a.seq}) before work {b.wid} (pos {b.seq})")
    limit = core.config.burst_limit
    if not 0 <= core.streak <= limit:
        bad("LifecycleBurstBounded", f"streak {core.streak} outside 0..{limit}")
    # NoResumeWithoutRequeue, the part the core keeps: phases agree with places.
    cur = core.current
    if cur is not None and cur.phase != RUNNING:
        bad("NoResumeWithoutRequeue",
            f"the turn holder, work {cur.wid}, is {PHASE_NAMES[cur.phase]}")
    for rec in records:
        if rec.phase == RUNNING and rec is not cur:
            bad("NoResumeWithoutRequeue",
                f"work {rec.wid} is running but does not hold the turn")
    for source in _SOURCES:
        for rec in core.line(source):
            if rec.phase not in (QUEUED, REQUEUED) or (rec.phase == QUEUED and rec.resumes):
                bad("NoResumeWithoutRequeue",
                    f"work {rec.wid} waits in line as {PHASE_NAMES[rec.phase]} "
                    f"after {rec.resumes} resume(s)")
    for rec in core.suspended_records():
        if rec.phase != SUSPENDED:
            bad("NoResumeWithoutRequeue",
                f"work {rec.wid} is among the suspended as {PHASE_NAMES[rec.phase]}")
    if core.has_ready() and not (core.drain_scheduled or core.draining):
        bad("NoLostWakeup", "work is ready but no drain is scheduled or running")
    app, life = _lane_records(core)
    config = core.config
    for lane_name, recs, count, nbytes, ccap, bcap in (
        ("application", app, core.app_count, core.app_bytes,
         config.app_count_cap, config.app_byte_cap),
        ("lifecycle", life, core.life_count, core.life_bytes,
         config.life_count_cap, config.life_byte_cap),
    ):
        own = [r for r in recs if r.wid not in transferred]
        own_bytes = sum(r.nbytes for r in own)
        if len(own) > ccap or own_bytes > bcap:
            bad("CapacityRespected",
                f"{lane_name} lane holds {len(own)} admitted work(s), {own_bytes} bytes; "
                f"limits {ccap} and {bcap}")
        if count != len(recs) or nbytes != sum(r.nbytes for r in recs):
            bad("ReservationsBalanced",
                f"{lane_name} lane counts {count} work(s), {nbytes} bytes; its live works "
                f"are {len(recs)}, {sum(r.nbytes for r in recs)} bytes")
    live = core.live_records()
    zombies = sum(1 for r in live if r.zombie)
    if core.active() != len(live) - zombies:
        bad("AwaitCompletionIgnoresZombies",
            f"active count {core.active()}, live works that are not zombies "
            f"{len(live) - zombies}")
    if core.zombies != zombies:
        bad("ZombiesCounted", f"zombie count {core.zombies}, live zombies {zombies}")
    for rec in live:
        if rec.phase == DONE:
            bad("EveryAcceptedWorkEndsOnce", f"work {rec.wid} ended but is still held")
    return out


# --------------------------------------------------------------------- trace image
_PHASES: Final = ("queued", "running", "suspended", "requeued", "done")
_LANES: Final = ("application", "lifecycle")
_OUTCOMES: Final = ("completed", "failed", "cancelled")


class _Work:
    """One work as its queue's trace reports it: the models' per-work variables."""

    __slots__ = ("cancel_pending", "ends", "lane", "line", "nbytes", "outcome", "phase",
                 "pos", "resumes", "transferred", "wid", "yields", "zombie")

    def __init__(self, wid: int, lane: str, line: str, nbytes: int, transferred: bool
                 ) -> None:
        self.wid = wid
        self.lane = lane  # where it reserves: application or lifecycle
        self.line = line  # where it waits first: barrier, lifecycle or application
        self.nbytes = nbytes
        self.transferred = transferred
        self.phase = "queued"
        self.pos = wid
        self.yields = 0
        self.resumes = 0
        self.ends = 0
        self.outcome: str | None = None
        self.zombie = False
        self.cancel_pending = False


class TraceImage:
    """The state of one queue as its trace reports it, with the models' history.

    Feed it the queue's events in order; ``feed`` returns the violations seen at that
    event. Nothing here uses the core's rules: the image is bookkeeping of what the
    events say (lines from admit, requeue and take_next; reservations from the bytes of
    admit and their release at finish or cancel; flags from wake, enter_drain, end_slice
    and exit_drain), plus what the models keep as history: per work ``yields``,
    ``resumes``, ``ends`` and its outcome, the zombies marked by ``dispose_safely``, the
    cancellations a disposal made pending, and whether the queue was closed.

    ``policy`` (optional) supplies the limits, the burst limit and the time budget;
    ``units_per_ms`` converts the budget to the clock units of the trace's ``now``.

    The image is checked after every event, so what that check reads is kept as the
    events change it, never recounted: the live works (``_live``, in admission order)
    and, per lane, the count and bytes of the live works that did not come by
    ``transfer`` (``own_reserved``; what ``CapacityRespected`` compares with the
    limits). Recounting them from every work ever accepted made checking a trace
    quadratic in its length. ``recount`` gives the same figures the slow way, from
    ``works`` alone; the tests hold the two equal after every event of many traces,
    broken ones included.
    """

    def __init__(self, queue: str, policy: ZLinkExecutionLanePolicy | None = None, *,
                 units_per_ms: float = 1.0) -> None:
        self.queue = queue
        self.policy = policy
        self.budget = policy.owner_time_budget_ms * units_per_ms if policy else None
        self.lines: dict[str, list[int]] = {"barrier": [], "lifecycle": [], "application": []}
        self.count = {"application": 0, "lifecycle": 0}
        self.bytes = {"application": 0, "lifecycle": 0}
        self.scheduled = False
        self.draining = False
        self.current: int | None = None
        self.streak = 0
        self.closed = False
        self.mode = "open"
        self.slice_start: float = 0
        self.served: dict[str, int] = {}
        self.max_pos = -1
        self.works: dict[int, _Work] = {}
        self._live: dict[int, _Work] = {}
        self._own_count = {"application": 0, "lifecycle": 0}
        self._own_bytes = {"application": 0, "lifecycle": 0}
        self.events = 0
        self._found: list[Violation] = []
        self._seq: int | None = None

    # ------------------------------------------------------------ queries
    def live(self) -> list[_Work]:
        """Works accepted and not ended, in admission order."""
        return list(self._live.values())

    def transferred(self) -> set[int]:
        """Live works that came in by ``transfer``."""
        return {w.wid for w in self._live.values() if w.transferred}

    def own_reserved(self) -> dict[str, tuple[int, int]]:
        """Per lane, the number and bytes of the live works that were admitted (not
        moved in by ``transfer``): what the lane's limits bound. Kept as events arrive."""
        return {lane: (self._own_count[lane], self._own_bytes[lane]) for lane in _LANES}

    def recount(self) -> tuple[list[_Work], dict[str, tuple[int, int]]]:
        """The live works and ``own_reserved`` computed again from every work ever
        accepted, as the image once did after each event: the reference the kept
        figures are held to (tests only; it costs a pass over the whole history)."""
        live = [w for w in self.works.values() if w.phase != "done"]
        own: dict[str, tuple[int, int]] = {}
        for lane in _LANES:
            mine = [w for w in live if w.lane == lane and not w.transferred]
            own[lane] = (len(mine), sum(w.nbytes for w in mine))
        return live, own

    def has_ready(self) -> bool:
        """Some line holds an item."""
        return any(self.lines.values())

    # ------------------------------------------------------------ feeding
    def _bad(self, inv: str, msg: str) -> None:
        self._found.append(Violation(inv, self.queue, msg, self._seq))

    def feed(self, ev: TraceEvent) -> list[Violation]:
        """Apply one event of this queue; return the violations seen at it."""
        self._found = []
        self._seq = ev.seq
        self.events += 1
        handler = _HANDLERS.get(ev.event)
        if handler is None:
            self._bad("WellFormedTrace", f"unknown event {ev.event!r}")
            return self._found
        try:
            handler(self, ev)
        except (KeyError, TypeError, ValueError) as exc:
            self._bad("WellFormedTrace", f"{ev.event}: missing or bad field ({exc})")
            return self._found
        self._check_state()
        return self._found

    def _check_state(self) -> None:
        if self.scheduled and self.draining:
            self._bad("NoDoubleDrain", "drain-scheduled and draining at once")
        if self.has_ready() and not (self.scheduled or self.draining):
            self._bad("NoLostWakeup", "work is ready but no drain is scheduled or running")
        policy = self.policy
        if policy is None:
            return
        if self.streak > policy.lifecycle_burst_limit:
            self._bad("LifecycleBurstBounded",
                      f"streak {self.streak} > limit {policy.lifecycle_burst_limit}")
        for lane, ccap, bcap in (
            ("application", policy.application_message_capacity,
             policy.application_byte_capacity),
            ("lifecycle", policy.lifecycle_message_capacity, policy.lifecycle_byte_capacity),
        ):
            count, nbytes = self._own_count[lane], self._own_bytes[lane]
            if count > ccap or nbytes > bcap:
                self._bad("CapacityRespected",
                          f"{lane} lane holds {count} admitted work(s), {nbytes} bytes; "
                          f"limits {ccap} and {bcap}")

    def _work(self, ev: TraceEvent) -> _Work | None:
        wid = int(ev["work"])
        w = self.works.get(wid)
        if w is None:
            self._bad("WellFormedTrace", f"{ev.event} of work {wid}, never accepted here")
            return None
        if w.phase == "done":
            self._bad("EveryAcceptedWorkEndsOnce",
                      f"{ev.event} of work {wid} after it ended ({w.outcome})")
            return None
        return w

    def _wake(self, ev: TraceEvent) -> None:
        wake = bool(ev["wake"])
        idle = not self.scheduled and not self.draining
        if wake and not idle:
            self._bad("NoDoubleDrain", f"{ev.event} posts a drain while one is "
                                       f"{'scheduled' if self.scheduled else 'running'}")
        if wake:
            self.scheduled = True

    def _fresh_pos(self, ev: TraceEvent, pos: int) -> None:
        if pos <= self.max_pos:
            self._bad("FifoWithinLane",
                      f"{ev.event} places an item at pos {pos}, not after pos {self.max_pos}")
        self.max_pos = max(self.max_pos, pos)

    def _release(self, w: _Work, outcome: str) -> None:
        self.count[w.lane] -= 1
        self.bytes[w.lane] -= w.nbytes
        del self._live[w.wid]
        if not w.transferred:
            self._own_count[w.lane] -= 1
            self._own_bytes[w.lane] -= w.nbytes
        w.phase = "done"
        w.ends += 1
        w.outcome = outcome

    # one method per event (the transition of the same name)
    def _admit(self, ev: TraceEvent, transferred: bool = False) -> None:
        wid, lane, barrier = int(ev["work"]), str(ev["lane"]), bool(ev["barrier"])
        nbytes, pos = int(ev["bytes"]), int(ev["pos"])
        if lane not in _LANES:
            raise ValueError(f"lane {lane!r}")
        if wid in self.works:
            self._bad("EveryAcceptedWorkEndsOnce", f"work {wid} accepted twice")
            return
        if self.closed and not transferred:
            self._bad("NoWorkAcceptedAfterClose", f"work {wid} admitted after close")
        line = "barrier" if barrier else lane
        if barrier and lane != "application":
            self._bad("WellFormedTrace", f"barrier-next work {wid} in the {lane} lane")
        w = self.works[wid] = self._live[wid] = _Work(wid, lane, line, nbytes, transferred)
        if not transferred:
            self._own_count[lane] += 1
            self._own_bytes[lane] += nbytes
        w.pos = pos
        self._fresh_pos(ev, pos)
        w.zombie = self.mode == "safely"
        self.lines[line].append(wid)
        self.count[lane] += 1
        self.bytes[lane] += nbytes
        self._wake(ev)

    def _transfer(self, ev: TraceEvent) -> None:
        self._admit(ev, transferred=True)

    def _reject(self, ev: TraceEvent) -> None:
        str(ev["reason"])

    def _enter_drain(self, ev: TraceEvent) -> None:
        if self.draining:
            self._bad("NoDoubleDrain", "a drain entered while another is running")
        elif not self.scheduled:
            self._bad("NoDoubleDrain", "a drain entered that was never scheduled")
        self.scheduled = False
        self.draining = True
        self.slice_start = float(ev["now"])

    def _take_next(self, ev: TraceEvent) -> None:
        source, pos, now = str(ev["source"]), int(ev["pos"]), float(ev["now"])
        streak, resume = int(ev["streak"]), bool(ev["resume"])
        if source not in self.lines:
            raise ValueError(f"source {source!r}")
        w = self._work(ev)
        if w is None:
            return
        if not self.draining:
            self._bad("WellFormedTrace", f"work {w.wid} takes a turn outside a drain")
        if self.current is not None:
            self._bad("NoResumeWithoutRequeue",
                      f"work {w.wid} takes the turn while work {self.current} holds it")
        if w.phase not in ("queued", "requeued"):
            self._bad("NoResumeWithoutRequeue",
                      f"work {w.wid} takes a turn while {w.phase} (no resume permit queued)")
        elif resume != (w.phase == "requeued"):
            self._bad("NoResumeWithoutRequeue",
                      f"work {w.wid} taken with resume={resume} while {w.phase}")
        self._derive_source(w.wid, source)
        self._derive_streak(source, streak)
        line = self.lines[source]
        if w.wid not in line:
            self._bad("FifoWithinLane", f"work {w.wid} taken from the {source} line, where "
                                        f"it does not wait")
        else:
            if line[0] != w.wid:
                self._bad("FifoWithinLane", f"work {w.wid} (pos {pos}) taken from the "
                                            f"{source} line before work {line[0]}")
            line.remove(w.wid)
        if pos != w.pos:
            self._bad("FifoWithinLane", f"work {w.wid} taken at pos {pos}, queued at "
                                        f"pos {w.pos}")
        last = self.served.get(source)
        if last is not None and pos <= last:
            self._bad("FifoWithinLane", f"the {source} line serves pos {pos} after pos {last}")
        self.served[source] = pos
        if self.budget is not None and now - self.slice_start >= self.budget:
            self._bad("SliceBounded", f"work {w.wid} takes a turn at {now}, the slice began "
                                      f"at {self.slice_start} with budget {self.budget}")
        if w.cancel_pending and w.phase == "queued":
            self._bad("CancellationOnOwnTurn",
                      f"work {w.wid} starts although the scope cancelled it before it started")
        self.current = w.wid
        w.phase = "running"

    def _derive_source(self, wid: int, source: str) -> None:
        """The line a take must serve, computed from the lines as the events left them,
        the derived streak and the policy's burst limit by ``rules.select_next`` (the
        rule the core follows, read from the rules module, not from the core): barrier-
        next first (SE-6.2, D-4), then lifecycle while the streak is under the limit or
        no application work waits, else application (SE-6.6, SE-6.1, D-5). Without a
        policy the limit is unknown and only the streak is derived. A take from another
        line breaks ``LifecycleBurstBounded`` when the choice was between lifecycle and
        application work, ``FifoWithinLane`` when barrier-next work was passed over or
        served out of turn."""
        if self.policy is None:
            return
        waiting = {name: len(line) for name, line in self.lines.items()}
        limit = self.policy.lifecycle_burst_limit
        want, _ = select_next(waiting["barrier"], waiting["lifecycle"],
                              waiting["application"], self.streak, limit)
        served = _SOURCE_NAMES[want] if want is not None else None
        if served == source:
            return
        inv = ("LifecycleBurstBounded" if {source, served} <= {"lifecycle", "application"}
               else "FifoWithinLane")
        self._bad(inv, f"work {wid} is taken from the {source} line; with {waiting} waiting "
                       f"and the streak at {self.streak} of the limit {limit}, the rules "
                       f"serve the {served} line (select_next, SE-6.6/SE-6.2/D-4/D-5)")

    def _derive_streak(self, source: str, reported: int) -> None:
        """The lifecycle streak after a take from ``source``, computed from the lines as
        the events left them (before the taken item leaves its line) and the rule of
        ``rules.select_next`` (SE-6.6, D-4, D-5): a lifecycle item taken while the
        application line holds an item adds one; any other take (barrier-next work,
        application work or a resume permit in that line, or a lifecycle item with no
        application work waiting) resets it to 0. The runtime's reported ``streak`` is
        held to the derived one only as a second check: the bound is judged on what
        the rules say, so a runtime whose count is wrong and reports it faithfully is
        caught, not confirmed."""
        app_waiting = len(self.lines["application"])
        grows = source == "lifecycle" and app_waiting > 0
        derived = self.streak + 1 if grows else 0
        if reported != derived:
            if grows:
                why = (f"a lifecycle take while {app_waiting} application item(s) wait "
                       f"adds one to the streak of {self.streak}")
            elif source == "lifecycle":
                why = "a lifecycle take with no application work waiting resets it"
            else:
                why = f"a take from the {source} line resets it"
            self._bad("LifecycleBurstBounded",
                      f"take_next reports streak {reported}, the rules give {derived} "
                      f"(select_next, SE-6.6/D-4/D-5: {why})")
        self.streak = derived

    def _finish(self, ev: TraceEvent) -> None:
        outcome = str(ev["outcome"])
        if outcome not in _OUTCOMES:
            raise ValueError(f"outcome {outcome!r}")
        w = self._work(ev)
        if w is None:
            return
        if self.current != w.wid:
            self._bad("NoResumeWithoutRequeue",
                      f"work {w.wid} ends ({outcome}) while it does not hold the turn "
                      f"(yielded {w.yields}, resumed {w.resumes})")
        else:
            self.current = None
        self._release(w, outcome)

    def _yield_turn(self, ev: TraceEvent) -> None:
        w = self._work(ev)
        if w is None:
            return
        if self.current != w.wid:
            self._bad("NoResumeWithoutRequeue", f"work {w.wid} yields a turn it does not hold")
        else:
            self.current = None
        w.phase = "suspended"
        w.yields += 1

    def _requeue(self, ev: TraceEvent) -> None:
        pos = int(ev["pos"])
        w = self._work(ev)
        if w is None:
            return
        if w.phase != "suspended":
            self._bad("NoResumeWithoutRequeue", f"work {w.wid} requeues while {w.phase}")
        w.phase = "requeued"
        w.resumes += 1
        w.pos = pos
        self._fresh_pos(ev, pos)
        self.lines["lifecycle" if w.lane == "lifecycle" else "application"].append(w.wid)
        self._wake(ev)

    def _cancel(self, ev: TraceEvent) -> None:
        phase = str(ev["phase"])
        w = self._work(ev)
        if w is None:
            return
        if phase != w.phase:
            self._bad("WellFormedTrace", f"work {w.wid} cancelled as {phase}, the trace "
                                         f"has it {w.phase}")
        if w.phase != "queued":
            self._bad("CancellationOnOwnTurn",
                      f"work {w.wid} had started and is cancelled off its turn ({w.phase})")
        if self.current == w.wid:
            self.current = None
        for line in self.lines.values():
            if w.wid in line:
                line.remove(w.wid)
        self._release(w, "cancelled")

    def _end_slice(self, ev: TraceEvent) -> None:
        reschedule = bool(ev["reschedule"])
        float(ev["now"])
        if not self.draining or self.current is not None:
            self._bad("WellFormedTrace", "end_slice outside a drain or while a turn is held")
        if self.has_ready() and not reschedule:
            self._bad("NoLostWakeup", "the slice ends with work ready and schedules no drain")
        self.draining = False
        self.scheduled = reschedule

    def _exit_drain(self, ev: TraceEvent) -> None:
        float(ev["now"])
        if not self.draining or self.current is not None:
            self._bad("WellFormedTrace", "exit_drain outside a drain or while a turn is held")
        if self.has_ready():
            self._bad("NoLostWakeup", "the drain leaves while work is ready")
        self.draining = False

    def _close(self, ev: TraceEvent) -> None:
        self.closed = True

    def _cancel_all(self) -> None:
        for w in self.live():
            w.cancel_pending = True

    def _dispose(self, ev: TraceEvent) -> None:
        self.closed = True
        self.mode = "cancelled"
        self._cancel_all()

    def _dispose_safely(self, ev: TraceEvent) -> None:
        marked = int(ev["zombies"])
        fresh = [w for w in self.live() if not w.zombie]
        if self.mode != "open":
            self._bad("WellFormedTrace", f"dispose_safely on a scope already {self.mode}")
        if marked != len(fresh):
            self._bad("ZombiesCounted", f"dispose_safely reports {marked} zombie(s); "
                                        f"{len(fresh)} live work(s) were not zombies")
        for w in fresh:
            w.zombie = True
        self.closed = True
        self.mode = "safely"

    def _dispose_after_timeout(self, ev: TraceEvent) -> None:
        self.closed = True
        self.mode = "timeout"

    def _expire_timeout(self, ev: TraceEvent) -> None:
        if self.mode != "timeout":
            self._bad("WellFormedTrace", f"expire_timeout while the scope is {self.mode}")
        self.mode = "cancelled"
        self._cancel_all()

    def _survive_cancel(self, ev: TraceEvent) -> None:
        w = self._work(ev)
        if w is None:
            return
        if self.mode != "cancelled":
            self._bad("WellFormedTrace", f"survive_cancel while the scope is {self.mode}")
        if w.zombie:
            self._bad("ZombiesCounted", f"work {w.wid} survives its cancellation as a zombie "
                                        "already")
        w.zombie = True


# What each event does to the image; a transition added to the vocabulary without an
# entry here stops this module loading (``dispatch_table``).
_HANDLERS: Final[dict[str, Callable[[TraceImage, TraceEvent], None]]] = dispatch_table(
    "zlink_model.invariants", {
        ADMIT: TraceImage._admit,
        TRANSFER: TraceImage._transfer,
        REJECT: TraceImage._reject,
        ENTER_DRAIN: TraceImage._enter_drain,
        TAKE_NEXT: TraceImage._take_next,
        FINISH: TraceImage._finish,
        YIELD_TURN: TraceImage._yield_turn,
        REQUEUE: TraceImage._requeue,
        CANCEL: TraceImage._cancel,
        END_SLICE: TraceImage._end_slice,
        EXIT_DRAIN: TraceImage._exit_drain,
        CLOSE: TraceImage._close,
        DISPOSE: TraceImage._dispose,
        DISPOSE_SAFELY: TraceImage._dispose_safely,
        DISPOSE_AFTER_TIMEOUT: TraceImage._dispose_after_timeout,
        SURVIVE_CANCEL: TraceImage._survive_cancel,
        EXPIRE_TIMEOUT: TraceImage._expire_timeout,
    })


def _agreement(core: QueueCore[Any], image: TraceImage) -> list[Violation]:
    """Where the models combine the core's state with history, compare the two."""
    out: list[Violation] = []
    name = core.name

    def bad(inv: str, msg: str) -> None:
        out.append(Violation(inv, name, msg))

    held = {rec.wid: rec for rec in core.live_records()}
    live = {w.wid: w for w in image.live()}
    for wid in sorted(live.keys() - held.keys()):
        bad("EveryAcceptedWorkEndsOnce",
            f"work {wid} is {live[wid].phase} by the trace, but the core no longer holds "
            f"it: it ended without an ending event")
    for wid in sorted(held.keys() - live.keys()):
        bad("EveryAcceptedWorkEndsOnce",
            f"the core holds work {wid} ({PHASE_NAMES[held[wid].phase]}), which the trace "
            f"{'ended' if wid in image.works else 'never accepted'}")
    for wid in sorted(held.keys() & live.keys()):
        rec, w = held[wid], live[wid]
        if PHASE_NAMES[rec.phase] != w.phase:
            bad("NoResumeWithoutRequeue",
                f"work {wid} is {PHASE_NAMES[rec.phase]} in the core, {w.phase} by the trace")
        if rec.nbytes != w.nbytes:
            bad("ReservationsBalanced",
                f"work {wid} reserves {rec.nbytes} bytes in the core, {w.nbytes} by the trace")
        if rec.zombie != w.zombie:
            bad("ZombiesCounted",
                f"work {wid} is {'' if rec.zombie else 'not '}a zombie in the core, "
                f"{'' if w.zombie else 'not '}one by the trace")
    for lane, count, nbytes in (("application", core.app_count, core.app_bytes),
                                ("lifecycle", core.life_count, core.life_bytes)):
        if (count, nbytes) != (image.count[lane], image.bytes[lane]):
            bad("ReservationsBalanced",
                f"{lane} lane reserves {count} work(s), {nbytes} bytes in the core; the "
                f"trace's live works reserve {image.count[lane]}, {image.bytes[lane]}")
    for source in _SOURCES:
        got = [r.wid for r in core.line(source)]
        want = image.lines[_SOURCE_NAMES[source]]
        if got != want:
            bad("FifoWithinLane",
                f"the core's {_SOURCE_NAMES[source]} line is {got}, the trace's {want}")
    cur = core.current.wid if core.current is not None else None
    if cur != image.current:
        bad("NoResumeWithoutRequeue",
            f"the core's turn holder is {cur}, the trace's {image.current}")
    if image.events and core.streak != image.streak:
        bad("LifecycleBurstBounded",
            f"the core's lifecycle streak is {core.streak}, the one derived from its takes "
            f"and lines is {image.streak} (select_next, SE-6.6/D-4/D-5: the next take is "
            f"chosen on a count the rules do not give)")
    return out


# ----------------------------------------------------------------------- checkers
class QueueChecker:
    """Incremental checking of one queue: its trace events, one at a time, and (when
    given) its core."""

    def __init__(self, queue: str, policy: ZLinkExecutionLanePolicy | None = None, *,
                 units_per_ms: float = 1.0) -> None:
        self.image = TraceImage(queue, policy, units_per_ms=units_per_ms)

    def feed(self, ev: TraceEvent) -> list[Violation]:
        """One event of this queue."""
        return self.image.feed(ev)

    def check(self, core: QueueCore[Any] | None = None) -> list[Violation]:
        """The core's own invariants and its agreement with the trace so far."""
        if core is None:
            return []
        return check_core(core, transferred=self.image.transferred()) + _agreement(
            core, self.image)


class TraceChecker:
    """Incremental checking of a trace of many queues (keyed by the events' ``queue``).

    ``feed`` takes events in order and returns the violations they show; ``check``
    compares cores with the trace so far. ``policy`` gives each queue its limits.
    """

    def __init__(self, policy: PolicyFor = None, *, units_per_ms: float = 1.0) -> None:
        self.policy = policy
        self.units_per_ms = units_per_ms
        self.queues: dict[str, QueueChecker] = {}

    def queue(self, name: str) -> QueueChecker:
        """The checker of one queue (made on first use)."""
        qc = self.queues.get(name)
        if qc is None:
            qc = self.queues[name] = QueueChecker(
                name, _policy_of(self.policy, name), units_per_ms=self.units_per_ms)
        return qc

    def feed(self, events: Iterable[TraceEvent]) -> list[Violation]:
        """Apply events in order; return what they violate."""
        out: list[Violation] = []
        for ev in events:
            out += self.queue(ev.queue).feed(ev)
        return out

    def check(self, cores: Iterable[QueueCore[Any]]) -> list[Violation]:
        """Each core's invariants and its agreement with its queue's trace so far."""
        out: list[Violation] = []
        for core in cores:
            out += self.queue(core.name).check(core)
        return out


def check_queue(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                *, policy: PolicyFor = None, units_per_ms: float = 1.0) -> list[Violation]:
    """Every queue invariant over what is given: a core, a trace (of one or many
    queues), or both (the core's queue's trace). Returns the violations found, each
    with its invariant's name and a message; empty when all hold."""
    if core is None and trace is None:
        raise TypeError("check_queue needs a core, a trace, or both")
    if policy is None and core is not None:
        policy = core.policy
    checker = TraceChecker(policy, units_per_ms=units_per_ms)
    out = checker.feed(trace or ())
    if core is not None:
        if trace is None:
            out += check_core(core)
        else:
            out += checker.check([core])
    return out


def _holds(name: str, core: QueueCore[Any] | None, trace: Sequence[TraceEvent] | None,
           policy: PolicyFor) -> bool:
    return not any(v.invariant == name
                   for v in check_queue(core, trace, policy=policy))


# --------------------------------------------------------- the queue predicates
def NoDoubleDrain(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                  *, policy: PolicyFor = None) -> bool:
    """SE-6.5, D-10: at most one drain is scheduled or running.
    TLA+: ``NoDoubleDrain`` (models/SerialQueue.tla).

    Core: not both ``drain_scheduled`` and ``draining``. Trace: the same after every
    event, and no event posts a drain (``wake``) while one is scheduled or running, nor
    enters a drain that was never scheduled."""
    return _holds("NoDoubleDrain", core, trace, policy)


def FifoWithinLane(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                   *, policy: PolicyFor = None) -> bool:
    """SE-6.6, D-1: every line serves its items, new work and resume permits alike, first
    in first out. TLA+: ``FifoWithinLane`` (models/SerialQueue.tla).

    Core: every line is in sequence-number order. Trace: every item gets a fresh
    position, and each ``take_next`` takes the head of the line it names (so the
    positions each line serves increase), which the model's ``TakeNext`` does by
    construction. With both: the core's lines are the trace's."""
    return _holds("FifoWithinLane", core, trace, policy)


def LifecycleBurstBounded(core: QueueCore[Any] | None = None,
                          trace: Sequence[TraceEvent] | None = None,
                          *, policy: PolicyFor = None) -> bool:
    """SE-6.1, SE-10 item 9, D-4, D-5: the lifecycle streak never passes the burst
    limit. TLA+: ``LifecycleBurstBounded`` (models/SerialQueue.tla).

    Core: ``0 <= streak <= burst_limit``; the core's streak equals the one derived from
    its trace. Trace: the checker derives the streak from the takes and the lines
    (``rules.select_next``: a lifecycle item taken while application work waits adds
    one, any other take, a barrier-next one included (D-4), resets it) and, with a
    policy, holds that derived streak within the limit and derives the line each take
    must serve (a lifecycle item passed over for application work, or taken past the
    limit, breaks it); the ``streak`` each ``take_next`` reports must equal the derived
    one (a runtime's own count is never trusted)."""
    return _holds("LifecycleBurstBounded", core, trace, policy)


def NoResumeWithoutRequeue(core: QueueCore[Any] | None = None,
                           trace: Sequence[TraceEvent] | None = None,
                           *, policy: PolicyFor = None) -> bool:
    """SE-6.7: the turn holder is running, a running work holds the turn, and a work that
    yielded runs again only through a resume permit it queued (as many resumes as
    yields). TLA+: ``NoResumeWithoutRequeue`` (models/SerialQueue.tla).

    Core: the turn holder is running, lines hold only queued and requeued works, the
    suspended set only suspended ones. The yield count is history, so the rest is over
    the trace: a work takes a turn only from ``queued`` or, after ``requeue``, as a
    resume; only the turn holder yields or finishes; one turn at a time."""
    return _holds("NoResumeWithoutRequeue", core, trace, policy)


def NoLostWakeup(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                 *, policy: PolicyFor = None) -> bool:
    """SE-6.5, D-10: ready work always has a drain scheduled or running.
    TLA+: ``NoLostWakeup`` (models/SerialQueue.tla).

    Core: ``has_ready() => drain_scheduled or draining``. Trace: the same after every
    event; a slice that ends with work ready reschedules, and no drain leaves while
    work is ready."""
    return _holds("NoLostWakeup", core, trace, policy)


def CapacityRespected(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                      *, policy: PolicyFor = None) -> bool:
    """SE-5.1, SE-6.3: both lanes stay within their count and byte limits.
    TLA+: ``CapacityRespected`` (models/SerialQueue.tla; the SpotWide form, where
    execution turns are moved and never refused (D-6), is ``check_spot_wide``).

    Core: the admitted live works of each lane are within the lane's limits. Trace
    (with a policy): the same after every event; works that came by ``transfer`` are
    not counted against the limits."""
    return _holds("CapacityRespected", core, trace, policy)


def ReservationsBalanced(core: QueueCore[Any] | None = None,
                         trace: Sequence[TraceEvent] | None = None,
                         *, policy: PolicyFor = None) -> bool:
    """SE-5.2, D-2, D-9: each lane's count and bytes are exactly those of its accepted,
    unfinished works (queued, running, suspended, requeued).
    TLA+: ``ReservationsBalanced`` (models/SerialQueue.tla).

    Core: the counters equal the sums over the live records. With the trace: they equal
    the sums of the reservations the trace's admissions reported, work by work."""
    return _holds("ReservationsBalanced", core, trace, policy)


def SliceBounded(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                 *, policy: PolicyFor = None) -> bool:
    """SE-6.4: no turn is taken once the slice's time budget is used; the drain ends the
    slice instead. TLA+: the guard ``~budgetUsed`` of ``TakeNext``
    (models/SerialQueue.tla), which has no operator of its own.

    Trace only (with a policy; ``now`` in milliseconds): every ``take_next`` happens
    less than ``owner_time_budget_ms`` after its slice's ``enter_drain``."""
    return _holds("SliceBounded", core, trace, policy)


# ------------------------------------------------------ the disposal predicates
def NoWorkAcceptedAfterClose(core: QueueCore[Any] | None = None,
                             trace: Sequence[TraceEvent] | None = None,
                             *, policy: PolicyFor = None) -> bool:
    """SD-1, SE-6.2: once closed (``close`` or any disposal call), no work is admitted.
    TLA+: ``NoWorkAcceptedAfterClose`` (models/Disposal.tla), which compares with the
    history variable ``acceptedAtClose``; so this is over the trace: no ``admit`` after
    the close. A ``transfer`` moves accepted work and is allowed (D-6)."""
    return _holds("NoWorkAcceptedAfterClose", core, trace, policy)


def AwaitCompletionIgnoresZombies(core: QueueCore[Any] | None = None,
                                  trace: Sequence[TraceEvent] | None = None,
                                  *, policy: PolicyFor = None) -> bool:
    """SD-2, SD-3: the active count, which ``await_completion`` waits on, is the number of
    live works that are not zombies. TLA+: ``AwaitCompletionIgnoresZombies``
    (models/Disposal.tla).

    Core: ``active()`` equals the live records not marked zombie. The zombie marks
    themselves are checked against the trace by ``ZombiesCounted``."""
    return _holds("AwaitCompletionIgnoresZombies", core, trace, policy)


def ZombiesCounted(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                   *, policy: PolicyFor = None) -> bool:
    """SD-2: the zombie count is the number of live zombies.
    TLA+: ``ZombiesCounted`` (models/Disposal.tla), whose set ``zombie`` is the history
    of ``DisposeSafely``.

    Core: ``zombies`` equals the live records marked zombie. Trace: ``dispose_safely``
    reports as many new zombies as there were live works that were not zombies. With
    both: the core marks exactly the works the trace's disposal made zombies."""
    return _holds("ZombiesCounted", core, trace, policy)


def EveryAcceptedWorkEndsOnce(core: QueueCore[Any] | None = None,
                              trace: Sequence[TraceEvent] | None = None,
                              *, policy: PolicyFor = None) -> bool:
    """D-11: every accepted work ends at most once, and has ended exactly when it is done.
    TLA+: ``EveryAcceptedWorkEndsOnce`` (models/Disposal.tla), over the history variable
    ``ends``.

    Trace: no work is accepted twice, ends twice, or appears after its end. With the
    core: the core holds exactly the works the trace has not ended (a work the core
    dropped without ``finish`` or ``cancel`` is a work that ended without ending)."""
    return _holds("EveryAcceptedWorkEndsOnce", core, trace, policy)


def CancellationOnOwnTurn(core: QueueCore[Any] | None = None,
                          trace: Sequence[TraceEvent] | None = None,
                          *, policy: PolicyFor = None) -> bool:
    """D-8, SD-1: a cancellation reaches a work that never started by ``cancel`` (it
    never starts), and a started work only on its own turn (``finish`` with outcome
    cancelled). TLA+: ``CancellationOnOwnTurn`` (models/Disposal.tla) and the guard of
    its ``TakeNext``.

    Trace: ``cancel`` only ends works that never started, and after ``dispose`` or
    ``expire_timeout`` no work that was waiting to start then takes a turn."""
    return _holds("CancellationOnOwnTurn", core, trace, policy)


def WellFormedTrace(core: QueueCore[Any] | None = None, trace: Sequence[TraceEvent] | None = None,
                    *, policy: PolicyFor = None) -> bool:
    """specs/trace-format.md: every event is defined, has its fields, names works its
    queue accepted, and happens where the model lets it (no turn outside a drain).
    Not a TLA+ operator: the models' ``TypeOK`` and action guards play this part."""
    return _holds("WellFormedTrace", core, trace, policy)


# ----------------------------------------------------------------------- SpotWide
@dataclasses.dataclass(frozen=True)
class SpotWideView:
    """The queues of one SpotWide (or Instance) Spot, as the SpotWide invariants need them.

    ``turn_of`` maps each live record of the Spot queue that is an execution turn to the
    Actor it belongs to (records not in it are the Spot queue's own submissions);
    ``reservation`` gives an Actor record's expected reservation (payload + fixed cost)
    when the caller knows the payloads (default: what the record reserved).
    """

    spot: QueueCore[Any]
    actors: Mapping[str, QueueCore[Any]]
    turn_of: Mapping[int, str]
    reservation: Callable[[str, WorkRecord], int] | None = None


def _spot_parts(view: SpotWideView) -> tuple[list[WorkRecord], list[WorkRecord], int]:
    spot_live = [r for r in view.spot.live_records() if r.lane != LIFECYCLE_LANE]
    turns = [r for r in spot_live if r.wid in view.turn_of]
    own = [r for r in spot_live if r.wid not in view.turn_of]
    return turns, own, view.spot.config.fixed_reservation


def _spot_violations(view: SpotWideView) -> list[Violation]:
    out: list[Violation] = []
    spot = view.spot
    name = spot.name

    def bad(inv: str, msg: str) -> None:
        out.append(Violation(inv, name, msg))

    turns, own, fixed = _spot_parts(view)
    per_actor: dict[str, list[WorkRecord]] = {}
    for r in turns:
        per_actor.setdefault(view.turn_of[r.wid], []).append(r)
    # OneTurnHoldsSpotGate
    for actor, core in view.actors.items():
        holder = core.current
        if holder is not None and not per_actor.get(actor):
            bad("OneTurnHoldsSpotGate",
                f"actor {actor}'s work {holder.wid} holds its Actor queue's turn with no "
                f"execution turn on the Spot queue: it runs without the Spot gate")
    cur = spot.current
    if cur is not None and cur.phase != RUNNING:
        bad("OneTurnHoldsSpotGate", f"the Spot gate is held by work {cur.wid}, which is "
                                    f"{PHASE_NAMES[cur.phase]}")
    # YieldedActorKeepsClaim
    for actor, recs in per_actor.items():
        actor_core = view.actors.get(actor)
        if len(recs) > 1:
            bad("YieldedActorKeepsClaim",
                f"actor {actor} has {len(recs)} execution turns on the Spot queue "
                f"({', '.join(str(r.wid) for r in recs)}): its claim was let go")
        if actor_core is None or actor_core.current is None:
            states = ", ".join(f"{r.wid} {PHASE_NAMES[r.phase]}" for r in recs)
            bad("YieldedActorKeepsClaim",
                f"actor {actor}'s execution turn ({states}) is live but the Actor queue's "
                f"turn (the claim) is free")
    # SpotQueueReservesFixedCostOnly
    own_bytes = sum(r.nbytes for r in own)
    want_bytes = fixed * len(turns) + own_bytes
    if spot.app_bytes != want_bytes or spot.app_count != len(turns) + len(own):
        bad("SpotQueueReservesFixedCostOnly",
            f"the Spot queue reserves {spot.app_count} item(s), {spot.app_bytes} bytes; "
            f"{len(turns)} execution turn(s) at {fixed} and {len(own)} own submission(s) "
            f"of {own_bytes} bytes make {len(turns) + len(own)}, {want_bytes}")
    for r in turns:
        if r.nbytes != fixed:
            bad("SpotQueueReservesFixedCostOnly",
                f"execution turn {r.wid} reserves {r.nbytes} bytes, not the fixed {fixed}")
    # PayloadReservedOnce
    held = spot.app_bytes + sum(c.app_bytes for c in view.actors.values())
    expected = fixed * len(turns) + own_bytes
    for actor, core in view.actors.items():
        for rec in core.live_records():
            expected += (view.reservation(actor, rec) if view.reservation is not None
                         else rec.nbytes)
    if held != expected:
        bad("PayloadReservedOnce",
            f"{held} bytes are reserved over the Spot's queues; each live item's "
            f"reservation once plus the fixed cost per execution turn is {expected}")
    # CapacityRespected, the SpotWide form (D-6)
    config = spot.config
    n_actors = len(view.actors)
    if len(own) > config.app_count_cap or own_bytes > config.app_byte_cap:
        bad("CapacityRespected",
            f"the Spot queue's own submissions are {len(own)}, {own_bytes} bytes; limits "
            f"{config.app_count_cap} and {config.app_byte_cap}")
    if spot.app_count > config.app_count_cap + n_actors or \
            spot.app_bytes > config.app_byte_cap + n_actors * fixed:
        bad("CapacityRespected",
            f"the Spot queue holds {spot.app_count} items, {spot.app_bytes} bytes: more "
            f"than its limits plus one execution turn per Actor ({n_actors})")
    return out


def check_spot_wide(view: SpotWideView) -> list[Violation]:
    """Every SpotWide invariant over one Spot's queues, with messages."""
    return _spot_violations(view)


def _spot_holds(name: str, view: SpotWideView) -> bool:
    return not any(v.invariant == name for v in _spot_violations(view))


def OneTurnHoldsSpotGate(view: SpotWideView) -> bool:
    """SE-4.3, SE-10 item 3: in SpotWide one thing runs at a time, under the Spot gate.
    TLA+: ``OneTurnHoldsSpotGate`` (models/SpotWide.tla): a running item that runs on the
    Spot queue holds the gate. Here an Actor work "runs" only through its execution turn:
    every Actor queue's turn holder has its execution turn on the Spot queue, and the
    gate holder (the Spot queue's turn) is running."""
    return _spot_holds("OneTurnHoldsSpotGate", view)


def YieldedActorKeepsClaim(view: SpotWideView) -> bool:
    """SE-4.6, SE-10 item 11: an Actor record whose execution turn is on the Spot queue
    (waiting, running, yielded or requeued) keeps its Actor queue's turn, the claim, so
    the Actor's next record cannot start. TLA+: ``YieldedActorKeepsClaim``
    (models/SpotWide.tla). Here: every live execution turn's Actor queue has its turn
    held, and no Actor has two live execution turns."""
    return _spot_holds("YieldedActorKeepsClaim", view)


def PayloadReservedOnce(view: SpotWideView) -> bool:
    """SE-5.3: the same payload is never reserved twice: the bytes reserved over all of
    the Spot's queues are each live item's reservation once plus
    ``fixed_work_byte_cost`` per execution turn. TLA+: ``PayloadReservedOnce``
    (models/SpotWide.tla). Given ``reservation``, an Actor record's reservation is the
    payload its caller submitted plus the fixed cost."""
    return _spot_holds("PayloadReservedOnce", view)


def SpotQueueReservesFixedCostOnly(view: SpotWideView) -> bool:
    """SE-5.3, SE-10 item 8: the Spot queue's application lane holds exactly
    ``fixed_work_byte_cost`` per execution turn plus its own submissions' reservations,
    and counts turns plus own submissions. TLA+: ``SpotQueueReservesFixedCostOnly``
    (models/SpotWide.tla)."""
    return _spot_holds("SpotQueueReservesFixedCostOnly", view)


def expected_reservation(payload_bytes: int, policy: ZLinkExecutionLanePolicy) -> int:
    """What a submission with ``payload_bytes`` reserves under ``policy`` (SE-6.1, D-3)."""
    return reservation_bytes(payload_bytes, policy.fixed_work_byte_cost)

