"""One table of names (``zlink_model.vocabulary``): every other table of event names or
rules is derived from it or held to it here, and no package keeps a list of its own."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest

from zlink_conformance.protocol.wire import EVENT_FIELDS
from zlink_model import queue, replay, vocabulary
from zlink_model.vocabulary import EVENTS, TRANSITIONS, WIRE_EVENTS, transition
from zlink_reference_adapter import adapter
from zlink_tool.tla import trace as tla_trace

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = (ROOT / "model" / "zlink_model", ROOT / "reference" / "zlink_reference",
            ROOT / "conformance" / "zlink_conformance", ROOT / "tool" / "zlink_tool",
            ROOT / "conformance" / "examples" / "python" / "zlink_reference_adapter")
SPEC_MODULES = ("SerialQueue", "SpotWide", "Disposal")
WIRE_NAMES = {w.name for w in WIRE_EVENTS}


def test_derived_tables_are_the_vocabulary() -> None:
    assert queue.EVENTS == EVENTS
    assert tuple(p.core for p in vocabulary.PHASES) == queue.PHASE_NAMES
    assert tuple(o.core for o in vocabulary.OUTCOMES) == queue.OUTCOME_NAMES
    assert dict(replay.EVENT_RULES) == {t.event: t.rule_text for t in TRANSITIONS}
    assert dict(tla_trace.TLC_EVENTS) == {
        t.event: (t.action, t.rule_text) for t in TRANSITIONS if "SerialQueue" in t.modules}
    assert adapter.ZOMBIE_STATES == {"queued": "queued", "running": "running",
                                     "suspended": "yielded", "requeued": "yielded"}


def _operators(module: str) -> set[str]:
    text = (ROOT / "models" / f"{module}.tla").read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Z][A-Za-z0-9]*)\s*(?:\([^)]*\))?\s*==", text, re.M))


@pytest.mark.parametrize("module", SPEC_MODULES)
def test_every_action_is_defined_where_the_table_says_and_nowhere_else(module: str) -> None:
    defined = _operators(module)
    for t in TRANSITIONS:
        if module in t.modules:
            assert t.action in defined, f"{module}.tla has no action {t.action} ({t.event})"
        else:
            assert t.action not in defined, (
                f"{module}.tla defines {t.action}, but the vocabulary does not list "
                f"{module} for {t.event}")


def test_actions_are_the_events_in_camel_case() -> None:
    for t in TRANSITIONS:
        assert t.action == "".join(part.title() for part in t.event.split("_")), t


def test_wire_events_are_the_kits_events() -> None:
    assert set(EVENT_FIELDS) == WIRE_NAMES
    schema = json.loads((ROOT / "conformance" / "zlink_conformance" / "protocol" / "schemas"
                         / "case.schema.json").read_text(encoding="utf-8"))
    assert set(schema["$defs"]["event_name"]["enum"]) == WIRE_NAMES
    reported = {w for t in TRANSITIONS for w in t.wire}
    assert reported <= WIRE_NAMES
    for w in WIRE_EVENTS:
        assert all(w.name in transition(e).wire for e in w.transitions)


def _field_cell_names(cell: str, fields_of: dict[str, tuple[str, ...]]) -> tuple[str, ...]:
    cell = cell.strip()
    if cell.startswith("(none)"):
        return ()
    like = re.match(r"as `([a-z_]+)`", cell)
    if like:
        return fields_of[like.group(1)]
    names, depth = [], 0
    for token in re.findall(r"`[^`]*`|[()]", cell):
        if token == "(":
            depth += 1
        elif token == ")":
            depth -= 1
        elif depth == 0:
            names.append(token.strip("`"))
    return tuple(names)


def test_trace_format_tables_are_the_vocabulary() -> None:
    text = (ROOT / "specs" / "trace-format.md").read_text(encoding="utf-8")
    fields_table = text.split("| event | fields |", 1)[1].split("\n\n", 1)[0]
    documented: dict[str, tuple[str, ...]] = {}
    for name, cell in re.findall(r"^\| `([a-z_]+)` \| (.*) \|$", fields_table, re.M):
        documented[name] = _field_cell_names(cell, documented)
    assert documented == {t.event: t.fields for t in TRANSITIONS}
    rules_table = text.split("| event | rules a refused event is reported under |", 1)[1]
    rules_table = rules_table.split("\n\n", 1)[0]
    rules: dict[str, str] = {}
    for names, rule_text in re.findall(r"^\| ((?:`[a-z_]+`(?:, )?)+) \| (.*) \|$",
                                       rules_table, re.M):
        for name in re.findall(r"`([a-z_]+)`", names):
            rules[name] = rule_text.strip()
    assert rules == {t.event: t.rule_text for t in TRANSITIONS}


def _literal_names(node: ast.expr) -> list[str]:
    """Every string constant in a literal (nested dicts, tuples, sets, lists)."""
    return [n.value for n in ast.walk(node)
            if isinstance(n, ast.Constant) and isinstance(n.value, str)]


def _name_tables(path: Path) -> list[tuple[int, str, str]]:
    """Named module- or class-level tables holding three or more event names:
    (line, name, the names)."""
    names = set(EVENTS) | WIRE_NAMES
    found: list[tuple[int, str, str]] = []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    bodies = [tree.body] + [c.body for c in ast.walk(tree) if isinstance(c, ast.ClassDef)]
    for body in bodies:
        for node in body:
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                target, value = node.targets[0].id, node.value
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                    and node.value is not None:
                target, value = node.target.id, node.value
            else:
                continue
            hits = [s for s in _literal_names(value) if s in names]
            if len(set(hits)) >= 3:
                found.append((node.lineno, target, ", ".join(dict.fromkeys(hits))))
    return found


def _held_keys() -> dict[tuple[str, str], tuple[set[str], set[str]]]:
    """Tables that key behaviour by event name (dispatch, a work's wire lifecycle, the
    report's colours) or happen to share words with events (check kinds): each is held
    here to the vocabulary, (its names, what they must be)."""
    from zlink_conformance.oracle import checks
    from zlink_conformance.oracle import invariants as kit_invariants
    from zlink_conformance.report import html
    from zlink_model import invariants

    moves = kit_invariants._MOVES
    outcome_wire = {o.wire for o in vocabulary.OUTCOMES}
    return {
        ("invariants.py", "_HANDLERS"): (set(invariants._HANDLERS), set(EVENTS)),
        ("invariants.py", "_MOVES"): (
            {e for by_event in moves.values() for e in by_event},
            WIRE_NAMES - {"returned", "fault"}),
        ("wire.py", "EVENT_FIELDS"): (set(EVENT_FIELDS), WIRE_NAMES),
        ("html.py", "COLORS"): (set(html.COLORS) - {"running"}, outcome_wire),
        # Check kinds named after what they look at, not event tables.
        ("checks.py", "CHECK_FIELDS"): (set(checks.CHECK_FIELDS) & WIRE_NAMES,
                                        {"rejected", "waited", "failed"}),
        ("checks.py", "_EVALUATORS"): (set(checks._EVALUATORS) & WIRE_NAMES,
                                       {"rejected", "waited", "failed"}),
        ("checks.py", "KIND_REASONS"): (set(checks.KIND_REASONS) & WIRE_NAMES,
                                        {"rejected", "waited", "failed"}),
    }


def test_no_package_keeps_a_table_of_event_names_of_its_own() -> None:
    held = _held_keys()
    offenders = []
    for package in PACKAGES:
        for path in sorted(package.rglob("*.py")):
            if path.name == "vocabulary.py":
                continue
            for line, name, hits in _name_tables(path):
                if (path.name, name) in held:
                    have, want = held[(path.name, name)]
                    assert have == want, f"{path.name} {name}: {sorted(have ^ want)}"
                    continue
                offenders.append(f"{path.relative_to(ROOT)}:{line}: {name} = {hits}")
    assert not offenders, (
        "event names listed outside zlink_model.vocabulary (derive them from it, or hold "
        "the table to it in this test):\n" + "\n".join(offenders))


def test_the_table_scan_finds_a_planted_table(tmp_path: Path) -> None:
    planted = tmp_path / "planted.py"
    planted.write_text('RULES = {"admit": "SE-6.3", "take_next": "SE-6.6", '
                       '"finish": "SE-5.2"}\nOK = ("admit", "reject")\n'
                       'def f(e):\n    return e in ("admit", "reject", "finish")\n')
    assert [(line, name) for line, name, _ in _name_tables(planted)] == [(1, "RULES")]


def test_the_oracles_event_table_follows_the_vocabulary() -> None:
    """The model oracle's docstring maps each wire event onto core transitions; every
    wire event the vocabulary ties to transitions is there, naming those transitions."""
    from zlink_conformance.oracle import model

    doc = model.__doc__ or ""
    table = doc.split("event                  transition(s) in the model", 1)[1]
    table = table.split("\n\n", 1)[0]
    rows: dict[str, str] = {}
    current: list[str] = []
    for line in table.splitlines():
        if line.startswith("``"):
            head, _, rest = line.partition("  ")
            current = re.findall(r"``([a-z_]+)``", head)
            for name in current:
                rows[name] = rest
        elif line.startswith(" ") and current:
            for name in current:
                rows[name] += " " + line.strip()
    assert set(rows) <= WIRE_NAMES, sorted(set(rows) - WIRE_NAMES)
    for w in WIRE_EVENTS:
        if not w.transitions:
            continue
        assert w.name in rows, f"the oracle's table has no row for {w.name}"
        named = set(re.findall(r"``([a-z_]+)``", rows[w.name]))
        missing = set(w.transitions) - named
        assert not missing, f"the oracle's row for {w.name} does not name {sorted(missing)}"
