"""`zlink conformance`: run the language-neutral conformance suite against an adapter
(the usage text is ``run``'s docstring, shown by --help)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from zlink_conformance.adapters import reference_adapter_command
from zlink_conformance.adapters.reference import PRELOAD_VARIABLE, PROGRESS_VARIABLE
from zlink_conformance.catalog import CaseError, SelectionError, load_catalogue, select
from zlink_conformance.known import KnownFailuresError, load_known_failures
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.report import (
    ConsoleReporter,
    print_catalogue,
    print_summary,
    write_json,
    write_junit,
)
from zlink_conformance.report.html import failing, write_html
from zlink_conformance.runner import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_TIMEOUT,
    Runner,
    SuiteAbortedError,
    SuiteReport,
)
from zlink_conformance.runner.replay import ReplayError, load_replay, replay
from zlink_conformance.selftest import (
    MutantRow,
    kill_matrix,
    load_mutants,
    matrix_markdown,
    replace_matrix,
)

__all__ = ["configure", "replay_command", "run", "self_test"]


def configure(p: argparse.ArgumentParser) -> None:
    """Register ``run`` and ``list`` under ``zlink conformance``."""
    sub = p.add_subparsers(dest="conformance_action", metavar="ACTION")
    run_p = sub.add_parser("run", help="run the cases against an adapter",
                           description=run.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run_p.add_argument("--adapter", metavar="CMD",
                       help="the adapter's command line, split like a POSIX shell would "
                            "(default: the bundled reference adapter)")
    _filters(run_p)
    run_p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help="wall-clock bound of one case; past it the adapter counts as hung "
                            "(default %(default)s)")
    run_p.add_argument("--handshake-timeout", type=float, default=DEFAULT_HANDSHAKE_TIMEOUT,
                       metavar="SECONDS",
                       help="wall-clock bound of the adapter's start, up to its reply to "
                            "hello (default %(default)s)")
    run_p.add_argument("--json", type=Path, metavar="FILE",
                       help="write a JSON report (every case with its verdict and time_s)")
    run_p.add_argument("--junit", type=Path, metavar="FILE", help="write a JUnit XML report")
    run_p.add_argument("--html", type=Path, metavar="FILE",
                       help="write a self-contained HTML report: summary by rule, and each "
                            "failing case's expected and observed timelines")
    run_p.add_argument("--transcripts", type=Path, metavar="DIR",
                       help="write each case's full exchange (commands, events, replies) "
                            "as DIR/<case>.jsonl")
    run_p.add_argument("--expect-fail", type=Path, metavar="FILE",
                       help="a TOML file of known failures ([expected-failures] case ID = "
                            "\"reason\"): reported as xfail; one that passes is an "
                            "unexpected pass and fails the run")
    run_p.add_argument("--allow-skips", action="store_true",
                       help="required cases skipped for a missing capability do not fail "
                            "the run")
    run_p.add_argument("--repeat", type=int, default=1, metavar="N",
                       help="run the selection N times with a fresh adapter each time and "
                            "compare the verdicts")
    run_p.add_argument("-q", "--quiet", action="store_true",
                       help="print only cases that did not pass, and the summary")
    run_p.add_argument("-v", "--verbose", action="store_true",
                       help="also print why cases were skipped")
    list_p = sub.add_parser("list", help="list the cases, their rules and capabilities",
                            description="List the cases (after --only/--skip) and the rules.")
    _filters(list_p)
    rep_p = sub.add_parser("replay", help="send one case's recorded commands to an adapter "
                                          "again and judge the result",
                           description=replay_command.__doc__,
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    rep_p.add_argument("file", type=Path, metavar="FILE",
                       help="a JSON report (--json) or one case object with 'id' and "
                            "'commands'")
    rep_p.add_argument("--case", metavar="ID", help="the case to replay from a report")
    rep_p.add_argument("--adapter", metavar="CMD",
                       help="the adapter's command line (default: the reference adapter)")
    rep_p.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help="wall-clock bound of the replay (default %(default)s)")
    rep_p.add_argument("-q", "--quiet", action="store_true",
                       help="print only the verdict, not the exchange")
    self_p = sub.add_parser("self-test", help="run the suite against every mutant of the "
                                              "reference runtime: the kill matrix",
                            description=self_test.__doc__,
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    self_p.add_argument("--mutants", type=Path, default=Path("tests/mutants.py"),
                        metavar="FILE", help="the mutant catalogue (default %(default)s)")
    self_p.add_argument("--preload", type=Path,
                        default=Path("tests/conformance/fakes/preload_mutant.py"),
                        metavar="FILE", help="the adapter preload file that applies the "
                                             "mutant named by ZLINK_MUTANT_NAME "
                                             "(default %(default)s)")
    self_p.add_argument("--write-docs", type=Path, metavar="FILE",
                        help="write the matrix into FILE between its kill-matrix markers "
                             "(docs/conformance.md)")


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", action="append", default=[], metavar="ID",
                   help="a case ID or rule ID to run (repeatable)")
    p.add_argument("--skip", action="append", default=[], metavar="ID",
                   help="a case ID or rule ID to leave out (repeatable)")
    p.add_argument("--cases", type=Path, metavar="DIR",
                   help="read case files from DIR instead of the shipped ones")


def run(args: argparse.Namespace) -> int:
    """Run the conformance suite against a runtime's adapter.

      zlink conformance run                         the bundled reference adapter
      zlink conformance run --adapter "CMD"         any adapter: a command line that speaks
                                                    the protocol on stdin/stdout
      zlink conformance run --only SE-10.2          cases of one rule (or a case ID; repeatable;
                                                    SE-10 takes every SE-10.x)
      zlink conformance run --skip ID               leave a case or rule out (repeatable)
      zlink conformance run --json out.json --junit out.xml
      zlink conformance run --repeat 20             run 20 times, each with a fresh adapter, and
                                                    fail unless every run gives the same verdicts
      zlink conformance list                        the cases: ID, strength, rules, capabilities

    Each case runs its commands through one adapter process (restarted only after it crashed,
    hung or broke the protocol) and is judged on the adapter's event log; verdicts never
    depend on wall-clock time, which only bounds each case (--timeout) to catch a hung
    adapter. A case needing a capability the adapter did not declare in its handshake is
    reported as skipped.

    Exit status: 0 when every selected required case passed (a skipped required case counts
    as not passed unless --allow-skips; a case listed in --expect-fail that fails counts as
    passed), 1 otherwise, when repeated runs disagree, or when a case listed in --expect-fail
    passes (an unexpected pass: remove the stale entry), 2 for bad arguments, invalid case
    or known-failure files or an adapter that never completed the handshake.
    The protocol is in specs/adapter-protocol.md, the guide for runtime authors in
    docs/conformance.md.
    """
    action = getattr(args, "conformance_action", None)
    if action is None:
        print("zlink conformance: choose an action: run or list (see --help)", file=sys.stderr)
        return 2
    if action == "replay":
        return replay_command(args)
    if action == "self-test":
        return self_test(args)
    try:
        catalogue = load_catalogue(args.cases)
        cases = select(catalogue, args.only, args.skip)
    except (CaseError, SelectionError) as exc:
        print(f"zlink conformance: {exc}", file=sys.stderr)
        return 2
    if action == "list":
        print_catalogue(catalogue, cases)
        return 0
    if not cases:
        print("zlink conformance: the filters select no case", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print("zlink conformance: --repeat must be at least 1", file=sys.stderr)
        return 2
    known: dict[str, str] = {}
    if args.expect_fail is not None:
        try:
            known = dict(load_known_failures(args.expect_fail, catalogue).reasons)
        except KnownFailuresError as exc:
            print(f"zlink conformance: --expect-fail {exc}", file=sys.stderr)
            return 2
    argv = shlex.split(args.adapter) if args.adapter is not None else reference_adapter_command()
    if not argv:
        print("zlink conformance: --adapter is empty", file=sys.stderr)
        return 2
    reports: list[SuiteReport] = []
    for number in range(1, args.repeat + 1):
        if args.repeat > 1:
            print(f"--- run {number}/{args.repeat}")
        reporter = ConsoleReporter(quiet=args.quiet or number > 1, verbose=args.verbose)
        try:
            with Runner(argv, timeout=args.timeout, handshake_timeout=args.handshake_timeout,
                        transcripts=args.transcripts if number == 1 else None,
                        known_failures=known) as runner:
                report = runner.run(cases, reporter)
        except SuiteAbortedError as exc:
            print(f"zlink conformance: {exc.message}", file=sys.stderr)
            for line in exc.stderr_tail:
                print(f"  | {line}", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"zlink conformance: cannot run {argv!r}: {exc}", file=sys.stderr)
            return 2
        reports.append(report)
        if number > 1:
            print(f"run {number}: {report.count('passed')} passed, {report.count('failed')} "
                  f"failed, {report.count('error')} error, {report.count('skipped')} skipped "
                  f"in {report.seconds:.2f} s")
    first = reports[0]
    print_summary(first, allow_skips=args.allow_skips)
    differences = _differences(reports)
    if args.repeat > 1:
        if differences:
            print(f"verdicts DIFFER across {args.repeat} runs:")
            for line in differences:
                print(f"  {line}")
        else:
            print(f"verdicts identical across {args.repeat} runs")
    extra = None
    if args.repeat > 1:
        extra = {"repeat": {"runs": args.repeat, "identical": not differences,
                            "differences": differences,
                            "time_s": [round(r.seconds, 3) for r in reports]}}
    if args.json:
        write_json(first, args.json, extra)
    if args.junit:
        write_junit(first, args.junit)
    if args.html:
        write_html(first, args.html, _expected_logs(first, args.timeout),
                   allow_skips=args.allow_skips)
        print(f"wrote {args.html}")
    ok = first.success(allow_skips=args.allow_skips) and not differences
    return 0 if ok else 1


def _differences(reports: list[SuiteReport]) -> list[str]:
    """Cases whose verdict is not the same in every run."""
    runs = [dict(r.verdicts()) for r in reports]
    out = []
    for case_id in runs[0]:
        seen = [run.get(case_id, "missing") for run in runs]
        if len(set(seen)) > 1:
            out.append(f"{case_id}: {' '.join(seen)}")
    return out


def replay_command(args: argparse.Namespace) -> int:
    """Send one case's recorded commands to an adapter again and judge what comes back.

      zlink conformance run --adapter "CMD" --json report.json
      zlink conformance replay report.json --case ID --adapter "CMD"
      zlink conformance replay one-case.json --adapter "CMD"

    FILE is a JSON report written by `run --json` (every case that did not pass carries the
    exact commands the runner sent, starting with reset; --case picks one, and may be left
    out when only one case carries commands) or a file holding one such case object on its
    own: {"id": "...", "commands": [{"cmd": "reset"}, ...]}. The exchange is printed as it
    happens (> to the adapter, < from it); the log is judged by the invariants and the model
    oracle, and by the case's own checks when the ID is a shipped case and the commands are
    its commands.

    Exit status: 0 when the replayed log passes, 1 when it fails, 2 for a bad file or an
    adapter that broke the protocol, crashed or refused a command.
    """
    try:
        case_id, commands = load_replay(args.file, args.case)
        catalogue = load_catalogue()
    except (ReplayError, CaseError) as exc:
        print(f"zlink conformance replay: {exc}", file=sys.stderr)
        return 2
    argv = shlex.split(args.adapter) if args.adapter is not None else reference_adapter_command()
    if not argv:
        print("zlink conformance replay: --adapter is empty", file=sys.stderr)
        return 2

    def show(direction: str, line: bytes) -> None:
        if not args.quiet:
            arrow = ">" if direction == "sent" else "<"
            print(f"{arrow} {line.decode('utf-8', 'replace').rstrip()}")

    print(f"replaying {case_id}: {len(commands)} command(s) to {' '.join(argv)}")
    result = replay(argv, case_id, commands, catalogue=catalogue, timeout=args.timeout,
                    wire_tap=show)
    for message in result.messages:
        print(f"  {message}")
    mark = {"passed": "pass", "failed": "FAIL", "error": "ERROR"}[result.status]
    how = "the case's checks, " if result.judged_by_case else ""
    print(f"replay of {case_id}: {mark} (judged by {how}the invariants and the model)")
    return {"passed": 0, "failed": 1}.get(result.status, 2)


def self_test(args: argparse.Namespace) -> int:
    """Run the whole suite once per mutant of the reference runtime and print the kill
    matrix: which cases each deliberate bug fails, and whether one of them is on the rule
    the mutant breaks.

      zlink conformance self-test                       from the repository root
      zlink conformance self-test --write-docs docs/conformance.md

    Each mutant runs in its own reference adapter process (the preload file switches it
    on). A mutant is killed on its rule when a failing case names that rule (or a rule
    under, above or related to it) in its rules, the model oracle's divergence, a broken
    invariant or a guard's fault. Exit status: 0 when every mutant is killed on its rule,
    1 when one survives or is killed elsewhere, 2 for missing files.
    """
    for path in (args.mutants, args.preload):
        if not path.is_file():
            print(f"zlink conformance self-test: {path} not found (run it from the "
                  f"repository root, or pass --mutants/--preload)", file=sys.stderr)
            return 2
    catalogue = load_catalogue()
    mutants = load_mutants(args.mutants)

    def progress(row: MutantRow) -> None:
        print(f"  {row.name:34s} {row.rule:8s} {row.verdict:16s} {len(row.failing):3d} "
              f"failing case(s)  {row.seconds:.2f} s", flush=True)
        for case_id in row.failing:
            print(f"      {'*' if case_id in row.matching else ' '} {case_id}")

    print(f"self-test: {len(mutants)} mutants x {len(catalogue.cases)} cases")
    rows = kill_matrix(mutants, catalogue.cases, reference_adapter_command(),
                       args.preload.resolve(), progress=progress)
    text = matrix_markdown(rows)
    print()
    print(text, end="")
    if args.write_docs is not None:
        doc = args.write_docs.read_text(encoding="utf-8")
        try:
            updated = replace_matrix(doc, text)
        except ValueError as exc:
            print(f"zlink conformance self-test: {args.write_docs}: {exc}", file=sys.stderr)
            return 2
        args.write_docs.write_text(updated, encoding="utf-8")
        print(f"wrote the kill matrix into {args.write_docs}")
    return 0 if all(r.verdict in ("killed", "unobservable") for r in rows) else 1


def _expected_logs(report: SuiteReport, timeout: float) -> dict[str, CaseLog]:
    """The reference runtime's log of each case that did not pass: the expected timeline
    of the HTML report. The reference adapter runs without any preload hook."""
    cases = [r.case for r in failing(report.results)]
    if not cases:
        return {}
    env = {PRELOAD_VARIABLE: "", PROGRESS_VARIABLE: "default"}
    try:
        with Runner(reference_adapter_command(), env=env, timeout=timeout) as runner:
            again = runner.run(cases)
    except (SuiteAbortedError, OSError) as exc:
        print(f"zlink conformance: no expected timelines (the reference adapter did not "
              f"start: {exc})", file=sys.stderr)
        return {}
    return {r.case.id: r.log for r in again.results if r.log is not None}
