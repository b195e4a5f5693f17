"""A check that names no rule in a case of several rules leads its failure with the case
rule its kind observes (``oracle.attribution``), and with ``[A or B]`` only of the rules
it observes alike: never with all the case's rules when its kind tells them apart."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

from scripted_kit import ev, run_scripted

from zlink_conformance.catalog import load_catalogue, select
from zlink_conformance.oracle.attribution import candidates
from zlink_conformance.oracle.checks import Check
from zlink_conformance.runner import Runner
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command


def test_each_kind_tells_its_rule_apart_from_the_case_rules() -> None:
    """The scenario rule before the rules under it, the field deciding where the kind
    alone cannot (a closing refusal, a capacity refusal, a waiter's error)."""
    assert candidates("rejected", {"reason": "application_count"},
                      ["SE-10.6", "SE-5.1"]) == ("SE-10.6",)
    assert candidates("rejected", {"reason": "closed"}, ["SE-6.2", "SE-2.2"]) == ("SE-6.2",)
    assert candidates("rejected", {"reason": "closed"},
                      ["SD-1", "D-21", "SE-2.2"]) == ("SD-1",)
    assert candidates("overlap", {}, ["SE-10.2", "SE-4.2"]) == ("SE-10.2",)
    assert candidates("no_overlap", {}, ["SE-10.5", "SE-4.2"]) == ("SE-10.5",)
    assert candidates("waiter", {"error": "not_disposed"}, ["SD-3", "D-19"]) == ("D-19",)
    assert candidates("waiter", {"abandoned": []}, ["SD-5", "D-20"]) == ("D-20",)
    assert candidates("snapshots", {}, ["SE-7.2", "SE-7.1", "SE-10.12"]) == ("SE-10.12",)
    assert candidates("errors", {"kinds": ["reentrancy"]}, ["SE-10.13", "SE-8.2"]) \
        == ("SE-10.13",)
    assert candidates("status", {"works": {"a": "cancelled"}}, ["D-8", "D-15", "SD-1"]) \
        == ("D-8", "D-15")
    # observed alike: both, in the case's order
    assert candidates("failed", {}, ["D-11", "D-21", "SE-1.1"]) == ("D-11", "D-21")
    # a kind that tells none of them apart
    assert candidates("status", {"works": {"a": "finished"}}, ["SE-4.2", "SE-6.5"]) == ()


def _multi_rule_checks() -> list[Check]:
    out = []
    for case in load_catalogue().cases:
        if len(case.rules) > 1:
            out += [*case.expect, *(s for s in case.steps if isinstance(s, Check))]
    return out


def test_most_checks_of_multi_rule_cases_have_a_rule_of_their_own() -> None:
    """Of the checks in cases of several rules, the ones still leading with every case
    rule are those whose kind observes none of them apart (status checks over the base
    rules of ownership): a bound that fails when attribution stops working."""
    checks = _multi_rule_checks()
    own = [c for c in checks if c.rule]
    narrowed = [c for c in checks if not c.rule and c.alternatives]
    bare = [c for c in checks if not c.rule and not c.alternatives]
    assert len(own) >= 180, len(own)
    assert narrowed and all(len(c.alternatives) >= 2 and set(c.alternatives) <= set(c.case_rules)
                            for c in narrowed)
    assert len(bare) <= 32, [(c.kind, c.case_rules) for c in bare]
    for check in bare:
        assert candidates(check.kind, check.fields, check.case_rules) == ()


def test_SE_10_6_a_capacity_refusal_leads_with_the_scenario_rule_not_every_case_rule(
        ) -> None:
    """The reference with its capacity off by one: the full mailbox case lists SE-10.6 and
    SE-5.1; the rejected check leads with SE-10.6, the model's line with SE-5.1."""
    cases = select(load_catalogue(),
                   ["required_SE_10_06_full_actor_mailbox_rejects_only_that_actor_per_actor"])
    env = dict(os.environ, ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE),
               ZLINK_MUTANT_NAME="capacity_off_by_one")
    with Runner(reference_adapter_command(), env=env, timeout=10) as runner:
        result = runner.run(cases).results[0]
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith("[SE-10.6] expect[0] rejected: a4: expected a "
                                         "rejection (application_count)"), result.messages
    assert "the log breaks" not in result.messages[0]  # its own rule, not the evidence's
    assert not any(m.startswith("[SE-10.6 or SE-5.1]") for m in result.messages)


def _submit(work: str, script: list[dict[str, Any]]) -> dict[str, Any]:
    return {"cmd": "submit", "work": work, "target": "A", "entry": "execute_actor",
            "script": script}


def test_D_11_a_check_observing_two_rules_alike_leads_with_those_two_only(
        tmp_path: Path) -> None:
    """A ``failed`` check in a case of D-11, D-21 and SE-1.1: one outcome per work is
    D-11's and D-21's alike, SE-1.1 is not about it, so the line leads with the two."""
    case = {"id": "required_D_11_fails_alone", "rules": ["D-11", "D-21", "SE-1.1"],
            "steps": [{"cmd": "create", "target": "A", "type": "actor"},
                      _submit("a", [{"op": "raise", "message": "boom"}]),
                      {"cmd": "settle"}],
            "expect": [{"check": "failed", "work": "a", "message": "boom"}]}
    steps = [{"cmd": "submit", "work": "a", "events": [
        ev("accepted", "a", "A"), ev("started", "a", "A"), ev("finished", "a", "A")]}]
    result = run_scripted(tmp_path, case, steps)
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith("[D-11 or D-21] expect[0] failed: a: expected to "
                                         "fail with 'boom'"), result.messages
    assert result.messages[0].endswith("case rules: D-11, D-21, SE-1.1")


def test_the_docs_counts_of_attributed_checks_are_the_catalogues() -> None:
    """docs/conformance.md's figures for the checks of multi-rule cases are computed
    here, not typed and left alone."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text()
    found = re.search(r"Of the (\d+) checks in cases of several\s+rules, (\d+) lead with a "
                      r"rule of their own, (\d+) with the two or three their kind observes"
                      r"\s+alike, and (\d+) status checks with all", text)
    assert found is not None
    checks = _multi_rule_checks()
    own = sum(1 for c in checks if c.rule)
    narrowed = sum(1 for c in checks if not c.rule and c.alternatives)
    bare = [c for c in checks if not c.rule and not c.alternatives]
    assert all(c.kind == "status" for c in bare)
    assert tuple(map(int, found.groups())) == (len(checks), own, narrowed, len(bare))
