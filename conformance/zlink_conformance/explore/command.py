"""``explore``, the subcommand: options, the report printed and written, exit status."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..helptext import plain
from ..report import write_junit
from ..report.console import ConsoleReporter, put
from ..report.html import write_html
from ..report.text import display
from ..runner import DEFAULT_TIMEOUT, SuiteAbortedError
from .engine import ExploreConfig, ExploreReport, explore

__all__ = ["add_parser", "explore_command", "parse_budget"]

_BUDGET = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*(ms|s|m|h)?")


def parse_budget(text: str) -> float:
    """``90``, ``90s``, ``5m``, ``1.5h`` as seconds (argparse type)."""
    found = _BUDGET.fullmatch(text.strip())
    if not found:
        raise argparse.ArgumentTypeError(f"must be a duration like 90s, 5m or 1h, not {text!r}")
    value = float(found.group(1)) * {"ms": 0.001, "s": 1, "m": 60, "h": 3600, None: 1}[
        found.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive duration, not {text!r}")
    return value


def _integer_at_least(low: int, kind: str) -> Callable[[str], int]:
    """An argparse type for an integer >= ``low``, named ``kind`` in its error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = low - 1
        if value < low:
            raise argparse.ArgumentTypeError(f"must be a {kind} integer, not {text!r}")
        return value

    return parse


_positive = _integer_at_least(1, "positive")
_count = _integer_at_least(0, "non-negative")


def add_parser(sub: Any, default: str, prog: str) -> argparse.ArgumentParser:
    """Register ``explore`` on the kit's subparsers (examples written for ``prog``)."""
    p: argparse.ArgumentParser = sub.add_parser(
        "explore", help="generate scenarios from what the adapter declares, judge each "
                        "with the invariants and the model, shrink a failure to a case file",
        description=plain(explore_command.__doc__, prog),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--adapter", metavar="CMD",
                   help="the adapter's command line, split like a POSIX shell " + default)
    p.add_argument("--strategy", choices=("random", "graph"), default="random",
                   help="how scenarios are made: random (the default) draws them from the "
                        "handshake by seed; graph walks the model's bounded SerialQueue "
                        "graph (one bare queue) along paths that cover every transition "
                        "the protocol can bring about (every one, with an adapter that "
                        "declares held_steps), and prints the fraction driven")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the seed: the same seed gives the same scenarios (default 0)")
    p.add_argument("--start", type=_count, default=0, metavar="N",
                   help="the first scenario number of the seed (default 0): with --runs, "
                        "one slice of a seed for one machine of a spread soak")
    p.add_argument("--runs", type=_positive, metavar="N",
                   help="scenarios to run (default 200 unless --budget is given; with "
                        "--strategy graph, every path of the walk)")
    p.add_argument("--budget", type=parse_budget, metavar="TIME",
                   help="stop drawing scenarios after this long (90s, 5m, 1h); with --runs, "
                        "whichever comes first")
    p.add_argument("--max-steps", type=_positive, default=24, metavar="K",
                   help="at most K commands a scenario before the commands that release "
                        "it (default %(default)s)")
    p.add_argument("--repeat", type=_positive, default=3, metavar="N",
                   help="re-run each failure N times before reporting it; one that does "
                        "not fail the same way every time is FLAKY (default %(default)s)")
    p.add_argument("--out", type=Path, default=Path("explore-found"), metavar="DIR",
                   help="write each shrunk failure here as a case file (default "
                        "%(default)s); replay with run --cases DIR")
    p.add_argument("--keep-going", action="store_true",
                   help="go on after the first reproduced failure, to find failures of "
                        "other rules (each rule is shrunk once)")
    p.add_argument("--shrink-time", type=parse_budget, default=60.0, metavar="TIME",
                   help="time bound of one shrink (default 60s)")
    p.add_argument("--timeout", type=parse_budget, default=DEFAULT_TIMEOUT, metavar="TIME",
                   help="wall-clock bound of one scenario; past it the adapter counts as "
                        "hung (default %(default)s s)")
    p.add_argument("--transcripts", type=Path, metavar="DIR",
                   help="write each scenario's transcript (what the wire showed, as run "
                        "--transcripts writes a case's) into DIR, for a second judge "
                        "(zlink trace check --tlc)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="write the whole report as JSON: verdict, counts, failures with "
                        "their commands, coverage")
    p.add_argument("--junit", type=Path, metavar="FILE",
                   help="write the failures as JUnit XML (one test each, its shrunk case)")
    p.add_argument("--html", type=Path, metavar="FILE",
                   help="write the failures as run's HTML report (timelines of each "
                        "shrunk case)")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="no progress lines; the failures, coverage and verdict only")
    return p


def explore_command(args: argparse.Namespace, argv: list[str] | None) -> int:
    """Generate scenarios from what the adapter declares, run each through it, judge each
    with the invariants and the model oracle, and shrink a failure to a case file.

      {prog} explore --adapter "CMD"            200 scenarios, seed 0
      {prog} explore --adapter "CMD" --budget 5m --seed 7
      {prog} explore --adapter "CMD" --seed 7 --start 50000 --runs 50000
      {prog} explore --adapter "CMD" --strategy graph     walk the model's graph
      {prog} run --adapter "CMD" --cases explore-found    replay what it found

    Scenarios use only what the handshake declares: its capabilities (target kinds,
    yield, the virtual clock, disposal, concurrent submission, reentrancy detection),
    the entries of its surface, and every policy field it does not refuse (a create
    refused as unsupported drops that field from later scenarios). Owners, works, gates,
    external calls, nested submissions, raises, clock moves, closes and disposals are
    drawn from the seed; a scenario's commands end by opening every gate and completing
    every call they left, so every accepted work can end. The same seed gives the same
    scenarios.

    --strategy graph walks the model's bounded state graph instead (the ci profile's
    SerialQueue run: 12,817 states, 35,466 transitions, TLC's counts) and drives one bare
    queue along paths chosen so that every transition the protocol can bring about is
    taken at least once; each scenario's events are compared with its path, and the
    first state where code and model part is reported. Its coverage lines give the
    transitions driven, of those the protocol can bring about and of all, and the rest
    by the reason they are out of reach (an interleaving the runtime decides alone).
    Against an adapter that declares held_steps (its queue takes none of its own steps
    until a step command names one: enter the drain, take the next turn, end a slice,
    leave the drain, requeue), those steps are commands too and the walk takes every
    transition of the graph; such a path is shrunk only to shorter paths of the model.

    A failure is re-run --repeat times: one that fails the same way every time is shrunk
    (fewer commands, works, ops, smaller numbers) to a smallest scenario that still breaks
    the same rule, and written to --out as a case file of strength "found" (with its rule,
    seed, strategy and scenario number) that run --cases DIR replays. One that does not
    reproduce every time is reported FLAKY with its rate. The report ends with coverage:
    scenarios run and per second, and the wire events, model transitions and rules
    reached and never reached.

    Exit status: 0 PASS (no failure, every log decided); 1 FAIL, FLAKY, or UNDECIDED (a
    log the model could not judge); 2 for bad arguments or an adapter that never
    completed its handshake.
    """
    if argv is None:  # no --adapter and no default (said why already)
        return 2
    runs = args.runs if args.runs is not None else (
        None if args.budget or args.strategy == "graph" else 200)
    config = ExploreConfig(argv, seed=args.seed, runs=runs, budget_s=args.budget,
                           max_steps=args.max_steps, repeat=args.repeat, out=args.out,
                           keep_going=args.keep_going, timeout=args.timeout,
                           shrink_seconds=args.shrink_time, strategy=args.strategy,
                           start=args.start, transcripts=args.transcripts)

    def say(line: str) -> None:
        if not args.quiet:
            put(sys.stdout, display(line, None) + "\n")
            sys.stdout.flush()

    try:
        report = explore(config, say)
    except SuiteAbortedError as exc:
        put(sys.stderr, f"{args.conformance_host.prog} explore: {display(exc.message)}\n")
        for line in exc.stderr_tail:
            put(sys.stderr, f"  | {display(line)}\n")
        return 2
    except OSError as exc:
        print(f"{args.conformance_host.prog} explore: cannot run {argv!r}: {exc}",
              file=sys.stderr)
        return 2
    print_report(report)
    if args.json is not None:
        args.json.write_text(json.dumps(report.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {args.json}")
    if args.junit is not None:
        write_junit(report.suite_report(), args.junit)
        print(f"wrote {args.junit}")
    if args.html is not None:
        write_html(report.suite_report(), args.html)
        print(f"wrote {args.html}")
    return 0 if report.verdict == "PASS" else 1


def print_report(report: ExploreReport) -> None:
    """Failures (rule first, reason, the log), coverage, the verdict line."""
    out = sys.stdout
    for f in report.findings:
        shown = f.shrunk_result or f.result
        where = (f"scenario {f.scenario.index}" if f.scenario.index >= 0
                 else "the handshake (checked once, before scenario 0)")
        put(out, f"\n{'FLAKY' if f.flaky else 'FAIL'} [{f.label}] {where} "
                 f"of seed {f.scenario.seed}: failed the same way in {f.reproduced} of "
                 f"{f.reruns} re-run(s); {f.seen} scenario(s) failed so\n")
        if f.shrunk is not None:
            before, after = f.scenario.size, f.shrunk.size
            put(out, f"  shrunk: {before[0]} -> {after[0]} command(s), {before[1]} -> "
                     f"{after[1]} work(s), {before[2]} -> {after[2]} op(s) in "
                     f"{f.shrink_runs} run(s), {f.shrink_seconds:.1f} s\n")
        if f.parted is not None:
            put(out, f"  left the model's path: {display(f.parted)}\n")
        if f.case_file is not None:
            state = "fails again on the same rule" if f.replayed else "DID NOT fail again"
            put(out, f"  case file: {f.case_file} ({state} when replayed)\n")
        ConsoleReporter(out)(1, 1, shown)
    put(out, f"\nexplore: {report.scenarios} scenario(s) in {report.seconds:.1f} s, "
             f"{report.per_second:.0f} per second (seed {report.config.seed}, strategy "
             f"{report.config.strategy}); {report.passed} passed, "
             f"{len(report.findings)} distinct failure(s), {len(report.undecided)} "
             f"undecided\n")
    for index, why in report.undecided[:5]:
        put(out, f"  undecided: scenario {index}: {display(why)}\n")
    for field, why in report.refused.items():
        put(out, f"  refused policy field {field}: {display(why)}\n")
    for line in report.coverage.lines():
        put(out, line + "\n")
    for line in report.graph.lines() if report.graph is not None else ():
        put(out, line + "\n")
    put(out, f"explore verdict: {report.verdict}\n")
