"""``zlink``: the project's command line. Each subcommand lives in its own module and
registers itself in ``COMMANDS``; ``zlink --help`` lists them."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Callable, Sequence

from zlink_conformance.helptext import plain, summary
from zlink_conformance.pipes import stop_on_closed_stdout

from .. import DISTRIBUTION
from . import conformance, impact, models, policy, rules, trace, verify

Command = tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]

COMMANDS: list[Command] = [
    ("verify", verify.configure, verify.run),
    ("impact", impact.configure, impact.run),
    ("models", models.configure, models.run),
    ("conformance", conformance.configure, conformance.run),
    ("rules", rules.configure, rules.run),
    ("policy", policy.configure, policy.run),
    ("trace", trace.configure, trace.run),
]


def build_parser() -> argparse.ArgumentParser:
    """The full parser, one subparser per command."""
    parser = argparse.ArgumentParser(
        prog="zlink",
        description=(
            "Reference runtime, models and conformance kit for ZLink serial executors. "
            "zlink verify is the main job: it runs every check and prints one summary."
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, configure, handler in COMMANDS:
        prog = f"zlink {name}"
        p = sub.add_parser(name, help=summary(handler.__doc__, prog) or name,
                           description=plain(handler.__doc__, prog),
                           formatter_class=argparse.RawDescriptionHelpFormatter)
        configure(p)
        p.set_defaults(handler=handler)
    return parser


def _version() -> str:
    """The installed tool's version (``unknown`` when run from a bare source tree)."""
    try:
        return importlib.metadata.version(DISTRIBUTION)
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``zlink`` console script."""
    parser = build_parser()
    args = parser.parse_args(argv)
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 2
    try:
        code: int = handler(args)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # the reader of our output closed it (``rules | head``)
        return stop_on_closed_stdout()
    except SystemExit as stop:  # a usage error deep in a subcommand (missing extra, data)
        return stop.code if isinstance(stop.code, int) else 2
    return code


if __name__ == "__main__":
    sys.exit(main())
