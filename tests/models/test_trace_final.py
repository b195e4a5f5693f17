"""TLC judges a session's final work too (issue 26 item 6, D-12, D-22): its acceptance
closes the session at once and holds it back; a hidden ``Transfer`` places it once every
work accepted before it has ended; a disposal before then cancels it or makes it a
zombie. TraceWireSerialQueue.tla walks all of it, so such queues are judged, not
skipped.

Shown to bite: transcripts of the reference broken by hand (the final work run before a
work accepted earlier ended, a work accepted after the final one, a final work that
never runs though everything before it ended, a final work run after ``dispose``
cancelled it) are refused at the doctored entry. All queues go to TLC in one run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trace_doctoring as doctoring
from trace_doctoring import Records

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC"),
    pytest.mark.xdist_group("trace_final"),
]

LAST = "required_D_12_session_final_runs_after_all_accepted_work_and_closes"
IDLE = "required_D_12_session_final_on_an_idle_session_runs_at_once"
CANCELLED = "required_D_22_dispose_cancels_a_final_work_that_has_not_run"
ZOMBIE = "required_D_22_dispose_safely_lets_a_final_work_run_last"
CASES = (LAST, IDLE, CANCELLED, ZOMBIE)


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return doctoring.write_transcripts(tmp_path_factory.mktemp("final-transcripts"), CASES)


def _final_overtakes(records: Records) -> tuple[Records, int]:
    """D-12: ``fin`` runs before ``p1``, accepted before it and suspended, has ended."""
    start, end = doctoring.at(records, "started", "fin"), doctoring.at(records, "finished", "fin")
    moved = records[start:end + 1]
    del records[start:end + 1]
    at = doctoring.at(records, "resumed", "p1")
    records[at:at] = moved
    return records, at


def _accepted_after_final(records: Records) -> tuple[Records, int]:
    """D-12, SE-6.2: ``x1``, submitted after the final work, accepted."""
    at = doctoring.at(records, "rejected", "x1")
    records[at]["message"] = {"event": "accepted", "work": "x1",
                              "owner": records[at]["message"]["owner"]}
    return records, at


def _final_never_runs(records: Records) -> tuple[Records, int]:
    """D-12: every work before ``fin`` ended, and a settle is answered without it run."""
    start, end = doctoring.at(records, "started", "fin"), doctoring.at(records, "finished", "fin")
    del records[start:end + 1]
    return records, start  # the settle's reply, now where the start was


def _cancelled_final_runs(records: Records) -> tuple[Records, int]:
    """D-22: ``fin``, held when ``dispose`` was called, runs after the turn holder was
    cancelled, instead of being cancelled itself."""
    record = records.pop(doctoring.at(records, "cancelled", "fin"))
    at = doctoring.at(records, "cancelled", "p") + 1
    message = record["message"]
    records[at:at] = [
        {**record, "message": {**message, "event": "started", "on_submitter_stack": False}},
        {**record, "message": {**message, "event": "finished"}}]
    return records, at


def test_D_12_tlc_matches_final_work_transcripts_and_refuses_doctored_ones(
    transcripts: Path,
) -> None:
    def read(case: str) -> Records:
        return doctoring.records(transcripts / f"{case}.jsonl")

    honest = [doctoring.one_queue(read(case)) for case in CASES]
    assert all(q.not_checked is None for q in honest), [q.not_checked for q in honest]
    assert all(any(s.op == "hold" for s in q.steps) for q in honest)
    doctored = [
        (_final_overtakes(read(LAST)), "started"),
        (_accepted_after_final(read(LAST)), "accepted"),
        (_final_never_runs(read(LAST)), "settle reply"),
        (_cancelled_final_runs(read(CANCELLED)), "started"),
    ]
    doctoring.assert_tlc_matches_honest_and_refuses_doctored(honest, doctored, MODELS)
