"""`zlink conformance run` and `list`: exit status, console output, JSON and JUnit
reports, transcripts, repeated runs, and bad arguments."""

from __future__ import annotations

import json
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from zlink_conformance.catalog import load_catalogue
from zlink_tool.cli.main import COMMANDS, main

from kit_helpers import child_env, fake


@pytest.fixture(autouse=True)
def _children_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])


def test_the_command_is_registered() -> None:
    assert "conformance" in [name for name, _, _ in COMMANDS]


def test_help_explains_adapter_filters_and_exit_status(capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    with pytest.raises(SystemExit):
        main(["conformance", "run", "--help"])
    text = capsys.readouterr().out
    for phrase in ("--adapter", "--only", "--repeat", "Exit status", "skipped",
                   "zlink conformance docs protocol"):
        assert phrase in text


def test_run_writes_json_with_times_and_junit(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "run", "--only", "SE-10", "--json", str(tmp_path / "r.json"),
                 "--junit", str(tmp_path / "r.xml"), "--transcripts", str(tmp_path / "t")])
    out = capsys.readouterr().out
    assert code == 0
    assert "conformance: every required case passed" in out
    assert "SE-10.13" in out and "[ 1/" in out
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["summary"]["passed"] == len(report["cases"]) > 10
    assert all(isinstance(c["time_s"], float) for c in report["cases"])
    load = load_catalogue()
    assert report["rules"]["SE-10.2"] == {
        "passed": sum(1 for c in load.cases if "SE-10.2" in c.rules)}
    suite = ET.parse(tmp_path / "r.xml").getroot()
    assert suite.get("tests") == str(len(report["cases"])) and suite.get("failures") == "0"
    names = [tc.get("name") for tc in suite.iter("testcase")]
    assert names == [c["id"] for c in report["cases"]]
    transcript = (tmp_path / "t" / f"{names[0]}.jsonl").read_text().splitlines()
    assert json.loads(transcript[0])["message"] == {"cmd": "reset"}
    assert json.loads(transcript[-1])["verdict"] == "passed"


def test_repeat_reports_identical_verdicts(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["conformance", "run", "--only", "SE-10.9", "--repeat", "3", "-q"])
    out = capsys.readouterr().out
    assert code == 0
    assert "verdicts identical across 3 runs" in out


def test_a_crashing_adapter_fails_the_run_with_its_stderr(capsys: pytest.CaptureFixture[str],
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    monkeypatch.setenv("FAKE_FAULT", "crash")
    code = main(["conformance", "run", "--adapter", shlex.join(fake("misbehaving")),
                 "--only", "required_SE_10_02_per_actor_long_work_on_two_actors_overlaps",
                 "--only", "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other",
                 "--only", "required_SE_10_04_same_actor_keeps_submission_order_per_actor"])
    out = capsys.readouterr().out
    assert code == 1
    assert "... ERROR" in out and "fake adapter: crash on purpose" in out
    assert "adapter restarted 1 time(s)" in out
    assert "conformance: NOT CONFORMING" in out


def test_a_skipped_required_case_fails_unless_allowed(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    """An adapter that declares no capability: every case needing one is skipped."""
    script = tmp_path / "bare.py"
    script.write_text(
        "import sys\n"
        "from zlink_reference_adapter.adapter import ReferenceAdapter\n"
        "class Bare(ReferenceAdapter):\n"
        "    def hello(self, cmd):\n"
        "        reply = super().hello(cmd)\n"
        "        return {**reply, 'capabilities': ['actor']}\n"
        "sys.exit(Bare(sys.stdin.buffer, sys.stdout.buffer, sys.stderr).serve())\n")
    argv = ["conformance", "run", "--adapter", shlex.join([*fake("x")[:1], str(script)]),
            "--only", "SE-10.2", "--only", "SE-5.1"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "NOT RUN (counts as not passed)" in out
    assert "required_SE_10_02_per_actor_long_work_on_two_actors_overlaps ... skip" in out
    assert main([*argv, "--allow-skips"]) == 0


@pytest.mark.parametrize(("argv", "message"), [
    (["run", "--only", "SE-77"], "--only SE-77: no case or rule has this ID"),
    (["run", "--skip", "required_nope_x"], "--skip required_nope_x: no case or rule"),
    (["run", "--adapter", ""], "--adapter is empty"),
    (["run", "--repeat", "0"], "--repeat must be at least 1"),
    (["run", "--adapter", shlex.join(fake("no_handshake"))], "handshake missing"),
    ([], "choose an action"),
])
def test_bad_arguments_exit_2_with_a_message(argv: list[str], message: str,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", *argv]) == 2
    assert message in capsys.readouterr().err


def test_list_shows_cases_rules_and_capabilities(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["conformance", "list", "--only", "SE-10.10"]) == 0
    out = capsys.readouterr().out
    assert "required_SE_10_10_owner_past_its_time_budget_has_its_slice_cut" in out
    assert "single_execution_resource" in out
    assert "SE-10.10" in out and "cases (" in out
