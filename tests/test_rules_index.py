"""The traceability index (specs/rules.toml) has no gap, and `zlink rules` finds each kind
of gap when one is planted in a copy of the checkout."""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

import pytest

from zlink_model.invariants import INVARIANTS
from zlink_tool.cli.main import main
from zlink_tool.specindex import (
    build_index,
    rule_ids_in_test_name,
    rule_ids_of,
    rules_mentioned,
)

ROOT = Path(__file__).resolve().parent.parent


def test_SE_9_rules_index_has_no_gap() -> None:
    index = build_index(ROOT)
    assert index.findings == []
    assert len(index.rules) >= 50
    assert all(status in ("checked", "untestable") for *_, status in index.matrix())


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    for part in ("specs", "models", "tests"):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__", "*.out"))
    return tmp_path


def problems(root: Path) -> list[str]:
    return [f"{f.rule_id}: {f.problem}" for f in build_index(root).findings]


def test_a_name_that_does_not_exist_is_a_gap(checkout: Path) -> None:
    toml = checkout / "specs" / "rules.toml"
    toml.write_text(toml.read_text().replace('tla = ["NoDoubleDrain", "NoLostWakeup"]',
                                             'tla = ["NoDoubleDrain", "NoLostWakeUp"]'))
    assert problems(checkout) == ["SE-6.5: tla: NoLostWakeUp does not exist"]


def test_a_rule_without_check_or_reason_is_a_gap(checkout: Path) -> None:
    toml = checkout / "specs" / "rules.toml"
    text = toml.read_text()
    start = text.index('[rules."SE-4.7"]')
    end = text.index("[rules.", start + 5)
    toml.write_text(text[:start] + '[rules."SE-4.7"]\n\n' + text[end:])
    assert problems(checkout) == ["SE-4.7: has neither a check nor an untestable reason"]


def test_a_rule_id_no_spec_defines_is_a_gap(checkout: Path) -> None:
    (checkout / "tests" / "test_planted.py").write_text(
        "def test_SE_6_9_no_such_rule() -> None:\n    pass\n")
    assert problems(checkout) == [
        "SE-6.9: used by test tests/test_planted.py::test_SE_6_9_no_such_rule but defined "
        "in no spec"]


def test_a_spec_rule_missing_from_the_index_is_a_gap(checkout: Path) -> None:
    spec = checkout / "specs" / "serial-executor.md"
    spec.write_text(spec.read_text() + "\n### SE-11.1 A new rule (MUST)\n*Intent: x.*\n")
    assert problems(checkout) == ["SE-11.1: not in specs/rules.toml"]


@pytest.mark.parametrize(("name", "ids"), [
    ("test_SE_10_02_per_actor", ["SE-10.2"]), ("test_SE_6_3_x", ["SE-6.3"]),
    ("test_SD_1_dispose", ["SD-1"]), ("test_D_11_every", ["D-11"]),
    ("test_SE_9_names", ["SE-9"]), ("test_readme_example_runs", []),
])
def test_rule_ids_are_read_from_test_names(name: str, ids: list[str]) -> None:
    assert rule_ids_in_test_name(name) == ids


def test_SE_9_the_case_catalogue_knows_exactly_the_spec_rules() -> None:
    """conformance/.../cases/rules.json ships with the kit (specs/ does not): it must list
    every rule and decision the specs define, and nothing else."""
    import json

    index = build_index(ROOT)
    shipped = json.loads((ROOT / "conformance" / "zlink_conformance" / "cases" / "rules.json")
                         .read_text())["rules"]
    assert set(shipped) == set(index.rules) | index.decisions


def test_SE_9_every_invariant_is_indexed_under_each_rule_it_names() -> None:
    """The registry of ``zlink_model.invariants`` and the ``python`` lists of
    rules.toml say the same thing: each invariant under every SE/SD rule it serves."""
    rows = tomllib.loads((ROOT / "specs" / "rules.toml").read_text(encoding="utf-8"))["rules"]
    indexed = {(name, rule) for rule, row in rows.items() for name in row.get("python", [])}
    named = {(inv.name, rule) for inv in INVARIANTS.values()
             for rule in rule_ids_of(inv.rules) if not rule.startswith("D-")}
    assert indexed == named


def test_failure_reports_are_mapped_to_rules() -> None:
    """What `zlink verify` prints under a failing step: rules from test and case names,
    written IDs and invariant names."""
    text = ("FAILED tests/x.py::test_SE_6_3_admits - assert\n"
            "FAIL required_SE_10_04_same_actor_keeps_order\n"
            "Invariant NoDoubleDrain is violated. See SD-1 and D_11.")
    assert rules_mentioned(text) == ["D-10", "D-11", "SD-1", "SE-6.3", "SE-6.5", "SE-10.4"]
    assert rules_mentioned("NoDoubleDrainX, SE_6_3x, xSE-6.3") == []


def test_SE_9_a_check_name_leads_back_to_its_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rules", "--rule", "LifecycleBurstBounded"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("LifecycleBurstBounded holds SE-6.1 (tla, python)")
    assert "\nSE-6.1 (MUST)" in out
    assert main(["rules", "--rule", "NoSuchCheck"]) == 2
    assert "neither a rule ID" in capsys.readouterr().err


def _decisions_cited(text: str) -> set[str]:
    return set(re.findall(r"\bD-[0-9]+\b", text))


def test_SE_9_every_decision_the_packages_cite_is_defined() -> None:
    """A ``D-n`` in a docstring or comment of a package is a pointer a reader follows
    into ``specs/``: each must lead to a decision some spec defines (a heading of
    ``decisions.md`` or a bold entry of ``disposal.md``)."""
    specs = ROOT / "specs"
    defined = set(re.findall(r"^## (D-[0-9]+)\b", (specs / "decisions.md").read_text(),
                             re.M))
    defined |= set(re.findall(r"^- \*\*(D-[0-9]+)\b", (specs / "disposal.md").read_text(),
                              re.M))
    assert len(defined) >= 26
    packages = ["model/zlink_model", "reference/zlink_reference",
                "conformance/zlink_conformance", "tool/zlink_tool"]
    missing = {
        f"{path.relative_to(ROOT)}: {d}"
        for package in packages for path in (ROOT / package).rglob("*.py")
        for d in _decisions_cited(path.read_text()) - defined
    }
    assert not missing, sorted(missing)
