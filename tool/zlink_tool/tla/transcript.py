"""TLC judges a foreign runtime too: one queue's part of a conformance transcript,
checked against ``SerialQueue.tla``.

A transcript (``zlink conformance run --transcripts DIR`` writes ``DIR/<case>.jsonl``) is
what the wire showed: the commands the runner sent and the events and replies the
adapter wrote, ``{"pos": N, "dir": "sent"|"received", "message": {...}}`` per line, and
the case's verdict last. The kit's model oracle judges it in Python; this module gives it
to TLC, a judge that shares none of that code, so a verdict on a foreign runtime has two.

How a transcript becomes a log TLC can walk, through the one vocabulary table
(``zlink_model.vocabulary.WIRE_EVENTS``): each wire event names the core transitions it
reports (``accepted`` is ``admit``, ``started`` and ``resumed`` are ``take_next``,
``yielded`` is ``yield_turn``, ``finished`` and ``failed`` are ``finish``); events that
report none (``snapshot``, ``waited``, ...) do not move a queue. Events are grouped by the
queue the adapter named (``owner``); the runner's own ``create`` and ``submit`` commands
give each work its lane, payload and barrier flag (the kit's routing table), and each
target its lane policy. The steps the wire never shows (the drain's, the time budget's,
a call returning, the resume permit queueing, and ``close`` taking effect after its
command) are left to the model's nondeterminism in ``models/TraceWireSerialQueue.tla``.

Disposals are judged on the same walk: each disposal command sent to the queue's target
(``dispose`` in its modes, ``destroy`` as SD-4 makes it, ``runtime_end``) is a hidden
step of the trace spec taken once between the command and the first event after its
reply, with Disposal.tla's state beside SerialQueue.tla's; ``cancelled`` is ``finish`` on
the work's own turn or ``cancel`` before it started (the spec tells which), ``zombie`` is
``dispose_safely`` (``_DISPOSAL_OPS``).

A SpotWide (or Instance) Spot's queues are one log: its Actor queues admit their records
(``accepted``, ``rejected``), the Spot queue runs their turns (``started`` ...
``finished``), and the trace spec moves each turn across in a hidden ``Transfer`` and ends
the Actor's claim in a hidden ``EndClaim`` (SpotWide.tla's, SE-4.5, SE-4.6). The log's
``members`` are the owners it holds; each work says which Actor queue admitted it
(``WireStep.actor``).

A queue is not checked by TLC (said so, never passed) when its part of the transcript
needs a step the trace spec does not have: an event of a work the runner never
submitted, or one of a transition outside the trace spec (``not_checked`` says which).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from zlink_conformance.protocol.routing import Submission, TargetInfo, submissions
from zlink_conformance.protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.vocabulary import (
    ADMIT,
    CANCEL,
    DISPOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    FINISH,
    REJECT,
    TAKE_NEXT,
    TRANSFER,
    WIRE_EVENTS,
    YIELD_TURN,
    tla_actions,
    transition,
)

from .runner import ToolMissingError, find_jar, find_java
from .trace import (
    TlcTraceVerdict,
    TraceFormatError,
    TraceRangeError,
    run_trace_tlc,
    scaled_limits,
)

__all__ = ["HOLD", "WIRE_FILES", "WIRE_STEP_ACTIONS", "QueueTranscript", "TranscriptError",
           "WireModel", "WireStep", "build_wire_model", "check_queues_with_tlc",
           "is_transcript", "queue_transcripts", "read_transcript", "refused_as"]

# The checked-in modules TLC needs beside the data module WireLog.tla.
WIRE_FILES: Final = ("SerialQueue.tla", "TraceWireSerialQueue.tla", "TraceWireSerialQueue.cfg")
_SERIAL: Final = tla_actions("SerialQueue")
_TRANSITIONS: Final[Mapping[str, tuple[str, ...]]] = {w.name: w.transitions for w in WIRE_EVENTS}
# The wire events of Disposal.tla's transitions TraceWireSerialQueue.tla judges, as the
# one op of its data module each becomes: cancelled (Finish on the work's turn, or Cancel
# before it started: the trace spec tells which from the queue's state) and zombie.
_DISPOSAL_OPS: Final[Mapping[str, str]] = {"cancelled": CANCEL, "zombie": DISPOSE_SAFELY}
# The op of a session's final work's acceptance (D-12): held back, not admitted yet.
HOLD: Final = "hold"
# Each op of the data module: the trace spec's action(s) that take it, and the rules a
# refused one is reported under (the vocabulary's, for every transition it may be).
WIRE_STEP_ACTIONS: Final[Mapping[str, tuple[str, str]]] = {
    **{event: (t.action, t.rule_text) for event, t in _SERIAL.items()},
    CANCEL: ("Finish (on its turn) or Cancel (never started)",
             ", ".join(dict.fromkeys(r for e in (CANCEL, FINISH)
                                     for r in transition(e).rules))),
    DISPOSE_SAFELY: ("DisposeSafely", transition(DISPOSE_SAFELY).rule_text),
    HOLD: ("the final work's acceptance (it closes the session)", "D-12, SE-6.2"),
    # A SpotWide Actor record's start or resume on the Spot queue (and a settle answered
    # in a SpotWide Spot's log): a turn the Actor queue moved there (Transfer), which
    # needs the Actor's claim free (SE-4.6) and the record at the head of its line.
    TRANSFER: ("TakeNext of an execution turn a SpotWide Actor queue moved to the Spot "
               "queue (Transfer: its claim free, the record at its head)",
               ", ".join(dict.fromkeys((*transition(TAKE_NEXT).rules,
                                        *transition(TRANSFER).rules, "SE-4.6")))),
}

# A disposal command's mode (the wire's word) as the hidden step of the trace spec it
# allows: Dispose, DisposeSafely, DisposeAfterTimeout, or RuntimeEnd ("end", SD-5).
_DISPOSAL_MODES: Final[Mapping[str, str]] = {
    DISPOSE: DISPOSE, DISPOSE_SAFELY: "safely", DISPOSE_AFTER_TIMEOUT: "timeout"}


class TranscriptError(ValueError):
    """The file is not a transcript the runner writes; the message names the line."""


@dataclasses.dataclass(frozen=True, slots=True)
class WireStep:
    """One observed event of a queue, as the core transition it reports."""

    op: str  # the core event (admit, reject, take_next, finish, yield_turn)
    work: str  # the runner's work name
    position: int  # where it is in the transcript
    wire: str  # the wire event's name
    closed: bool = False  # a rejection for a closed queue
    ret: int = 0  # a yield: events of its queue before the runner settled its call
    kind: str = "app"  # the work's lane: app, life or barrier (from its submission)
    payload: int = 0  # its payload bytes (its reservation less the fixed cost)
    race: int = 0  # an admission's submit_concurrent (1, 2, ...; 0: a submission alone)
    actor: str = ""  # a SpotWide Actor record: the Actor queue that admitted it


@dataclasses.dataclass
class QueueTranscript:
    """One queue's part of a transcript, or why TLC cannot check it."""

    owner: str
    policy: ZLinkExecutionLanePolicy = dataclasses.field(
        default_factory=ZLinkExecutionLanePolicy)
    steps: list[WireStep] = dataclasses.field(default_factory=list)
    close_after: int = -1  # events of this queue seen before a close command; -1: none
    # The disposal commands that reached the queue's target, in order: (how, after, by):
    # how the trace spec's step (dispose, safely, timeout, end), after the queue's events
    # before the command was sent, by those before its reply came (-1: no deadline).
    disposals: list[tuple[str, int, int]] = dataclasses.field(default_factory=list)
    not_checked: str | None = None
    # The owners whose events this log holds: the queue itself, or a SpotWide Spot's
    # Spot queue and Actor queues (one log, walked together), in order of first event.
    members: list[str] = dataclasses.field(default_factory=list)
    # A SpotWide Spot's Actor queues' lane policy (its create's actor_policy); None if
    # the log has no Actor record.
    actor_policy: ZLinkExecutionLanePolicy | None = None

    @property
    def queue_count(self) -> int:
        """How many of the runtime's queues this log is (a SpotWide Spot's: several)."""
        return max(1, len(self.members))


def refused_as(q: QueueTranscript, step: WireStep) -> str:
    """The entry of ``WIRE_STEP_ACTIONS`` a refused step is reported under: its op;
    ``transfer`` for a SpotWide record's turn on the Spot queue and for a settle answered
    in a SpotWide Spot's log (a turn not moved, or a claim not ended, is refused there);
    ``take_next`` for another settle answered (a turn unreported or not given)."""
    if (step.op == TAKE_NEXT and step.actor) or (step.op == "sync" and q.actor_policy
                                                 is not None):
        return TRANSFER
    return TAKE_NEXT if step.op == "sync" else step.op


def _kind(sub: Submission) -> str:
    """The lane word of TraceWireSerialQueue.tla's data module: app, life or barrier."""
    return "life" if sub.lifecycle else "barrier" if sub.barrier else "app"


def is_transcript(record: Any) -> bool:
    """Whether a first JSON record is a transcript's (not the trace format's)."""
    return isinstance(record, dict) and "dir" in record and "message" in record


def read_transcript(lines: Iterable[str]) -> list[tuple[str, dict[str, Any]]]:
    """The transcript's entries, ``(dir, message)`` in order; the closing verdict
    record is left out. Raises ``TranscriptError`` naming the first bad line."""
    entries: list[tuple[str, dict[str, Any]]] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise TranscriptError(f"line {number}: not JSON") from None
        if isinstance(record, dict) and "verdict" in record and "dir" not in record:
            continue
        if not is_transcript(record) or record["dir"] not in ("sent", "received") \
                or not isinstance(record["message"], dict):
            raise TranscriptError(f"line {number}: not a transcript record "
                                  "({\"pos\", \"dir\": sent|received, \"message\"})")
        entries.append((record["dir"], record["message"]))
    return entries


def _policy(message: Mapping[str, Any], key: str) -> ZLinkExecutionLanePolicy:
    data = message.get(key)
    if not isinstance(data, dict):
        return ZLinkExecutionLanePolicy()
    return ZLinkExecutionLanePolicy.from_mapping(dict(data))


def queue_transcripts(entries: Sequence[tuple[str, Mapping[str, Any]]]) -> list[QueueTranscript]:
    """Every queue the transcript's events name, in order of first appearance, with its
    observed steps (or the reason TLC cannot check it)."""
    targets: dict[str, TargetInfo] = {}
    policies: dict[str, dict[str, ZLinkExecutionLanePolicy]] = {}
    works: dict[str, Submission] = {}
    queues: dict[str, QueueTranscript] = {}
    closed: set[str] = set()  # targets a close or disposal was sent to
    not_safely: set[str] = set()  # targets as_not_safely was sent to (SD-4)
    disposed: dict[str, list[tuple[str, int]]] = {}  # target -> (how, command index)
    awaiting: list[tuple[QueueTranscript, int]] = []  # disposals whose reply is to come
    pending: dict[str, tuple[QueueTranscript, int]] = {}  # call -> its yield step
    settled: set[str] = set()  # calls the runner completed or failed
    races = 0  # submit_concurrent commands so far
    racing = 0  # the one whose reply has not come yet (0: none)
    last_cmd = None
    moved: set[str] = set()  # queues with an event since the last settle answered

    def submission(sub: Mapping[str, Any]) -> None:
        for info in submissions(sub, targets):
            works[info.work] = info

    def queue(owner: str, target: str) -> QueueTranscript:
        info = targets.get(target)
        if info is not None and info.spot_wide_wiring and (
                owner == target or owner.startswith(f"{target}/actor:")):
            # one log for the Spot queue and its Actor queues: a turn moves between them
            spot = queues[target] if target in queues else queue(target, "")
            if owner not in spot.members:
                spot.members.append(owner)
            if owner != target and spot.actor_policy is None:
                spot.actor_policy = policies.get(target, {}).get("actor_policy") \
                    or ZLinkExecutionLanePolicy()
            return spot
        q = queues.get(owner)
        if q is None:
            name = target or owner
            which = ("actor_policy" if owner.startswith(f"{name}/actor:")
                     else "timer_policy" if owner.startswith(f"{name}/timer:")
                     else "policy")
            q = queues[owner] = QueueTranscript(
                owner, policies.get(name, {}).get(which) or ZLinkExecutionLanePolicy())
            if name in closed:
                q.close_after = 0
            # a disposal before the queue's first event: taken before it
            q.disposals = [(how, 0, 0 if index < len(entries) else -1)
                           for how, index in disposed.get(name, [])]
        return q

    for pos, (direction, msg) in enumerate(entries):
        if direction == "sent":
            cmd = last_cmd = msg.get("cmd")
            if cmd == "create":
                name = str(msg.get("target"))
                type_ = str(msg.get("type"))
                spot = type_ == "spot"
                targets[name] = TargetInfo(name, type_, msg.get("kind", "user") if spot else None,
                                           msg.get("mode") if spot else None)
                try:
                    policies[name] = {k: _policy(msg, k)
                                      for k in ("policy", "actor_policy", "timer_policy")}
                except (TypeError, ValueError) as exc:
                    raise TranscriptError(f"entry {pos}: create {name}: {exc}") from None
            elif cmd == "submit":
                submission(msg)
            elif cmd == "submit_concurrent":
                races += 1
                racing = races
                for sub in msg.get("submissions", []) or []:
                    if isinstance(sub, dict):
                        submission(sub)
            elif cmd in ("complete", "fail"):
                call = str(msg.get("call"))
                settled.add(call)
                if call in pending:  # the call returns from here on, not before
                    q, index = pending.pop(call)
                    q.steps[index] = dataclasses.replace(q.steps[index], ret=len(q.steps))
            elif cmd == "as_not_safely":
                not_safely.add(str(msg.get("target")))
            elif cmd in (CLOSE_COMMAND, DISPOSE_COMMAND, "runtime_end"):
                # A disposal closes too; what else it does is a hidden step of the
                # trace spec (Dispose, DisposeSafely, DisposeAfterTimeout, RuntimeEnd).
                names = set(targets) if cmd == "runtime_end" else {str(msg.get("target"))}
                closed.update(names)
                how = _disposal(cmd, msg, not_safely)
                if how is not None:
                    # the runtime's end waits for active work: no deadline (SD-5)
                    index = len(entries) if how == "end" else pos
                    for name in names:
                        disposed.setdefault(name, []).append((how, index))
                for q in queues.values():
                    sub_target = q.owner.split("/", 1)[0]
                    if sub_target in names:
                        if q.close_after < 0:
                            q.close_after = len(q.steps)
                        if how is not None:
                            q.disposals.append((how, len(q.steps), -1))
                            if how != "end":
                                awaiting.append((q, len(q.disposals) - 1))
            continue
        if "re" in msg:
            racing = 0  # the reply: every racing verdict was written before it
            for q, index in awaiting:  # the disposal had taken effect by its reply
                how, after, _ = q.disposals[index]
                q.disposals[index] = (how, after, len(q.steps))
            awaiting.clear()
            if last_cmd == "settle" and msg.get("ok"):
                # nothing could progress: a step "sync" for each queue that moved since
                for q in queues.values():
                    if q.owner in moved and q.not_checked is None:
                        q.steps.append(WireStep("sync", "", pos, "settle reply"))
                moved.clear()
        event = msg.get("event")
        if not isinstance(event, str) or event not in _TRANSITIONS:
            continue  # a reply, or an event of no queue step
        name = event
        steps = _TRANSITIONS[name]
        if not steps:
            continue
        work, owner = str(msg.get("work")), msg.get("owner")
        sub = works.get(work)
        if not isinstance(owner, str):
            continue
        q = queue(owner, sub.target.name if sub else owner.split("/", 1)[0])
        if q.not_checked:
            continue
        outside = [t for t in steps if t not in _SERIAL]
        if outside and name not in _DISPOSAL_OPS:
            models = ", ".join(sorted({m for t in outside for m in transition(t).modules}))
            q.not_checked = (f"entry {pos}: {name} of {work} reports "
                             f"{' or '.join(steps)}, which is {models}'s, not SerialQueue.tla's")
            continue
        if sub is None:
            q.not_checked = f"entry {pos}: {name} of {work}, a work the runner never submitted"
            continue
        if sub.route.admit != sub.route.run and not (
                sub.moved and sub.target.spot_wide_wiring and q.owner == sub.target.name):
            q.not_checked = (f"entry {pos}: {work} is admitted by {sub.route.admit} and runs "
                             f"on {sub.route.run}, queues the trace spec does not walk "
                             "together")
            continue
        op = _DISPOSAL_OPS.get(name, steps[0])
        if sub.final and op == ADMIT:
            # D-12: accepted and held back, the session closing at once; placed later
            # by a hidden Transfer
            op = HOLD
            if q.close_after < 0:
                q.close_after = len(q.steps)
        on_call = msg.get("call")
        if name == "yielded" and isinstance(on_call, str) and on_call not in settled:
            pending[on_call] = (q, len(q.steps))
        q.steps.append(WireStep(op, work, pos, name,
                                closed=name == "rejected" and msg.get("reason") == "closed",
                                kind=_kind(sub), payload=sub.payload,
                                race=racing if op in (ADMIT, REJECT, HOLD) else 0,
                                actor=sub.route.admit if sub.moved else ""))
        moved.add(q.owner)
    return list(queues.values())


def _disposal(cmd: str, msg: Mapping[str, Any], not_safely: set[str]) -> str | None:
    """The trace spec's disposal step a command allows (None for ``close``): a
    ``destroy`` disposes safely unless ``as_not_safely`` was sent first (SD-4)."""
    if cmd == "runtime_end":
        return "end"
    if cmd != DISPOSE_COMMAND:
        return None
    mode = str(msg.get("mode"))
    if mode == "destroy":
        return DISPOSE if str(msg.get("target")) in not_safely else "safely"
    if mode not in _DISPOSAL_MODES:
        raise TranscriptError(f"dispose command with mode {mode!r}: not one of "
                              f"{', '.join(sorted([*_DISPOSAL_MODES, 'destroy']))}")
    return _DISPOSAL_MODES[mode]


@dataclasses.dataclass(frozen=True, slots=True)
class WireLogData:
    """One queue's log as the data module holds it (the fields of its entry in each of
    WireLog.tla's tuples)."""

    policy: str  # the policy fields, one per tuple, in _POLICY_FIELDS order
    lanes: str
    payloads: str
    yields: str
    close_after: int
    disposals: str
    log: str
    works: tuple[str, ...]  # model work i + 1 is works[i]
    notes: tuple[str, ...]
    # SpotWide: each work's Actor queue (1..: the log's Actor queues; 0: none) and its
    # reservation there, and the Actor policy's limits, one per Actor queue
    actor_of: str = ""
    actor_resv: str = ""
    actor_counts: str = ""
    actor_bytes: str = ""


@dataclasses.dataclass(frozen=True, slots=True)
class WireModel:
    """The data module ``WireLog.tla`` of one or more queues' steps (log i + 1 is the
    i-th queue given)."""

    module: str
    logs: tuple[WireLogData, ...]

    @property
    def works(self) -> tuple[str, ...]:
        """The first log's works (model work i + 1 is works[i])."""
        return self.logs[0].works

    @property
    def notes(self) -> tuple[str, ...]:
        return self.logs[0].notes


def _races(steps: Sequence[WireStep]) -> list[tuple[int, int]]:
    """Each step's racing run, as 1-based entries (lo, hi) of the log: a maximal run of
    consecutive admissions of one ``submit_concurrent``, or the step alone."""
    bounds = [(i, i) for i in range(1, len(steps) + 1)]
    i = 0
    while i < len(steps):
        j = i
        if steps[i].race:
            while j + 1 < len(steps) and steps[j + 1].race == steps[i].race:
                j += 1
        for m in range(i, j + 1):
            bounds[m] = (i + 1, j + 1)
        i = j + 1
    return bounds


def _log_data(q: QueueTranscript) -> WireLogData:
    """One queue's entry of the data module. Nothing from the transcript reaches it as
    text: works become 1..N in the order they were accepted or rejected, lanes come from
    a fixed set, numbers are the policy's and the runner's own."""
    order: list[str] = []
    lane: dict[str, tuple[str, int]] = {}
    yields: dict[str, int] = {}
    actor: dict[str, str] = {}  # a SpotWide record -> the Actor queue that admits it
    for step in q.steps:
        if step.op in (ADMIT, REJECT, HOLD) and step.work not in lane:
            order.append(step.work)
            lane[step.work] = (step.kind, step.payload)
            if step.actor:
                actor[step.work] = step.actor
        if step.op == YIELD_TURN:
            yields[step.work] = yields.get(step.work, 0) + 1
    number = {w: i for i, w in enumerate(order, 1)}
    ops = []
    for step, (lo, hi) in zip(q.steps, _races(q.steps), strict=True):
        flag = "TRUE" if step.closed or step.wire == "resumed" else "FALSE"
        ops.append(f'[op |-> "{step.op}", w |-> {number.get(step.work, 0)}, flag |-> {flag}, '
                   f'ret |-> {step.ret}, lo |-> {lo}, hi |-> {hi}]')
    # A record's turn on the Spot queue reserves the fixed cost only (SE-5.3): its
    # payload is its Actor queue's.
    table = [(lane[w][0], 0 if w in actor else lane[w][1], yields.get(w, 0)) for w in order]
    takes = sum(1 for s in q.steps if s.op == TAKE_NEXT)
    limits, notes = scaled_limits(table, q.policy, takes)
    fields = limits.module_fields(table)
    actors = list(dict.fromkeys(actor[w] for w in order if w in actor))
    actor_resv = [0] * len(order)
    actor_count = actor_bytes = 0
    if actors:
        records = [i for i, w in enumerate(order) if w in actor]
        alimits, anotes = scaled_limits([("app", lane[order[i]][1], 0) for i in records],
                                        q.actor_policy or ZLinkExecutionLanePolicy(), 0)
        notes = (*notes, *(f"Actor queues: {n}" for n in anotes))
        for i, payload in zip(records, alimits.payloads, strict=True):
            actor_resv[i] = payload + alimits.fixed
        actor_count, actor_bytes = alimits.app_count, alimits.app_bytes
    policy = ", ".join(str(getattr(limits, name)) for name in _POLICY_FIELDS)
    log = "<<\n        " + ",\n        ".join(ops) + "\n    >>" if ops else "<< >>"
    disposals = "<<" + ", ".join(f'[how |-> "{how}", after |-> {after}, by |-> {by}]'
                                 for how, after, by in q.disposals) + ">>"
    return WireLogData(policy, str(fields["lanes"]), str(fields["payloads"]),
                       str(fields["yields"]), q.close_after, disposals, log, tuple(order),
                       notes,
                       actor_of=", ".join(str(actors.index(actor[w]) + 1 if w in actor else 0)
                                          for w in order),
                       actor_resv=", ".join(str(r) for r in actor_resv),
                       actor_counts=", ".join(str(actor_count) for _ in actors),
                       actor_bytes=", ".join(str(actor_bytes) for _ in actors))


# The data module's policy tuples, in the order _log_data writes a log's values.
_POLICY_FIELDS: Final = ("app_count", "app_bytes", "life_count", "life_bytes", "fixed", "burst")
_POLICY_NAMES: Final = ("LogAppCountCap", "LogAppByteCap", "LogLifeCountCap", "LogLifeByteCap",
                        "LogFixedCost", "LogBurstLimit")


def build_wire_model(queues: QueueTranscript | Sequence[QueueTranscript]) -> WireModel:
    """The data module for the steps of one queue or many (log i is the i-th). Raises
    ``TraceRangeError`` when a queue's numbers are beyond TLC's integers."""
    if isinstance(queues, QueueTranscript):
        queues = [queues]
    if not queues:
        raise ValueError("no queue to write a data module for")
    logs = tuple(_log_data(q) for q in queues)

    def column(values: Sequence[str]) -> str:
        return "<<" + ", ".join(values) + ">>"
    policy = "\n".join(
        f"{name} == " + column([log.policy.split(", ")[n] for log in logs])
        for n, name in enumerate(_POLICY_NAMES))
    module = _WIRE_MODULE.format(
        count=len(logs), policy=policy,
        lanes=column([f"<<{log.lanes}>>" for log in logs]),
        payloads=column([f"<<{log.payloads}>>" for log in logs]),
        yields=column([f"<<{log.yields}>>" for log in logs]),
        close_after=column([str(log.close_after) for log in logs]),
        disposals=column([log.disposals for log in logs]),
        actor_of=column([f"<<{log.actor_of}>>" for log in logs]),
        actor_resv=column([f"<<{log.actor_resv}>>" for log in logs]),
        actor_counts=column([f"<<{log.actor_counts}>>" for log in logs]),
        actor_bytes=column([f"<<{log.actor_bytes}>>" for log in logs]),
        log="<<\n    " + ",\n    ".join(log.log for log in logs) + "\n>>")
    return WireModel(module, logs)


_WIRE_MODULE = """\
-------------------------------- MODULE WireLog --------------------------------
(* Written from conformance transcripts by zlink_tool.tla.transcript: queues' *)
(* observed events and their lane policies, which TraceWireSerialQueue       *)
(* checks, log i being the i-th entry of every tuple below. What is          *)
(* abstracted away: work names (a queue's works are 1..N in the order they   *)
(* were accepted or rejected), every field the spec has no use for, and the  *)
(* steps the wire does not show (TraceWireSerialQueue leaves them open).     *)
EXTENDS Integers

NLogs == {count}

\\* Each queue's lane policy (ZLinkExecutionLanePolicy), from the create command.
{policy}

\\* Work w of log i: its lane ("app", "life" or "barrier"), payload bytes and most
\\* yields are LogLanes[i][w], LogPayloads[i][w] and LogYields[i][w].
LogLanes == {lanes}
LogPayloads == {payloads}
LogYields == {yields}

\\* Events of the queue seen before the close command was sent (-1: never sent).
LogCloseAfter == {close_after}

\\* The disposal commands sent to the queue's target, in order: how (dispose,
\\* safely, timeout, or end: the runtime's end), after how many events of the
\\* queue it was sent, by how many its reply came (-1: it sets no deadline).
LogDisposals == {disposals}

\\* A SpotWide Spot's Actor queues (log i's are 1..Len(LogActorCountCap[i])): the one
\\* that admitted work w (0: none, a work of the Spot queue or of no Spot), what w
\\* reserves there (its payload and the Actor policy's fixed cost), and each Actor
\\* queue's count and byte limits (the Actor policy's). The Spot queue holds such a
\\* work's execution turn at the fixed cost only (its payload above is 0).
LogActorOf == {actor_of}
LogActorResv == {actor_resv}
LogActorCountCap == {actor_counts}
LogActorByteCap == {actor_bytes}

\\* Each log's events in order: op is the core event the wire event reports; w the
\\* work (0: one this queue never admitted); flag whether a rejection was for a
\\* closed queue, or whether a take was a resume (resumed, not started); ret, for
\\* yield_turn, how many events of this queue came before the runner settled the
\\* call the work waits on (0: no command did); lo..hi the entries of the racing run
\\* (one submit_concurrent's accepted and rejected events) it is in, itself alone
\\* if none. An op "sync" is a settle answered: nothing could progress then.
Log == {log}
=============================================================================
"""

# A batch stops growing at this many logs or events (one TLC run; a bigger one takes
# memory for little gain: the JVM's start is paid once already).
BATCH_LOGS: Final = 500
BATCH_EVENTS: Final = 20_000


def check_queues_with_tlc(
    queues: Sequence[QueueTranscript], models_dir: Path, timeout: float = 600.0,
    progress: Callable[[int, int], None] | None = None,
) -> list[TlcTraceVerdict | RuntimeError | TraceRangeError | subprocess.TimeoutExpired]:
    """TLC's verdict on each checkable queue, in order, from as few TLC runs as can be: a
    batch of queues is one data module and one JVM (``BATCH_LOGS``, ``BATCH_EVENTS``).
    Where a queue breaks an invariant TLC stops the batch there; the queues it did not
    finish are run again without that one. A queue whose numbers TLC cannot hold gets
    its ``TraceRangeError``; a batch without a verdict (timeout, TLC's own failure) gives
    each of its queues that error. ``progress(done, total)`` is called after each run."""
    find_jar()  # a missing tool is said first
    find_java()
    results: list[TlcTraceVerdict | RuntimeError | TraceRangeError
                  | subprocess.TimeoutExpired | None] = [None] * len(queues)
    todo: list[int] = []
    for i, q in enumerate(queues):
        if q.not_checked is not None:
            raise TraceFormatError(q.not_checked)
        try:
            _log_data(q)
        except TraceRangeError as exc:
            results[i] = exc
            continue
        todo.append(i)
    while todo:
        batch: list[int] = []
        events = 0
        for i in todo:
            if batch and (len(batch) >= BATCH_LOGS or events + len(queues[i].steps)
                          > BATCH_EVENTS):
                break
            batch.append(i)
            events += len(queues[i].steps)
        done = _run_batch([queues[i] for i in batch], models_dir, timeout)
        for i, verdict in zip(batch, done, strict=True):
            if verdict is not None:
                results[i] = verdict
        todo = [i for i in todo if results[i] is None]
        if progress is not None:
            progress(len(queues) - len(todo), len(queues))
    return [r for r in results if r is not None]


def _run_batch(queues: Sequence[QueueTranscript], models_dir: Path, timeout: float,
               ) -> list[TlcTraceVerdict | RuntimeError | subprocess.TimeoutExpired | None]:
    """One TLC run over ``queues``: a verdict for each queue it decided, None for those
    it did not reach (a queue before them broke an invariant)."""
    model = build_wire_model(queues)
    try:
        output, seconds = run_trace_tlc(model.module, "WireLog.tla", WIRE_FILES, models_dir,
                                        timeout)
    except (subprocess.TimeoutExpired, RuntimeError) as exc:
        if isinstance(exc, ToolMissingError):
            raise
        return [exc] * len(queues)
    matched = {int(m) for m in _MATCHED.findall(output)}
    furthest: dict[int, int] = {}
    for log, at in _AT.findall(output):
        furthest[int(log)] = max(furthest.get(int(log), 0), int(at))
    violated = _VIOLATED.search(output)
    broken = None
    if violated is not None:
        states = _K.findall(output[violated.end():])
        broken = int(states[-1]) if states else None
        if broken is None or broken in matched:
            raise RuntimeError("TLC reported a broken invariant without the log it broke "
                               "on:\n" + "\n".join(output.splitlines()[-30:]))
    share = seconds / len(queues)
    out: list[TlcTraceVerdict | RuntimeError | subprocess.TimeoutExpired | None] = []
    for n, (q, data) in enumerate(zip(queues, model.logs, strict=True), 1):
        if n in matched:
            out.append(TlcTraceVerdict(True, len(q.steps), None, None, share, output,
                                       data.notes))
        elif n == broken:
            # the state that broke it matched one more event at most
            steps = max(0, furthest.get(n, 0) - 1)
            first = steps if steps < len(q.steps) else None
            out.append(TlcTraceVerdict(False, steps, first, violated.group(1) if violated
                                       else None, share, output, data.notes))
        elif violated is not None:
            out.append(None)  # not finished: TLC stopped at another log's broken invariant
        else:
            steps = furthest.get(n, 0)
            out.append(TlcTraceVerdict(False, steps, steps if steps < len(q.steps) else None,
                                       None, share, output, data.notes))
    return out


_AT: Final = re.compile(r'<<"TRACE_AT", (\d+), (\d+)>>')
_MATCHED: Final = re.compile(r'<<"TRACE_MATCHED", (\d+), \d+>>')
_VIOLATED: Final = re.compile(r"Invariant (\w+) is violated")
_K: Final = re.compile(r"^/\\ k = (\d+)$", re.M)
