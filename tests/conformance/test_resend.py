"""Reproduction: a case that did not pass carries its exact command sequence in the JSON
report, and `zlink conformance resend` sends it to any adapter again and judges the log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.runner.resend import ResendError, load_resend, resend
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command
from zlink_tool.cli.main import main

from kit_helpers import child_env

CASE = "required_SE_10_04_same_actor_keeps_submission_order_per_actor"


@pytest.fixture(autouse=True)
def _children_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])


@pytest.fixture
def report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
           capsys: pytest.CaptureFixture[str]) -> Path:
    """A JSON report of SE-10.4 against the reference with FIFO broken."""
    with monkeypatch.context() as m:
        m.setenv("ZLINK_ADAPTER_PRELOAD", str(PRELOAD_FILE))
        m.setenv("ZLINK_MUTANT_NAME", "fifo_swap")
        path = tmp_path / "r.json"
        assert main(["conformance", "run", "--only", CASE, "--json", str(path)]) == 1
    capsys.readouterr()
    return path


def test_a_failing_case_carries_its_commands_and_a_passing_one_does_not(report: Path) -> None:
    (case,) = json.loads(report.read_text())["cases"]
    assert case["status"] == "failed"
    commands = case["commands"]
    assert commands[0] == {"cmd": "reset"} and commands[-1] == {"cmd": "settle"}
    assert all("id" not in c for c in commands)
    assert case["divergence"]["invariant"] == "FifoWithinLane"


def test_resend_reproduces_the_failure_and_passes_on_a_correct_runtime(
        report: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "resend", str(report)]) == 0
    out = capsys.readouterr().out
    assert f"re-send of {CASE}: pass (judged by the case's checks" in out
    assert '> {"id":1,"cmd":"reset"}' in out
    monkeypatch.setenv("ZLINK_ADAPTER_PRELOAD", str(PRELOAD_FILE))
    monkeypatch.setenv("ZLINK_MUTANT_NAME", "fifo_swap")
    assert main(["conformance", "replay", str(report), "--case", CASE, "-q"]) == 1
    out = capsys.readouterr().out
    first = json.loads(report.read_text())["cases"][0]["messages"]
    for message in first:
        assert message in out
    assert '> {"id"' not in out


def test_a_standalone_case_file_is_resent_too(report: Path, tmp_path: Path) -> None:
    case = json.loads(report.read_text())["cases"][0]
    one = tmp_path / "one.json"
    one.write_text(json.dumps({"id": case["id"], "commands": case["commands"]}))
    case_id, commands = load_resend(one)
    assert (case_id, commands) == (CASE, case["commands"])


def test_commands_that_are_not_the_case_are_judged_by_invariants_and_model(report: Path
                                                                          ) -> None:
    case_id, commands = load_resend(report)
    doctored = [c for c in commands if c != {"cmd": "settle"}]
    result = resend(reference_adapter_command(), case_id, doctored, env=child_env(),
                    catalogue=load_catalogue())
    assert not result.judged_by_case and result.status == "passed"
    assert result.messages[0].startswith("note: the commands are not those of case")


@pytest.mark.parametrize(("body", "needle"), [
    ("[1, 2]", "expected a JSON report"),
    ("{", "not JSON"),
    ('{"cases": []}', "choose a case with --case ID (cases with commands: none)"),
    ('{"id": "x", "commands": []}', "non-empty list"),
    ('{"id": "x", "commands": [{"id": 3, "cmd": "reset"}]}', "carry no 'id'"),
])
def test_a_bad_resend_file_is_an_error(tmp_path: Path, body: str, needle: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(body)
    with pytest.raises(ResendError) as info:
        load_resend(path)
    assert needle in str(info.value)


def test_a_case_without_commands_is_named(report: Path, tmp_path: Path,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    data = json.loads(report.read_text())
    data["cases"].append({"id": "required_SE_1_1_other", "status": "passed"})
    path = tmp_path / "r2.json"
    path.write_text(json.dumps(data))
    assert main(["conformance", "replay", str(path), "--case", "required_SE_1_1_other"]) == 2
    assert "carries no commands" in capsys.readouterr().err
