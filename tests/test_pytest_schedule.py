"""The order ``zlink verify`` gives a pytest step on several cores
(``zlink_tool.pytest_schedule``): the longest work unit first, a unit being what
pytest-xdist's ``loadgroup`` hands out whole (every test of an ``xdist_group``, or a
test alone), so the step does not end with one long unit running while the other
workers have ended."""

from __future__ import annotations

import dataclasses
from typing import Any, cast

import pytest

from zlink_tool.pytest_schedule import longest_first


@dataclasses.dataclass
class _Mark:
    args: tuple[str, ...]
    kwargs: dict[str, Any] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass
class _Item:
    nodeid: str
    group: str = ""

    @property
    def location(self) -> tuple[str, int, str]:
        return (self.nodeid.split("::")[0], 0, self.nodeid)

    def iter_markers(self, name: str) -> list[_Mark]:
        return [_Mark((self.group,))] if name == "xdist_group" and self.group else []


def _order(items: list[_Item], known: dict[str, float],
           typical: dict[str, float] | None = None) -> list[str]:
    got = longest_first(cast(list[pytest.Item], items), known, typical or {})
    return [cast(_Item, i).nodeid for i in got]


def test_the_longest_unit_comes_first_and_a_group_counts_as_one_unit() -> None:
    items = [_Item("tests/test_a.py::quick"), _Item("tests/test_a.py::slow"),
             _Item("tests/test_g.py::one@dist", "dist"), _Item("tests/test_b.py::mid"),
             _Item("tests/test_g.py::two@dist", "dist")]
    known = {"tests/test_a.py::quick": 0.1, "tests/test_a.py::slow": 30.0,
             "tests/test_g.py::one": 20.0, "tests/test_g.py::two": 15.0,
             "tests/test_b.py::mid": 5.0}
    # The group's 35 s before the lone 30 s test, its tests in their collected order.
    assert _order(items, known) == ["tests/test_g.py::one@dist", "tests/test_g.py::two@dist",
                                    "tests/test_a.py::slow", "tests/test_b.py::mid",
                                    "tests/test_a.py::quick"]


def test_a_test_never_timed_takes_its_share_of_its_files_typical_cost() -> None:
    items = [_Item("tests/test_small.py::x"), _Item("tests/test_big.py::p[1]"),
             _Item("tests/test_big.py::p[2]")]
    # 40 s for the file's two tests: 20 s each, before a test timed at 10 s; ties (and
    # tests of no known cost) keep the collected order.
    assert _order(items, {"tests/test_small.py::x": 10.0},
                  {"tests/test_big.py": 40.0}) == [
        "tests/test_big.py::p[1]", "tests/test_big.py::p[2]", "tests/test_small.py::x"]
    assert _order(items, {}) == [i.nodeid for i in items]
