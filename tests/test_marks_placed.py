"""A pytest mark decorates a test: on any other function (a helper below which a test
was later written) pytest ignores it without a word, and the test it was meant for runs
where it should not (a slow test in ``./dev test``, a soak in ``./dev verify``)."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _marked_non_tests(source: str) -> list[str]:
    """The functions of ``source`` decorated with ``pytest.mark.<name>`` whose names do
    not start with ``test`` (a fixture is ``pytest.fixture``, not a mark)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) \
                or node.name.startswith("test"):
            continue
        for deco in node.decorator_list:
            target = deco.func if isinstance(deco, ast.Call) else deco
            if "pytest.mark." in ast.unparse(target):
                found.append(f"{node.name} (line {node.lineno})")
    return found


def test_every_pytest_mark_decorates_a_test() -> None:
    misplaced = {str(path.relative_to(TESTS)): names
                 for path in sorted(TESTS.rglob("*.py"))
                 if (names := _marked_non_tests(path.read_text(encoding="utf-8")))}
    assert misplaced == {}


def test_a_mark_on_a_helper_is_found() -> None:
    source = "import pytest\n\n@pytest.mark.slow\ndef _entries():\n    pass\n\n" \
             "@pytest.mark.parametrize('x', [1])\ndef test_x(x):\n    pass\n"
    assert _marked_non_tests(source) == ["_entries (line 4)"]
