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

TLC 2.15 reads integers as 32-bit: a literal of 2^31 or more stops it before it checks
anything (``NumberFormatException``). Byte values are only ever compared and added, so
they are rescaled exactly before TLC (``scaled_limits``): a limit the log can never reach is
lowered to what the log could reserve at most, and every byte value is divided by their
greatest common divisor; a runtime whose policy allows 2 GiB is checked that way. What
cannot be brought under 2^31 exactly (a position, or bytes no exact rescaling makes small
enough) is refused with ``TraceRangeError``, before TLC, saying which event and why.

Verdicts: ``TRACE_MATCHED`` printed and exit 0, the log is a behaviour of the model; exit
0 without it, the log reached a dead end, and the deepest state TLC reached tells which
event could not be matched; exit 12, a spec invariant broke on the way (named).
"""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.vocabulary import (
    ADMIT,
    CLOSE,
    END_SLICE,
    ENTER_DRAIN,
    EXIT_DRAIN,
    FINISH,
    REJECT,
    REQUEUE,
    TAKE_NEXT,
    YIELD_TURN,
    dispatch_table,
    tla_actions,
)

from .runner import JAR_ENV, ToolMissingError, find_jar, find_java, jvm_options

__all__ = ["TLC_EVENTS", "TLC_INT_LIMIT", "TRACE_FILES", "Limits", "TlcTraceVerdict",
           "TraceFormatError", "TraceModel", "TraceRangeError", "build_trace_model",
           "check_with_tlc", "run_trace_tlc", "scaled_limits", "write_trace_files"]

# The events SerialQueue.tla has actions for: event -> (action, the rules a refused event
# is reported under), from the one table of names.
TLC_EVENTS: Final[Mapping[str, tuple[str, str]]] = {
    event: (t.action, t.rule_text) for event, t in tla_actions("SerialQueue").items()}
# How each of those events becomes a step of the data module: a submission (a model work
# is chosen by lane and payload), a step of one work, the end of a slice (its reschedule
# flag), or a step of the drain alone. A SerialQueue action added to the vocabulary
# without a shape here stops this module loading (``dispatch_table``).
_SUBMISSION, _WORK_STEP, _SLICE_END, _DRAIN_STEP = "submission", "work", "slice", "drain"
_SHAPES: Final[dict[str, str]] = dispatch_table("zlink_tool.tla.trace", {
    ADMIT: _SUBMISSION, REJECT: _SUBMISSION,
    TAKE_NEXT: _WORK_STEP, FINISH: _WORK_STEP, YIELD_TURN: _WORK_STEP, REQUEUE: _WORK_STEP,
    END_SLICE: _SLICE_END,
    ENTER_DRAIN: _DRAIN_STEP, EXIT_DRAIN: _DRAIN_STEP, CLOSE: _DRAIN_STEP,
}, events=TLC_EVENTS)
# Events TLC takes two levels for: the environment step the log cannot show comes first.
_TWO_LEVELS: Final = frozenset((END_SLICE, REQUEUE))
# The checked-in modules TLC needs beside the data module, from the models directory.
TRACE_FILES = ("SerialQueue.tla", "TraceSerialQueue.tla", "TraceSerialQueue.cfg")


# TLC 2.15's integers are Java ints: a literal at or above this stops the parser.
TLC_INT_LIMIT: Final = 2**31


class TraceFormatError(ValueError):
    """The log cannot be turned into a data module (bad field, unknown event)."""


class TraceRangeError(ValueError):
    """A value of the log or the policy is beyond TLC 2.15's integers and no exact
    rescaling brings it under them: TLC cannot check this log (which says nothing about
    whether the log follows the rules)."""


@dataclasses.dataclass(frozen=True)
class TraceModel:
    """The generated data module (``TraceLog.tla``), and how log lines map to its steps."""

    module: str
    works: int  # model works the log needs (1..works)
    lines: tuple[int, ...]  # log line (1-based) of each step
    levels: tuple[int, ...]  # BFS depth at which step i is taken (1-based: the state after)
    notes: tuple[str, ...] = ()  # how values were rescaled for TLC, if they were


@dataclasses.dataclass(frozen=True)
class TlcTraceVerdict:
    """What TLC said about the log."""

    matched: bool
    steps: int  # how many log events were matched
    first_unmatched: int | None  # index (0-based) into the events, or None
    broken_invariant: str | None
    seconds: float
    output: str
    notes: tuple[str, ...] = ()  # how the log's values were rescaled for TLC


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
        shape = _SHAPES[str(name)]  # a key of TLC_EVENTS: a str already
        if shape == _SUBMISSION:
            lane = ev.get("lane")
            if lane not in ("application", "lifecycle"):
                raise TraceFormatError(f"event {i + 1}: lane must be application or lifecycle")
            barrier = _bool(ev.get("barrier", False), "barrier", i)
            kind = "life" if lane == "lifecycle" else ("barrier" if barrier else "app")
            payload = _int(ev.get("bytes"), "bytes", i) - fixed
            if payload < 0:
                raise TraceFormatError(f"event {i + 1}: bytes below the fixed cost {fixed}")
            w = model_work(kind, payload)
            if name == ADMIT:
                by_wid[_int(ev.get("work"), "work", i)] = w
                pos = _int(ev.get("pos"), "pos", i)
                if not 0 <= pos < TLC_INT_LIMIT:
                    raise TraceRangeError(
                        f"event {i + 1}: pos {pos} is outside TLC 2.15's integers "
                        f"(0 .. 2^31 - 1); the model numbers admissions from 0, so this "
                        "log cannot be checked by TLC from its start")
                wake = "TRUE" if _bool(ev.get("wake"), "wake", i) else "FALSE"
                steps.append(f'[op |-> "{name}", w |-> {w}, pos |-> {pos}, flag |-> {wake}]')
            else:
                steps.append(f'[op |-> "{name}", w |-> {w}, pos |-> 0, flag |-> FALSE]')
                release(w)
        elif shape == _WORK_STEP:
            wid = _int(ev.get("work"), "work", i)
            # A work that is not live cannot take part in any step: 0 (NoWork) makes the
            # model refuse this event, which is the verdict such a log deserves.
            w = by_wid.get(wid, 0)
            if w and name == YIELD_TURN:
                kind, payload, most = works[w - 1]
                yielded[w] = yielded.get(w, 0) + 1
                works[w - 1] = (kind, payload, max(most, yielded[w]))
            elif w and name == FINISH:
                release(by_wid.pop(wid))
            flag = "FALSE"
            if name == REQUEUE:
                flag = "TRUE" if _bool(ev.get("wake"), "wake", i) else "FALSE"
            steps.append(f'[op |-> "{name}", w |-> {w}, pos |-> 0, flag |-> {flag}]')
        elif shape == _SLICE_END:
            flag = "TRUE" if _bool(ev.get("reschedule"), "reschedule", i) else "FALSE"
            steps.append(f'[op |-> "{name}", w |-> 0, pos |-> 0, flag |-> {flag}]')
        else:
            steps.append(f'[op |-> "{name}", w |-> 0, pos |-> 0, flag |-> FALSE]')
        lines.append(i + 1)
    levels = []
    level = 1
    for ev in events:
        level += 2 if ev.get("event") in _TWO_LEVELS else 1
        levels.append(level)
    takes = sum(1 for ev in events if ev.get("event") == TAKE_NEXT)
    limits, notes = scaled_limits(works, policy, takes)
    module = _MODULE.format(log=",\n    ".join(steps), **limits.module_fields(works))
    return TraceModel(module, len(works), tuple(lines), tuple(levels), notes)


@dataclasses.dataclass(frozen=True)
class Limits:
    """The numbers the data module holds: the policy's limits and each model work's
    payload, as TLC gets them."""

    app_count: int
    app_bytes: int
    life_count: int
    life_bytes: int
    fixed: int
    burst: int
    payloads: tuple[int, ...]

    def module_fields(self, works: Sequence[tuple[str, int, int]]) -> dict[str, object]:
        """The data module's policy and per-work fields (lanes, payloads as TLC gets them,
        most yields), for ``str.format`` of a data module that names them alike
        (``TraceLog.tla`` and ``WireLog.tla``)."""
        return {
            "lanes": ", ".join(f'"{k}"' for k, _, _ in works),
            "payloads": ", ".join(str(p) for p in self.payloads),
            "yields": ", ".join(str(y) for _, _, y in works),
            "policy": _POLICY_DEFINITIONS.format(
                app_count=self.app_count, app_bytes=self.app_bytes,
                life_count=self.life_count, life_bytes=self.life_bytes,
                fixed=self.fixed, burst=self.burst),
        }


def scaled_limits(works: Sequence[tuple[str, int, int]], policy: ZLinkExecutionLanePolicy,
            takes: int) -> tuple[Limits, tuple[str, ...]]:
    """The policy and payloads with every value under ``TLC_INT_LIMIT``, and notes saying
    what changed. Exact, never an approximation: the model only adds byte values and
    compares them with the limits, so

    - a count limit above the works of its lane (a byte limit above the sum of their
      reservations, a burst limit above the takes of the log) can never be reached, and
      lowering it to that most the log can use changes no comparison;
    - dividing every byte value (fixed cost, payloads, byte limits) by their greatest
      common divisor changes no sum's comparison either.

    Anything still too large (after the division, the most a lane can hold plus one more
    reservation must stay under the limit too, or TLC overflows) raises
    ``TraceRangeError``."""
    fixed = policy.fixed_work_byte_cost
    payloads = [p for _, p, _ in works]
    notes: list[str] = []

    def lane_of(kind: str) -> str:
        return "life" if kind == "life" else "app"
    count = {lane: sum(1 for k, _, _ in works if lane_of(k) == lane) for lane in ("app", "life")}
    most = {lane: sum(p + fixed for k, p, _ in works if lane_of(k) == lane)
            for lane in ("app", "life")}

    def lower(limit: int, reach: int, what: str) -> int:
        if limit <= reach or limit < TLC_INT_LIMIT:
            return limit
        notes.append(f"{what} {limit} is more than this log can use ({reach}): checked "
                     f"as {reach}, which changes no comparison")
        return reach
    app_count = lower(policy.application_message_capacity, max(count["app"], 1),
                      "application_message_capacity")
    life_count = lower(policy.lifecycle_message_capacity, max(count["life"], 1),
                       "lifecycle_message_capacity")
    burst = lower(policy.lifecycle_burst_limit, takes + 1, "lifecycle_burst_limit")
    app_bytes = lower(policy.application_byte_capacity, max(most["app"], 1),
                      "application_byte_capacity")
    life_bytes = lower(policy.lifecycle_byte_capacity, max(most["life"], 1),
                       "lifecycle_byte_capacity")
    # A lane the log never uses: its byte limit is never compared with anything but 0,
    # so it takes no part in the divisor and is 1 after it (still above 0 bytes).
    unused = {lane for lane in ("app", "life") if most[lane] == 0}
    byte_values = [fixed, *payloads, *([] if "app" in unused else [app_bytes]),
                   *([] if "life" in unused else [life_bytes])]
    top = max([*byte_values, most["app"] + app_bytes, most["life"] + life_bytes])
    if top >= TLC_INT_LIMIT:
        unit = math.gcd(*byte_values)
        if unit > 1:
            notes.append(f"every byte value divided by {unit}, their greatest common "
                         "divisor, which changes no comparison")
            fixed //= unit
            payloads = [p // unit for p in payloads]
            app_bytes = 1 if "app" in unused else app_bytes // unit
            life_bytes = 1 if "life" in unused else life_bytes // unit
            top = max([fixed, *payloads, most["app"] // unit + app_bytes,
                       most["life"] // unit + life_bytes])
    if top >= TLC_INT_LIMIT:
        raise TraceRangeError(
            "byte values too large for TLC 2.15's integers (< 2^31) even after exact "
            f"rescaling: the policy's byte limits ({policy.application_byte_capacity}, "
            f"{policy.lifecycle_byte_capacity}), the fixed cost {policy.fixed_work_byte_cost} "
            f"and the payloads of this log (largest {max(payloads, default=0)}) reach {top}")
    if max(app_count, life_count, burst) >= TLC_INT_LIMIT:  # lowered above; cannot happen
        raise TraceRangeError("a count limit is beyond TLC 2.15's integers")
    return Limits(app_count, app_bytes, life_count, life_bytes, fixed, burst,
                   tuple(payloads)), tuple(notes)


# The lane policy's definitions, the same in every data module (TraceLog, WireLog).
_POLICY_DEFINITIONS: Final = """\
LogAppCountCap == {app_count}
LogAppByteCap == {app_bytes}
LogLifeCountCap == {life_count}
LogLifeByteCap == {life_bytes}
LogFixedCost == {fixed}
LogBurstLimit == {burst}"""

_MODULE = """\
------------------------------- MODULE TraceLog -------------------------------
(* Written from a recorded log by zlink_tool.tla.trace: the data that        *)
(* TraceSerialQueue.tla checks, the log of one queue and its lane policy.    *)
(* What is abstracted away: work ids (works are 1..N in submission order; a  *)
(* finished or rejected work lends its number to a later one of the same     *)
(* lane and payload), times, and every field the spec has no use for.        *)

\\* The lane policy (ZLinkExecutionLanePolicy).
{policy}

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


def run_trace_tlc(module: str, module_file: str, files: Sequence[str], models_dir: Path,
                  timeout: float) -> tuple[str, float]:
    """Run TLC on a trace specification: ``files`` (the checked-in modules, the ``.cfg``
    among them, the specification being the ``.tla`` named like it) copied from
    ``models_dir`` into a scratch directory beside the generated ``module`` (written as
    ``module_file``). Returns TLC's output and the seconds it took. Raises
    ``ToolMissingError`` when Java or the jar is missing or TLC does not start (the
    machine's problem, never a verdict), ``subprocess.TimeoutExpired`` past ``timeout``."""
    jar, java = find_jar(), find_java()  # a missing extra first, then Java
    missing = [name for name in files if not (models_dir / name).is_file()]
    if missing:
        raise RuntimeError(f"no {', '.join(missing)} in {models_dir}")
    cfg = next(name for name in files if name.endswith(".cfg"))
    with tempfile.TemporaryDirectory(prefix="zlink-trace-") as tmp:
        scratch = Path(tmp)
        for name in files:
            shutil.copy(models_dir / name, scratch / name)
        (scratch / module_file).write_text(module, encoding="utf-8")
        # A transcript check lasts seconds: a short run.
        cmd = [java, *jvm_options(short=True), f"-Djava.io.tmpdir={scratch}", "-cp", str(jar),
               "tlc2.TLC", "-workers", "1", "-deadlock", "-cleanup", "-metadir",
               str(scratch / "meta"), "-config", cfg, cfg.removesuffix(".cfg") + ".tla"]
        t0 = time.monotonic()
        proc = subprocess.run(cmd, cwd=scratch, capture_output=True, text=True,
                              timeout=timeout, check=False)
        seconds = time.monotonic() - t0
    output = proc.stdout + proc.stderr
    if "TLC2 Version" not in output:
        # TLC never started: the jar is not TLC's, or Java does not run. That is the
        # machine's problem, never a verdict on the log.
        tail = "\n".join(output.strip().splitlines()[-5:]) or "(no output)"
        raise ToolMissingError(
            "tla2tools.jar",
            f"TLC did not start ({java} -cp {jar} tlc2.TLC exited {proc.returncode}): "
            f"{tail}\nCheck the Java installation, or point {JAR_ENV} at a tla2tools.jar.")
    if "TRACE_MATCHED" not in output and _VIOLATED.search(output) is None \
            and _DEPTH.search(output) is None:
        raise RuntimeError(f"TLC failed on the trace module (exit {proc.returncode}):\n"
                           + "\n".join(output.splitlines()[-30:]))
    return output, seconds


def check_with_tlc(events: Sequence[dict[str, Any]], policy: ZLinkExecutionLanePolicy,
                   models_dir: Path, timeout: float = 600.0) -> TlcTraceVerdict:
    """Run TLC on the trace specification with the data of ``events``; ``models_dir``
    holds the checked-in modules (``TRACE_FILES``)."""
    find_jar()  # a missing tool is said first, before the log is read
    find_java()
    model = build_trace_model(events, policy)
    output, seconds = run_trace_tlc(model.module, "TraceLog.tla", TRACE_FILES, models_dir,
                                    timeout)
    if "TRACE_MATCHED" in output:
        return TlcTraceVerdict(True, len(events), None, None, seconds, output, model.notes)
    violated = _VIOLATED.search(output)
    depth_match = _DEPTH.search(output)
    depth = int(depth_match.group(1)) if depth_match else None
    steps = 0
    if depth is not None:
        steps = sum(1 for level in model.levels if level <= depth)
    elif violated is not None:
        states = len(re.findall(r"^State \d+:", output, re.M))
        steps = max(0, sum(1 for level in model.levels if level <= states) - 1)
    first = steps if steps < len(events) else None
    return TlcTraceVerdict(False, steps, first,
                           violated.group(1) if violated else None, seconds, output,
                           model.notes)
