"""Run every check of the project, from all three sides, and print one summary table.

Steps (each a separate process, so one failing never hides another):
  models       TLC on every run of models/manifest.json (bug configurations must fail)
  rules        the traceability index: every rule has a check, every name exists
  policy       z3 proofs of what the default lane policy promises
  symbolic     CrossHair contracts, z3 policy checker tests, state-space agreement
  properties   the Hypothesis state machines (ci profile; --deep for long runs)
  conformance  the conformance suite against the reference adapter
  self-test    the conformance kit against every mutant (kill matrix)
  mutants      every mutant killed by the unit tests and the state machines
  tests        the rest of the pytest suite
  types        mypy --strict on the packages
  lint         ruff on the whole tree

`--fast` runs a quick subset of each step (short TLC runs, tests not marked slow, no
self-test, no mutants). A failing step prints the end of its output and the rules it is about.
Exit status is 0 only when every selected step passed.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import re
import subprocess
import sys
from pathlib import Path

from ..specindex import read_spec_rules, rules_mentioned
from ._common import Progress, layout

__all__ = ["Step", "configure", "involved_rules", "run", "steps"]

# Pytest files that other steps own, so the `tests` step does not run them twice.
_OWNED = {
    "properties": ["tests/stateful"],
    "symbolic": ["tests/symbolic"],
    "mutants": ["tests/test_mutants_unit.py", "tests/test_mutants_coordinators.py"],
    "self-test": ["tests/conformance/test_self_test.py"],
}
# The tests that run TLC on the manifest: the models step does that already.
_MODELS_TESTS = [f"tests/models/test_models.py::test_every_{which}_manifest_run_is_as_pinned"
                 for which in ("quick", "other")]


@dataclasses.dataclass(frozen=True)
class Step:
    """One check: its name, what it is, its command, and the command under --fast
    (None: the same; an empty list: skipped under --fast)."""

    name: str
    what: str
    argv: list[str]
    fast_argv: list[str] | None = None
    env: dict[str, str] = dataclasses.field(default_factory=dict)


def steps(deep: bool = False) -> list[Step]:
    """The checks, in the order they run."""
    py = sys.executable
    zlink = [py, "-m", "zlink_tool.cli.main"]
    pytest = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    ignore = [f"--ignore={p}" for owned in _OWNED.values() for p in owned]
    ignore += [f"--deselect={t}" for t in _MODELS_TESTS]
    profile = {"ZLINK_HYPOTHESIS_PROFILE": "deep" if deep else "ci"}
    return [
        Step("models", "TLC on every manifest run", [*zlink, "models", "check"],
             [*zlink, "models", "check", "--only", "SerialQueueTwoWorks", "--only", "*_*"]),
        Step("rules", "traceability index", [*zlink, "rules", "--gaps"]),
        Step("policy", "z3 proofs of the default policy", [*zlink, "policy", "check"]),
        Step("symbolic", "CrossHair, z3, state-space agreement",
             [*pytest, *_OWNED["symbolic"]], [*pytest, "-m", "not slow", *_OWNED["symbolic"]]),
        Step("properties", f"state machines ({profile['ZLINK_HYPOTHESIS_PROFILE']} profile)",
             [*pytest, "-m", "not slow", *_OWNED["properties"]], env=profile),
        Step("conformance", "conformance suite, reference adapter",
             [*zlink, "conformance", "run", "-q"]),
        Step("self-test", "conformance kit against every mutant",
             [*pytest, *_OWNED["self-test"]], []),
        Step("mutants", "mutants killed by unit tests and machines",
             [*pytest, *_OWNED["mutants"], "tests/stateful/test_kill_matrix.py"], []),
        Step("tests", "the rest of the pytest suite",
             [*pytest, *ignore],
             [*pytest, "-m", "not slow", *ignore]),
        Step("types", "mypy --strict", [py, "-m", "mypy"]),
        Step("lint", "ruff check", [py, "-m", "ruff", "check", "."]),
    ]


# The lines of a step's output that report a failure: pytest's summary (FAILED, ERROR),
# the runners' FAIL lines, TLC's violations, rule gaps, refuted proofs, surviving mutants.
# Rule IDs elsewhere in the output (a printed catalogue, a passing case) are not findings.
_FINDING = re.compile(r"FAIL|ERROR|[Vv]iolat|GAP|REFUTED|SURVIVED|killed elsewhere")


def involved_rules(output: str, root: Path) -> list[str]:
    """The spec rules the failure lines of a step's output speak of (IDs no spec
    defines dropped); all of the output when no line looks like a failure."""
    lines = [line for line in output.splitlines() if _FINDING.search(line)]
    text = "\n".join(lines) if lines else output
    try:
        rules, decisions = read_spec_rules(root / "specs")
    except OSError:
        return rules_mentioned(text)
    known = set(rules) | decisions
    return [r for r in rules_mentioned(text) if r in known]


def configure(p: argparse.ArgumentParser) -> None:
    """Options of ``zlink verify``."""
    p.add_argument("--fast", action="store_true", help="a quick subset of each step")
    p.add_argument("--deep", action="store_true",
                   help="the state machines in the deep profile (long runs)")
    p.add_argument("--only", action="append", metavar="STEP",
                   help="run only this step (repeatable)")
    p.add_argument("--skip", action="append", default=[], metavar="STEP",
                   help="leave this step out (repeatable)")
    p.add_argument("--list", action="store_true", help="list the steps and exit")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show each step's full output, not only on failure")


def run(args: argparse.Namespace) -> int:
    """Run every check (the main job) and print one summary table.

    Steps: models, rules, policy, symbolic, properties, conformance, self-test, mutants,
    tests, types, lint (`zlink verify --list`). A failing step names the rules involved.

      zlink verify                       every step, one summary table
      zlink verify --fast                a quick subset of each step
      zlink verify --only models --only rules

    Exit status: 0 every step passed, 1 a step failed, 2 outside a checkout or for an
    unknown step.
    """
    where = layout()
    if not where.checkout:
        print("zlink verify: runs the project's own checks (tests, mypy, ruff) and needs a "
              f"ZLink checkout; {where.root} ({where.source}) has no tests/. Run it in "
              "a checkout, or set ZLINK_ROOT to one.", file=sys.stderr)
        return 2
    root = where.root
    all_steps = steps(deep=args.deep)
    if args.list:
        for s in all_steps:
            print(f"{s.name:12s} {s.what}")
        return 0
    known = {s.name for s in all_steps}
    unknown = [n for n in [*(args.only or []), *args.skip] if n not in known]
    if unknown:
        print(f"zlink verify: unknown step(s): {', '.join(unknown)}; "
              f"known: {', '.join(s.name for s in all_steps)}", file=sys.stderr)
        return 2
    chosen = [s for s in all_steps
              if (not args.only or s.name in args.only) and s.name not in args.skip]
    progress = Progress(len(chosen))
    rows: list[tuple[str, str, float, list[str]]] = []
    for s in chosen:
        argv = s.argv if not args.fast or s.fast_argv is None else s.fast_argv
        progress.start(f"{s.name}: {s.what}")
        if not argv:
            rows.append((s.name, "skipped (--fast)", progress.done("skipped"), []))
            continue
        env = dict(os.environ, PYTHONUNBUFFERED="1", **s.env)
        proc = subprocess.run(argv, cwd=root, env=env, capture_output=True, text=True)
        status = "ok" if proc.returncode == 0 else f"FAILED (exit {proc.returncode})"
        output = (proc.stdout + proc.stderr).rstrip()
        rules = involved_rules(output, root) if proc.returncode != 0 else []
        rows.append((s.name, status, progress.done(status), rules))
        if args.verbose or proc.returncode != 0:
            lines = output.splitlines()
            for line in lines if args.verbose else lines[-40:]:
                print(f"    {line}")
            if rules:
                print(f"    rules involved: {', '.join(rules)}")
    print()
    print(f"{'step':12s} {'result':24s} {'time':>8s}  rules involved")
    print(f"{'-' * 12} {'-' * 24} {'-' * 8}  {'-' * 14}")
    for name, status, secs, rules in rows:
        print(f"{name:12s} {status:24s} {secs:7.1f}s  {', '.join(rules)}".rstrip())
    failed = [n for n, st, _, _ in rows if st.startswith("FAILED")]
    total = sum(secs for _, _, secs, _ in rows)
    print()
    print("verify: " + ("FAILED: " + ", ".join(failed) if failed else "all checks passed")
          + f" ({total:.0f} s)")
    return 1 if failed else 0
