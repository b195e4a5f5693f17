"""``zlink rules``: the traceability matrix of specs/rules.toml.

Prints every rule with how many TLA+, Python-invariant, test and conformance-case checks
hold it, and its status (checked, untestable with a reason, or a gap). Exits 1 when a
rule has neither a check nor a reason, when the index names an invariant, test or case
that does not exist, when a rule ID used in a test name or a case is defined in no spec,
or when a spec rule is missing from the index.
"""

from __future__ import annotations

import argparse
import json
import sys

from ..specindex import CHECK_KINDS, build_index
from ._common import layout


def configure(p: argparse.ArgumentParser) -> None:
    p.add_argument("--rule", action="append", metavar="ID",
                   help="show the checks of this rule in full (repeatable); the name of a "
                        "check (an invariant, test or case) shows the rules it holds")
    p.add_argument("--gaps", action="store_true", help="print only the problems")
    p.add_argument("--json", metavar="FILE", help="also write the matrix and findings as JSON")


def run(args: argparse.Namespace) -> int:
    """Print the traceability matrix; exit 1 on any gap.

      zlink rules                        every rule, its checks by kind, and its status
      zlink rules --gaps                 only the problems
      zlink rules --rule SE-6.6          the checks of one rule in full (or a check's rules)
      zlink rules --json matrix.json     also the matrix and findings as JSON

    Exit status: 0 every rule checked or excused, 1 a gap or a dangling name, 2 when the
    specs or the index cannot be read.
    """
    try:
        where = layout()
        index = build_index(where.root, where.test_functions())
    except (OSError, ValueError) as exc:
        print(f"zlink rules: {exc}", file=sys.stderr)
        return 2
    if args.rule:
        wanted: list[str] = []
        for name in args.rule:
            if name in index.rules:
                wanted.append(name)
                continue
            # Not a rule ID: the name of a check (invariant, test, case) leads to its rules.
            found = index.rules_checked_by(name)
            if not found:
                print(f"zlink rules: {name} is neither a rule ID any spec defines nor a "
                      "check rules.toml lists", file=sys.stderr)
                return 2
            kinds: dict[str, list[str]] = {}
            for rule_id, kind in found:
                kinds.setdefault(rule_id, []).append(kind)
            print(f"{name} holds " + ", ".join(f"{r} ({', '.join(k)})"
                                                for r, k in kinds.items()))
            wanted += [r for r in kinds if r not in wanted]
        for rule_id in wanted:
            rule = index.rules[rule_id]
            entry = index.entries.get(rule_id)
            print(f"{rule_id} ({rule.strength}) {rule.title}  [{rule.source}]")
            if entry is None:
                print("    not in rules.toml")
                continue
            for kind in CHECK_KINDS:
                for name in entry.checks.get(kind, []):
                    print(f"    {kind:7s} {name}")
            if entry.untestable:
                print(f"    untestable: {entry.untestable}")
        return 0
    if not args.gaps:
        print(f"{'rule':9s} {'':6s} {'tla':>4s} {'py':>4s} {'tests':>6s} {'cases':>6s}  status")
        for rule_id, strength, counts, status in index.matrix():
            print(f"{rule_id:9s} {strength:6s} {counts['tla']:4d} {counts['python']:4d} "
                  f"{counts['tests']:6d} {counts['cases']:6d}  {status}")
        print()
    for f in index.findings:
        print(f"GAP {f.rule_id}: {f.problem}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({
                "rules": [{"rule": r, "strength": s, "checks": c, "status": st}
                          for r, s, c, st in index.matrix()],
                "findings": [{"rule": f.rule_id, "problem": f.problem}
                             for f in index.findings],
            }, fh, indent=2)
    total = len(index.rules)
    checked = sum(1 for *_, st in index.matrix() if st == "checked")
    untestable = sum(1 for *_, st in index.matrix() if st == "untestable")
    print(f"rules: {total}, checked {checked}, untestable {untestable}, "
          f"problems {len(index.findings)}")
    return 1 if index.findings else 0
