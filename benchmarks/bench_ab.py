"""Wall time of one command in two checkouts of the project, interleaved: is this one
slower than that one?

    python benchmarks/bench_ab.py --base ../other-checkout --repeat 5 -- zlink conformance run -q
    python benchmarks/bench_ab.py --base ../other-checkout -- \
        python -m pytest -q -p no:cacheprovider -m "not slow" tests/stateful

Each repetition runs the command once in each checkout (the order alternates, so a
load that grows or fades during the run weighs on both sides alike), in that checkout's
directory and with that checkout's packages first on ``PYTHONPATH``, so one environment
serves both: ``python`` and ``zlink`` at the head of the command are this interpreter
and the tool under it. Prints each side's median wall time with its spread (min..max),
and the median of the per-repetition ratios base / this with their spread: above 1.0x
this checkout is faster. A run that exits non-zero is reported and counts as a failure
of the comparison (exit 1), so a timing never hides a broken side.

Absolute times on a shared machine drift with its load; the per-repetition ratio of two
runs taken back to back survives that far better, which is why it is the figure to read.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
# Where each distribution of a checkout keeps its import packages.
PACKAGE_DIRS = ("model", "reference", "conformance", "conformance/examples/python", "tool")


def side_env(root: Path) -> dict[str, str]:
    """The environment of a run in ``root``: its packages ahead of whatever is installed."""
    paths = [str(root / d) for d in PACKAGE_DIRS]
    old = os.environ.get("PYTHONPATH")
    return dict(os.environ, PYTHONPATH=os.pathsep.join([*paths, *([old] if old else [])]),
                ZLINK_ROOT=str(root))


def argv_of(command: list[str]) -> list[str]:
    """``command`` with ``python`` and ``zlink`` at its head bound to this interpreter."""
    head, *rest = command
    if head == "python":
        return [sys.executable, *rest]
    if head == "zlink":
        return [sys.executable, "-m", "zlink_tool.cli.main", *rest]
    return command


def timed(argv: list[str], root: Path) -> tuple[float, int, str]:
    """One run: wall seconds, exit status, the end of its output."""
    t0 = time.perf_counter()
    proc = subprocess.run(argv, cwd=root, env=side_env(root), capture_output=True, text=True)
    return time.perf_counter() - t0, proc.returncode, (proc.stdout + proc.stderr)[-800:]


def spread(xs: list[float], unit: str = "") -> str:
    return f"{statistics.median(xs):.2f}{unit} ({min(xs):.2f}..{max(xs):.2f})"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, type=Path, help="the other checkout")
    ap.add_argument("--this", type=Path, default=HERE,
                    help="the checkout measured against the base (default: this one)")
    ap.add_argument("--repeat", type=int, default=5, help="repetitions (default 5)")
    ap.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = ap.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        ap.error("give the command after --")
    sides = {"this": args.this.resolve(), "base": args.base.resolve()}
    argv = argv_of(command)
    times: dict[str, list[float]] = {"this": [], "base": []}
    ratios: list[float] = []
    failed = False
    for rep in range(args.repeat):
        order = ["this", "base"] if rep % 2 == 0 else ["base", "this"]
        got: dict[str, float] = {}
        for side in order:
            secs, code, tail = timed(argv, sides[side])
            if code != 0:
                failed = True
                print(f"[{side}] exit {code}:\n{tail}", file=sys.stderr)
            got[side] = secs
            times[side].append(secs)
        ratios.append(got["base"] / got["this"])
        print(f"rep {rep + 1}: this {got['this']:.2f} s  base {got['base']:.2f} s  "
              f"base/this {ratios[-1]:.2f}x", flush=True)
    print(f"command: {' '.join(command)}")
    print(f"this {sides['this']}: {spread(times['this'], ' s')}")
    print(f"base {sides['base']}: {spread(times['base'], ' s')}")
    print(f"base/this, per repetition: {spread(ratios, 'x')} over {args.repeat} repetitions"
          + ("  (a run FAILED: see above)" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
