"""What the kit carries besides its code, for a runtime author with no checkout: the
adapter protocol, the guide for runtime authors and the example adapters (Node, Java),
printed by ``docs`` and listed and copied out by ``examples``.

The build puts them under ``zlink_conformance/shipped/`` (conformance/setup.py copies
``specs/adapter-protocol.md``, ``docs/conformance.md`` and ``conformance/examples/``); an
editable install in a checkout reads the checkout's files instead, so the two never
differ. The guide is the repository's: paths it names are the repository's, which a
short header says before the text.
"""

from __future__ import annotations

import argparse
import shutil
import sys
from pathlib import Path
from typing import Any

from .bundled import ShippedError, shipped_file
from .helptext import plain
from .starter import add_init_action

__all__ = ["DOCS", "add_shipped_actions", "example_names"]

# Shipped doc name -> (file under shipped/, its source in a checkout, what it is).
DOCS = {
    "protocol": ("docs/protocol.md", "specs/adapter-protocol.md",
                 "the adapter protocol: messages, commands, events, capabilities"),
    "guide": ("docs/guide.md", "docs/conformance.md",
              "the guide for runtime authors: writing an adapter, running the suite, CI"),
}
_EXAMPLES_IN_CHECKOUT = "conformance/examples"
_HOW_TO_RUN = {
    "node": "node adapter.js",
    "java": "sh run.sh",
}
# Build output of an example run in a checkout is not part of it.
_BUILD_OUTPUT = ("build", "node_modules", "__pycache__")
_IGNORED = shutil.ignore_patterns(*_BUILD_OUTPUT, "*.class")


def example_names() -> list[str]:
    """The example adapters the kit carries."""
    return sorted(_HOW_TO_RUN)


def _example(name: str) -> Path:
    if name not in _HOW_TO_RUN:
        raise ShippedError(f"no example {name!r}; the examples are "
                           f"{', '.join(example_names())}")
    return shipped_file(f"examples/{name}", f"{_EXAMPLES_IN_CHECKOUT}/{name}")


def _is_build_output(relative: Path) -> bool:
    return any(part in _BUILD_OUTPUT for part in relative.parts) or relative.suffix == ".class"


def _docs(args: argparse.Namespace) -> int:
    prog = args.conformance_host.prog
    relative, in_checkout, _ = DOCS[args.doc]
    try:
        path = shipped_file(relative, in_checkout)
    except ShippedError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    if args.doc == "guide":
        print(f"<!-- The guide as in the repository; paths it names are the repository's. "
              f"Shipped with the kit: {prog} docs protocol, {prog} examples. -->\n")
    sys.stdout.write(path.read_text(encoding="utf-8"))
    return 0


def _examples(args: argparse.Namespace) -> int:
    prog = args.conformance_host.prog
    try:
        if args.copy is None:
            for name in example_names():
                source = _example(name)
                files = sorted(p.relative_to(source).as_posix() for p in source.rglob("*")
                               if p.is_file() and not _is_build_output(p.relative_to(source)))
                print(f"{name:6} run with: {_HOW_TO_RUN[name]:18} {len(files)} files: "
                      f"{', '.join(files[:4])}{', ...' if len(files) > 4 else ''}")
            print(f"copy one out with: {prog} examples --copy NAME DIR")
            return 0
        name, target = args.copy
        source = _example(name)
        destination = Path(target)
        if destination.exists() and any(destination.iterdir()):
            raise ShippedError(f"{destination} exists and is not empty; choose a new folder")
        shutil.copytree(source, destination, dirs_exist_ok=True, ignore=_IGNORED)
    except ShippedError as exc:
        print(f"{prog} examples: {exc}", file=sys.stderr)
        return 2
    print(f"wrote the {name} example to {destination}; run the suite against it with:\n"
          f"  cd {destination} && {prog} run --adapter \"{_HOW_TO_RUN[name]}\"")
    return 0


_DOCS_DOC = """Print a text the kit carries: the adapter protocol or the guide.

      {prog} docs protocol                  the protocol an adapter speaks
      {prog} docs guide > guide.md          the guide for runtime authors, to read in a viewer

    Exit status 0; 2 when this install holds no such text.
    """

_EXAMPLES_DOC = """List the example adapters the kit carries, or copy one out to start from.

      {prog} examples                       the examples, how each runs, their files
      {prog} examples --copy node my-adapter    the Node example, into a new folder

    Exit status 0; 2 for an unknown example or a folder that is not empty.
    """


def add_shipped_actions(sub: Any, prog: str) -> None:
    """Register ``docs``, ``examples`` and ``init`` on the kit's subparsers."""
    docs_p = sub.add_parser("docs", help="print the adapter protocol or the guide it carries",
                            description=plain(_DOCS_DOC, prog),
                            formatter_class=argparse.RawDescriptionHelpFormatter)
    docs_p.add_argument("doc", choices=sorted(DOCS), metavar="NAME",
                        help="; ".join(f"{name}: {DOCS[name][2]}" for name in sorted(DOCS)))
    docs_p.set_defaults(conformance_handler=_docs)
    examples_p = sub.add_parser("examples", help="list the example adapters, or copy one out "
                                                        "to start from",
                                description=plain(_EXAMPLES_DOC, prog),
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    examples_p.add_argument("--copy", nargs=2, metavar=("NAME", "DIR"),
                            help=f"copy the example NAME ({', '.join(example_names())}) "
                                 "into DIR, a new or empty folder")
    examples_p.set_defaults(conformance_handler=_examples)
    add_init_action(sub, prog)
