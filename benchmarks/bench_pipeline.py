"""Rates of the checking pipeline: trace events per second through the model replay and
the invariant checker, and conformance cases per second against the reference adapter.

    python benchmarks/bench_pipeline.py               # a 10,000-event log, the whole suite
    python benchmarks/bench_pipeline.py --quick       # 2,000 events, no conformance run
    python benchmarks/bench_pipeline.py --against ../other-checkout --repeat 11

``--against`` compares with another checkout of the project: the log is recorded once
here, then each repetition judges it with this checkout's model and with the other's, in
a process of its own with that checkout's packages first on ``PYTHONPATH`` (the order
alternates), and prints each side's events per second and the per-repetition ratios
this / other, median (min..max): above 1.0x this checkout is faster.

The log is the one ``bench_trace.py`` records (the reference runtime under a random
workload). Hypothesis examples per second, per state machine, are printed after every
property run (``docs/properties.md``) and are not repeated here.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from zlink_model.invariants import QueueChecker
from zlink_model.replay import QueueReplayer
from zlink_model.trace import TraceEvent, read_trace

ROOT = Path(__file__).resolve().parent.parent


Feed = Callable[[list[TraceEvent]], None]


def rate(feed_all: Feed, events: list[TraceEvent], reps: int) -> tuple[float, float, float]:
    """Events per second of ``feed_all(events)``: median, min, max over ``reps`` runs."""
    rates = []
    for _ in range(reps):
        t0 = time.perf_counter()
        feed_all(events)
        rates.append(len(events) / (time.perf_counter() - t0))
    return statistics.median(rates), min(rates), max(rates)


def _policy() -> Any:
    # bench_trace's policy, imported late: a judging child (``--judge``) needs the
    # model alone, whichever checkout's model it is.
    from bench_trace import POLICY
    return POLICY


def replay_all(events: list[TraceEvent]) -> None:
    replayer = QueueReplayer("q", _policy())
    for ev in events:
        if replayer.feed(ev) is not None:
            raise SystemExit(f"the recorded log does not replay at {ev}")


def check_all(events: list[TraceEvent]) -> None:
    checker = QueueChecker("q", _policy())
    for ev in events:
        if checker.feed(ev):
            raise SystemExit(f"the recorded log breaks an invariant at {ev}")


STEPS: dict[str, Feed] = {"model replay": replay_all, "invariant checker": check_all}


def judge(log: Path, reps: int) -> None:
    """``--judge``: each step's median events per second over ``log``, as one JSON line."""
    events = read_trace(log.read_text(encoding="utf-8").splitlines())
    print(json.dumps({name: rate(fn, events, reps)[0] for name, fn in STEPS.items()}))


def against(other: Path, events: list[dict[str, Any]], repeat: int) -> int:
    """Interleaved runs of ``judge`` in this checkout and in ``other``; prints the rates
    and the per-repetition ratios this / other."""
    sys.path.insert(0, str(Path(__file__).parent))
    from bench_ab import side_env
    sides = {"this": ROOT, "other": other.resolve()}
    rates: dict[str, dict[str, list[float]]] = {s: {n: [] for n in STEPS} for s in sides}
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "log.jsonl"
        log.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
        for rep in range(repeat):
            for side in (["this", "other"] if rep % 2 == 0 else ["other", "this"]):
                proc = subprocess.run(
                    [sys.executable, str(Path(__file__).resolve()), "--judge", str(log),
                     "--repeat", "3"], cwd=sides[side], env=side_env(sides[side]),
                    capture_output=True, text=True)
                if proc.returncode != 0:
                    print(f"[{side}] exit {proc.returncode}: {proc.stderr[-800:]}",
                          file=sys.stderr)
                    return 1
                for name, value in json.loads(proc.stdout.splitlines()[-1]).items():
                    rates[side][name].append(value)
    print(f"this {sides['this']} against other {sides['other']}: {len(events):,} events, "
          f"{repeat} interleaved repetitions, each the median of 3 passes")
    for name in STEPS:
        mine, theirs = rates["this"][name], rates["other"][name]
        ratios = [a / b for a, b in zip(mine, theirs, strict=True)]
        print(f"{name:20s} this {statistics.median(mine):9,.0f} events/s  other "
              f"{statistics.median(theirs):9,.0f} events/s  this/other "
              f"{statistics.median(ratios):5.2f}x ({min(ratios):.2f}..{max(ratios):.2f})")
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short log, no conformance run")
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--against", type=Path, metavar="CHECKOUT",
                    help="compare the replay and the checker with another checkout")
    ap.add_argument("--judge", type=Path, metavar="LOG", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.judge is not None:
        judge(args.judge, args.repeat)
        return 0
    from bench_trace import record
    n = 2_000 if args.quick else args.events
    recorded = asyncio.run(record(n, 1))
    if args.against is not None:
        return against(args.against, recorded, args.repeat)
    events = [TraceEvent.from_json(e) for e in recorded]
    for name, fn in STEPS.items():
        med, lo, hi = rate(fn, events, args.repeat)
        print(f"{name:20s} {len(events):,} events  {med:9,.0f} events/s "
              f"({lo:,.0f}..{hi:,.0f})", flush=True)
    if not args.quick:
        t0 = time.perf_counter()
        proc = subprocess.run([str(Path(sys.executable).parent / "zlink"), "conformance",
                               "run", "-q"], cwd=ROOT, capture_output=True, text=True)
        dt = time.perf_counter() - t0
        found = re.search(r"(\d+) passed", proc.stdout + proc.stderr)
        cases = int(found.group(1)) if found else 0
        print(f"{'conformance run':20s} {cases} cases passed in {dt:.1f} s  "
              f"{cases / dt:6.1f} cases/s (exit {proc.returncode}, adapter start included)",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
