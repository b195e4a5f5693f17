"""Trace validation with TLC: does a recorded event log follow ``SerialQueue.tla``?

The trace specification is the checked-in ``models/TraceSerialQueue.tla`` with its
``TraceSerialQueue.cfg``, in the event-constrained style: a cursor ``l`` walks the log,
and each step is the spec's own action named by the event (``take_next`` is
``TakeNext``), with the event's parameters and post-state checks; the environment
actions a log cannot show are allowed only right before the event that needs them, so a
10,000-event log checks in seconds. The log is data: this module turns the log of one
queue (``specs/trace-format.md``) and its lane policy into a small generated module,
``TraceLog.tla`` (``Log == << ... >>``, the works' lanes, payloads and yields, the
policy's limits), and runs TLC on the trace specification beside it. Nothing else is
generated, so the specification can be read, and run by hand on a data module
(``write_trace_files``; docs/models.md, "Trace validation").

Nothing from the log reaches the data module as text: works become integers
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
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.vocabulary import tla_actions

from .runner import find_jar, find_java

__all__ = ["TLC_EVENTS", "TRACE_FILES", "TlcTraceVerdict", "TraceModel", "build_trace_model",
           "check_with_tlc", "write_trace_files"]

# The events SerialQueue.tla has actions for: event -> (action, the rules a refused event
# is reported under), from the one table of names.
TLC_EVENTS: Final[Mapping[str, tuple[str, str]]] = {
    event: (t.action, t.rule_text) for event, t in tla_actions("SerialQueue").items()}
# The checked-in modules TLC needs beside the data module, from the models directory.
TRACE_FILES = ("SerialQueue.tla", "TraceSerialQueue.tla", "TraceSerialQueue.cfg")


class TraceFormatError(ValueError):
    """The log cannot be turned into a data module (bad field, unknown event)."""


@dataclasses.dataclass(frozen=True)
class TraceModel:
    """The generated data module (``TraceLog.tla``), and how log lines map to its steps."""

    module: str
    works: int  # model works the log needs (1..works)
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
    """The data module for one queue's events (dicts in the trace format)."""
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
    module = _MODULE.format(
        log=",\n    ".join(steps),
        lanes=", ".join(f'"{k}"' for k, _, _ in works),
        payloads=", ".join(str(p) for _, p, _ in works),
        yields=", ".join(str(y) for _, _, y in works),
        app_count=policy.application_message_capacity,
        app_bytes=policy.application_byte_capacity,
        life_count=policy.lifecycle_message_capacity,
        life_bytes=policy.lifecycle_byte_capacity,
        fixed=fixed, burst=policy.lifecycle_burst_limit,
    )
    return TraceModel(module, len(works), tuple(lines), tuple(levels))


_MODULE = """\
------------------------------- MODULE TraceLog -------------------------------
(* Written from a recorded log by zlink_tool.tla.trace: the data that        *)
(* TraceSerialQueue.tla checks, the log of one queue and its lane policy.    *)
(* What is abstracted away: work ids (works are 1..N in submission order; a  *)
(* finished or rejected work lends its number to a later one of the same     *)
(* lane and payload), times, and every field the spec has no use for.        *)

\\* The lane policy (ZLinkExecutionLanePolicy).
LogAppCountCap == {app_count}
LogAppByteCap == {app_bytes}
LogLifeCountCap == {life_count}
LogLifeByteCap == {life_bytes}
LogFixedCost == {fixed}
LogBurstLimit == {burst}

\\* Work w's lane ("app", "life" or "barrier"), payload bytes (its reservation less
\\* the fixed cost) and the most times it yielded in one life.
LogLanes == <<{lanes}>>
LogPayloads == <<{payloads}>>
LogYields == <<{yields}>>

\\* The events in order: op is the event's name; w the work (0: none); pos the
\\* admission's sequence number; flag the wake flag of admit and requeue, or
\\* whether end_slice rescheduled.
Log == <<
    {log}
>>
=============================================================================
"""


def write_trace_files(events: Sequence[dict[str, Any]], policy: ZLinkExecutionLanePolicy,
                      models_dir: Path, directory: Path) -> TraceModel:
    """Write into ``directory`` everything TLC needs to check ``events``: the data
    module ``TraceLog.tla`` and copies of the checked-in modules (``TRACE_FILES``).
    Then ``java -cp tla2tools.jar tlc2.TLC -deadlock -config TraceSerialQueue.cfg
    TraceSerialQueue.tla`` run there is the check."""
    model = build_trace_model(events, policy)
    missing = [name for name in TRACE_FILES if not (models_dir / name).is_file()]
    if missing:
        raise RuntimeError(f"no {', '.join(missing)} in {models_dir}")
    directory.mkdir(parents=True, exist_ok=True)
    for name in TRACE_FILES:
        shutil.copy(models_dir / name, directory / name)
    (directory / "TraceLog.tla").write_text(model.module, encoding="utf-8")
    return model


_DEPTH = re.compile(r"depth of the complete state graph search is (\d+)")
_VIOLATED = re.compile(r"Invariant (\w+) is violated")


def check_with_tlc(events: Sequence[dict[str, Any]], policy: ZLinkExecutionLanePolicy,
                   models_dir: Path, timeout: float = 600.0) -> TlcTraceVerdict:
    """Run TLC on the trace specification with the data of ``events``; ``models_dir``
    holds the checked-in modules (``TRACE_FILES``)."""
    jar, java = find_jar(), find_java()  # a missing extra first, then Java
    with tempfile.TemporaryDirectory(prefix="zlink-trace-") as tmp:
        scratch = Path(tmp)
        model = write_trace_files(events, policy, models_dir, scratch)
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
