"""How many generated scenarios ``explore`` runs per second, against the fixed suite's
cases per second on the same adapter in the same run (the peer).

    python benchmarks/bench_explore.py                     # the reference adapter
    python benchmarks/bench_explore.py --runs 2000 --max-steps 12
    python benchmarks/bench_explore.py --adapter "node conformance/examples/node/adapter.js"

Each scenario is a whole case's exchange (reset, its commands, the confirming settles,
the reset that ends it) judged by the invariants and the model oracle; the suite's cases
are judged the same way plus their own checks. The target is at least 100 scenarios a
second against the reference adapter on a 2-core machine; the ratio says how a generated
scenario compares with a hand-written case in cost.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import tempfile
import time
from pathlib import Path

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.explore import ExploreConfig, explore
from zlink_conformance.runner import Runner
from zlink_reference_adapter import reference_adapter_command


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--adapter", help="an adapter command line (default: the reference)")
    p.add_argument("--runs", type=int, default=1000)
    p.add_argument("--max-steps", type=int, default=24)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    argv = shlex.split(args.adapter) if args.adapter else reference_adapter_command()
    cases = [c for c in load_catalogue().cases]
    with Runner(argv) as runner:
        runner.start()
        t0 = time.monotonic()
        report = runner.run(cases)
        suite_s = time.monotonic() - t0
    ran = sum(1 for r in report.results if r.status != "skipped")
    suite_rate = ran / suite_s
    with tempfile.TemporaryDirectory() as tmp:
        config = ExploreConfig(argv, seed=args.seed, runs=args.runs,
                               max_steps=args.max_steps, out=Path(tmp), keep_going=True)
        ex = explore(config, say=lambda line: None)
    print(f"adapter: {' '.join(argv)}")
    print(f"fixed suite: {ran} cases in {suite_s:.2f} s = {suite_rate:.0f} cases/s")
    print(f"explore: {ex.scenarios} scenarios (at most {args.max_steps} steps) in "
          f"{ex.run_seconds:.2f} s = {ex.per_second:.0f} scenarios/s; verdict {ex.verdict}")
    print(f"ratio: {ex.per_second / suite_rate:.2f} scenarios per case in the same time")
    print(f"target >= 100 scenarios/s: {'met' if ex.per_second >= 100 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
