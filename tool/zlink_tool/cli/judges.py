"""``zlink conformance judges``: the fixed cases and a fixed-seed sample of generated
scenarios, run through an adapter (default: the reference), each transcript judged by
the kit's model oracle and by TLC, which share no code; a disagreement fails."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.explore import ExploreConfig, explore
from zlink_conformance.helptext import plain
from zlink_conformance.runner import Runner
from zlink_reference_adapter import reference_adapter_command

from ..tla.judges import JudgesReport, judge_transcripts
from ..tla.runner import ToolMissingError
from ._common import layout, tlc_missing
from .trace import escaped

__all__ = ["add_judges", "judges"]


def add_judges(sub: Any) -> None:
    """Register ``judges`` on ``zlink conformance``'s actions."""
    p = sub.add_parser("judges", help="judge the transcripts of every fixed case and of a "
                                      "fixed-seed sample of generated scenarios with the "
                                      "model oracle and with TLC; a disagreement fails",
                       description=plain(judges.__doc__),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--adapter", metavar="CMD",
                   help="the adapter's command line (default: the reference adapter)")
    p.add_argument("--seed", type=int, default=0, metavar="S",
                   help="the seed of the generated sample (default 0)")
    p.add_argument("--runs", type=int, default=150, metavar="N",
                   help="generated scenarios in the sample (default %(default)s; 0: the "
                        "fixed cases only)")
    p.add_argument("--max-steps", type=int, default=24, metavar="K",
                   help="at most K commands a generated scenario (default %(default)s)")
    p.add_argument("--transcripts", type=Path, metavar="DIR",
                   help="keep the transcripts here (DIR/fixed, DIR/generated; default: a "
                        "temporary directory)")
    p.add_argument("--timeout", type=float, default=900.0, metavar="S",
                   help="seconds one TLC run may take (default %(default)s)")
    p.add_argument("--json", type=Path, metavar="FILE", help="write the report as JSON")
    p.set_defaults(conformance_handler=judges)


def judges(args: argparse.Namespace) -> int:
    """Run every fixed case, and --runs generated scenarios of --seed, through the adapter
    and judge each transcript twice: by the kit's model oracle (the Python model the
    reference runs on) and by TLC (SerialQueue.tla, with Disposal.tla's and SpotWide.tla's
    steps beside it, through TraceWireSerialQueue.tla, queue by queue, every queue of
    every transcript in a few TLC runs). A bug in the Python model is a bug in the
    oracle; TLC shares none of its code, so the two must agree on every transcript.

      zlink conformance judges                    the reference, 150 generated
      zlink conformance judges --runs 1000 --seed 3
      zlink conformance judges --adapter "CMD"    any adapter

    A disagreement names the transcript and the entry where the two part: TLC refuses an
    event the oracle accepted, or the oracle refuses an event of a queue TLC matched
    whole. Disposals (Disposal.tla's steps) and a session's final work (D-12) are judged
    on the queue's walk too, and a SpotWide Spot's Spot queue and Actor queues are one
    walk, with the transfers that move a turn from an Actor queue to the Spot queue
    (SE-4.5) as its hidden steps; a queue TLC does not cover is counted and printed with
    its reason, never passed. A failing case is not a disagreement when both refuse it.

    Exit status: 0 the judges agree on every transcript, 1 a disagreement (or TLC gave
    no verdict on a queue), 2 bad arguments or an adapter that does not start, 3 Java or
    TLC missing."""
    missing = tlc_missing("zlink conformance judges")
    if missing is not None:
        return missing
    argv = shlex.split(args.adapter) if args.adapter else reference_adapter_command()
    with tempfile.TemporaryDirectory(prefix="zlink-judges-") as tmp:
        root = args.transcripts or Path(tmp)
        fixed, generated = root / "fixed", root / "generated"
        t0 = time.monotonic()
        catalogue = load_catalogue()
        with Runner(argv, transcripts=fixed) as runner:
            hs = runner.start()
            runnable = [c for c in catalogue.cases if not c.missing(hs.capabilities)]
            runner.run(runnable)
        print(f"judges: {len(runnable)} fixed case(s) run in {time.monotonic() - t0:.1f} s")
        if args.runs > 0:
            t1 = time.monotonic()
            report = explore(ExploreConfig(argv, seed=args.seed, runs=args.runs,
                                           max_steps=args.max_steps, out=None,
                                           keep_going=True, repeat=1, shrink_seconds=1.0,
                                           transcripts=generated), say=lambda _: None)
            print(f"judges: {report.scenarios} generated scenario(s) of seed {args.seed} "
                  f"run in {time.monotonic() - t1:.1f} s ({report.verdict} by the kit)")
        paths = sorted(fixed.glob("*.jsonl")) + sorted(generated.glob("*.jsonl"))

        def progress(done: int, total: int) -> None:
            print(f"judges: TLC has judged {done} of {total} log(s) (a log is a queue, or "
                  "a SpotWide Spot's queues together)", flush=True)
        try:
            judged = judge_transcripts(paths, layout().models, args.timeout, progress)
        except ToolMissingError as exc:
            print(f"zlink conformance judges: {exc}", file=sys.stderr)
            return exc.exit_code
    return _report(judged, args.json)


def _report(judged: JudgesReport, json_path: Path | None) -> int:
    counts = judged.counts()
    print(f"judges: {counts['transcripts']} transcript(s), {counts['queues']} queue(s): TLC "
          f"checked {counts['tlc_checked']} and matched {counts['tlc_matched']} in "
          f"{judged.tlc_runs} TLC run(s), {judged.seconds:.1f} s with the oracle; the "
          f"oracle refused {counts['oracle_refused']} transcript(s), could not decide "
          f"{counts['oracle_undecided']}")
    for reason, n in sorted(judged.not_checked().items()):
        print(f"  not checked by TLC: {n} queue(s) with {reason}")
    for name, queue, reason in judged.unchecked():
        print(escaped(f"  not checked by TLC: {name}: {queue}: {reason}"))
    if counts["tlc_checked"] == counts["queues"]:
        print("  TLC checked every queue")
    for t in judged.transcripts:
        for error in t.tlc_errors:
            print(escaped(f"  ERROR tlc: {t.name}: {error}"))
    for d in judged.disagreements:
        print(escaped(f"DISAGREE {d.message()}"))
    if json_path is not None:
        json_path.write_text(json.dumps(judged.to_json(), indent=1) + "\n", encoding="utf-8")
        print(f"wrote {json_path}")
    ok = not judged.disagreements and counts["tlc_errors"] == 0
    print(f"judges verdict: {'AGREE' if ok else 'DISAGREE' if judged.disagreements else 'ERROR'}")
    return 0 if ok else 1
