"""TLC judges a foreign runtime too (issue 17 item 5): a conformance transcript of the
Node example runtime goes through ``zlink trace check --tlc`` queue by queue against
SerialQueue.tla; a doctored transcript is refused by TLC (and by the kit's oracle); and
``zlink conformance run --tlc`` gives every failing case of a runtime with a planted bug
TLC's verdict beside the kit's."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from zlink_tool.cli.main import main
from zlink_tool.tla.transcript import build_wire_model, queue_transcripts, read_transcript

ROOT = Path(__file__).resolve().parents[2]
NODE_EXAMPLE = ROOT / "conformance" / "examples" / "node"

# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC"),
    pytest.mark.skipif(shutil.which("node") is None, reason="needs Node for the example"),
    pytest.mark.xdist_group("trace_transcripts"),
]

YIELD_CASE = "required_SE_6_7_yield_gives_the_turn_back_and_queues_again_at_the_tail"
CLOSE_CASE = "required_SE_6_2_closing_a_spot_finishes_accepted_work_and_refuses_new_work"
SPOT_WIDE_CASE = "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other"


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("node-transcripts")
    code = main(["conformance", "run", "--adapter", f"node {NODE_EXAMPLE / 'adapter.js'}",
                 "--only", YIELD_CASE, "--only", CLOSE_CASE, "--only", SPOT_WIDE_CASE,
                 "--transcripts", str(out), "-q"])
    assert code == 0
    return out


def _check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["trace", "check", str(path), "--tlc", "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", [YIELD_CASE, CLOSE_CASE])
def test_SE_6_7_tlc_matches_the_node_runtime_transcripts(
    case: str, transcripts: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code, verdict = _check(transcripts / f"{case}.jsonl", capsys)
    assert code == 0 and verdict["ok"], verdict
    assert verdict["oracle"]["divergence"] is None
    assert verdict["tlc"] and all(r["status"] == "ok" for r in verdict["tlc"]), verdict["tlc"]


def test_SE_4_5_tlc_judges_the_node_runtime_spot_wide_transfers(
    transcripts: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """A SpotWide Actor work is admitted by its Actor queue and runs on the Spot queue:
    the Spot's queues are one log, walked together with the hidden transfers, and TLC
    matches the Node runtime's transcript."""
    code, verdict = _check(transcripts / f"{SPOT_WIDE_CASE}.jsonl", capsys)
    assert code == 0 and verdict["ok"], verdict
    assert verdict["tlc"] and all(r["status"] == "ok" for r in verdict["tlc"]), verdict["tlc"]
    entries = read_transcript(
        (transcripts / f"{SPOT_WIDE_CASE}.jsonl").read_text(encoding="utf-8").splitlines())
    (spot,) = queue_transcripts(entries)
    assert spot.queue_count > 1 and any(s.actor for s in spot.steps), spot.members


def _doctored(path: Path, out: Path) -> Path:
    """The yield case with w1's resume moved ahead of w3's turn: w1's call was completed
    only after w3 was accepted, so its resume permit queues behind w3 (SE-6.7, D-1)."""
    records = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    turns = [i for i, r in enumerate(records)
             if r.get("message", {}).get("event") in ("started", "resumed", "finished")
             and r["message"].get("work") in ("w1", "w3")]
    start_w3, resume_w1 = (next(i for i in turns if records[i]["message"]["event"] == e
                                and records[i]["message"]["work"] == w)
                           for e, w in (("started", "w3"), ("resumed", "w1")))
    assert resume_w1 == start_w3 + 2, "the case's order changed: update the doctoring"
    msgs = [records[i]["message"] for i in range(start_w3, start_w3 + 4)]
    for i, message in zip(range(start_w3, start_w3 + 4), [*msgs[2:], *msgs[:2]], strict=True):
        records[i]["message"] = message
    target = out / "doctored.jsonl"
    target.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return target


def test_SE_6_7_a_doctored_transcript_is_refused_by_tlc_and_the_oracle(
    transcripts: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    doctored = _doctored(transcripts / f"{YIELD_CASE}.jsonl", tmp_path)
    code, verdict = _check(doctored, capsys)
    assert code == 1 and not verdict["ok"]
    assert verdict["oracle"]["divergence"]["event"]["work"] == "w1"
    (tlc,) = verdict["tlc"]
    assert tlc["status"] == "fail" and tlc["rules"] == "SE-6.6, SE-6.1", tlc
    entries = read_transcript(doctored.read_text(encoding="utf-8").splitlines())
    (queue,) = queue_transcripts(entries)
    refused = next(s for s in queue.steps if s.position == tlc["event"])
    assert (refused.wire, refused.work) == ("resumed", "w1")


def test_D_5_run_tlc_judges_every_failing_case_of_a_planted_bug(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    """The Node runtime with its lifecycle burst check off by one (``<=``): the kit fails
    the burst cases, and TLC, given their transcripts, refuses each of them too."""
    runtime = tmp_path / "node"
    shutil.copytree(NODE_EXAMPLE, runtime)
    executor = runtime / "executor.js"
    text = executor.read_text(encoding="utf-8")
    assert "streak < burstLimit" in text
    executor.write_text(text.replace("streak < burstLimit", "streak <= burstLimit"),
                        encoding="utf-8")
    code = main(["conformance", "run", "--adapter", f"node {runtime / 'adapter.js'}",
                 "--only", "required_SE_6_6_lifecycle_burst_limit_of_one_alternates",
                 "--only", "required_D_5_lifecycle_streak_counts_only_while_application_work_waits",
                 "--tlc", "-q"])
    out = capsys.readouterr().out
    assert code == 1
    lines = out.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("tlc: judging"))
    failing = int(lines[head].split(" of ")[1].split()[0])
    judged = [line for line in lines[head + 1:] if line.startswith("  ")]
    assert failing == 2 and len(judged) == failing, out
    assert all("TLC refuses it too" in line and "(SE-6.6, SE-6.1)" in line
               for line in judged), out


def test_the_example_wire_log_is_what_the_generator_writes(transcripts: Path) -> None:
    """models/WireLog.tla (the data the manifest run TraceWireSerialQueue checks) is the
    generator's output for queue A of the Node example's transcript of the yield case:
    regenerate it with ``build_wire_model`` when the generator or the example changes."""
    entries = read_transcript(
        (transcripts / f"{YIELD_CASE}.jsonl").read_text(encoding="utf-8").splitlines())
    (queue,) = queue_transcripts(entries)
    checked_in = (ROOT / "models" / "WireLog.tla").read_text(encoding="utf-8")
    assert build_wire_model(queue).module == checked_in
