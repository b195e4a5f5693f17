"""`zlink conformance`: the kit's subcommands (``zlink_conformance.cli``) with the
reference adapter as their default adapter and expected timelines, plus ``self-test``:
the suite against every mutant of the reference runtime (the kill matrix)."""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.cli import Host
from zlink_conformance.cli import configure as configure_kit
from zlink_conformance.cli import run as run_kit
from zlink_conformance.helptext import plain
from zlink_conformance.selftest import (
    MutantRow,
    kill_matrix,
    load_mutants,
    matrix_markdown,
    replace_matrix,
)
from zlink_reference_adapter import MUTANTS_FILE, PRELOAD_FILE, reference_adapter_command
from zlink_reference_adapter.adapter import PRELOAD_VARIABLE, PROGRESS_VARIABLE

from ..tla.runner import ToolMissingError
from ..tla.transcript import queue_transcripts, read_transcript
from ._common import layout, tlc_missing
from .judges import add_judges
from .trace import escaped, tlc_transcript_queues

__all__ = ["HOST", "configure", "run", "self_test", "tlc_judge"]


def _expected_adapter() -> tuple[list[str], dict[str, str]]:
    # The plain reference runtime: no preload hook, default progress.
    return reference_adapter_command(), {PRELOAD_VARIABLE: "", PROGRESS_VARIABLE: "default"}


def _add_extras(sub: Any) -> None:
    """What only the tool adds to the kit's actions: ``run --tlc`` and ``self-test``."""
    sub.choices["run"].add_argument(
        "--tlc", action="store_true",
        help="also judge each case that did not pass with TLC: its transcript, queue by "
             "queue, against SerialQueue.tla and its disposal steps (zlink trace check "
             "TRANSCRIPT --tlc); needs "
             "Java. Transcripts go to --transcripts DIR, or a temporary directory")
    _add_self_test(sub)
    add_judges(sub)


def _add_self_test(sub: Any) -> None:
    self_p = sub.add_parser("self-test", help="run the suite against every mutant of the "
                                              "reference runtime: the kill matrix",
                            description=plain(self_test.__doc__),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    self_p.add_argument("--mutants", type=Path, default=MUTANTS_FILE,
                        metavar="FILE", help="the mutant catalogue (default: the one "
                                             "shipped with the reference adapter)")
    self_p.add_argument("--preload", type=Path, default=PRELOAD_FILE, metavar="FILE",
                        help="the adapter preload file that applies the mutant named by "
                             "ZLINK_MUTANT_NAME (default: the reference adapter's)")
    self_p.add_argument("--write-docs", type=Path, metavar="FILE",
                        help="write the matrix into FILE between its kill-matrix markers "
                             "(docs/conformance.md)")
    self_p.set_defaults(conformance_handler=self_test)


HOST = Host("zlink conformance", default_adapter=reference_adapter_command,
            expected_adapter=_expected_adapter, extra=_add_extras)


def configure(p: argparse.ArgumentParser) -> None:
    """Register the kit's actions and ``self-test`` under ``zlink conformance``."""
    configure_kit(p, HOST)


def run(args: argparse.Namespace) -> int:
    """Run the conformance suite against a runtime's adapter (default: the reference
    adapter), list the cases, replay one, or run the self-test (see each action's
    --help). The kit alone installs as ``zlink-conformance``; ``{prog} docs guide``
    prints the guide for runtime authors, ``{prog} docs protocol`` the protocol.

      {prog} run                      the suite against the reference adapter
      {prog} run --adapter "CMD"      ... against any adapter
      {prog} self-test                ... against every mutant of the reference

    ``run --tlc`` gives every case that did not pass a second judge: TLC walks its
    transcript, queue by queue, through SerialQueue.tla (``tlc_judge``). Exit status as
    the kit's, and 3 when TLC was asked for and Java or TLC is missing."""
    if getattr(args, "conformance_action", None) != "run" or not getattr(args, "tlc", False):
        return run_kit(args)
    missing = tlc_missing("zlink conformance: --tlc")
    if missing is not None:
        return missing
    with tempfile.TemporaryDirectory(prefix="zlink-transcripts-") as tmp:
        if args.transcripts is None:
            args.transcripts = Path(tmp)
        started = time.time()
        code = run_kit(args)
        if code == 2:  # no run to judge: bad arguments or an adapter that never started
            return code
        written = [p for p in sorted(args.transcripts.glob("*.jsonl"))
                   if p.stat().st_mtime >= started - 1]
        try:
            tlc_judge(written, layout().models)
        except ToolMissingError as exc:
            print(f"zlink conformance: --tlc: {exc}", file=sys.stderr)
            return exc.exit_code
    return code


def tlc_judge(transcripts: list[Path], models: Path,
              timeout: float = 600.0) -> list[tuple[str, list[dict[str, Any]]]]:
    """TLC's verdict on each transcript whose case did not pass (its last record says
    so), per queue, printed and returned as ``(case, records)``. A case in which TLC
    finds nothing on the queues it covers is said to be so: the two judges then disagree
    there, or the failure is outside what the trace spec sees (a check of the case's
    own: a snapshot, statistics, a wait)."""
    failing = []
    for path in transcripts:
        lines = path.read_text(encoding="utf-8").splitlines()
        last = json.loads(lines[-1]) if lines else {}
        if isinstance(last, dict) and last.get("verdict") not in ("passed", "skipped", None):
            failing.append(path)
    print(f"tlc: judging the transcripts of {len(failing)} case(s) that did not pass, queue "
          "by queue, against SerialQueue.tla with the disposal and SpotWide steps (one TLC "
          "run for all of them)")
    queues = []
    for path in failing:
        with path.open(encoding="utf-8") as fh:
            queues.append(queue_transcripts(read_transcript(fh)))
    every = tlc_transcript_queues([q for qs in queues for q in qs], models, timeout)
    out = []
    for path, qs in zip(failing, queues, strict=True):
        records, every = every[:len(qs)], every[len(qs):]
        refused = [r for r in records if r["status"] == "fail"]
        checked = [r for r in records if r["status"] in ("ok", "fail")]
        if refused:
            what = "; ".join(f"{r['queue']} ({r.get('rules', '')}): {r['reason']}"
                             for r in refused)
            print(escaped(f"  {path.stem}: TLC refuses it too: {what}"))
        elif checked:
            print(escaped(f"  {path.stem}: TLC finds no broken rule on the "
                          f"{len(checked)} queue(s) it covers"))
        else:
            print(escaped(f"  {path.stem}: no queue TLC covers ("
                          + "; ".join(f"{r['queue']}: {r['reason']}" for r in records)
                          + ")"))
        for r in records:
            if r["status"] == "error":
                print(escaped(f"    ERROR tlc: {r['queue']}: {r['reason']}"))
        out.append((path.stem, records))
    return out


def self_test(args: argparse.Namespace) -> int:
    """Run the whole suite once per mutant of the reference runtime and print the kill
    matrix: which cases each deliberate bug fails, and whether one of them is on the rule
    the mutant breaks.

      zlink conformance self-test
      zlink conformance self-test --write-docs docs/conformance.md

    Each mutant runs in its own reference adapter process (the preload file switches it
    on). A mutant is killed on its rule when a failing case names that rule (or a rule
    under, above or related to it) in its rules, the model oracle's divergence, a broken
    invariant or a guard's fault. Exit status: 0 when every mutant is killed on its rule,
    1 when one survives or is killed elsewhere, 2 for missing files.
    """
    for path in (args.mutants, args.preload):
        if not path.is_file():
            print(f"zlink conformance self-test: {path} not found (pass --mutants/--preload)",
                  file=sys.stderr)
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
