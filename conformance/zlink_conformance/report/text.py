"""Adapter text is data, never layout: the one way every report shows it.

An adapter controls many free strings that end up in reports: the runtime's name and
version, capability names, the messages of refused commands and failed works (quoted in
the runner's reasons), its stderr lines. Valid JSON can carry anything in them: a lone
surrogate (``"\\ud800"``), which no UTF-8 writer can encode and which would crash the
report half written; C0 and C1 control characters, which a terminal obeys (``ESC[2J``
clears the screen) and XML 1.0 forbids; bidirectional overrides, which reorder what a
reader sees; and sizes no reader wants (a 0.9 MB name, a list of 95,000 capabilities).

So every reporter (console, JUnit, HTML and the pytest plugin) passes such text through
``display``, and every list through ``display_items``: the characters above become
visible escapes (``\\x1b``, ``\\ud800``, ``\\n``), and what is too long is cut with a
note of how much was left out. The JSON report keeps the data whole (it is for
programs, and its encoder escapes control characters itself) but goes through
``json_data`` so a lone surrogate is written as visible text, never as an escape a
strict JSON reader refuses. The escapes are for reading, not for decoding: a backslash
the adapter wrote is left as it is.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "ITEM_LIMIT",
    "NAME_LIMIT",
    "TEXT_LIMIT",
    "display",
    "display_items",
    "display_list",
    "json_data",
]

# How much of one piece of adapter text a report shows, in characters.
TEXT_LIMIT: Final = 2_000  # a reason, a stderr line, the adapter's command line
NAME_LIMIT: Final = 200  # a runtime's name, one capability
ITEM_LIMIT: Final = 40  # entries of a list (capabilities)

# C0 controls, DEL, C1 controls; surrogates (only lone ones can reach a str); the two
# BMP noncharacters XML 1.0 forbids; bidirectional marks, embeddings, overrides and
# isolates, and the line and paragraph separators: everything that is layout or
# cannot be written, rather than text.
_UNSAFE: Final = re.compile(
    "[\x00-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff"
    "\u061c\u200e\u200f\u2028-\u202e\u2066-\u2069]")
_SURROGATE: Final = re.compile("[\ud800-\udfff]")
_NAMED: Final[Mapping[str, str]] = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def display(value: object, limit: int | None = TEXT_LIMIT) -> str:
    """``value`` as text safe to print, to write as UTF-8 and to put in XML 1.0 or HTML:
    unsafe characters escaped, at most ``limit`` characters of the original kept (None:
    all), and a note of how many more there were. HTML and XML markup escaping is still
    the writer's own job (``html.escape``, ElementTree)."""
    text = value if isinstance(value, str) else str(value)
    cut = 0
    if limit is not None and len(text) > limit:
        cut = len(text) - limit
        text = text[:limit]
    text = _UNSAFE.sub(_escape, text)
    return f"{text}... [{cut:,} more characters left out]" if cut else text


def display_items(values: Iterable[object], limit: int = ITEM_LIMIT, *,
                  each: int | None = NAME_LIMIT) -> tuple[list[str], int]:
    """The first ``limit`` values, each through ``display(value, each)``, and how many
    more there were (so a reporter can say so in its own layout)."""
    shown: list[str] = []
    left = 0
    for value in values:
        if len(shown) < limit:
            shown.append(display(value, each))
        else:
            left += 1
    return shown, left


def display_list(values: Iterable[object], limit: int = ITEM_LIMIT, *,
                 each: int | None = NAME_LIMIT, empty: str = "none") -> str:
    """``a, b, c`` (``empty`` when there is nothing), ending ``and 94,960 more left
    out`` when more than ``limit`` values came."""
    shown, left = display_items(values, limit, each=each)
    text = ", ".join(shown) or empty
    return f"{text} and {left:,} more left out" if left else text


def json_data(value: Any) -> Any:
    """A copy of plain data (dicts, lists, strings, numbers) whose strings, keys too,
    hold no lone surrogate: each is written as its visible escape (``\\ud800`` as six
    characters). Nothing else changes: the JSON report keeps every value whole."""
    if isinstance(value, str):
        return _SURROGATE.sub(_escape, value) if _SURROGATE.search(value) else value
    if isinstance(value, Mapping):
        return {json_data(k): json_data(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_data(v) for v in value]
    return value
