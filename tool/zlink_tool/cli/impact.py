"""``zlink impact``: what a change touched, and which checks hold it.

For the changes since a revision (default: the working tree against HEAD, committed
and uncommitted, new files too), prints the files changed, the rules they touch and
why (``zlink_tool.impact``), the checks ``specs/rules.toml`` lists for those rules, and
the steps of ``zlink verify`` that can see the change, with the test files of the
pytest steps, and those that cannot (``zlink_tool.cli._selection`` says how that is
decided). ``zlink verify --since REV`` runs exactly what it lists.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..checkinputs import environment_digest
from ..impact import ChangeError, analyse
from ..resultcache import ResultCache, strace_available
from ..steprun import StepRunner
from ._common import layout
from ._selection import print_impact, select, tlc_run_inputs
from .verify import steps

__all__ = ["configure", "run"]


def configure(p: argparse.ArgumentParser) -> None:
    """Options of ``zlink impact``."""
    p.add_argument("--since", default="HEAD", metavar="REV",
                   help="compare the working tree with this revision (default HEAD)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="also write the changes, rules, reasons and selection as JSON")


def run(args: argparse.Namespace) -> int:
    """Show what the changes since a revision touch: files, rules and why, checks.

      zlink impact                  the working tree against HEAD
      zlink impact --since main     everything since main (committed or not)

    Exit status: 0, or 2 when the revision or the checkout cannot be read.
    """
    where = layout()
    if not where.checkout:
        print(f"zlink impact: needs a git checkout; {where.root} ({where.source}) is not "
              "one. Run it in a checkout, or set ZLINK_ROOT to one.", file=sys.stderr)
        return 2
    root = where.root
    try:
        impact = analyse(root, args.since, tlc_run_inputs(root))
    except ChangeError as exc:
        print(f"zlink impact: {exc}", file=sys.stderr)
        return 2
    runner = StepRunner(root, ResultCache(root), environment_digest(root),
                        strace_available())
    all_steps = steps()
    selection = select(all_steps, impact, runner, {s.name: s.argv for s in all_steps})
    print_impact(impact, selection, sys.stdout)
    if args.json is not None:
        data = {**impact.to_json(), "selection": selection.to_json()}
        args.json.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
        print(f"written to {args.json}")
    return 0
