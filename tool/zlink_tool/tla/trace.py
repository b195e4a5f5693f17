"""Trace validation with TLC: does a recorded event log follow ``SerialQueue.tla``?

The log of one queue (``specs/trace-format.md``) becomes a generated TLA+ module in the
event-constrained style: a cursor ``l`` walks the log, and each step is the spec's own
action named by the event (``take_next`` is ``TakeNext``), with the event's parameters
and post-state checks. The environment actions a log cannot show (``BudgetExpires``
before an ``end_slice``, ``CallReturns`` before a ``requeue``) are allowed only right
before the event that needs them, so each log position has a handful of states and a
10,000-event log checks in seconds. The invariants of the main model run are checked on
every state of the path.

Nothing from the log reaches the generated module as text: works become integers
1..N (in submission order), lanes, reasons and event names are chosen from fixed sets,
numbers are parsed as integers, and anything else is refused before TLC runs.

Verdicts: ``TRACE_MATCHED`` printed and exit 0, the log is a behaviour of the model; exit
0 without it, the log reached a dead end, and the deepest state TLC reached tells which
event could not be matched; exit 12, a spec invariant broke on the way (named).
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from zlink_model.policy import ZLinkExecutionLanePolicy

from .runner import find_jar, find_java

__all__ = ["TLC_EVENTS", "TlcTraceVerdict", "TraceModel", "build_trace_model", "check_with_tlc"]

# The events SerialQueue.tla has actions for, with the rule each one serves.
TLC_EVENTS = {
    "admit": ("Admit", "SE-6.3"),
    "reject": ("Reject", "SE-6.3"),
    "enter_drain": ("EnterDrain", "SE-6.5"),
    "take_next": ("TakeNext", "SE-6.6"),
    "finish": ("Finish", "SE-5.2"),
    "yield_turn": ("YieldTurn", "SE-6.7"),
    "requeue": ("Requeue", "SE-6.7"),
    "end_slice": ("EndSlice", "SE-6.4"),
    "exit_drain": ("ExitDrain", "SE-6.6"),
    "close": ("Close", "SE-6.2"),
}
INVARIANTS = ("TypeOK", "NoDoubleDrain", "FifoWithinLane", "LifecycleBurstBounded",
              "NoResumeWithoutRequeue", "NoLostWakeup", "CapacityRespected",
              "ReservationsBalanced")


class TraceFormatError(ValueError):
    """The log cannot be turned into a trace module (bad field, unknown event)."""


@dataclasses.dataclass(frozen=True)
class TraceModel:
    """The generated module and configuration, and how log lines map to its steps."""

    module: str
    config: str
    lines: tuple[int, ...]  # log line (1-based) of each step
    levels: tuple[int, ...]  # BFS depth at which step i is taken (1-based: the state after)


@dataclasses.dataclass(frozen=True)
class TlcTraceVerdict:
    """What TLC said about the log."""

    matched: bool
    steps: int  # how many log events were matched
    first_unmatched: int | None  # index (0-based) into the events, or None
    broken_invariant: str | None
    seconds: float
    output: str


def _int(value: Any, what: str, index: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TraceFormatError(f"event {index + 1}: {what} must be an integer, got {value!r}")
    return value


def _bool(value: Any, what: str, index: int) -> bool:
    if not isinstance(value, bool):
        raise TraceFormatError(f"event {index + 1}: {what} must be true or false, got {value!r}")
    return value


def build_trace_model(events: Sequence[dict[str, Any]],
                      policy: ZLinkExecutionLanePolicy) -> TraceModel:
    """The trace module for one queue's events (dicts in the trace format)."""
    # Model works are reused: a work that finished (or was rejected) frees its model
    # identity for the next submission of the same lane and payload, so the model has
    # as many works as were ever live at once, not as many as the log has.
    works: list[tuple[str, int, int]] = []  # lane, payload, most yields per model work
    free: dict[tuple[str, int], list[int]] = {}
    by_wid: dict[int, int] = {}
    yielded: dict[int, int] = {}  # model work -> yields in its current life

    def model_work(kind: str, payload: int) -> int:
        pool = free.get((kind, payload))
        if pool:
            return pool.pop()
        works.append((kind, payload, 0))
        return len(works)

    def release(w: int) -> None:
        kind, payload, _ = works[w - 1]
        free.setdefault((kind, payload), []).append(w)
        yielded.pop(w, None)
    steps: list[str] = []
    lines: list[int] = []
    fixed = policy.fixed_work_byte_cost
    for i, ev in enumerate(events):
        name = ev.get("event")
        if name not in TLC_EVENTS:
            raise TraceFormatError(
                f"event {i + 1}: {name!r} has no action in SerialQueue.tla "
                "(check this log with the Python model only)")
        if name in ("admit", "reject"):
            lane = ev.get("lane")
            if lane not in ("application", "lifecycle"):
                raise TraceFormatError(f"event {i + 1}: lane must be application or lifecycle")
            barrier = _bool(ev.get("barrier", False), "barrier", i)
            kind = "life" if lane == "lifecycle" else ("barrier" if barrier else "app")
            payload = _int(ev.get("bytes"), "bytes", i) - fixed
            if payload < 0:
                raise TraceFormatError(f"event {i + 1}: bytes below the fixed cost {fixed}")
            w = model_work(kind, payload)
            if name == "admit":
                by_wid[_int(ev.get("work"), "work", i)] = w
                pos = _int(ev.get("pos"), "pos", i)
                wake = "TRUE" if _bool(ev.get("wake"), "wake", i) else "FALSE"
                steps.append(f'[op |-> "admit", w |-> {w}, pos |-> {pos}, flag |-> {wake}]')
            else:
                steps.append(f'[op |-> "reject", w |-> {w}, pos |-> 0, flag |-> FALSE]')
                release(w)
        elif name in ("take_next", "finish", "yield_turn", "requeue"):
            wid = _int(ev.get("work"), "work", i)
            # A work that is not live cannot take part in any step: 0 (NoWork) makes the
            # model refuse this event, which is the verdict such a log deserves.
            w = by_wid.get(wid, 0)
            if w and name == "yield_turn":
                kind, payload, most = works[w - 1]
                yielded[w] = yielded.get(w, 0) + 1
                works[w - 1] = (kind, payload, max(most, yielded[w]))
            elif w and name == "finish":
                release(by_wid.pop(wid))
            flag = "FALSE"
            if name == "requeue":
                flag = "TRUE" if _bool(ev.get("wake"), "wake", i) else "FALSE"
            steps.append(f'[op |-> "{name}", w |-> {w}, pos |-> 0, flag |-> {flag}]')
        elif name == "end_slice":
            flag = "TRUE" if _bool(ev.get("reschedule"), "reschedule", i) else "FALSE"
            steps.append(f'[op |-> "end_slice", w |-> 0, pos |-> 0, flag |-> {flag}]')
        else:
            steps.append(f'[op |-> "{name}", w |-> 0, pos |-> 0, flag |-> FALSE]')
        lines.append(i + 1)
    levels = []
    level = 1
    for ev in events:
        level += 2 if ev.get("event") in ("end_slice", "requeue") else 1
        levels.append(level)
    n = len(works)
    module = _MODULE.format(
        log=",\n    ".join(steps) if steps else "",
        n=n,
        lanes=", ".join(f'"{k}"' for k, _, _ in works),
        payloads=", ".join(str(p) for _, p, _ in works),
        yields=", ".join(str(y) for _, _, y in works),
    )
    close = "TRUE" if any(e.get("event") == "close" for e in events) else "FALSE"
    config = _CONFIG.format(
        app_count=policy.application_message_capacity,
        app_bytes=policy.application_byte_capacity,
        life_count=policy.lifecycle_message_capacity,
        life_bytes=policy.lifecycle_byte_capacity,
        fixed=fixed, burst=policy.lifecycle_burst_limit, close=close,
        invariants="\n    ".join(("Matched", *INVARIANTS)),
    )
    return TraceModel(module, config, tuple(lines), tuple(levels))


_MODULE = """\
---------------------------- MODULE TraceSerialQueue ----------------------------
\\* Generated by zlink trace check: one recorded log of one queue, as a path the
\\* SerialQueue spec must be able to take. Do not edit.
EXTENDS SerialQueue, TLC

Log == <<
    {log}
>>

TraceWorks == 1..{n}
TraceLane == [w \\in 1..{n} |-> <<{lanes}>>[w]]
TracePayload == [w \\in 1..{n} |-> <<{payloads}>>[w]]
TraceYields == [w \\in 1..{n} |-> <<{yields}>>[w]]
TraceSubmitters == {{"s"}}
TraceScript == [s \\in TraceSubmitters |-> [i \\in 1..{n} |-> i]]

VARIABLE l

\\* The log says which work is submitted next: no search through the script.
TraceNextOf(s) ==
    IF l < Len(Log) /\\ Log[l + 1].op \\in {{"admit", "reject"}} THEN Log[l + 1].w ELSE NoWork

Ev == Log[l + 1]

Step ==
    CASE Ev.op = "admit" -> Admit("s") /\\ wid'[Ev.w] = Ev.pos
                           /\\ Ev.flag = (~drainScheduled /\\ ~draining)
      [] Ev.op = "reject" -> Reject("s")
      [] Ev.op = "enter_drain" -> EnterDrain
      [] Ev.op = "take_next" -> TakeNext /\\ current' = Ev.w
      [] Ev.op = "finish" -> Finish(Ev.w)
      [] Ev.op = "yield_turn" -> YieldTurn(Ev.w)
      [] Ev.op = "requeue" -> Requeue(Ev.w) /\\ Ev.flag = (~drainScheduled /\\ ~draining)
      [] Ev.op = "end_slice" -> EndSlice /\\ drainScheduled' = Ev.flag
      [] Ev.op = "exit_drain" -> ExitDrain
      [] Ev.op = "close" -> Close

TraceInit == Init /\\ l = 0

TraceNext ==
    \\/ l < Len(Log) /\\ Step /\\ l' = l + 1
    \\/ l < Len(Log) /\\ Ev.op = "end_slice" /\\ BudgetExpires /\\ UNCHANGED l
    \\/ l < Len(Log) /\\ Ev.op = "requeue" /\\ CallReturns(Ev.w) /\\ UNCHANGED l

Matched == l = Len(Log) => (PrintT(<<"TRACE_MATCHED", l>>) /\\ TLCSet("exit", TRUE))
=============================================================================
"""

_CONFIG = """\
CONSTANTS
    Works <- TraceWorks
    Lane <- TraceLane
    Payload <- TracePayload
    MaxYields <- TraceYields
    Submitters <- TraceSubmitters
    Script <- TraceScript
    NextOf <- TraceNextOf
    AppCountCap = {app_count}
    AppByteCap = {app_bytes}
    LifeCountCap = {life_count}
    LifeByteCap = {life_bytes}
    FixedCost = {fixed}
    BurstLimit = {burst}
    CloseAllowed = {close}
    Bug = "none"
INIT TraceInit
NEXT TraceNext
INVARIANTS
    {invariants}
"""

_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_VIOLATED = re.compile(r"Invariant (\w+) is violated")


def check_with_tlc(events: Sequence[dict[str, Any]], policy: ZLinkExecutionLanePolicy,
                   models_dir: Path, timeout: float = 600.0) -> TlcTraceVerdict:
    """Run TLC on the trace module of ``events``; ``models_dir`` holds SerialQueue.tla."""
    model = build_trace_model(events, policy)
    java, jar = find_java(), find_jar()
    with tempfile.TemporaryDirectory(prefix="zlink-trace-") as tmp:
        scratch = Path(tmp)
        shutil.copy(models_dir / "SerialQueue.tla", scratch / "SerialQueue.tla")
        (scratch / "TraceSerialQueue.tla").write_text(model.module, encoding="utf-8")
        (scratch / "TraceSerialQueue.cfg").write_text(model.config, encoding="utf-8")
        cmd = [java, "-XX:+UseParallelGC", f"-Djava.io.tmpdir={scratch}", "-cp", str(jar),
               "tlc2.TLC", "-workers", "1", "-deadlock", "-cleanup", "-metadir",
               str(scratch / "meta"), "-config", "TraceSerialQueue.cfg",
               "TraceSerialQueue.tla"]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True,
                              timeout=timeout, check=False)
        seconds = time.monotonic() - t0
    output = proc.stdout + proc.stderr
    if "TRACE_MATCHED" in output:
        return TlcTraceVerdict(True, len(events), None, None, seconds, output)
    violated = _VIOLATED.search(output)
    depth_match = _DEPTH.search(output)
    depth = int(depth_match.group(1)) if depth_match else None
    if violated is None and depth is None:
        raise RuntimeError(f"TLC failed on the trace module (exit {proc.returncode}):\n"
                           + "\n".join(output.splitlines()[-30:]))
    steps = 0
    if depth is not None:
        steps = sum(1 for level in model.levels if level <= depth)
    elif violated is not None:
        states = len(re.findall(r"^State \d+:", output, re.M))
        steps = max(0, sum(1 for level in model.levels if level <= states) - 1)
    first = steps if steps < len(events) else None
    return TlcTraceVerdict(False, steps, first,
                           violated.group(1) if violated else None, seconds, output)
