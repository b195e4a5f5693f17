"""No installed text points to a file that is not installed.

An installed distribution is read without the repository: its description (the README
its pyproject names, shown on the index page) and the ``--help`` of its commands. A path
of the repository in them (``docs/conformance.md``, ``conformance/examples/``) sends the
reader to a file they do not have. Each reference to a repository folder is held to what
the distribution carries: the tool ships ``models/`` and ``specs/`` (``zlink_tool/data``),
the kit ships the protocol, the guide and the examples behind ``docs`` and ``examples``
(under names it prints, not paths), the others ship nothing of the repository.
"""

from __future__ import annotations

import argparse
import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from zlink_conformance import cli as kit_cli
from zlink_tool.cli import main as tool_main

ROOT = Path(__file__).resolve().parents[2]
# Top-level folders of the repository: a path starting with one is a repository path.
_REPOSITORY = ("docs", "specs", "models", "conformance", "tests", "tool", "model",
               "reference", "benchmarks", ".ci")
_PATH = re.compile(r"(?<![\w./-])((?:" + "|".join(re.escape(f) for f in _REPOSITORY)
                   + r")/[\w./*-]*)")
# Distribution folder -> the repository folders its install carries.
CARRIES: dict[str, tuple[str, ...]] = {
    "model": (),
    "reference": (),
    "conformance": (),
    "conformance/examples/python": (),
    "tool": ("models/", "specs/"),
}
# A file an option writes into a checkout (``self-test --write-docs``), not one to read.
WRITTEN_IN_A_CHECKOUT = ("docs/conformance.md",)


def _helps(parser: argparse.ArgumentParser) -> Iterator[str]:
    yield parser.format_help()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in {id(p): p for p in action.choices.values()}.values():
                yield from _helps(sub)


def _texts(folder: str) -> Iterator[tuple[str, str]]:
    with open(ROOT / folder / "pyproject.toml", "rb") as fh:
        readme = tomllib.load(fh)["project"]["readme"]
    yield f"{folder}/{readme}", (ROOT / folder / readme).read_text(encoding="utf-8")
    if folder == "conformance":
        for text in _helps(kit_cli.build_parser()):
            yield "zlink-conformance --help", text
    if folder == "tool":
        for text in _helps(tool_main.build_parser()):
            yield "zlink --help", text


def dangling(folder: str) -> list[str]:
    """The repository paths the installed texts of ``folder``'s distribution name that
    its install does not carry."""
    found = []
    for where, text in _texts(folder):
        for path in _PATH.findall(text):
            written = where.endswith("--help") and path in WRITTEN_IN_A_CHECKOUT \
                and f"--write-docs {path}" in text
            if not path.startswith(CARRIES[folder]) and not written:
                found.append(f"{where}: {path}")
    return sorted(set(found))


@pytest.mark.parametrize("folder", list(CARRIES))
def test_installed_texts_name_only_installed_files(folder: str) -> None:
    assert not dangling(folder), dangling(folder)
