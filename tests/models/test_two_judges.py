"""Two judges that share no code (issue 26 item 6): the kit's model oracle and TLC
(TraceWireSerialQueue.tla over SerialQueue.tla) judge the same transcripts, many queues
in one TLC run, and must agree.

Shown to bite: racing admissions matched in any order only inside their racing run (the
same queue without its run markers is refused); a take reported as ``started`` after a
yield is refused by both; and a judge broken on purpose (the oracle made to accept
everything, TLC made to match everything) makes ``judge_transcripts`` name the entry
where the two part."""

from __future__ import annotations

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from zlink_conformance.oracle.model import ModelVerdict
from zlink_tool.cli.main import main
from zlink_tool.tla import judges as judges_module
from zlink_tool.tla.judges import judge_transcripts
from zlink_tool.tla.trace import TlcTraceVerdict
from zlink_tool.tla.transcript import check_queues_with_tlc, queue_transcripts, read_transcript

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC"),
    pytest.mark.xdist_group("two_judges"),
]

RACE_CASE = ("optional_SE_6_3_concurrent_submissions_to_one_actor_run_one_at_a_time_in_"
             "admission_order")
YIELD_CASE = "required_SE_6_7_yield_gives_the_turn_back_and_queues_again_at_the_tail"


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("reference-transcripts")
    code = main(["conformance", "run", "--only", RACE_CASE, "--only", YIELD_CASE,
                 "--transcripts", str(out), "-q"])
    assert code == 0
    return out


def _records(path: Path) -> list[dict[str, object]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def _write(records: list[dict[str, object]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def _accepted_against_start_order(path: Path, out: Path) -> Path:
    """The racing case with its accepted events written in the reverse of the order the
    works started in: what threads writing their verdicts may well do."""
    records = _records(path)
    def message(i: int) -> dict[str, object]:
        m = records[i]["message"]
        assert isinstance(m, dict)
        return m
    accepted = [i for i in range(len(records) - 1) if message(i).get("event") == "accepted"]
    started = [message(i)["work"] for i in range(len(records) - 1)
               if message(i).get("event") == "started"]
    assert len(accepted) == len(started) == 6 and accepted == list(
        range(accepted[0], accepted[0] + 6)), "the case changed: update the doctoring"
    by_work = {message(i)["work"]: records[i]["message"] for i in accepted}
    for i, work in zip(accepted, reversed(started), strict=True):
        records[i]["message"] = by_work[work]
    return _write(records, out / "reversed.jsonl")


def _started_after_yield(path: Path, out: Path) -> tuple[Path, int]:
    """The yield case with w1's resume reported as a second ``started`` (D-11)."""
    records = _records(path)
    at = next(i for i, r in enumerate(records)
              if isinstance(r.get("message"), dict) and r["message"].get("event") == "resumed")
    message = records[at]["message"]
    assert isinstance(message, dict)
    message["event"] = "started"
    message["on_submitter_stack"] = False
    return _write(records, out / "started_again.jsonl"), at


def test_SE_6_3_racing_admissions_are_matched_in_any_order_and_only_within_their_run(
    transcripts: Path, tmp_path: Path,
) -> None:
    path = _accepted_against_start_order(transcripts / f"{RACE_CASE}.jsonl", tmp_path)
    (queue,) = queue_transcripts(read_transcript(path.read_text("utf-8").splitlines()))
    assert {s.race for s in queue.steps if s.op == "admit"} == {1}
    # The same queue with its racing run forgotten: the events must then be the
    # admission order, and the first start contradicts it.
    plain = dataclasses.replace(queue, steps=[dataclasses.replace(s, race=0)
                                              for s in queue.steps])
    raced, ordered = check_queues_with_tlc([queue, plain], MODELS)
    assert isinstance(raced, TlcTraceVerdict) and raced.matched, raced
    assert isinstance(ordered, TlcTraceVerdict) and not ordered.matched
    assert ordered.first_unmatched is not None
    assert queue.steps[ordered.first_unmatched].wire == "started"


def test_D_11_judges_agree_on_the_reference_and_part_where_one_is_broken(
    transcripts: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    doctored, at = _started_after_yield(transcripts / f"{YIELD_CASE}.jsonl", tmp_path)
    paths = [transcripts / f"{RACE_CASE}.jsonl", transcripts / f"{YIELD_CASE}.jsonl",
             doctored]
    report = judge_transcripts(paths, MODELS)
    assert report.tlc_runs == 1 and report.disagreements == []
    refused = [t for t in report.transcripts if t.oracle.divergence is not None]
    assert [t.name for t in refused] == ["started_again"] and refused[0].tlc_refused
    assert refused[0].oracle.divergence is not None
    assert refused[0].oracle.divergence.rule == "D-11"

    # The oracle broken: it accepts everything. TLC still refuses the doctored entry.
    monkeypatch.setattr(judges_module, "replay_entries", lambda _entries: ModelVerdict(None))
    (part,) = judge_transcripts(paths, MODELS).disagreements
    assert (part.transcript, part.position, part.refused_by) == ("started_again", at, "tlc")
    assert "the judges part at entry" in part.message()
    monkeypatch.undo()

    # TLC broken: it matches everything. The oracle's refusal is then a disagreement.
    def match_all(queues, *_args, **_kwargs):  # type: ignore[no-untyped-def]
        return [TlcTraceVerdict(True, len(q.steps), None, None, 0.0, "") for q in queues]
    monkeypatch.setattr(judges_module, "check_queues_with_tlc", match_all)
    (part,) = judge_transcripts(paths, MODELS).disagreements
    assert (part.transcript, part.position, part.refused_by) == ("started_again", at, "oracle")


def _entries(settled_first: bool) -> list[tuple[str, dict[str, object]]]:
    """A work's terminal event, then a rejection for the lane it held (capacity 1):
    legal while its end may still be to come, not once a settle was answered."""
    msgs: list[tuple[str, dict[str, object]]] = [
        ("sent", {"cmd": "reset"}), ("received", {"re": 0, "ok": True}),
        ("sent", {"cmd": "create", "target": "q", "type": "queue",
                  "policy": {"application_message_capacity": 1}}),
        ("received", {"re": 1, "ok": True}),
        ("sent", {"cmd": "submit", "work": "a", "target": "q", "entry": "enqueue",
                  "script": [{"op": "gate", "gate": "g"}]}),
        ("received", {"event": "accepted", "work": "a", "owner": "q"}),
        ("received", {"re": 2, "ok": True, "verdict": "accepted"}),
        ("received", {"event": "started", "work": "a", "owner": "q"}),
        ("sent", {"cmd": "open", "gate": "g"}), ("received", {"re": 3, "ok": True}),
        ("received", {"event": "finished", "work": "a", "owner": "q"}),
    ]
    if settled_first:
        msgs += [("sent", {"cmd": "settle"}), ("received", {"re": 4, "ok": True})]
    msgs += [("sent", {"cmd": "submit", "work": "b", "target": "q", "entry": "enqueue",
                       "script": []}),
             ("received", {"event": "rejected", "work": "b", "owner": "q",
                           "reason": "application_count"}),
             ("received", {"re": 5, "ok": True, "verdict": "rejected"})]
    return msgs


def test_SE_5_2_tlc_lets_a_reservation_outlive_the_terminal_event_until_a_settle() -> None:
    (early,) = queue_transcripts(_entries(settled_first=False))
    (late,) = queue_transcripts(_entries(settled_first=True))
    assert [s.op for s in late.steps][-2:] == ["sync", "reject"]
    before, after = check_queues_with_tlc([early, late], MODELS)
    assert isinstance(before, TlcTraceVerdict) and before.matched, before
    assert isinstance(after, TlcTraceVerdict) and not after.matched
    assert after.first_unmatched is not None
    assert late.steps[after.first_unmatched].op == "reject"


@pytest.mark.slow  # the whole fixed suite through TLC; .ci/run runs the command itself
def test_judges_command_agrees_on_the_reference_adapter(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    code = main(["conformance", "judges", "--runs", "20", "--seed", "3",
                 "--json", str(tmp_path / "j.json")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "judges verdict: AGREE" in out
    report = json.loads((tmp_path / "j.json").read_text("utf-8"))
    counts = report["counts"]
    assert counts["tlc_checked"] == counts["tlc_matched"] > 100
    assert counts["disagreements"] == 0
    # SpotWide Spots included (their queues walked together): TLC checks every queue
    assert counts["tlc_checked"] == counts["queues"] and report["unchecked"] == [], report
    assert "TLC checked every queue" in out


def test_judges_report_prints_each_queue_tlc_did_not_check_with_its_reason(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A queue TLC could not check is counted, and printed with its transcript and the
    reason in full (never passed); the report then does not say every queue was checked."""
    from zlink_tool.cli.judges import _report
    from zlink_tool.tla.judges import JudgedTranscript, JudgesReport
    from zlink_tool.tla.transcript import QueueTranscript

    skipped = QueueTranscript("S", not_checked="entry 7: started of x, a work the runner "
                                               "never submitted")
    report = JudgesReport([JudgedTranscript("case", ModelVerdict(None), [skipped], {}, [])])
    assert _report(report, None) == 0
    out = capsys.readouterr().out
    assert "not checked by TLC: 1 queue(s) with a work never submitted" in out, out
    assert "not checked by TLC: case: S: entry 7: started of x, a work the runner never " \
        "submitted" in out, out
    assert "TLC checked every queue" not in out
