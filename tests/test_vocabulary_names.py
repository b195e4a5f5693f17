"""Event names are quoted once, in ``zlink_model.vocabulary``; everywhere else code
compares with its constants (``ADMIT``, ``TAKE_NEXT``, ...) or dispatches through a
table built by ``vocabulary.dispatch_table``, which refuses to build while an event has
no handler.

The scan reads the source of every package (the model, the reference runtime, the kit,
its Python example adapter and the tool) and reports each string constant equal to a
core event name (``vocabulary.EVENTS``). The places where such a string is not an event
name, and so stays quoted:

- ``zlink_model/vocabulary.py``, the table itself;
- the entries of ``__all__`` and ``__slots__``: names of Python objects (the shell
  exports a function ``transfer``);
- the label given to a thread or lane guard, the last positional argument of
  ``require_loop`` or ``require`` (their ``where``): it names, for the guard's message,
  the method that changes owned state (a coordinator's ``close``, the shell's
  ``transfer``), not an event.

Not scanned: the JSON schemas and case files of the kit and ``specs/`` (data and
wire-format text, held to the vocabulary by ``tests/test_vocabulary.py``), the TLA+
models, docs, and the tests, whose quoted names are the expected values they check.
The wire events (``accepted``, ``started``, ...) share words such as ``failed``,
``error`` and ``current`` with ordinary prose and status values, so a scan on them would
report mostly words that are not events; their tables are held to the vocabulary by
``tests/test_vocabulary.py`` instead."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from zlink_model import vocabulary
from zlink_model.vocabulary import EVENTS, UnhandledEventError, dispatch_table

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "model" / "zlink_model", ROOT / "reference" / "zlink_reference",
            ROOT / "conformance" / "zlink_conformance", ROOT / "tool" / "zlink_tool",
            ROOT / "conformance" / "examples" / "python" / "zlink_reference_adapter")
TABLE = ROOT / "model" / "zlink_model" / "vocabulary.py"
# Calls whose last positional argument labels a guarded place (see the docstring).
GUARD_LABELS = frozenset({"require_loop", "require"})
NAMES_OF_OBJECTS = frozenset({"__all__", "__slots__"})


def _exempt_nodes(tree: ast.AST) -> set[int]:
    """The ids of string constants that are not event names by their place."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id in NAMES_OF_OBJECTS for t in targets) \
                    and node.value is not None:
                out.update(id(n) for n in ast.walk(node.value))
        elif isinstance(node, ast.Call) and node.args:
            func = node.func
            called = func.attr if isinstance(func, ast.Attribute) else (
                func.id if isinstance(func, ast.Name) else "")
            if called in GUARD_LABELS:
                out.add(id(node.args[-1]))
    return out


def quoted_event_names(path: Path) -> list[tuple[int, str]]:
    """(line, name) of each string constant in ``path`` equal to a core event name,
    outside the exempt places."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    exempt = _exempt_nodes(tree)
    names = set(EVENTS)
    return sorted((n.lineno, n.value) for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str)
                  and n.value in names and id(n) not in exempt)


def _sources() -> list[Path]:
    return [p for package in PACKAGES for p in sorted(package.rglob("*.py")) if p != TABLE]


def test_no_quoted_event_name_outside_the_vocabulary() -> None:
    offenders = [f"{path.relative_to(ROOT)}:{line}: {name!r}"
                 for path in _sources() for line, name in quoted_event_names(path)]
    assert not offenders, (
        "event names quoted outside zlink_model.vocabulary (compare with its constants, "
        "ADMIT, TAKE_NEXT, ..., or dispatch through vocabulary.dispatch_table):\n"
        + "\n".join(offenders))


def test_the_scan_reads_every_package() -> None:
    sources = _sources()
    for package in PACKAGES:
        assert any(p.is_relative_to(package) for p in sources), package
    assert len(sources) > 100


def test_the_scan_finds_a_planted_quoted_name(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""A module."""\n'
        '__all__ = ["finish"]\n'
        'def drive(core, name, lane):\n'
        '    lane.require("close")\n'
        '    require_loop(core, "transfer")\n'
        '    if name == "take_next":\n'
        '        return core.take_next()\n'
        '    return {"admit": 1}.get(name, "cancelled")\n', encoding="utf-8")
    assert quoted_event_names(planted) == [(6, "take_next"), (8, "admit")]


def test_each_event_has_a_constant_of_its_name() -> None:
    for event in EVENTS:
        assert getattr(vocabulary, event.upper()) == event
        assert event.upper() in vocabulary.__all__


def test_a_dispatch_table_covers_every_event() -> None:
    table = dispatch_table("here", {e: len(e) for e in EVENTS})
    assert table == {e: len(e) for e in EVENTS}
    partial = dispatch_table("here", {EVENTS[0]: 0}, skip=EVENTS[1:])
    assert partial == {EVENTS[0]: 0}


@pytest.mark.parametrize(("handlers", "skip", "says"), [
    ({e: 0 for e in EVENTS[1:]}, (), f"here: no handler for {EVENTS[0]}"),
    ({**{e: 0 for e in EVENTS}, "pause": 0}, (), "pause not an event of the vocabulary"),
    ({e: 0 for e in EVENTS[1:]}, ("pause",), "pause not an event of the vocabulary"),
    ({e: 0 for e in EVENTS}, (EVENTS[0],), f"{EVENTS[0]} both handled and skipped"),
])
def test_a_dispatch_table_refuses_a_gap_or_a_name_of_its_own(
        handlers: dict[str, int], skip: tuple[str, ...], says: str) -> None:
    with pytest.raises(UnhandledEventError, match=says):
        dispatch_table("here", handlers, skip=skip)


# Loads each dispatching module again after one transition more is added to the table
# (SerialQueue's, so the TLC trace must take it too), in a process of its own: a module
# that fails half-way through loading is not left behind for other tests.
_ADD_A_TRANSITION = """
import importlib, sys
from zlink_model import vocabulary
MODULES = sys.argv[1:]
for name in MODULES:
    importlib.import_module(name)
row = vocabulary.Transition("pause", "Pause", ("SerialQueue",), (), ("SE-6.6",), (), "")
vocabulary.TRANSITIONS = (*vocabulary.TRANSITIONS, row)
vocabulary.EVENTS = (*vocabulary.EVENTS, "pause")
for name in MODULES:
    del sys.modules[name]
    try:
        importlib.import_module(name)
    except vocabulary.UnhandledEventError as exc:
        print(exc)
    else:
        print(name, "loaded")
"""
DISPATCHERS = ("zlink_model.replay", "zlink_model.invariants", "zlink_tool.tla.trace",
               "zlink_tool.tla.timeline")


def test_a_transition_added_without_a_handler_stops_each_dispatcher_loading() -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", _ADD_A_TRANSITION, *DISPATCHERS],
                          capture_output=True, text=True, timeout=120, check=True)
    lines = done.stdout.splitlines()
    assert len(lines) == len(DISPATCHERS), done.stdout
    for name, line in zip(DISPATCHERS, lines, strict=True):
        assert line.startswith(f"{name}: no handler for pause"), line
