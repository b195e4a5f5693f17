"""Prove or refute what a lane policy promises, with z3.

  zlink policy check                  the default policy (the seed's values)
  zlink policy check POLICY_FILE      a JSON or TOML file with the policy's field names
  zlink policy check FILE --json      also print the findings as JSON

Properties (zlink_tool.policycheck): (a) for fixed-cost items each lane's count
limit binds before its byte limit (SE-10 item 8); (b) an empty lane admits a fixed-cost
item (otherwise the policy is contradictory); (c) an application item waits behind at
most lifecycle_burst_limit lifecycle items (SE-10 item 9).

Exit status: 0 every property proved, 1 a property refuted (each counterexample is
printed), 2 bad input (unreadable file, not JSON/TOML, unknown field or bad value).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from zlink_conformance.helptext import plain
from zlink_model.policy import PolicyInputError, load_policy

from ._common import require

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Register ``check`` under ``zlink policy``."""
    sub = p.add_subparsers(dest="policy_action", metavar="ACTION")
    check = sub.add_parser("check", help="prove or refute a policy's properties with z3",
                           description=plain(__doc__),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
    check.add_argument("policy_file", nargs="?", type=Path, metavar="POLICY_FILE",
                       help="JSON or TOML file of ZLinkExecutionLanePolicy fields "
                            "(default: the default policy)")
    check.add_argument("--json", action="store_true", help="print the findings as JSON")
    p.set_defaults(policy_parser=p)


def run(args: argparse.Namespace) -> int:
    """Prove or refute what a lane policy promises, with z3.

    zlink policy check                  the default policy (the seed's values)
    zlink policy check POLICY_FILE      a JSON or TOML file with the policy's field names
    zlink policy check FILE --json      also print the findings as JSON

    Exit status: 0 every property proved, 1 a property refuted (each counterexample is
    printed), 2 bad input (unreadable file, not JSON/TOML, unknown field or bad value).
    """
    if getattr(args, "policy_action", None) != "check":
        args.policy_parser.print_help()
        return 2
    path: Path | None = args.policy_file
    try:
        policy = load_policy(path)
    except PolicyInputError as exc:
        print(f"zlink policy: {exc}", file=sys.stderr)
        return 2
    require("z3", "policy")
    from ..policycheck import check_policy  # noqa: PLC0415 (z3 is an extra)

    findings = check_policy(policy)
    if args.json:
        print(json.dumps({"policy": policy.to_mapping(),
                          "source": str(path) if path else "default",
                          "findings": [f.to_json() for f in findings]}, indent=2))
    else:
        print(f"policy: {path if path else 'default'}")
        for name, value in policy.to_mapping().items():
            print(f"  {name} = {value}")
        for f in findings:
            status = "proved " if f.proved else "REFUTED"
            print(f"[{status}] {f.name} ({f.rules}): {f.claim}")
            print(f"          {f.method}")
            if f.counterexample:
                print(f"          counterexample: {f.counterexample}")
        bad = [f for f in findings if not f.proved]
        if any(f.contradictory for f in bad):
            print("the policy is contradictory: a lane can never admit anything")
        print(f"{len(findings) - len(bad)} proved, {len(bad)} refuted")
    return 0 if all(f.proved for f in findings) else 1
