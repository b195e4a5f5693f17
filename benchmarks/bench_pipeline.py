"""Rates of the checking pipeline: trace events per second through the model replay and
the invariant checker, and conformance cases per second against the reference adapter.

    python benchmarks/bench_pipeline.py               # a 10,000-event log, the whole suite
    python benchmarks/bench_pipeline.py --quick       # 2,000 events, no conformance run

The log is the one ``bench_trace.py`` records (the reference runtime under a random
workload). Hypothesis examples per second, per state machine, are printed after every
property run (``docs/properties.md``) and are not repeated here.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

from bench_trace import POLICY, record

from zlink_model.invariants import QueueChecker
from zlink_model.replay import QueueReplayer
from zlink_model.trace import TraceEvent

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


def replay_all(events: list[TraceEvent]) -> None:
    replayer = QueueReplayer("q", POLICY)
    for ev in events:
        if replayer.feed(ev) is not None:
            raise SystemExit(f"the recorded log does not replay at {ev}")


def check_all(events: list[TraceEvent]) -> None:
    checker = QueueChecker("q", POLICY)
    for ev in events:
        if checker.feed(ev):
            raise SystemExit(f"the recorded log breaks an invariant at {ev}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a short log, no conformance run")
    ap.add_argument("--events", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    n = 2_000 if args.quick else args.events
    events = [TraceEvent.from_json(e) for e in asyncio.run(record(n, 1))]
    for name, fn in (("model replay", replay_all), ("invariant checker", check_all)):
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
