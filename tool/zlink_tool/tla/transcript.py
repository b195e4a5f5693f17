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

A queue is not checked by TLC (said so, never passed) when its part of the transcript
needs a step ``SerialQueue.tla`` does not have: a transition of another model
(``cancelled`` may be ``cancel``, ``zombie`` is ``dispose_safely``: Disposal.tla's), or a
work admitted by one queue and run on another (a SpotWide transfer, a session's final
work placed later: SpotWide.tla's and D-12's).
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from zlink_conformance.protocol.routing import Submission, TargetInfo, submissions
from zlink_conformance.protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.vocabulary import (
    ADMIT,
    REJECT,
    TAKE_NEXT,
    WIRE_EVENTS,
    YIELD_TURN,
    tla_actions,
    transition,
)

from .runner import find_jar, find_java
from .trace import TlcTraceVerdict, TraceFormatError, run_trace_tlc, scaled_limits

__all__ = ["WIRE_FILES", "QueueTranscript", "TranscriptError", "WireModel", "WireStep",
           "build_wire_model", "check_queue_with_tlc", "is_transcript", "queue_transcripts",
           "read_transcript"]

# The checked-in modules TLC needs beside the data module WireLog.tla.
WIRE_FILES: Final = ("SerialQueue.tla", "TraceWireSerialQueue.tla", "TraceWireSerialQueue.cfg")
_SERIAL: Final = tla_actions("SerialQueue")
_TRANSITIONS: Final[Mapping[str, tuple[str, ...]]] = {w.name: w.transitions for w in WIRE_EVENTS}


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


@dataclasses.dataclass
class QueueTranscript:
    """One queue's part of a transcript, or why TLC cannot check it."""

    owner: str
    policy: ZLinkExecutionLanePolicy = dataclasses.field(
        default_factory=ZLinkExecutionLanePolicy)
    steps: list[WireStep] = dataclasses.field(default_factory=list)
    close_after: int = -1  # events of this queue seen before a close command; -1: none
    not_checked: str | None = None


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
    pending: dict[str, tuple[QueueTranscript, int]] = {}  # call -> its yield step
    settled: set[str] = set()  # calls the runner completed or failed

    def submission(sub: Mapping[str, Any]) -> None:
        for info in submissions(sub, targets):
            works[info.work] = info

    def queue(owner: str, target: str) -> QueueTranscript:
        q = queues.get(owner)
        if q is None:
            which = ("actor_policy" if owner.startswith(f"{target}/actor:")
                     else "timer_policy" if owner.startswith(f"{target}/timer:")
                     else "policy")
            q = queues[owner] = QueueTranscript(
                owner, policies.get(target, {}).get(which) or ZLinkExecutionLanePolicy())
            if target in closed:
                q.close_after = 0
        return q

    for pos, (direction, msg) in enumerate(entries):
        if direction == "sent":
            cmd = msg.get("cmd")
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
                for sub in msg.get("submissions", []) or []:
                    if isinstance(sub, dict):
                        submission(sub)
            elif cmd in ("complete", "fail"):
                call = str(msg.get("call"))
                settled.add(call)
                if call in pending:  # the call returns from here on, not before
                    q, index = pending.pop(call)
                    q.steps[index] = dataclasses.replace(q.steps[index], ret=len(q.steps))
            elif cmd in (CLOSE_COMMAND, DISPOSE_COMMAND, "runtime_end"):
                # A disposal closes too; whatever else it does shows as events of
                # Disposal.tla (cancelled, zombie), which leave the queue unchecked.
                names = set(targets) if cmd == "runtime_end" else {str(msg.get("target"))}
                closed.update(names)
                for q in queues.values():
                    sub_target = q.owner.split("/", 1)[0]
                    if sub_target in names and q.close_after < 0:
                        q.close_after = len(q.steps)
            continue
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
        if outside:
            models = ", ".join(sorted({m for t in outside for m in transition(t).modules}))
            q.not_checked = (f"entry {pos}: {name} of {work} reports "
                             f"{' or '.join(steps)}, which is {models}'s, not SerialQueue.tla's")
            continue
        if sub is None:
            q.not_checked = f"entry {pos}: {name} of {work}, a work the runner never submitted"
            continue
        if sub.route.admit != sub.route.run:
            q.not_checked = (f"entry {pos}: {work} is admitted by {sub.route.admit} and runs "
                             f"on {sub.route.run}: a transfer, SpotWide.tla's")
            continue
        if sub.target.type == "session" and sub.entry == "execute_final":
            q.not_checked = (f"entry {pos}: {work} is a session's final work, placed by a "
                             "step the wire does not show (D-12), which SerialQueue.tla "
                             "does not have")
            continue
        on_call = msg.get("call")
        if name == "yielded" and isinstance(on_call, str) and on_call not in settled:
            pending[on_call] = (q, len(q.steps))
        q.steps.append(WireStep(steps[0], work, pos, name,
                                closed=name == "rejected" and msg.get("reason") == "closed",
                                kind=_kind(sub), payload=sub.payload))
    return list(queues.values())


@dataclasses.dataclass(frozen=True, slots=True)
class WireModel:
    """The data module ``WireLog.tla`` of one queue's steps."""

    module: str
    works: tuple[str, ...]  # model work i + 1 is works[i]
    notes: tuple[str, ...]


def build_wire_model(q: QueueTranscript) -> WireModel:
    """The data module for a queue's steps. Nothing from the transcript reaches the
    module as text: works become 1..N in the order they were accepted or rejected, lanes
    come from a fixed set, numbers are the policy's and the runner's own."""
    order: list[str] = []
    lane: dict[str, tuple[str, int]] = {}
    yields: dict[str, int] = {}
    for step in q.steps:
        if step.op in (ADMIT, REJECT) and step.work not in lane:
            order.append(step.work)
            lane[step.work] = (step.kind, step.payload)
        if step.op == YIELD_TURN:
            yields[step.work] = yields.get(step.work, 0) + 1
    number = {w: i for i, w in enumerate(order, 1)}
    ops = []
    for step in q.steps:
        flag = "TRUE" if step.closed else "FALSE"
        ops.append(f'[op |-> "{step.op}", w |-> {number.get(step.work, 0)}, flag |-> {flag}, '
                   f'ret |-> {step.ret}]')
    table = [(lane[w][0], lane[w][1], yields.get(w, 0)) for w in order]
    takes = sum(1 for s in q.steps if s.op == TAKE_NEXT)
    limits, notes = scaled_limits(table, q.policy, takes)
    module = _WIRE_MODULE.format(log=",\n    ".join(ops), close_after=q.close_after,
                                 **limits.module_fields(table))
    return WireModel(module, tuple(order), notes)


_WIRE_MODULE = """\
-------------------------------- MODULE WireLog --------------------------------
(* Written from a conformance transcript by zlink_tool.tla.transcript: one   *)
(* queue's observed events and its lane policy, which TraceWireSerialQueue   *)
(* checks. What is abstracted away: work names (works are 1..N in the order  *)
(* they were accepted or rejected), every field the spec has no use for, and *)
(* the steps the wire does not show (TraceWireSerialQueue leaves them open). *)
EXTENDS Integers

\\* The queue's lane policy (ZLinkExecutionLanePolicy), from the create command.
{policy}

\\* Work w's lane ("app", "life" or "barrier"), payload bytes and most yields.
LogLanes == <<{lanes}>>
LogPayloads == <<{payloads}>>
LogYields == <<{yields}>>

\\* Events of this queue seen before the close command was sent (-1: never sent).
LogCloseAfter == {close_after}

\\* The events in order: op is the core event the wire event reports; w the work
\\* (0: one this queue never admitted); flag whether a rejection was for a closed
\\* queue; ret, for yield_turn, how many events of this queue came before the runner
\\* settled the call the work waits on (0: no command did).
Log == <<
    {log}
>>
=============================================================================
"""


def check_queue_with_tlc(q: QueueTranscript, models_dir: Path,
                         timeout: float = 600.0) -> TlcTraceVerdict:
    """TLC's verdict on one checkable queue of a transcript. ``first_unmatched`` is the
    index into ``q.steps`` of the first event no filling-in of the hidden steps allows."""
    if q.not_checked is not None:
        raise TraceFormatError(q.not_checked)
    find_jar()  # a missing tool is said first
    find_java()
    model = build_wire_model(q)
    output, seconds = run_trace_tlc(model.module, "WireLog.tla", WIRE_FILES, models_dir,
                                    timeout)
    if "TRACE_MATCHED" in output:
        return TlcTraceVerdict(True, len(q.steps), None, None, seconds, output, model.notes)
    violated = _VIOLATED.search(output)
    steps = max((int(m) for m in _AT.findall(output)), default=0)
    if violated is not None:  # the state that broke it matched one more event at most
        steps = max(0, steps - 1)
    first = steps if steps < len(q.steps) else None
    return TlcTraceVerdict(False, steps, first, violated.group(1) if violated else None,
                           seconds, output, model.notes)


_AT: Final = re.compile(r'<<"TRACE_AT", (\d+)>>')
_VIOLATED: Final = re.compile(r"Invariant (\w+) is violated")

