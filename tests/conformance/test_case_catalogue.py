"""Case selection by case or rule ID, and the loader's errors for case files that cannot
be run exactly: each names the file and the step."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from zlink_conformance.catalog import (
    CaseError,
    Catalogue,
    SelectionError,
    load_catalogue,
    select,
)

SHIPPED = Path(__file__).resolve().parents[2] / "conformance" / "zlink_conformance" / "cases"
SE_10_03 = "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other"


def test_ids_are_unique_and_carry_their_strength_and_a_rule(catalogue: Catalogue) -> None:
    ids = [c.id for c in catalogue.cases]
    assert len(ids) == len(set(ids)) >= 60
    for case in catalogue.cases:
        assert case.id.startswith(case.strength + "_")
        main_rule = case.id.split("_", 1)[1]
        assert any(main_rule.startswith(r.replace("-", "_").replace(".", "_"))
                   or main_rule.startswith(r.replace("-", "_").replace(".", "_0"))
                   for r in case.rules), f"{case.id}: no rule of {case.rules} in its ID"


def test_select_by_case_rule_and_rule_family(catalogue: Catalogue) -> None:
    assert [c.id for c in select(catalogue, [SE_10_03])] == [SE_10_03]
    by_rule = select(catalogue, ["SE-10.3"])
    assert SE_10_03 in [c.id for c in by_rule] and all("SE-10.3" in c.rules for c in by_rule)
    family = select(catalogue, ["SE-10"])
    assert {r for c in family for r in c.rules if r.startswith("SE-10.")} == {
        f"SE-10.{n}" for n in range(1, 14)}
    assert all(any(r.startswith("SD-") for r in c.rules) for c in select(catalogue, ["SD"]))
    skipped = select(catalogue, ["SE-10"], ["SE-10.3"])
    assert not any("SE-10.3" in c.rules for c in skipped)
    assert select(catalogue) == list(catalogue.cases)


@pytest.mark.parametrize(("only", "skip", "message"), [
    (["required_SE_10_02_per_actor_overlap"], [],
     "--only required_SE_10_02_per_actor_overlap: no case or rule has this ID; did you mean "
     "required_SE_10_02_per_actor_long_work_on_two_actors_overlaps"),
    (["SE-10.99"], [], "--only SE-10.99: no case or rule has this ID"),
    ([], ["SD-9"], "--skip SD-9: no case or rule has this ID"),
    (["se-10.2"], [], "--only se-10.2"),
])
def test_an_unknown_case_or_rule_in_a_filter_is_an_error_naming_it(
    catalogue: Catalogue, only: list[str], skip: list[str], message: str,
) -> None:
    with pytest.raises(SelectionError) as err:
        select(catalogue, only, skip)
    assert message in str(err.value)


def _copy_with(tmp_path: Path, change: Callable[[dict[str, Any]], Any],
               retired: dict[str, str] | None = None, name: str = SE_10_03) -> Path:
    data = json.loads((SHIPPED / f"{SE_10_03}.json").read_text())
    change(data)
    (tmp_path / f"{name}.json").write_text(json.dumps(data))
    shutil.copy(SHIPPED / "rules.json", tmp_path / "rules.json")
    (tmp_path / "retired.json").write_text(json.dumps({"retired": retired or {}}))
    return tmp_path


def _steps(data: dict[str, Any]) -> list[dict[str, Any]]:
    steps: list[dict[str, Any]] = data["steps"]
    return steps


LOADER_ERRORS: dict[str, tuple[Callable[[dict[str, Any]], Any], str]] = {
    "unknown key": (lambda d: d.update(colour="red"), "unknown key 'colour'"),
    "unknown rule": (lambda d: d.update(rules=["SE-10.30"]),
                     "rule 'SE-10.30' is not in the rule catalogue (did you mean SE-10.3?)"),
    "undeclared capability": (lambda d: d.update(capabilities=[]),
                              "need capabilities the case does not declare: spot.user.spot_wide"),
    "target not created": (lambda d: _steps(d).pop(0),
                           "steps[0]: target 'S' is not created before this step"),
    "work used twice": (lambda d: _steps(d).__setitem__(3, dict(_steps(d)[1])),
                        "steps[3]: work name 'a' is used twice"),
    "entry of another type": (lambda d: _steps(d)[1].update(entry="execute_control"),
                              "steps[1]: a spot has no entry 'execute_control'"),
    "check of a ghost": (
        lambda d: d["expect"].append({"check": "status", "works": {"ghost": "queued"}}),
        "expect[3]: names work 'ghost', which the case never submits"),
    "runner command": (lambda d: _steps(d).insert(1, {"cmd": "reset"}),
                       "steps[1]: unknown command 'reset'"),
    "unknown op": (lambda d: _steps(d)[1]["script"].append({"op": "nap"}),
                   "steps[1].script[1]: unknown op 'nap'"),
    "strength mismatch": (lambda d: d.update(strength="optional"),
                          "the ID must start with its strength 'optional'"),
    "checks nothing": (lambda d: (d.pop("expect"), [s for s in _steps(d) if "check" in s]
                                  and d.update(steps=[s for s in _steps(d) if "check" not in s])),
                       "the case checks nothing"),
    "bad policy": (lambda d: _steps(d)[0].update(policy={"burst": 3}),
                   "steps[0]: 'policy' has no field 'burst'"),
    "check of a rule the case does not list": (
        lambda d: d["expect"][0].update(rule="SE-6.5"),
        "expect[0]: the check names rule 'SE-6.5', which the case's 'rules' do not list"),
}


@pytest.mark.parametrize("what", sorted(LOADER_ERRORS))
def test_the_loader_names_file_and_step_of_each_problem(tmp_path: Path, what: str) -> None:
    change, message = LOADER_ERRORS[what]
    directory = _copy_with(tmp_path, change)
    with pytest.raises(CaseError) as err:
        load_catalogue(directory)
    assert f"{SE_10_03}.json: " in str(err.value)
    assert message in str(err.value)


def test_a_retired_id_can_never_come_back(tmp_path: Path) -> None:
    directory = _copy_with(tmp_path, lambda d: None,
                           retired={SE_10_03: "expected order changed; see a newer case"})
    with pytest.raises(CaseError, match=r"is retired \(expected order changed"):
        load_catalogue(directory)


def test_a_file_must_be_named_by_its_id(tmp_path: Path) -> None:
    directory = _copy_with(tmp_path, lambda d: None, name="required_SE_10_03_other_name")
    with pytest.raises(CaseError, match=re.escape(f"must be named {SE_10_03}.json")):
        load_catalogue(directory)


def test_selecting_a_retired_id_says_so(catalogue: Catalogue) -> None:
    retired = Catalogue(catalogue.cases, catalogue.rules, {"required_SE_1_1_old": "replaced"})
    with pytest.raises(SelectionError, match="required_SE_1_1_old: case retired"):
        select(retired, ["required_SE_1_1_old"])


def test_every_check_of_every_case_names_a_rule_its_demand_and_a_reason(
        catalogue: Catalogue) -> None:
    """Item 1 of the kit's verdicts: a failing check says which rule it observes, what
    that rule demands (its catalogue sentence) and why the case expects what it does."""
    from zlink_conformance.catalog import Command
    from zlink_conformance.oracle.checks import Check

    seen = 0
    for case in catalogue.cases:
        checks = [s for s in case.steps if isinstance(s, Check)] + list(case.expect)
        replies = [s for s in case.steps if isinstance(s, Command) and s.expect is not None]
        for item in [*checks, *replies]:
            seen += 1
            # A check's own rule (named, or implied by its kind) is one of the case's;
            # one without it leads with the log's evidence or the case's only rule, and
            # every rule it may lead with has its sentence at hand.
            assert item.rule in (*case.rules, ""), (case.id, item)
            if item.rule:
                assert item.rule_text == catalogue.rules[item.rule] and item.rule_text
            assert item.case_rules == case.rules, case.id
            assert all(item.rule_texts[r] == catalogue.rules[r] for r in case.rules)
            assert item.why.strip(), (case.id, item)
    assert seen >= 206


def test_a_check_whose_rule_has_no_statement_is_a_catalogue_error(tmp_path: Path) -> None:
    directory = _copy_with(tmp_path, lambda d: None)
    rules = json.loads((SHIPPED / "rules.json").read_text())
    rules["rules"]["SE-10.3"] = ""
    (directory / "rules.json").write_text(json.dumps(rules))
    with pytest.raises(CaseError, match="the check has no rule with a statement and a reason"):
        load_catalogue(directory)
