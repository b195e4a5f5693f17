"""Check a recorded event log against the rules, two ways.

  zlink trace check LOG.jsonl                      Python model: replay + invariants
  zlink trace check LOG.jsonl --policy FILE        ... with the runtime's lane policy
  zlink trace check LOG.jsonl --policy '*/actor:*=actor.toml' --policy spot.toml
                                                   ... a policy per queue-name pattern
  zlink trace check LOG.jsonl --tlc                ... and each queue's log through TLC
  zlink trace check LOG.jsonl --queue NAME         only this queue (repeatable)
  zlink trace check LOG.jsonl --json               the verdict as JSON
  zlink trace check CASE.jsonl --tlc               a conformance transcript (zlink
                                                   conformance run --transcripts DIR):
                                                   the kit's oracle and TLC judge it

The log is JSON Lines in the trace format (specs/trace-format.md), as a runtime's
recorder writes it. The Python check replays each queue's events through the pure core
(model agreement: the first event the core refuses or reports differently) and checks
every queue invariant (zlink_model.invariants) over the events and the replaying
cores. With --tlc, each queue's events also become a path SerialQueue.tla must be able
to take (zlink_tool.tla.trace); a queue whose log has events outside that model
(disposal, transfers) is reported as not checked by TLC, never as passed. A
conformance transcript's queues go through TraceWireSerialQueue.tla instead
(zlink_tool.tla.transcript), whose walk has Disposal.tla's steps, a session's final
work and SpotWide.tla's transfers too (a SpotWide Spot's Spot queue and Actor queues are
one log there, walked together).

Every finding names its rules: an invariant's rule IDs, or the rules of the event that
could not be matched.

An empty log (no events, or none of the queues asked for) is bad input, never a pass:
nothing was checked. Every name and message taken from the log is printed with its
control characters escaped (a newline in a queue name shows as \\n), so a log cannot
forge a line of the verdict.

Exit status: 0 the log follows the rules, 1 a finding (or TLC gave no verdict on a
queue: timeout or crash, printed as "no verdict", never as a broken rule), 2 bad input
(unreadable or empty log, not the trace format, bad policy file), 3 TLC asked for but
Java or TLC is missing or does not start.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
from collections import defaultdict
from collections.abc import Callable
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from zlink_conformance.helptext import plain
from zlink_conformance.oracle.model import replay_entries
from zlink_model.invariants import INVARIANTS
from zlink_model.policy import PolicyInputError, ZLinkExecutionLanePolicy, load_policy
from zlink_model.replay import check_trace
from zlink_model.trace import TraceEvent, read_trace
from zlink_model.vocabulary import TAKE_NEXT

from ..tla.runner import ToolMissingError
from ..tla.trace import (
    TLC_EVENTS,
    TlcTraceVerdict,
    TraceFormatError,
    TraceRangeError,
    check_with_tlc,
)
from ..tla.transcript import (
    WIRE_STEP_ACTIONS,
    QueueTranscript,
    TranscriptError,
    check_queues_with_tlc,
    is_transcript,
    queue_transcripts,
    read_transcript,
    refused_as,
)
from ._common import layout

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Register ``check`` under ``zlink trace``."""
    sub = p.add_subparsers(dest="trace_action", metavar="ACTION")
    check = sub.add_parser(
        "check", help="check a recorded log with the Python model (and TLC with --tlc)",
        description=plain(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("log", type=Path, metavar="LOG.jsonl",
                       help="the event log, JSON Lines in the trace format")
    check.add_argument("--policy", action="append", metavar="[PATTERN=]FILE",
                       help="JSON or TOML file of the runtime's ZLinkExecutionLanePolicy "
                            "fields; PATTERN= (a shell pattern on queue names) limits it to "
                            "the queues it matches; repeatable, the first match wins, a "
                            "FILE without pattern matches every queue (default: the "
                            "default policy, and the limit checks that need the real "
                            "policy are skipped)")
    check.add_argument("--tlc", action="store_true",
                       help="also check each queue's log with TLC against SerialQueue.tla")
    check.add_argument("--queue", action="append", metavar="NAME",
                       help="check only this queue (repeatable; default: every queue; in a "
                            "transcript, a queue of a SpotWide Spot selects the Spot's queues, "
                            "which are judged together)")
    check.add_argument("--no-yield", action="append", default=[], metavar="NAME",
                       help="this queue's owner offers no Yield (an Entry Spot); repeatable")
    check.add_argument("--units-per-ms", type=float, default=1.0, metavar="N",
                       help="clock units per millisecond of the log's 'now' fields "
                            "(default 1: milliseconds)")
    check.add_argument("--models", type=Path, metavar="DIR",
                       help="the folder holding SerialQueue.tla (default: models/ of the "
                            "checkout)")
    check.add_argument("--timeout", type=float, default=600.0, metavar="S",
                       help="seconds TLC may take per queue (default 600)")
    check.add_argument("--json", action="store_true", help="print the verdict as JSON")
    p.set_defaults(trace_parser=p)


def _policies(specs: list[str]) -> list[tuple[str, ZLinkExecutionLanePolicy]]:
    """``[PATTERN=]FILE`` arguments as (pattern, policy) in order; raises
    ``PolicyInputError`` for a file that is not a policy."""
    out = []
    for spec in specs:
        pattern, sep, path = spec.partition("=")
        if not sep:
            pattern, path = "*", spec
        out.append((pattern, load_policy(Path(path))))
    return out


def escaped(text: str) -> str:
    """``text`` as one line: every character that is not printable (newlines, carriage
    returns, other control and separator characters) written as its JSON escape. A log's
    names pass through here before they are printed, so none can start a line of its own."""
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() else json.dumps(c)[1:-1] for c in text)


def _say(text: str) -> None:
    """Print one line of the text verdict, escaped (``escaped``)."""
    print(escaped(text))


class TranscriptFound(Exception):  # noqa: N818 (a signal, not an error)
    """The log is a conformance transcript, not the trace format."""


def tlc_transcript_queues(queues: list[QueueTranscript], models: Path,
                          timeout: float) -> list[dict[str, Any]]:
    """TLC's verdict on each queue of a conformance transcript (or of several), as
    JSON-ready records (the shape of a trace-format queue's: status ok, fail, error or
    not checked). The checkable queues go to TLC together: one JVM for a batch of them
    (``check_queues_with_tlc``), not one a queue."""
    checkable = [q for q in queues if q.not_checked is None]
    verdicts = dict(zip((id(q) for q in checkable),
                        check_queues_with_tlc(checkable, models, timeout) if checkable else [],
                        strict=True))
    records = []
    for q in queues:
        if q.not_checked is not None:
            records.append({"queue": q.owner, "status": "not checked",
                            "reason": q.not_checked})
            continue
        verdict = verdicts[id(q)]
        if isinstance(verdict, TraceRangeError):
            records.append({"queue": q.owner, "status": "not checked", "reason": str(verdict)})
        elif isinstance(verdict, subprocess.TimeoutExpired):
            records.append({"queue": q.owner, "status": "error",
                            "reason": f"TLC gave no verdict within {timeout:g} s (raise "
                                      "--timeout)"})
        elif isinstance(verdict, RuntimeError):
            records.append({"queue": q.owner, "status": "error", "reason": str(verdict)})
        else:
            records.append(_tlc_record(q.owner, verdict, _unmatched_step(q)))
    return records


def _unmatched_step(q: QueueTranscript) -> Callable[[int], tuple[int, str, str]]:
    def unmatched(index: int) -> tuple[int, str, str]:
        step = q.steps[index]
        key = refused_as(q, step)
        if step.op == "sync":
            return step.position, key, (
                f"the settle reply (transcript entry {step.position}) came while something "
                "could still progress: a turn given or a work's end unreported, ready work "
                "with no turn holder, a queued work's pending cancellation, a session's "
                "final work due" + (", or a SpotWide Actor queue's head not moved to the "
                                    "Spot queue or its claim not ended"
                                    if key != TAKE_NEXT else ""))
        action = WIRE_STEP_ACTIONS[key][0]
        return step.position, key, (
            f"{step.wire} of {step.work} (transcript entry {step.position}) is not a step "
            f"{action} can take there, whatever the steps the wire does not show")
    return unmatched


def check_transcript(args: argparse.Namespace) -> int:
    """``zlink trace check`` on a conformance transcript: the kit's model oracle judges
    the whole case; with --tlc, TLC judges each queue TraceWireSerialQueue.tla covers
    (a SpotWide Spot's queues together, as one log)."""
    if args.policy or args.no_yield or args.units_per_ms != 1.0:
        return _fail("a transcript carries its own policies and targets (the runner's "
                     "create commands): --policy, --no-yield and --units-per-ms are for "
                     "logs in the trace format")
    try:
        with open(args.log, encoding="utf-8") as fh:
            entries = read_transcript(fh)
    except (OSError, TranscriptError) as exc:
        return _fail(f"{args.log}: {exc}")
    if not any(d == "received" and "event" in m for d, m in entries):
        return _fail(f"{args.log} holds no events: nothing to check (an empty log is not "
                     "a pass)")
    queues = queue_transcripts(entries)
    names = [q.owner for q in queues]
    if args.queue:
        # a SpotWide Spot's queues are one log: any of its members selects it
        held = {name: q.owner for q in queues for name in (q.owner, *q.members)}
        unknown = [q for q in args.queue if q not in held]
        if unknown:
            return _fail(f"no events of queue(s) {', '.join(unknown)} in {args.log}; its "
                         f"queues: {', '.join(held) or 'none'}")
        queues = [q for q in queues if q.owner in {held[name] for name in args.queue}]
    oracle = replay_entries(entries)
    tlc: list[dict[str, Any]] = []
    if args.tlc:
        models = args.models or layout().models
        if not (models / "TraceWireSerialQueue.tla").is_file():
            return _fail(f"no TraceWireSerialQueue.tla in {models} (give --models DIR)")
        if not args.json:
            print(f"[tlc] {sum(1 for q in queues if q.not_checked is None)} of "
                  f"{len(queues)} queue(s), {sum(len(q.steps) for q in queues)} events, "
                  "in one run ...", flush=True)
        try:
            tlc = tlc_transcript_queues(queues, models, args.timeout)
        except ToolMissingError as exc:
            print(f"zlink trace: {exc}", file=sys.stderr)
            return exc.exit_code
    found = oracle.divergence is not None or any(r["status"] == "fail" for r in tlc)
    ok = not found and oracle.undecided is None and all(r["status"] != "error" for r in tlc)
    if args.json:
        print(json.dumps({
            "log": str(args.log), "format": "transcript", "queues": names, "ok": ok,
            "oracle": {"divergence": oracle.divergence.to_json() if oracle.divergence
                       else None, "undecided": oracle.undecided},
            "tlc": tlc}, indent=2))
        return 0 if ok else 1
    _say(f"{args.log}: a conformance transcript, {len(entries)} entries, "
         f"{len(names)} queue(s)")
    if oracle.divergence is not None:
        _say(f"FAIL the kit's model oracle: {oracle.divergence.message()}")
    elif oracle.undecided is not None:
        _say(f"ERROR the kit's model oracle gave no verdict: {oracle.undecided}")
    else:
        print("the kit's model oracle: every event is one the model allows")
    _print_tlc(tlc)
    _verdict(ok, found)
    return 0 if ok else 1


def _fail(message: str) -> int:
    print(f"zlink trace: {escaped(message)}", file=sys.stderr)
    return 2


def _tlc_queue(name: str, events: list[TraceEvent], policy: ZLinkExecutionLanePolicy,
               models: Path, timeout: float) -> dict[str, Any]:
    """TLC's verdict on one queue's events, as a JSON-ready record."""
    outside = next((e for e in events if e.event not in TLC_EVENTS), None)
    if outside is not None:
        return {"queue": name, "status": "not checked",
                "reason": f"event {outside.seq} ({outside.event}) has no action in "
                          "SerialQueue.tla; the Python model checked this queue"}
    try:
        verdict = check_with_tlc([e.to_json() for e in events], policy, models, timeout)
    except TraceRangeError as exc:  # TLC cannot read the numbers: no verdict either way
        return {"queue": name, "status": "not checked", "reason": str(exc)}
    except TraceFormatError as exc:
        return {"queue": name, "status": "fail", "reason": str(exc), "rules": "",
                "event": None}
    except subprocess.TimeoutExpired:
        return {"queue": name, "status": "error",
                "reason": f"TLC gave no verdict within {timeout:g} s (raise --timeout)"}
    except ToolMissingError:  # no verdict on the log: run() exits 2 (the extra) or 3 (Java)
        raise
    except RuntimeError as exc:  # TLC ran but said nothing a verdict can be read from
        return {"queue": name, "status": "error", "reason": str(exc)}
    def unmatched(index: int) -> tuple[int, str, str]:
        ev = events[index]
        action = TLC_EVENTS[ev.event][0]
        return ev.seq, ev.event, (f"event {ev.seq} ({ev.event}) is not a step {action} "
                                  "can take there")

    return _tlc_record(name, verdict, unmatched)


def _tlc_record(name: str, verdict: TlcTraceVerdict,
                unmatched: Callable[[int], tuple[int, str, str]]) -> dict[str, Any]:
    """TLC's verdict on one queue as a JSON-ready record, for a trace-format log and a
    transcript alike; ``unmatched`` names the first event no step allows (its position,
    its event name and the sentence that says so), in the log's own terms."""
    record: dict[str, Any] = {"queue": name, "seconds": round(verdict.seconds, 2),
                              "matched_events": verdict.steps, "notes": list(verdict.notes)}
    if verdict.matched:
        record["status"] = "ok"
        return record
    record["status"] = "fail"
    if verdict.broken_invariant is not None:
        inv = INVARIANTS.get(verdict.broken_invariant)
        record["invariant"] = verdict.broken_invariant
        record["rules"] = inv.rules if inv is not None else ""
        record["reason"] = f"{verdict.broken_invariant} broke on the way"
    if verdict.first_unmatched is not None:
        position, event, reason = unmatched(verdict.first_unmatched)
        record["event"] = position
        record.setdefault("rules", (TLC_EVENTS.get(event) or WIRE_STEP_ACTIONS[event])[1])
        record.setdefault("reason", reason)
    return record


def run(args: argparse.Namespace) -> int:
    """Check a recorded event log with the Python model (and TLC with --tlc).

    Exit status: 0 the log follows the rules, 1 a finding, 2 bad input, 3 TLC missing.
    """
    if getattr(args, "trace_action", None) != "check":
        args.trace_parser.print_help()
        return 2
    if args.units_per_ms <= 0:
        return _fail(f"--units-per-ms must be > 0, got {args.units_per_ms}")
    if args.timeout <= 0:
        return _fail(f"--timeout must be > 0, got {args.timeout}")
    try:
        with open(args.log, encoding="utf-8") as fh:
            first = next((line for line in fh if line.strip()), "")
            with contextlib.suppress(ValueError):
                if is_transcript(json.loads(first)):
                    raise TranscriptFound
            fh.seek(0)
            events = read_trace(fh)
    except OSError as exc:
        return _fail(f"cannot read {args.log}: {exc.strerror or exc}")
    except ValueError as exc:
        return _fail(f"{args.log}: {exc}")
    except TranscriptFound:
        return check_transcript(args)
    if not events:
        return _fail(f"{args.log} holds no events: nothing to check (an empty log is not "
                     "a pass)")
    explicit = bool(args.policy)
    try:
        policies = _policies(args.policy or [])
    except PolicyInputError as exc:
        return _fail(str(exc))

    def policy_of(queue: str) -> ZLinkExecutionLanePolicy | None:
        return next((p for pattern, p in policies if fnmatchcase(queue, pattern)), None)

    queues = list(dict.fromkeys(e.queue for e in events))
    if args.queue:
        unknown = [q for q in args.queue if q not in queues]
        if unknown:
            listed = ", ".join(queues) or "none"
            return _fail(f"no events of queue(s) {', '.join(unknown)} in {args.log}; "
                         f"its queues: {listed}")
        events = [e for e in events if e.queue in args.queue]
        queues = [q for q in queues if q in args.queue]
    unmatched = [q for q in queues if explicit and policy_of(q) is None]
    if unmatched:
        return _fail(f"no --policy pattern matches queue(s) {', '.join(unmatched)}")
    no_yield = set(args.no_yield)
    report = check_trace(events, policy_of if explicit else None,
                         units_per_ms=args.units_per_ms,
                         yield_allowed=lambda q: q not in no_yield)
    if not explicit and not args.json:
        print("note: no --policy given; replaying with the default policy and skipping "
              "the limit checks that need the runtime's real one")
    tlc: list[dict[str, Any]] = []
    if args.tlc:
        models = args.models or layout().models
        if not (models / "SerialQueue.tla").is_file():
            return _fail(f"no SerialQueue.tla in {models} (give --models DIR)")
        by_queue: dict[str, list[TraceEvent]] = defaultdict(list)
        for e in events:
            by_queue[e.queue].append(e)
        for i, q in enumerate(queues, 1):
            if not args.json:
                print(escaped(f"[tlc {i}/{len(queues)}] {q}: {len(by_queue[q])} events ..."),
                      flush=True)
            try:
                tlc.append(_tlc_queue(q, by_queue[q],
                                      policy_of(q) or ZLinkExecutionLanePolicy(), models,
                                      args.timeout))
            except ToolMissingError as exc:
                print(f"zlink trace: {exc}", file=sys.stderr)  # our text, several lines
                return exc.exit_code
    ok = report.ok and all(r["status"] not in ("fail", "error") for r in tlc)
    if args.json:
        print(json.dumps({
            "log": str(args.log), "events": report.events, "queues": queues,
            "policy": args.policy if explicit else "default", "ok": ok,
            "violations": [{"invariant": v.invariant, "rules": v.rules, "queue": v.queue,
                            "event": v.seq, "message": v.message}
                           for v in report.violations],
            "disagreements": [{"queue": d.event.queue, "event": d.event.seq,
                               "name": d.event.event, "rules": d.rules,
                               "reason": d.reason, "model": d.model}
                              for d in report.disagreements],
            "tlc": tlc}, indent=2))
        return 0 if ok else 1
    _say(f"{args.log}: {report.events} events, {len(queues)} queue(s)")
    if report.ok:
        held = sum(1 for i in INVARIANTS.values() if {"core", "trace"} & set(i.over))
        print(f"python model: every event replayed, {held} queue invariants held")
    for v in report.violations:
        _say(f"FAIL {v}")
    for d in report.disagreements:
        _say(f"FAIL model agreement: {d}")
    _print_tlc(tlc)
    _verdict(ok, not report.ok or any(r["status"] == "fail" for r in tlc))
    return 0 if ok else 1



def _print_tlc(tlc: list[dict[str, Any]]) -> None:
    """TLC's verdict per queue, one escaped line each (and the lines of an error)."""
    for r in tlc:
        for note in r.get("notes", []):
            _say(f"tlc: {r['queue']}: note: {note}")
        if r["status"] == "ok":
            _say(f"tlc: {r['queue']}: matched all {r['matched_events']} events "
                 f"({r['seconds']} s)")
        elif r["status"] == "not checked":
            _say(f"tlc: {r['queue']}: not checked: {r['reason']}")
        elif r["status"] == "error":
            first, *rest = str(r["reason"]).splitlines() or [""]
            _say(f"ERROR tlc: {r['queue']}: {first}")
            for line in rest:
                _say(f"  | {line}")
        else:
            rules = f" ({r['rules']})" if r.get("rules") else ""
            _say(f"FAIL tlc: {r['queue']}{rules}: {r['reason']}")
    if tlc and not any(r["status"] in ("ok", "fail") for r in tlc):
        print("tlc: no queue of this log was checked by TLC")


def _verdict(ok: bool, findings: bool) -> None:
    """The last line: follows the rules, breaks one, or no verdict (a judge could not
    decide and nothing was found): never a pass for what was not checked."""
    if ok:
        print("verdict: the log follows the rules")
    elif findings:
        print("verdict: the log breaks a rule")
    else:
        print("verdict: no verdict: a judge could not decide (and nothing broke a rule)")
