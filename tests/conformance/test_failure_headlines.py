"""Every failing line leads with the rule its check is about, in words that say what the
log shows: each wording on a scripted fake adapter that writes the log a broken runtime
would (``fakes/scripted.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scripted_kit import ev, run_scripted

from zlink_conformance.protocol.wire import ENTRY_PARAMETERS
from zlink_conformance.report.junit import failure_rule


def _create(*targets: str) -> list[dict[str, Any]]:
    return [{"cmd": "create", "target": t, "type": "actor"} for t in targets]


def _submit(work: str, target: str = "A", entry: str = "execute_actor",
            script: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"cmd": "submit", "work": work, "target": target, "entry": entry,
            "script": script or []}


def test_SE_6_6_a_check_naming_no_rule_leads_with_the_rule_the_model_found_broken(
        tmp_path: Path) -> None:
    """A runtime with one FIFO: the lifecycle work cannot overtake the waiting application
    work. The case lists SE-6.5 first, and a start order is SE-6.6's or SE-6.7's alike
    (oracle.attribution), but the log breaks SE-6.6, and the headline says so; the case's
    rules follow as context."""
    case = {"id": "required_SE_6_5_lifecycle_overtakes", "rules": ["SE-6.5", "SE-6.7", "SE-6.6"],
            "steps": [*_create("A"), _submit("a", script=[{"op": "gate", "gate": "g"}]),
                      _submit("b"), _submit("l", entry="execute_lifecycle"),
                      {"cmd": "settle"}, {"cmd": "open", "gate": "g"}],
            "expect": [{"check": "start_order", "works": ["a", "l", "b"]}]}
    steps = [
        {"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A"),
                                                   ev("started", "a", "A")]},
        {"cmd": "submit", "work": "b", "events": [ev("accepted", "b", "A")]},
        {"cmd": "submit", "work": "l", "events": [ev("accepted", "l", "A")]},
        {"cmd": "open", "events": [ev("finished", "a", "A"), ev("started", "b", "A"),
                                   ev("finished", "b", "A"), ev("started", "l", "A"),
                                   ev("finished", "l", "A")]},
    ]
    result = run_scripted(tmp_path, case, steps)
    assert result.status == "failed", result.messages
    head = result.messages[0]
    assert head.startswith("[SE-6.6] expect[0] start_order: expected start order a l b"), head
    assert "the log breaks SE-6.6: the model's verdict at started:b@" in head
    assert head.endswith("case rules: SE-6.5, SE-6.7, SE-6.6")
    assert any(m.startswith("[SE-6.6 model FifoWithinLane] started:b@")
               or m.startswith("[SE-6.6 model] started:b@") for m in result.messages)
    assert failure_rule(result) == "SE-6.6"


def test_SE_3_1_a_missing_entry_point_leads_with_the_rule_about_entry_points(
        tmp_path: Path) -> None:
    """The surface check's case lists SE-10.1 first; a missing entry point is SE-3.1's
    (which entries exist), not SE-10.1's (what they take)."""
    actor = {e: list(p) for e, p in ENTRY_PARAMETERS["actor"].items()
             if e != "execute_lifecycle"}
    case = {"id": "required_SE_10_01_surface_scripted", "rules": ["SE-10.1", "SE-3.1"],
            "steps": [{"check": "surface", "why": "the caller never picks a queue"}],
            "expect": []}
    result = run_scripted(tmp_path, case, [], surface={"actor": actor})
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith(
        "[SE-3.1] steps[0] surface: the actor coordinator lacks execute_lifecycle"), \
        result.messages


def test_SE_6_5_a_work_that_started_and_finished_is_never_reported_queued(
        tmp_path: Path) -> None:
    """The work ran inside its submit call, so its verdict came last: its status is what
    it did (finished), not what the late verdict would say (queued)."""
    case = {"id": "required_SE_6_5_inline_status", "rules": ["SE-6.5"],
            "capabilities": ["actor", "submitter_stack"],
            "steps": [*_create("A"), _submit("a")],
            "expect": [{"check": "status", "works": {"a": "running"}}]}
    steps = [{"cmd": "submit", "work": "a", "events": [
        ev("started", "a", "A", on_submitter_stack=True), ev("finished", "a", "A"),
        ev("accepted", "a", "A")]}]
    result = run_scripted(tmp_path, case, steps, capabilities=["actor", "submitter_stack"])
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith(
        "[SE-6.5] expect[0] status: a: expected status running, got finished (started@"), \
        result.messages
    assert not any("got queued" in m for m in result.messages)


def test_SE_6_5_a_lost_wake_up_with_no_turn_held_anywhere_says_no_drain_was_posted(
        tmp_path: Path) -> None:
    case = {"id": "required_SE_6_5_no_drain", "rules": ["SE-6.5"],
            "steps": [*_create("A"), _submit("a")]}
    steps = [{"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A")]}]
    result = run_scripted(tmp_path, case, steps)
    assert result.status == "failed", result.messages
    line = _model_line(result.messages)
    assert line.startswith("[SE-6.5 model NoLostWakeup] settle reply@"), line
    assert "no drain was posted" in line and "posted and did not run" not in line
    assert "bounded pool" not in line


def _parked_pool_case(tmp_path: Path, capabilities: list[str]) -> str:
    case = {"id": "required_SE_4_2_parked_owner", "rules": ["SE-4.2"],
            "steps": [*_create("A", "B"), _submit("a", script=[{"op": "gate", "gate": "g"}]),
                      _submit("b", target="B")]}
    steps = [{"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A"),
                                                        ev("started", "a", "A")]},
             {"cmd": "submit", "work": "b", "events": [ev("accepted", "b", "B")]}]
    result = run_scripted(tmp_path, case, steps, capabilities=capabilities)
    assert result.status == "failed", result.messages
    return _model_line(result.messages)


def _model_line(messages: list[str]) -> str:
    found = [m for m in messages if " model " in m.split("]")[0]]
    assert found, messages
    return found[0]


def test_SE_4_2_a_drain_posted_behind_a_parked_owner_says_so_and_names_the_bounded_pool(
        tmp_path: Path) -> None:
    line = _parked_pool_case(tmp_path, ["actor"])
    assert line.startswith("[SE-4.2 model NoLostWakeup] settle reply@"), line
    assert "a drain was posted and did not run while a on A held their turns" in line
    assert "a runtime that runs works on a bounded pool may starve here" in line


def test_SE_4_2_a_single_execution_resource_is_not_told_about_bounded_pools(
        tmp_path: Path) -> None:
    line = _parked_pool_case(tmp_path, ["actor", "single_execution_resource"])
    assert "a drain was posted and did not run" in line
    assert "bounded pool" not in line
