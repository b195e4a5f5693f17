"""A hang is evidence: a submit that does not return while its own work runs fails
SE-6.5 (with or without the on_submitter_stack mark), a settle that never answers while
parked works hold their turns and another owner's work never starts fails with the
starvation wording (SE-4.2), and the adapter is restarted for the next case. A start
before the verdict on a runtime with one execution resource is SE-6.5 from the order
alone; on a pool it rests on the adapter holding its pool threads (AP-7), and the mark tells
the two apart."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripted_kit import ev, run_scripted, run_scripted_cases

GATED = [{"op": "gate", "gate": "g"}]
CREATE_A = {"cmd": "create", "target": "A", "type": "actor"}


def _submit(work: str, target: str = "A", script: list[dict[str, Any]] | None = None
            ) -> dict[str, Any]:
    return {"cmd": "submit", "work": work, "target": target, "entry": "execute_actor",
            "script": script or []}


@pytest.mark.parametrize("marked", [False, True])
def test_SE_6_5_a_submit_that_does_not_return_while_its_work_runs_fails_the_rule(
        tmp_path: Path, marked: bool) -> None:
    inline = {"id": "required_SE_6_5_a_inline", "rules": ["SE-6.5"],
              "steps": [CREATE_A, _submit("a", script=GATED), {"cmd": "settle"},
                        {"cmd": "open", "gate": "g"}]}
    after = {"id": "required_SE_6_5_b_after", "rules": ["SE-6.5"],
             "steps": [CREATE_A, _submit("b")],
             "expect": [{"check": "status", "works": {"b": "finished"}}]}
    mark = {"on_submitter_stack": True} if marked else {}
    steps = [
        {"cmd": "submit", "work": "a", "events": [ev("started", "a", "A", **mark)],
         "hang": True},
        {"cmd": "submit", "work": "b", "events": [ev("accepted", "b", "A"),
                                                   ev("started", "b", "A"),
                                                   ev("finished", "b", "A")]},
    ]
    report = run_scripted_cases(tmp_path, [inline, after], steps, timeout=1.0)
    hung, nxt = report.results
    assert hung.status == "failed", hung.messages
    head = hung.messages[0]
    assert head.startswith("[SE-6.5] the submit of a did not return while a ran: a "
                           "started@"), head
    assert ("marks it on_submitter_stack" if marked else "inferred from the order") in head
    assert "no answer within the case timeout while waiting for the reply to 'submit'" in head
    assert not any("AP-7" in m for m in hung.messages)
    assert nxt.status == "passed", nxt.messages
    assert report.restarts == 1


@pytest.mark.parametrize("single", [False, True])
def test_SE_4_2_a_settle_that_never_answers_while_works_are_parked_is_starvation(
        tmp_path: Path, single: bool) -> None:
    case = {"id": "required_SE_4_2_parked", "rules": ["SE-4.2"],
            "steps": [CREATE_A, {"cmd": "create", "target": "B", "type": "actor"},
                      _submit("a", script=GATED), _submit("b", target="B")]}
    steps = [
        {"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A"),
                                                   ev("started", "a", "A")]},
        {"cmd": "submit", "work": "b", "events": [ev("accepted", "b", "B")]},
        {"cmd": "settle", "hang": True},
    ]
    caps = ["actor", "single_execution_resource"] if single else ["actor"]
    result = run_scripted(tmp_path, case, steps, capabilities=caps, timeout=1.0)
    if single:  # parked at awaits, holding no thread: the hang stays the adapter's
        assert result.status == "error", result.messages
        assert result.messages[0].startswith("no answer within the case timeout")
        return
    assert result.status == "failed", result.messages
    head = result.messages[0]
    assert head.startswith("[SE-4.2] settle never answered while a on A held their turns "
                           "(parked) and b on B, accepted with nobody holding its owner's "
                           "turn, never started"), head
    assert "a runtime that runs works on a bounded pool starves here" in head


def test_a_hang_with_no_evidence_stays_the_adapters_error(tmp_path: Path) -> None:
    case = {"id": "required_SE_6_5_silent", "rules": ["SE-6.5"],
            "steps": [CREATE_A, _submit("a")]}
    steps = [{"cmd": "submit", "work": "a", "hang": True}]
    result = run_scripted(tmp_path, case, steps, timeout=1.0)
    assert result.status == "error"
    assert result.messages[0].startswith("no answer within the case timeout"), result.messages


@pytest.mark.parametrize("single", [False, True])
def test_SE_6_5_a_start_before_the_verdict_on_one_execution_resource_is_the_runtimes(
        tmp_path: Path, single: bool) -> None:
    case = {"id": "required_SE_6_5_unmarked", "rules": ["SE-6.5"],
            "steps": [CREATE_A, _submit("a")]}
    steps = [{"cmd": "submit", "work": "a", "events": [
        ev("started", "a", "A"), ev("finished", "a", "A"), ev("accepted", "a", "A")]}]
    caps = ["actor", "single_execution_resource"] if single else ["actor"]
    result = run_scripted(tmp_path, case, steps, capabilities=caps)
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith("[SE-6.5] a started@"), result.messages
    assert "before its verdict@" in result.messages[0]
    assert not any(m.startswith("adapter fault") for m in result.messages)
    # On a pool the inference rests on the adapter holding its pool threads (AP-7), and
    # the line says what would tell the two apart.
    assert ("nothing else can have run it" in result.messages[0]) is single
    assert ("on_submitter_stack mark tells apart" in result.messages[0]) is not single


@pytest.mark.parametrize(("first", "marked"), [("started", False), ("cancelled", None)])
def test_AP_7_stays_for_what_only_an_adapter_writes_before_a_verdict(
        tmp_path: Path, first: str, marked: bool | None) -> None:
    """A start the mark places on a pool thread, or a first event no inline run writes,
    before the verdict: the adapter's AP-7, on a pool as on one execution resource."""
    case = {"id": "required_SE_6_5_unmarked", "rules": ["SE-6.5"],
            "steps": [CREATE_A, _submit("a")]}
    head = ev(first, "a", "A")
    if marked is not None:
        head["on_submitter_stack"] = marked
    steps = [{"cmd": "submit", "work": "a", "events": [
        head, *([ev("finished", "a", "A")] if first == "started" else []),
        ev("accepted", "a", "A")]}]
    for caps in (["actor"], ["actor", "single_execution_resource"]):
        result = run_scripted(tmp_path, case, steps, capabilities=caps)
        assert result.status == "error", (caps, result.messages)
        assert result.messages[0].startswith("adapter fault [AP-7] a: accepted@"), \
            result.messages
