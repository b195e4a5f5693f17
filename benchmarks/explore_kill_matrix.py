"""The kill matrix of explore: each catalogued mutant of the reference adapter and each
bug switch of the Node and Java examples, against the fixed suite and against explore.

    python benchmarks/explore_kill_matrix.py                   # every row, 120 s budget
    python benchmarks/explore_kill_matrix.py --only fifo_swap --budget 30
    python benchmarks/explore_kill_matrix.py --no-examples     # the reference's mutants
    python benchmarks/explore_kill_matrix.py --strategy graph --no-suite   # graph column

For each row: whether the fixed suite kills it on its rule (the self-test's criterion,
``zlink_conformance.selftest``), whether ``explore`` (strategy random, seed 1, or the
strategy ``--strategy`` names; stopping at the first reproduced failure) kills it
within the budget and on which rule, after how many scenarios and seconds, and the size
of the shrunk case (commands sent). Prints the Markdown table kept in
docs/conformance.md (section 13).
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.explore import ExploreConfig, explore
from zlink_conformance.runner import Runner
from zlink_conformance.selftest import load_mutants, rule_matches, run_mutant
from zlink_reference_adapter import MUTANTS_FILE, PRELOAD_FILE, reference_adapter_command

ROOT = Path(__file__).resolve().parent.parent
NODE = ["node", str(ROOT / "conformance" / "examples" / "node" / "adapter.js")]
JAVA = ["sh", str(ROOT / "conformance" / "examples" / "java" / "run.sh")]
# The examples' bug switches and the rule each breaks (their READMEs).
_RULE = re.compile(r"\b((?:SE|SD|D|AP)-[0-9]+(?:\.[0-9]+)?)\b")
NODE_BUGS = {"drain_on_submitter_stack": "SE-6.5", "scope_wait_hangs": "SE-8.2"}


def java_bugs() -> dict[str, str]:
    """ZLINK_JAVA_BUG names, read from the runtime's KNOWN_BUGS, with the rule each
    breaks as its comment says (SE-x.y in the line)."""
    text = (ROOT / "conformance/examples/java/src/zlink/executor/ZLinkRuntime.java"
            ).read_text(encoding="utf-8")
    block = text[text.index("KNOWN_BUGS = List.of("):]
    block = block[:block.index(");")]
    names = re.findall(r'"([a-z_]+)"', block)
    rules = {"drain_on_submitter_stack": "SE-6.5", "count_after_wake": "AP-5",
             "admission_not_atomic": "SE-6.3", "lifecycle_ignores_burst_limit": "SE-6.1",
             "scope_wait_hangs": "SE-8.2", "no_reentrancy_detection": "SE-8.2"}
    return {n: rules.get(n, "?") for n in names}


def explore_row(argv: list[str], env: dict[str, str], rule: str, budget: float,
                strategy: str = "random") -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        config = ExploreConfig(argv, seed=1, runs=None, budget_s=budget, out=Path(tmp),
                               env=env, repeat=2, timeout=20.0, strategy=strategy)
        t0 = time.monotonic()
        report = explore(config, say=lambda line: None)
        seconds = time.monotonic() - t0
    confirmed = [f for f in report.findings if not f.flaky]
    if not confirmed:
        flaky = report.findings[0].label if report.findings else ""
        return {"verdict": "flaky " + flaky if flaky else "survived",
                "scenarios": report.scenarios, "seconds": seconds, "steps": None,
                "found": ""}
    f = confirmed[0]
    # The self-test's evidence: the rule of the first failure, and every rule its
    # messages name (a runtime's guard names its rule in a fault: "... (SE-6.6)").
    shown = f.shrunk_result or f.result
    evidence = {f.rule} | set(_RULE.findall(" ".join(shown.messages)))
    on_rule = rule == "?" or any(rule_matches(rule, have) or have == rule
                                 for have in evidence)
    steps = len((f.shrunk or f.scenario).steps())
    return {"verdict": "killed" if on_rule else "killed elsewhere",
            "scenarios": f.scenario.index + 1, "seconds": seconds, "steps": steps,
            "found": f.label}


def suite_row(argv: list[str], env: dict[str, str], rule: str, *, skip: bool = False) -> str:
    if skip:
        return "-"
    cases = load_catalogue().cases
    with Runner(argv, env=env, timeout=20.0) as runner:
        report = runner.run(cases)
    failing = [r for r in report.results if r.status in ("failed", "error")]
    return "killed" if failing else "survived"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--budget", type=float, default=120.0, help="explore's budget a row (s)")
    p.add_argument("--only", action="append", default=[], help="a mutant or bug name")
    p.add_argument("--no-examples", action="store_true", help="the reference's mutants only")
    p.add_argument("--strategy", choices=("random", "graph"), default="random",
                   help="explore's strategy for the explore column (default random)")
    p.add_argument("--no-suite", action="store_true",
                   help="leave the fixed-suite column out ('-'): the explore column only")
    p.add_argument("--new-only", action="store_true",
                   help="only the mutants of explore_mutants.py (and the examples' bugs)")
    args = p.parse_args()
    catalogue = load_catalogue()
    rows: list[str] = [f"| runtime: mutant or bug | breaks | fixed suite | explore "
                       f"({args.strategy}) | "
                       "found on | scenarios | seconds | shrunk case (commands) |",
                       "|---|---|---|---|---|---|---|---|"]

    def emit(where: str, name: str, rule: str, suite: str, ex: dict[str, Any]) -> None:
        steps = ex["steps"] if ex["steps"] is not None else "-"
        line = (f"| {where}: `{name}` | {rule} | {suite} | {ex['verdict']} | "
                f"{ex['found'] or '-'} | {ex['scenarios']} | {ex['seconds']:.0f} | "
                f"{steps} |")
        rows.append(line)
        print(line, flush=True)

    argv = reference_adapter_command()
    for name, mutant in load_mutants(MUTANTS_FILE).items():
        if args.new_only or (args.only and name not in args.only):
            continue
        env = {"ZLINK_ADAPTER_PRELOAD": str(PRELOAD_FILE), "ZLINK_MUTANT_NAME": name}
        fixed = "-" if args.no_suite else run_mutant(
            name, mutant.rule, mutant.invariant, catalogue.cases, argv, PRELOAD_FILE).verdict
        emit("reference", name, mutant.rule, fixed,
             explore_row(argv, env, mutant.rule, args.budget, args.strategy))
    from zlink_reference_adapter import explore_mutants

    for name, mutant in explore_mutants.CATALOGUE.items():
        if args.only and name not in args.only:
            continue
        env = {"ZLINK_ADAPTER_PRELOAD": str(PRELOAD_FILE), "ZLINK_MUTANT_NAME": name}
        fixed = "-" if args.no_suite else run_mutant(
            name, mutant.rule, mutant.invariant, catalogue.cases, argv, PRELOAD_FILE).verdict
        emit("reference, new", name, mutant.rule, fixed,
             explore_row(argv, env, mutant.rule, args.budget, args.strategy))
    if not args.no_examples:
        for name, rule in NODE_BUGS.items():
            if args.only and name not in args.only:
                continue
            env = {"ZLINK_NODE_BUG": name}
            emit("node", name, rule, suite_row(NODE, env, rule, skip=args.no_suite),
                 explore_row(NODE, env, rule, args.budget, args.strategy))
        for name, rule in java_bugs().items():
            if args.only and name not in args.only:
                continue
            env = {"ZLINK_JAVA_BUG": name}
            emit("java", name, rule, suite_row(JAVA, env, rule, skip=args.no_suite),
                 explore_row(JAVA, env, rule, args.budget, args.strategy))
    print()
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
