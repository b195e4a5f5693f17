"""Model replay: drive the pure core with a recorded trace and find the first event it
refuses or reports differently (model agreement).

A runtime's trace says which transitions happened, in which order, with which inputs
(the lane and bytes of a submission, the clock reading of a take) and which outputs
(the work's sequence number, whether a drain was posted, which item got the turn, the
streak). Replaying feeds the inputs to a fresh ``QueueCore`` with the same policy and
compares, event by event, what the core emits with what the trace says. The running code
does only what the model allows exactly when every event replays: the core accepts the
transition (its guard holds) and emits the same event with the same fields.

Events a transition emits by itself come as a group: ``dispose`` and ``expire_timeout``
end the never-started works with ``cancel`` events of their own, which the trace must
show right after, in the same order.

``replay`` takes the events of one queue; ``TraceReplayer`` takes a whole trace and keeps
one replaying core per queue. ``check_trace`` is what ``zlink trace check`` and the
conformance kit run: replay plus every queue invariant (``zlink_model.invariants``),
over the trace and over the replaying cores.

Each queue's replay runs on the replay engine (``zlink_model.engine``) that the
conformance kit's model oracle runs too: here with one world (``QueueWorld``: the core,
its records, the events it still owes) and no hidden steps, since a trace shows every
core step; every trace event is one ``advance`` of that world.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any, Final

from .engine import ReplayEngine
from .errors import ZLinkProtocolError, ZLinkRejectedError
from .invariants import PolicyFor, TraceChecker, Violation, check_core
from .policy import ZLinkExecutionLanePolicy
from .queue import OUTCOME_NAMES, QueueConfig, QueueCore, WorkRecord
from .rules import APPLICATION_LANE, LIFECYCLE_LANE, Source
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
    event_rules,
)

__all__ = [
    "EVENT_RULES",
    "Disagreement",
    "QueueReplayer",
    "QueueWorld",
    "ReplayResult",
    "TraceReplayer",
    "TraceReport",
    "check_trace",
    "replay",
]


# The rules each event of the trace format (specs/trace-format.md) serves: when the model
# refuses an event, these are the rules the runtime broke by taking that step.
EVENT_RULES: Final[Mapping[str, str]] = event_rules()


@dataclasses.dataclass(frozen=True, slots=True)
class Disagreement:
    """The first event the model does not go along with: its index in the events given,
    the event, why, and (when the core emitted something else) what it emitted."""

    index: int
    event: TraceEvent
    reason: str
    model: dict[str, Any] | None = None

    @property
    def rules(self) -> str:
        """The rule IDs of the refused event (``EVENT_RULES``)."""
        return EVENT_RULES.get(self.event.event, "specs/trace-format.md")

    def __str__(self) -> str:
        line = (f"event {self.event.seq} ({self.event.event} on {self.event.queue}, "
                f"{self.rules}): {self.reason}")
        if self.model is not None:
            line += f"; the model emits {self.model}"
        return line


@dataclasses.dataclass(frozen=True, slots=True)
class ReplayResult:
    """What a replay found: the first disagreement (None when every event replayed),
    how many events replayed, and the replaying core as it ended."""

    disagreement: Disagreement | None
    replayed: int
    core: QueueCore[WorkRecord]

    @property
    def ok(self) -> bool:
        """Every event replayed."""
        return self.disagreement is None


class _MismatchError(Exception):
    def __init__(self, reason: str, model: dict[str, Any] | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.model = model


def _lane(name: object) -> int:
    if name == "application":
        return APPLICATION_LANE
    if name == "lifecycle":
        return LIFECYCLE_LANE
    raise _MismatchError(f"unknown lane {name!r}")


class QueueWorld:
    """One queue's replay state: its core, its records by work id (the trace's ``work``),
    and the events the last transition emitted that the trace has not shown yet."""

    __slots__ = ("core", "pending", "records")

    def __init__(self, core: QueueCore[WorkRecord]) -> None:
        self.core = core
        self.records: dict[int, WorkRecord] = {}
        self.pending: list[tuple[str, dict[str, Any]]] = []

    def copy(self) -> QueueWorld:
        """An independent copy (records copied once, ``QueueCore.copy``)."""
        memo: dict[WorkRecord, WorkRecord] = {}
        new = QueueWorld(self.core.copy(memo))
        new.records = {wid: memo[r] if r in memo else memo.setdefault(r, r.copy())
                       for wid, r in self.records.items()}
        new.pending = list(self.pending)
        return new

    def key(self) -> Hashable:
        """The state: the core's lines, turn, counters and flags by work id, and what is
        pending."""
        c = self.core
        return (
            tuple(tuple(r.wid for r in c.line(s)) for s in Source),
            None if c.current is None else c.current.wid,
            tuple(sorted(r.wid for r in c.suspended_records())),
            c.app_count, c.app_bytes, c.life_count, c.life_bytes, c.next_seq,
            c.drain_scheduled, c.draining, c.slice_started_at, c.streak, c.closed, c.mode,
            c.zombies, tuple(sorted(self.records)),
            tuple((e, tuple(sorted(f.items()))) for e, f in self.pending),
        )


class QueueReplayer:
    """A core replaying one queue's trace, one event at a time.

    ``policy`` must be the queue's policy, ``units_per_ms`` its clock's units (1 for the
    virtual clock's milliseconds) and ``yield_allowed`` False for an owner without
    Yield (an Entry Spot). The replay is a ``ReplayEngine`` over one ``QueueWorld`` with
    no hidden steps (``engine``)."""

    def __init__(self, queue: str, policy: ZLinkExecutionLanePolicy, *,
                 units_per_ms: float = 1.0, yield_allowed: bool = True) -> None:
        self._emitted: list[tuple[str, dict[str, Any]]] = []
        config = QueueConfig(policy, units_per_ms=units_per_ms, yield_allowed=yield_allowed,
                             observer=lambda q, e, f: self._emitted.append((e, dict(f))))
        core: QueueCore[WorkRecord] = QueueCore(config, queue)
        self.engine = ReplayEngine(QueueWorld(core), illegal=(_MismatchError,))
        self.replayed = 0
        self.disagreement: Disagreement | None = None

    @property
    def world(self) -> QueueWorld:
        """The replay's one world."""
        return self.engine.worlds[0]

    @property
    def core(self) -> QueueCore[WorkRecord]:
        """The replaying core."""
        return self.engine.worlds[0].core

    @property
    def records(self) -> dict[int, WorkRecord]:
        """The core's records by work id."""
        return self.engine.worlds[0].records

    @property
    def pending(self) -> list[tuple[str, dict[str, Any]]]:
        """Events the core emitted that the trace has not shown yet."""
        return self.engine.worlds[0].pending

    def feed(self, ev: TraceEvent, index: int | None = None) -> Disagreement | None:
        """Replay one event. Returns the disagreement it causes, if any; after one, the
        replay stops (every later call returns the first)."""
        if self.disagreement is not None:
            return self.disagreement
        failures = self.engine.advance(partial(self._step, ev))
        if failures:
            exc = failures[0][1]
            assert isinstance(exc, _MismatchError)
            self.disagreement = Disagreement(
                self.replayed if index is None else index, ev, exc.reason, exc.model)
            return self.disagreement
        self.replayed += 1
        return None

    def _step(self, ev: TraceEvent, world: QueueWorld) -> None:
        name = ev.event
        got = (name, ev.fields)  # compared, never changed
        if world.pending:
            want = world.pending.pop(0)
            if want != got:
                raise _MismatchError("the model's step emits another event here",
                                {"event": want[0], **want[1]})
            return
        try:
            drive = _DRIVERS[name]
        except KeyError:
            raise _MismatchError(f"no transition is named {name!r}") from None
        emitted = self._emitted
        emitted.clear()
        try:
            drive(self, world, ev)
        except ZLinkProtocolError as exc:
            raise _MismatchError(f"the model refuses it: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise _MismatchError(f"missing or bad field: {exc}") from None
        if not emitted:
            raise _MismatchError("the model's step emits no event (nothing changes)")
        first = emitted[0]
        if first != got:
            raise _MismatchError("the model's step emits another event",
                            {"event": first[0], **first[1]})
        world.pending = emitted[1:]

    def _rec(self, world: QueueWorld, ev: TraceEvent) -> WorkRecord:
        wid = int(ev["work"])
        rec = world.records.get(wid)
        if rec is None:
            raise _MismatchError(f"the model holds no work {wid}")
        return rec

    def finished(self) -> Disagreement | None:
        """Call at the end of the trace: events the model emitted that the trace never
        showed are a disagreement."""
        if self.disagreement is None and self.pending:
            want = self.pending[0]
            raise_at = TraceEvent(-1, self.core.name, want[0], want[1])
            self.disagreement = Disagreement(
                self.replayed, raise_at, "the trace ends before the model's step does",
                {"event": want[0], **want[1]})
        return self.disagreement


# Each event of the trace format (``zlink_model.vocabulary``) and the core transition it
# drives, with the event's inputs read from its fields. Built by ``dispatch_table``: a
# transition added to the vocabulary without a driver here stops this module loading.
_Driver = Callable[[QueueReplayer, QueueWorld, TraceEvent], object]


def _submit(r: QueueReplayer, world: QueueWorld, ev: TraceEvent) -> None:
    """``admit`` or ``reject``: the submission is replayed, and the core must decide it
    the way the trace says."""
    core = world.core
    lane = _lane(ev["lane"])
    payload = int(ev["bytes"]) - core.config.fixed_reservation
    if payload < 0:
        raise _MismatchError(f"{ev['bytes']} bytes is less than the fixed cost "
                        f"{core.config.fixed_reservation}")
    rec = WorkRecord()
    try:
        core.admit(rec, lane, payload, bool(ev["barrier"]))
    except ZLinkRejectedError as exc:
        if ev.event == ADMIT:
            raise _MismatchError(f"the model rejects this submission ({exc.reason.value})",
                            {"event": r._emitted[0][0], **r._emitted[0][1]}
                            ) from None
        return
    world.records[rec.wid] = rec
    if ev.event == REJECT:
        raise _MismatchError("the model admits this submission",
                        {"event": r._emitted[0][0], **r._emitted[0][1]})


def _transfer(r: QueueReplayer, world: QueueWorld, ev: TraceEvent) -> None:
    rec = WorkRecord()
    world.core.transfer(rec)
    world.records[rec.wid] = rec


def _finish(r: QueueReplayer, world: QueueWorld, ev: TraceEvent) -> None:
    outcome = str(ev["outcome"])
    if outcome not in OUTCOME_NAMES:
        raise _MismatchError(f"unknown outcome {outcome!r}")
    world.core.finish(r._rec(world, ev), OUTCOME_NAMES.index(outcome))


def _close(r: QueueReplayer, world: QueueWorld, ev: TraceEvent) -> None:
    if world.core.closed:
        raise _MismatchError("close of a queue already closed (close emits once)")
    world.core.close()


_DRIVERS: Final[dict[str, _Driver]] = dispatch_table("zlink_model.replay", {
    ADMIT: _submit,
    REJECT: _submit,
    TRANSFER: _transfer,
    ENTER_DRAIN: lambda r, world, ev: world.core.enter_drain(ev["now"]),
    TAKE_NEXT: lambda r, world, ev: world.core.take_next(ev["now"]),
    FINISH: _finish,
    YIELD_TURN: lambda r, world, ev: world.core.yield_turn(r._rec(world, ev)),
    REQUEUE: lambda r, world, ev: world.core.requeue(r._rec(world, ev)),
    CANCEL: lambda r, world, ev: world.core.cancel(r._rec(world, ev)),
    END_SLICE: lambda r, world, ev: world.core.end_slice(ev["now"]),
    EXIT_DRAIN: lambda r, world, ev: world.core.exit_drain(ev["now"]),
    CLOSE: _close,
    DISPOSE: lambda r, world, ev: world.core.dispose(),
    DISPOSE_SAFELY: lambda r, world, ev: world.core.dispose_safely(),
    DISPOSE_AFTER_TIMEOUT: lambda r, world, ev: world.core.dispose_after_timeout(),
    EXPIRE_TIMEOUT: lambda r, world, ev: world.core.expire_timeout(),
    SURVIVE_CANCEL: lambda r, world, ev: world.core.survive_cancel(r._rec(world, ev)),
})


def replay(events: Iterable[TraceEvent], policy: ZLinkExecutionLanePolicy, *,
           units_per_ms: float = 1.0, yield_allowed: bool = True) -> ReplayResult:
    """Replay the events of ONE queue through a fresh core with ``policy``; return the
    first disagreement (if any), how many events replayed, and the core."""
    evs = list(events)
    names = {e.queue for e in evs}
    if len(names) > 1:
        raise ValueError(f"replay takes one queue's events; got {sorted(names)} "
                         "(use TraceReplayer for a whole trace)")
    r = QueueReplayer(evs[0].queue if evs else "queue", policy, units_per_ms=units_per_ms,
                      yield_allowed=yield_allowed)
    for i, ev in enumerate(evs):
        if r.feed(ev, i) is not None:
            break
    else:
        r.finished()
    return ReplayResult(r.disagreement, r.replayed, r.core)


class TraceReplayer:
    """Replays a whole trace, one core per queue. ``policy`` gives each queue's policy
    (one for all, or a function of the queue's name); ``yield_allowed`` likewise says
    which queues offer Yield."""

    def __init__(self, policy: PolicyFor, *, units_per_ms: float = 1.0,
                 yield_allowed: bool | Callable[[str], bool] = True) -> None:
        self.policy = policy
        self.units_per_ms = units_per_ms
        self.yield_allowed = yield_allowed
        self.queues: dict[str, QueueReplayer] = {}
        self.index = 0

    def queue(self, name: str) -> QueueReplayer:
        """The replayer of one queue (made on first use)."""
        r = self.queues.get(name)
        if r is None:
            policy = self.policy
            if policy is not None and not isinstance(policy, ZLinkExecutionLanePolicy):
                policy = policy(name)
            if policy is None:
                policy = ZLinkExecutionLanePolicy()
            allowed = self.yield_allowed
            r = self.queues[name] = QueueReplayer(
                name, policy, units_per_ms=self.units_per_ms,
                yield_allowed=allowed(name) if callable(allowed) else allowed)
        return r

    def feed(self, events: Iterable[TraceEvent]) -> list[Disagreement]:
        """Replay events in order; return the new disagreements (one per queue at most)."""
        out = []
        for ev in events:
            r = self.queue(ev.queue)
            before = r.disagreement
            d = r.feed(ev, self.index)
            self.index += 1
            if d is not None and before is None:
                out.append(d)
        return out

    def finished(self) -> list[Disagreement]:
        """End of the trace: every queue's first disagreement, in event order."""
        found = [d for r in self.queues.values() if (d := r.finished()) is not None]
        return sorted(found, key=lambda d: d.index)

    def cores(self) -> list[QueueCore[WorkRecord]]:
        """The replaying cores."""
        return [r.core for r in self.queues.values()]


@dataclasses.dataclass(frozen=True, slots=True)
class TraceReport:
    """``check_trace``'s verdict: invariant violations and model disagreements."""

    violations: tuple[Violation, ...]
    disagreements: tuple[Disagreement, ...]
    events: int

    @property
    def ok(self) -> bool:
        """Nothing violated, nothing disagreed."""
        return not self.violations and not self.disagreements

    def lines(self) -> list[str]:
        """One line per finding, violations first."""
        return [str(v) for v in self.violations] + [
            f"model agreement: {d}" for d in self.disagreements]


def check_trace(events: Sequence[TraceEvent], policy: PolicyFor = None, *,
                units_per_ms: float = 1.0,
                yield_allowed: bool | Callable[[str], bool] = True) -> TraceReport:
    """Check a whole trace: every queue invariant over the events (with the policy's
    limits when given), the state invariants of each queue's replaying core after every
    event, and model agreement (the first event each queue's core does not replay).

    Without a policy, the replay uses the default policy and the trace-only limit checks
    are skipped; give the runtime's policy for a real verdict."""
    checker = TraceChecker(policy, units_per_ms=units_per_ms)
    replayer = TraceReplayer(policy, units_per_ms=units_per_ms, yield_allowed=yield_allowed)
    violations: list[Violation] = []
    seen: set[tuple[str, str, str]] = set()
    for ev in events:
        found = checker.feed([ev])
        replayer.feed([ev])
        r = replayer.queue(ev.queue)
        if r.disagreement is None:
            found += [dataclasses.replace(v, seq=ev.seq) for v in check_core(
                r.core, transferred=checker.queue(ev.queue).image.transferred())]
        for v in found:
            key = (v.invariant, v.queue, v.message)
            if key not in seen:  # a lasting state is reported once, where it began
                seen.add(key)
                violations.append(v)
    return TraceReport(tuple(violations), tuple(replayer.finished()), len(events))
