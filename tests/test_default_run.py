"""``./dev test`` leaves out the tests marked slow (``./dev verify`` runs them all): the
run people and CI make most often must still hold every rule and kill every catalogued
mutant, or a slow marker would quietly take a rule's last check out of it.

What the default run holds is asked of pytest itself (``--collect-only -m "not slow"``,
so a marker however it is written counts), and compared with the traceability index
(``specs/rules.toml`` and the tests named after rules) and with the killers the mutant
tables name. Checks that are not test functions count through the test that runs them:
TLA+ operators through the quick manifest runs (only the operators those runs check: the
invariants and properties of their configurations, and the one a bug configuration must
break), Python invariants through the state machines, conformance cases through the
reference run, and those tests must be in the default run too. The last two tests plant
the break: a rule's only default test, or a mutant's killer, taken out of the run, is
found.
"""

from __future__ import annotations

import functools
import importlib.util
import subprocess
import sys
from collections.abc import Collection
from pathlib import Path
from types import ModuleType

import pytest

from zlink_tool.specindex import Index, build_index, rule_ids_in_test_name
from zlink_tool.tla.runner import config_names, load_manifest

ROOT = Path(__file__).resolve().parent.parent
# Its tests share one collection of the whole suite (``default_run``, a few seconds of CPU):
# on one pytest-xdist worker it is made once, not once per worker.
pytestmark = pytest.mark.xdist_group("default_run")

# The test that runs each kind of check that is not a test function of its own.
ENGINES = {
    "tla": ["tests/models/test_models.py::test_every_quick_manifest_run_is_as_pinned"],
    "python": [f"tests/stateful/test_{m}_machine.py::Test{m.title()}Machine::runTest"
               for m in ("core", "runtime", "coordinator", "disposal")],
    "cases": ["tests/conformance/test_reference_run.py::"
              "test_every_shipped_case_passes_against_the_reference_adapter"],
}


@functools.cache
def default_run() -> frozenset[str]:
    """The node IDs (parameters dropped) that ``./dev test`` runs."""
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-m", "not slow",
         "-p", "no:cacheprovider", "tests"],
        cwd=ROOT, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return frozenset(line.split("[", 1)[0] for line in proc.stdout.splitlines()
                     if "::" in line)


@functools.cache
def quick_operators() -> frozenset[str]:
    """The TLA+ operators the default run's TLC runs check."""
    models = ROOT / "models"
    quick = _load(ROOT / "tests" / "models" / "test_models.py", "_manifest_tests").quick_runs(
        load_manifest(models / "manifest.json").entries)
    found: set[str] = set()
    for entry in quick:
        if entry.expected.result == "success":
            found.update(config_names((models / entry.config).read_text(encoding="utf-8"),
                                      ("INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES")))
        elif entry.expected.name is not None:
            found.add(entry.expected.name)
    return frozenset(found)


def names(nodes: Collection[str]) -> set[str]:
    """The test function names among node IDs."""
    return {node.rsplit("::", 1)[1] for node in nodes}


def rule_gaps(index: Index, nodes: Collection[str]) -> list[str]:
    """Rules that have a check but none in the run ``nodes``."""
    run = names(nodes)
    every_test = {n for n in index.existing["tests"] if "::" not in n}
    gaps = []
    for rule_id, entry in sorted(index.entries.items()):
        if not entry.has_check():
            continue
        tests = set(entry.checks.get("tests", [])) | {
            n for n in every_test if rule_id in rule_ids_in_test_name(n)}
        held = [t for t in tests if t in run] + [
            kind for kind, engine in ENGINES.items()
            if entry.checks.get(kind) and all(e in nodes for e in engine)
            and (kind != "tla" or set(entry.checks[kind]) & quick_operators())]
        if not held:
            gaps.append(f"{rule_id}: no check left in the default run "
                        f"(tests: {sorted(tests)}; other kinds: "
                        f"{sorted(k for k in ENGINES if entry.checks.get(k))})")
    return gaps


def _load(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def killers() -> dict[str, list[str]]:
    """Mutant -> the tests that kill it: its unit test (the tables of the mutant tests
    and of the kill matrix) and the machines written for its layer (``OWNERS``)."""
    matrix = _load(ROOT / "tests" / "stateful" / "test_kill_matrix.py", "_kill_matrix_tables")
    out: dict[str, list[str]] = {}
    for mutant, (_, test) in matrix.UNIT_TESTS.items():
        out.setdefault(mutant, []).append(test)
    for mutant, machines in matrix.OWNERS.items():
        out.setdefault(mutant, []).extend(
            f"Test{m.title()}Machine::runTest" for m in machines)
    return out


def killer_gaps(table: dict[str, list[str]], nodes: Collection[str]) -> list[str]:
    """Mutants with a killer that is not in the run ``nodes`` (a killer is named as the
    mutant tests select it: by a part of its node ID)."""
    return [f"{mutant}: {test} is not in the default run"
            for mutant, tests in sorted(table.items()) for test in tests
            if not any(test in node for node in nodes)]


def test_SE_9_every_checked_rule_keeps_a_check_in_the_default_run() -> None:
    nodes = default_run()
    missing = [e for engine in ENGINES.values() for e in engine if e not in nodes]
    assert missing == []
    assert rule_gaps(build_index(ROOT), nodes) == []


def test_SE_9_every_catalogued_mutant_keeps_its_killers_in_the_default_run() -> None:
    table = killers()
    from zlink_reference_adapter import mutants
    assert sorted(table) == sorted(mutants.CATALOGUE)
    assert killer_gaps(table, default_run()) == []


def test_SE_9_a_rule_whose_default_tests_leave_the_run_is_found() -> None:
    """The planted break: the rules held in the default run by the fewest test functions
    (and nothing else) lose every one of them, and each is named."""
    index = build_index(ROOT)
    nodes = default_run()
    run = names(nodes)
    held_by: dict[str, set[str]] = {}
    for rule_id, entry in index.entries.items():
        tests = set(entry.checks.get("tests", [])) | {
            n for n in run if rule_id in rule_ids_in_test_name(n)}
        held = {t for t in tests if t in run}
        if held and not any(entry.checks.get(k) for k in ENGINES):
            held_by[rule_id] = held
    assert held_by, "no rule rests on tests alone: pick another planted break"
    fewest = min(len(held) for held in held_by.values())
    for rule_id, held in sorted(held_by.items()):
        if len(held) != fewest:
            continue
        without = {n for n in nodes if n.rsplit("::", 1)[1] not in held}
        assert any(g.startswith(f"{rule_id}: ") for g in rule_gaps(index, without)), rule_id


def test_SE_9_a_killer_that_leaves_the_default_run_is_found() -> None:
    nodes = default_run()
    for mutant, tests in killers().items():
        for test in tests:
            without = {n for n in nodes if test not in n}
            assert f"{mutant}: {test} is not in the default run" in killer_gaps(
                {mutant: tests}, without)
