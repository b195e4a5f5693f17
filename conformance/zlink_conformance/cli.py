"""The kit's command line: run the conformance suite against an adapter, list the cases,
re-send one case's commands (the usage text is ``run``'s docstring, shown by --help).

It stands alone as the ``zlink-conformance`` console script (the kit installs by itself,
with no runtime), and the ``zlink`` tool mounts the same subcommands as ``zlink
conformance`` through ``Host``, adding what only it has: the reference adapter as the
default adapter and as the source of the HTML report's expected timelines, and the
self-test over the reference's mutants.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .bundled import kit_version
from .catalog import CaseError, SelectionError, catalogue_dir, load_catalogue, select
from .explore.command import add_parser as add_explore
from .explore.command import explore_command
from .helptext import plain
from .identity import changes_since, identify, load_releases
from .known import KnownFailuresError, load_known_failures
from .oracle.log import CaseLog
from .pipes import stop_on_closed_stdout
from .profiles import PROFILES, coverage, in_profile
from .report import (
    ConsoleReporter,
    print_catalogue,
    print_summary,
    write_json,
    write_junit,
)
from .report.console import put
from .report.html import failing, write_html
from .report.text import display
from .runner import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_TIMEOUT,
    Runner,
    SuiteAbortedError,
    SuiteReport,
)
from .runner.resend import ResendError, load_resend, resend
from .runner.suite import InvalidDurationError, check_duration
from .shipped import add_shipped_actions

__all__ = ["KIT", "Host", "build_parser", "configure", "main", "resend_command", "run"]


@dataclass(frozen=True)
class Host:
    """What the program that mounts these subcommands supplies."""

    prog: str
    """How the program is named in messages (``zlink-conformance``, ``zlink conformance``)."""
    default_adapter: Callable[[], list[str]] | None = None
    """The adapter used when --adapter is not given; None makes --adapter required."""
    expected_adapter: Callable[[], tuple[list[str], dict[str, str]]] | None = None
    """An adapter (command, environment) whose logs draw the HTML report's expected
    timelines; None draws only the observed ones."""
    extra: Callable[[Any], None] | None = None
    """Adds more actions to the subparsers (the tool's ``self-test``)."""


KIT = Host("zlink-conformance")


def configure(p: argparse.ArgumentParser, host: Host = KIT) -> None:
    """Register ``run``, ``list`` and ``resend`` (and the host's extra actions) on ``p``."""
    p.set_defaults(conformance_host=host)
    default = ("(default: the reference adapter)" if host.default_adapter is not None
               else "(required)")
    sub = p.add_subparsers(dest="conformance_action", metavar="ACTION")
    run_p = sub.add_parser("run", help="run the cases against an adapter",
                           description=plain(run.__doc__, host.prog),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    run_p.add_argument("--adapter", metavar="CMD",
                       help="the adapter's command line, split like a POSIX shell would "
                            + default)
    _filters(run_p)
    run_p.add_argument("--timeout", type=_seconds(), default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help="wall-clock bound of one case; past it the adapter counts as hung "
                            "(default %(default)s)")
    run_p.add_argument("--handshake-timeout", type=_seconds(),
                       default=DEFAULT_HANDSHAKE_TIMEOUT,
                       metavar="SECONDS",
                       help="wall-clock bound of the adapter's start, up to its reply to "
                            "hello (default %(default)s)")
    run_p.add_argument("--strict-settle", type=_seconds(zero_allowed=True), default=0.0,
                       metavar="SECONDS",
                       help="after every settle reply, wait this long and count any event "
                            "that still comes as an early settle, an adapter fault (AP-5), "
                            "and as long after the confirmation that closes each case (a "
                            "line then is that case's, AP-6); catches a multi-threaded "
                            "adapter that settles too early (default: off; the confirming "
                            "settle always runs)")
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
                            description=plain(_LIST_DOC, host.prog),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    _filters(list_p)
    list_p.add_argument("--capabilities", metavar="CAPS",
                        help="comma-separated capabilities of a runtime: say how many cases "
                             "it runs and what each missing capability would add")
    list_p.add_argument("--hello", type=Path, metavar="FILE",
                        help="the same for the capabilities of a handshake reply (a JSON "
                             "object with 'capabilities', as the adapter answers hello)")
    cases_p = sub.add_parser(
        "cases", help="say what changed in the case set since a released version",
        description=plain(_CASES_DOC, host.prog),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    which = cases_p.add_mutually_exclusive_group(required=True)
    which.add_argument("--changes-since", metavar="VERSION",
                       help="a released kit version, e.g. 0.2.0")
    which.add_argument("--digests", action="store_true",
                       help="print every case's content digest (a release's record) as JSON")
    cases_p.add_argument("--cases", type=Path, metavar="DIR",
                         help="read case files from DIR instead of the shipped ones")
    rep_p = sub.add_parser("resend", aliases=["replay"],
                           help="send one case's recorded commands to an adapter again "
                                "and judge the result (old name: replay)",
                           description=plain(resend_command.__doc__, host.prog),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    rep_p.add_argument("file", type=Path, metavar="FILE",
                       help="a JSON report (--json) or one case object with 'id' and "
                            "'commands'")
    rep_p.add_argument("--case", metavar="ID", help="the case to re-send from a report")
    rep_p.add_argument("--adapter", metavar="CMD",
                       help="the adapter's command line " + default)
    rep_p.add_argument("--timeout", type=_seconds(), default=DEFAULT_TIMEOUT, metavar="SECONDS",
                       help="wall-clock bound of the run (default %(default)s)")
    rep_p.add_argument("-q", "--quiet", action="store_true",
                       help="print only the verdict, not the exchange")
    add_explore(sub, default, host.prog)
    add_shipped_actions(sub, host.prog)
    if host.extra is not None:
        host.extra(sub)


_CASES_DOC = """Compare the shipped cases with the case set a released version of the kit
    recorded (cases/releases.json): the cases added since, changed (their content
    differs) and retired. --digests prints the current case set as such a record.

      {prog} cases --changes-since 0.2.0      added, changed and retired since 0.2.0
      {prog} cases --digests                  the current case set as a release record
    """

_LIST_DOC = """List the cases (after --only/--skip) and the rules they check.

      {prog} list                           every case: ID, strength, rules, capabilities
      {prog} list --only SE-10              the cases of SE-10 and its sub-rules

    Exit status 0; 2 for invalid case files or a filter that names no known case or rule.
    """


def _seconds(*, zero_allowed: bool = False) -> Callable[[str], float]:
    """The ``type`` of a duration option: a positive (or, for an option that zero turns
    off, non-negative), finite number of seconds; anything else is a usage error naming
    the option (argparse adds its name), never a run whose every case errors."""
    def parse(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            value = math.nan
        try:
            return check_duration("", value, zero_allowed=zero_allowed)
        except InvalidDurationError as exc:
            raise argparse.ArgumentTypeError(f"must be {exc.requirement}, not {text!r}") \
                from None
    parse.__name__ = "seconds"
    return parse


def _filters(p: argparse.ArgumentParser) -> None:
    p.add_argument("--only", action="append", default=[], metavar="ID",
                   help="a case ID or rule ID to run (repeatable)")
    p.add_argument("--skip", action="append", default=[], metavar="ID",
                   help="a case ID or rule ID to leave out (repeatable)")
    p.add_argument("--cases", type=Path, metavar="DIR",
                   help="read case files from DIR instead of the shipped ones")
    p.add_argument("--profile", choices=sorted(PROFILES),
                   help="keep only the cases a runtime of this profile can run (core: an "
                        "Actor, a PerActor Spot and an Entry Spot, nothing more)")


def run(args: argparse.Namespace) -> int:
    """Run the conformance suite against a runtime's adapter.

      {prog} run --adapter "CMD"
          any adapter: a command line that speaks the protocol on stdin/stdout
      {prog} run --only SE-10.2
          cases of one rule (or a case ID; repeatable; SE-10 takes every SE-10.x)
      {prog} run --skip ID
          leave a case or rule out (repeatable)
      {prog} run --json out.json --junit out.xml --html out.html
          the reports, besides the console
      {prog} run --expect-fail known.toml
          known failures as xfail; an unexpected pass fails the run
      {prog} run --repeat 20
          run 20 times, each with a fresh adapter, and fail unless every run gives the
          same verdicts

    Each case runs its commands through one adapter process (restarted only after it crashed,
    hung or broke the protocol) and is judged on the adapter's event log; verdicts never
    depend on wall-clock time, which only bounds each case (--timeout) to catch a hung
    adapter. A case needing a capability the adapter did not declare in its handshake is
    reported as skipped.

    Exit status follows the run's verdict (the "verdict:" line, the same in every report):
    0 when no required case failed or errored, none was left unrun (unless --allow-skips),
    no optional case that ran failed or errored (it ran because the adapter declared its
    capabilities) and no case listed in --expect-fail passed (an unexpected pass: remove
    the stale entry; a listed case that fails counts as neither passed nor failed); 1
    otherwise or when repeated runs disagree; 2 for bad arguments, invalid case or
    known-failure files or an adapter that never completed the handshake.
    The protocol an adapter speaks: {prog} docs protocol; the guide for runtime
    authors: {prog} docs guide; example adapters to start from: {prog} examples.
    """
    host: Host = args.conformance_host
    prog = host.prog
    action = getattr(args, "conformance_action", None)
    if action is None:
        print(f"{prog}: choose an action: run, list, cases, resend or explore (see --help)",
              file=sys.stderr)
        return 2
    handler = getattr(args, "conformance_handler", None)
    if handler is not None:  # an action the host added
        code: int = handler(args)
        return code
    if action in ("resend", "replay"):
        return resend_command(args)
    if action == "explore":
        return explore_command(args, _adapter(args, host))
    if action == "cases":
        return cases_command(args)
    try:
        catalogue = load_catalogue(args.cases)
        cases = select(catalogue, args.only, args.skip)
    except (CaseError, SelectionError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if args.profile is not None:
        cases = in_profile(cases, args.profile)
    if action == "list":
        try:
            declared = _declared(args)
        except _BadHelloError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 2
        print_catalogue(catalogue, cases)
        if declared is not None:
            print("\n" + "\n".join(coverage(cases, declared).lines()))
        return 0
    if not cases:
        print(f"{prog}: the filters select no case", file=sys.stderr)
        return 2
    if args.repeat < 1:
        print(f"{prog}: --repeat must be at least 1", file=sys.stderr)
        return 2
    known: dict[str, str] = {}
    if args.expect_fail is not None:
        try:
            listed = load_known_failures(args.expect_fail, catalogue)
            known = dict(listed.reasons)
            for note in listed.notes:
                put(sys.stderr, f"{prog}: note: --expect-fail {display(note)}\n")
        except KnownFailuresError as exc:
            print(f"{prog}: --expect-fail {exc}", file=sys.stderr)
            return 2
    argv = _adapter(args, host)
    if argv is None:
        return 2
    reports: list[SuiteReport] = []
    print(f"suite: {identify(cases).line()}")
    for number in range(1, args.repeat + 1):
        if args.repeat > 1:
            print(f"--- run {number}/{args.repeat}")
        reporter = ConsoleReporter(quiet=args.quiet or number > 1, verbose=args.verbose)
        try:
            with Runner(argv, timeout=args.timeout, handshake_timeout=args.handshake_timeout,
                        transcripts=args.transcripts if number == 1 else None,
                        known_failures=known, strict_settle=args.strict_settle) as runner:
                report = runner.run(cases, reporter)
            reporter.revisit()  # a fault charged to the last case after its line
        except SuiteAbortedError as exc:
            put(sys.stderr, f"{prog}: {display(exc.message)}\n")
            for line in exc.stderr_tail:
                put(sys.stderr, f"  | {display(line)}\n")
            return 2
        except OSError as exc:
            print(f"{prog}: cannot run {argv!r}: {exc}", file=sys.stderr)
            return 2
        report.allow_skips = args.allow_skips
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
        write_html(first, args.html, _expected_logs(first, args.timeout, host),
                   allow_skips=args.allow_skips)
        print(f"wrote {args.html}")
    ok = first.success(allow_skips=args.allow_skips) and not differences
    return 0 if ok else 1


class _BadHelloError(Exception):
    """``list --hello FILE`` names a file that is not a handshake reply."""


def _declared(args: argparse.Namespace) -> list[str] | None:
    """The capabilities ``list --capabilities``/``--hello`` names, or None when neither
    is given (``_BadHelloError`` when the file is unusable)."""
    if args.capabilities is not None:
        return [c.strip() for c in args.capabilities.split(",") if c.strip()]
    if args.hello is None:
        return None
    try:
        data = json.loads(args.hello.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise _BadHelloError(f"--hello {args.hello}: cannot read a JSON object: {exc}"
                             ) from None
    caps = data.get("capabilities") if isinstance(data, dict) else None
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise _BadHelloError(f"--hello {args.hello}: 'capabilities' must be a list of "
                             f"strings")
    return caps


def cases_command(args: argparse.Namespace) -> int:
    """``cases --changes-since VERSION``: the cases added, changed (by content digest) and
    retired since a released version; ``cases --digests``: the record of this case set."""
    prog = args.conformance_host.prog
    try:
        catalogue = load_catalogue(args.cases)
        releases = load_releases(args.cases or catalogue_dir())
    except CaseError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if args.digests:
        print(json.dumps({c.id: c.digest for c in catalogue.cases}, indent=2))
        return 0
    try:
        changes = changes_since(args.changes_since, catalogue, releases)
    except KeyError:
        known = ", ".join(sorted(releases)) or "none"
        print(f"{prog}: cases --changes-since {args.changes_since}: no case set recorded for "
              f"that version (recorded: {known})", file=sys.stderr)
        return 2
    print("\n".join(changes.lines()))
    return 0


def _differences(reports: list[SuiteReport]) -> list[str]:
    """Cases whose verdict is not the same in every run."""
    runs = [dict(r.verdicts()) for r in reports]
    out = []
    for case_id in runs[0]:
        seen = [run.get(case_id, "missing") for run in runs]
        if len(set(seen)) > 1:
            out.append(f"{case_id}: {' '.join(seen)}")
    return out


def resend_command(args: argparse.Namespace) -> int:
    """Send one case's recorded commands to an adapter again and judge what comes back.

      {prog} run --adapter "CMD" --json report.json
      {prog} resend report.json --case ID --adapter "CMD"
      {prog} resend one-case.json --adapter "CMD"

    FILE is a JSON report written by `run --json` (every case that did not pass carries the
    exact commands the runner sent, starting with reset; --case picks one, and may be left
    out when only one case carries commands) or a file holding one such case object on its
    own: {"id": "...", "commands": [{"cmd": "reset"}, ...]}. The exchange is printed as it
    happens (> to the adapter, < from it); the log is judged by the invariants and the model
    oracle, and by the case's own checks when the ID is a shipped case and the commands are
    its commands.

    Exit status: 0 when the new log passes, 1 when it fails, 2 for a bad file or an
    adapter that broke the protocol, crashed or refused a command.
    """
    try:
        case_id, commands = load_resend(args.file, args.case)
        catalogue = load_catalogue()
    except (ResendError, CaseError) as exc:
        print(f"{args.conformance_host.prog} resend: {exc}", file=sys.stderr)
        return 2
    argv = _adapter(args, args.conformance_host)
    if argv is None:
        return 2

    def show(direction: str, line: bytes) -> None:
        if not args.quiet:
            arrow = ">" if direction == "sent" else "<"
            # whole, but escaped: a line that is not the protocol may hold anything
            text = display(line.decode("utf-8", "replace").rstrip(), None)
            put(sys.stdout, f"{arrow} {text}\n")

    print(f"re-sending {case_id}: {len(commands)} command(s) to {' '.join(argv)}")
    result = resend(argv, case_id, commands, catalogue=catalogue, timeout=args.timeout,
                    wire_tap=show)
    for message in result.messages:
        put(sys.stdout, f"  {display(message)}\n")
    mark = {"passed": "pass", "failed": "FAIL", "error": "ERROR"}[result.status]
    how = "the case's checks, " if result.judged_by_case else ""
    print(f"re-send of {case_id}: {mark} (judged by {how}the invariants and the model)")
    return {"passed": 0, "failed": 1}.get(result.status, 2)


def _adapter(args: argparse.Namespace, host: Host) -> list[str] | None:
    """The adapter's argv from --adapter or the host's default; None (after saying why)
    when there is none."""
    if args.adapter is not None:
        argv = shlex.split(args.adapter)
    elif host.default_adapter is not None:
        argv = host.default_adapter()
    else:
        print(f"{host.prog}: --adapter CMD is required (the command line of your "
              f"runtime's adapter; see {host.prog} docs guide)", file=sys.stderr)
        return None
    if not argv:
        print(f"{host.prog}: --adapter is empty", file=sys.stderr)
        return None
    return argv


def _expected_logs(report: SuiteReport, timeout: float, host: Host) -> dict[str, CaseLog]:
    """The host's reference log of each case that did not pass: the expected timeline of
    the HTML report (none when the host has no reference adapter)."""
    cases = [r.case for r in failing(report.results)]
    if not cases or host.expected_adapter is None:
        return {}
    argv, env = host.expected_adapter()
    try:
        with Runner(argv, env=env, timeout=timeout) as runner:
            again = runner.run(cases)
    except (SuiteAbortedError, OSError) as exc:
        print(f"{host.prog}: no expected timelines (the reference adapter did not "
              f"start: {exc})", file=sys.stderr)
        return {}
    return {r.case.id: r.log for r in again.results if r.log is not None}


def build_parser() -> argparse.ArgumentParser:
    """The ``zlink-conformance`` parser: the kit's actions and ``--version``."""
    parser = argparse.ArgumentParser(
        prog="zlink-conformance",
        description=plain(_MAIN_DOC, "zlink-conformance"),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version",
                        version=f"%(prog)s {kit_version()}")
    configure(parser)
    return parser


_MAIN_DOC = """The ZLink conformance kit: run the language-neutral suite against your runtime's
adapter process, a program that speaks the adapter protocol on its standard streams.

  {prog} run --adapter "node adapter.js"    the suite against your adapter
  {prog} docs protocol                      the protocol your adapter speaks
  {prog} docs guide                         the guide for runtime authors
  {prog} examples --copy node DIR           an example adapter to start from
"""


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``zlink-conformance`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return run(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output closed it (``list | head``)
        return stop_on_closed_stdout()


if __name__ == "__main__":
    sys.exit(main())
