"""The one policy for adapter text in reports (``report.text``): what it escapes, how it
cuts, and what the JSON report keeps."""

from __future__ import annotations

import json

import pytest

from zlink_conformance.report.text import display, display_items, display_list, json_data


@pytest.mark.parametrize(("raw", "shown"), [
    ("\x1b[2J", "\\x1b[2J"),  # C0: a terminal would clear the screen
    ("a\x00b\x07c\x7fd", "a\\x00b\\x07c\\x7fd"),  # NUL, BEL, DEL
    ("\x9b2J", "\\x9b2J"),  # C1 CSI: the same clear screen on some terminals
    ("one\ntwo\r\tthree", "one\\ntwo\\r\\tthree"),  # no forged lines
    ("\ud800x\udc80", "\\ud800x\\udc80"),  # lone surrogates: no UTF-8 writer takes them
    ("\u202eevil\u2066", "\\u202eevil\\u2066"),  # bidi override and isolate
    ("\ufffe\uffff", "\\ufffe\\uffff"),  # not characters in XML 1.0
    ("zlink-r\u00e9f\u00e9rence \u4e2d \u00a0", "zlink-r\u00e9f\u00e9rence \u4e2d \u00a0"),
    ("back\\slash", "back\\slash"),  # text as written
])
def test_display_escapes_what_is_layout_or_unwritable_and_keeps_text(raw: str,
                                                                     shown: str) -> None:
    assert display(raw) == shown
    display(raw).encode("utf-8")  # never raises


def test_display_cuts_long_text_and_says_how_much_was_left_out() -> None:
    assert display("N" * 900_000, 200) == "N" * 200 + "... [899,800 more characters left out]"
    assert display("N" * 200, 200) == "N" * 200
    assert len(display("x" * 10**6, None)) == 10**6
    assert display(12) == "12" and display(None) == "None"


def test_lists_are_cut_with_a_count_and_each_entry_is_made_safe() -> None:
    values = [f"x{i}" for i in range(95_000)]
    shown, left = display_items(values, 40)
    assert shown == values[:40] and left == 94_960
    assert display_list(values).endswith("x39 and 94,960 more left out")
    assert display_list([]) == "none"
    assert display_list(["a\x1b", "b" * 500], each=10) == \
        "a\\x1b, bbbbbbbbbb... [490 more characters left out]"


def test_json_data_turns_lone_surrogates_into_visible_text_and_keeps_the_rest() -> None:
    data = {"name\udc80": ["\ud800", {"k": "ok\x1b"}], "n": 3, "f": 1.5, "b": None}
    safe = json_data(data)
    assert safe == {"name\\udc80": ["\\ud800", {"k": "ok\x1b"}], "n": 3, "f": 1.5, "b": None}
    text = json.dumps(safe, ensure_ascii=False)
    text.encode("utf-8")  # never raises
    assert json_data(["x" * 100_000]) == ["x" * 100_000]  # data is not cut
