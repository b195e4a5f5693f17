"""Docstrings as ``--help`` text: the usage text of each subcommand is its handler's
docstring (one source for the code's reader and the command's user), shown to the user
as plain text, with its examples written for the program it is shown under.

A docstring marks code with backticks for the reader of the source; the terminal shows
them as they are, so they are dropped. Examples are written as ``{prog} run ...`` and
take the name of the program that mounts them (``zlink-conformance``, ``zlink
conformance``), so neither program's help shows the other's command lines.
"""

from __future__ import annotations

import inspect
import re

__all__ = ["plain", "summary"]

_MARKUP = re.compile(r"``?([^`\n]+)``?")


def plain(doc: str | None, prog: str = "") -> str:
    """``doc`` dedented, without code markup, with ``{prog}`` replaced by ``prog``."""
    text = inspect.cleandoc(doc or "")
    return _MARKUP.sub(r"\1", text.replace("{prog}", prog))


def summary(doc: str | None, prog: str = "") -> str:
    """The first sentence of ``doc``'s first paragraph, on one line: a subcommand's line
    in its parent's help (never cut in the middle of a parenthesis)."""
    paragraph = " ".join(plain(doc, prog).split("\n\n", 1)[0].split())
    match = re.match(r"(.+?[.!?])(?:\s|$)", paragraph)
    sentence = match.group(1) if match else paragraph
    # A sentence end inside a parenthesis ("(e.g. this)") is not one.
    while sentence.count("(") > sentence.count(")") and len(sentence) < len(paragraph):
        rest = re.match(r"(.+?[.!?])(?:\s|$)", paragraph[len(sentence):])
        sentence += rest.group(1) if rest else paragraph[len(sentence):]
    return sentence
