"""The help of both commands holds outside the repository: every subcommand has its own
description and examples written for the command it is shown under, the text is plain
(no docstring markup), one-line summaries are whole sentences, and ``--version`` works."""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
from collections.abc import Iterator

import pytest

from zlink_conformance import cli as kit_cli
from zlink_tool.cli import main as tool_main

_EXAMPLE = re.compile(r"^\s+(zlink(?:-conformance)?(?: [a-z][a-z-]*)*)\b")


def _kit_parser() -> argparse.ArgumentParser:
    return kit_cli.build_parser()


def _parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            seen = set()
            for sub in action.choices.values():
                if id(sub) not in seen:
                    seen.add(id(sub))
                    yield from _parsers(sub)


def _summaries(parser: argparse.ArgumentParser) -> Iterator[tuple[str, str]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for choice in action._choices_actions:
                yield choice.dest, choice.help or ""


PROGRAMS = {"zlink": tool_main.build_parser, "zlink-conformance": _kit_parser}


def _all() -> list[tuple[str, argparse.ArgumentParser]]:
    return [(p.prog, p) for build in PROGRAMS.values() for p in _parsers(build())]


@pytest.mark.parametrize(("prog", "parser"), _all(), ids=[prog for prog, _ in _all()])
def test_help_is_plain_text_with_a_description(prog: str, parser: argparse.ArgumentParser
                                               ) -> None:
    text = parser.format_help()
    assert "``" not in text and "`" not in text, f"{prog} --help shows markup"
    assert parser.description and parser.description.strip(), f"{prog} has no description"


@pytest.mark.parametrize(("prog", "parser"), _all(), ids=[prog for prog, _ in _all()])
def test_examples_are_for_the_command_they_are_shown_under(
        prog: str, parser: argparse.ArgumentParser) -> None:
    text = parser.format_help()
    examples = [m.group(1) for line in text.splitlines() if (m := _EXAMPLE.match(line))]
    leaf = not any(isinstance(a, argparse._SubParsersAction) for a in parser._actions)
    if leaf:
        assert examples, f"{prog} --help shows no example"
        assert any(e == prog or e.startswith(prog + " ") for e in examples), (
            f"{prog} --help shows no example of itself: {examples}")
    # Examples of a sibling subcommand are fine (resend starts from run's report); of
    # another program (zlink vs zlink-conformance) they are not.
    host = prog.rsplit(" ", 1)[0] if leaf and " " in prog else prog
    for example in examples:
        assert example == host or example.startswith(host + " "), (
            f"{prog} --help shows an example of another command: {example}")


@pytest.mark.parametrize(("prog", "parser"), _all(), ids=[prog for prog, _ in _all()])
def test_summaries_are_whole_sentences(prog: str, parser: argparse.ArgumentParser) -> None:
    for name, summary in _summaries(parser):
        assert summary.strip(), f"{prog} {name} has no summary"
        assert summary.count("(") == summary.count(")"), f"{prog} {name}: cut: {summary!r}"


@pytest.mark.parametrize("command", [["zlink"], ["zlink-conformance"]])
def test_version(command: list[str]) -> None:
    module = {"zlink": "zlink_tool.cli.main", "zlink-conformance": "zlink_conformance.cli"}
    result = subprocess.run([sys.executable, "-m", module[command[0]], "--version"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert re.fullmatch(rf"{command[0]} \d+\.\d+\.\d+\n", result.stdout), result.stdout
