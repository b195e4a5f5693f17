"""TLC judges disposals too (issue 26 item 6): a queue whose scope was disposed is
walked by TraceWireSerialQueue.tla with Disposal.tla's steps beside SerialQueue.tla's
(Dispose, DisposeSafely, DisposeAfterTimeout, ExpireTimeout, SurviveCancel, Cancel, and
the runtime's end), so ``cancelled`` and ``zombie`` events are judged, not skipped.

Shown to bite: transcripts of the reference broken by hand (a zombie reported as
cancelled, a suspended work cancelled off its turn, a never-started work started after
``dispose``) are refused at the doctored entry, under the rules of the transition; and
the transcripts of the catalogued mutant ``dispose_safely_cancels_queued`` are refused by
TLC under SD-1. All queues of a test go to TLC in one run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trace_doctoring as doctoring
from trace_doctoring import Records

from zlink_tool.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC"),
    pytest.mark.xdist_group("trace_disposal"),
]

SAFELY = "required_SD_1_dispose_safely_closes_and_cancels_nothing"
DISPOSE = "required_SD_1_dispose_cancels_never_started_and_suspended_work"
BOUND = "required_D_27_dispose_after_timeout_after_dispose_safely_bounds_the_zombies"
END = "required_SD_5_runtime_end_waits_for_active_work_then_cancels_zombies"
SURVIVOR = "required_SD_3_a_work_that_survives_its_cancellation_becomes_a_zombie"
DESTROY = "required_SD_4_as_not_safely_makes_destroy_cancel_on_every_queue"
CASES = (SAFELY, DISPOSE, BOUND, END, SURVIVOR, DESTROY)


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return doctoring.write_transcripts(tmp_path_factory.mktemp("disposal-transcripts"), CASES)


def _zombie_reported_cancelled(records: Records) -> tuple[Records, int]:
    """dispose_safely cancels nothing (SD-1): its zombie ``later`` reported cancelled."""
    at = doctoring.at(records, "zombie", "later")
    records[at]["message"]["event"] = "cancelled"
    return records, at


def _cancelled_off_its_turn(records: Records) -> tuple[Records, int]:
    """D-8: the suspended ``susp`` cancelled without the turn it is delivered on (its
    ``resumed`` event left out)."""
    del records[doctoring.at(records, "resumed", "susp")]
    return records, doctoring.at(records, "cancelled", "susp")


def _never_started_runs(records: Records) -> tuple[Records, int]:
    """SD-1: ``never``, queued when ``dispose`` was called, starts and finishes after the
    turn holder ``block`` was cancelled, instead of being cancelled itself."""
    record = records.pop(doctoring.at(records, "cancelled", "never"))
    at = doctoring.at(records, "cancelled", "block") + 1
    message = record["message"]
    records[at:at] = [
        {**record, "message": {**message, "event": "started", "on_submitter_stack": False}},
        {**record, "message": {**message, "event": "finished"}}]
    return records, at


def test_SD_1_tlc_matches_the_disposal_transcripts_and_refuses_doctored_ones(
    transcripts: Path,
) -> None:
    def read(case: str) -> Records:
        return doctoring.records(transcripts / f"{case}.jsonl")

    honest = [q for case in CASES for q in doctoring.queues(read(case))]
    assert honest and all(q.not_checked is None for q in honest), \
        [q.not_checked for q in honest]
    assert any(s.op == "cancel" for q in honest for s in q.steps)
    assert any(s.op == "dispose_safely" for q in honest for s in q.steps)
    doctored = [
        (_zombie_reported_cancelled(read(SAFELY)), "cancelled"),
        (_cancelled_off_its_turn(read(DISPOSE)), "cancelled"),
        (_never_started_runs(read(DISPOSE)), "started"),
    ]
    doctoring.assert_tlc_matches_honest_and_refuses_doctored(honest, doctored, MODELS)


@pytest.mark.slow  # a conformance run of the mutant, then TLC
def test_SD_1_tlc_refuses_the_transcripts_of_a_mutant_that_cancels_under_dispose_safely(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The catalogued mutant ``dispose_safely_cancels_queued``: the kit fails the case,
    and TLC, given its transcript, refuses the ``cancelled`` event under SD-1."""
    import zlink_reference_adapter

    preload = Path(zlink_reference_adapter.__file__).parent / "preload_mutant.py"
    monkeypatch.setenv("ZLINK_ADAPTER_PRELOAD", str(preload))
    monkeypatch.setenv("ZLINK_MUTANT_NAME", "dispose_safely_cancels_queued")
    code = main(["conformance", "run", "--only", SAFELY, "--tlc", "-q",
                 "--transcripts", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    (line,) = [line for line in out.splitlines()
               if line.startswith(f"  {SAFELY}: TLC")]
    assert "TLC refuses it too" in line and "(SD-1, D-8, SE-5.2)" in line, line
    assert "cancelled of later" in line, line
