"""Run every check of the project and print one summary table.

Steps (each a separate process, so one failing never hides another):
  tests        the pytest suite (unit, property machines in the ci profile, mutants)
  conformance  the conformance suite against the reference adapter
  types        mypy --strict on the packages
  lint         ruff on the whole tree

`--fast` runs a quick subset (unit tests without the slow ones, types, lint).
Exit status is 0 only when every selected step passed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import subprocess
import sys
from pathlib import Path

from ._common import Progress, repo_root


@dataclasses.dataclass(frozen=True)
class Step:
    name: str
    what: str
    argv: list[str]
    fast_argv: list[str] | None = None  # None: same as argv; [] : skipped under --fast


def steps(root: Path) -> list[Step]:
    """The checks, in the order they run."""
    py = sys.executable
    return [
        Step("tests", "pytest suite", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"],
             [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not slow"]),
        Step("conformance", "conformance suite, reference adapter",
             [py, "-m", "zlink_reference.cli.main", "conformance", "run", "-q"]),
        Step("types", "mypy --strict", [py, "-m", "mypy"]),
        Step("lint", "ruff check", [py, "-m", "ruff", "check", "."]),
    ]


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fast", action="store_true", help="a quick subset of each step")
    p.add_argument("--only", action="append", metavar="STEP",
                   help="run only this step (repeatable)")
    p.add_argument("--list", action="store_true", help="list the steps and exit")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show each step's full output, not only on failure")


def run(args: argparse.Namespace) -> int:
    """Run every check (the main job) and print one summary table."""
    root = repo_root()
    all_steps = steps(root)
    if args.list:
        for s in all_steps:
            print(f"{s.name:12s} {s.what}")
        return 0
    chosen = all_steps
    if args.only:
        known = {s.name for s in all_steps}
        unknown = [n for n in args.only if n not in known]
        if unknown:
            print(f"zlink verify: unknown step(s): {', '.join(unknown)}; "
                  f"known: {', '.join(sorted(known))}", file=sys.stderr)
            return 2
        chosen = [s for s in all_steps if s.name in args.only]
    progress = Progress(len(chosen))
    rows: list[tuple[str, str, float]] = []
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    for s in chosen:
        argv = s.argv if not args.fast or s.fast_argv is None else s.fast_argv
        progress.start(f"{s.name}: {s.what}")
        if not argv:
            rows.append((s.name, "skipped", progress.done("skipped")))
            continue
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
        rows.append((s.name, status, progress.done(status)))
        output = (proc.stdout + proc.stderr).rstrip()
        if args.verbose or proc.returncode != 0:
            lines = output.splitlines()
            shown = lines if args.verbose else lines[-40:]
            for line in shown:
                print(f"    {line}")
    print()
    print(f"{'step':12s} {'result':24s} {'time':>8s}")
    print(f"{'-' * 12} {'-' * 24} {'-' * 8}")
    for name, status, secs in rows:
        print(f"{name:12s} {status:24s} {secs:7.1f}s")
    failed = [n for n, st, _ in rows if st.startswith("FAILED")]
    print()
    print("verify: " + ("FAILED: " + ", ".join(failed) if failed else "all checks passed"))
    return 1 if failed else 0
