"""TLC judges SpotWide transfers too (issue 26 item 6, SE-4.5, SE-4.6, SE-5.3, D-6): a
SpotWide (or Instance) Spot's Spot queue and Actor queues are one log of
TraceWireSerialQueue.tla. The Actor queues admit their records on the Actor policy; a
hidden ``Transfer`` moves the head's execution turn to the Spot queue's application lane
once the Actor's claim is free; a hidden ``EndClaim`` ends the claim after the record
ended on the Spot queue. So such queues are judged, not skipped.

Shown to bite: transcripts of the reference broken by hand are refused at the doctored
entry, under the rules of a moved turn (the transfer's and the claim's): an Actor's
records run out of their order (a transfer out of order), a record's turn placed on the
Spot queue at its acceptance instead of when its Actor reached it (also out of order),
a record run on the Spot queue while its Actor's claim is held by a yielded record (run
before its transfer could happen), a record that never runs though its Actor is free (a
lost transfer: the settle reply is refused), an Actor queue accepting past its
capacity, and a record still in its Actor's line at ``dispose`` run instead of
cancelled. All queues go to TLC in one run. And the transcripts of the catalogued mutant
``spot_wide_skips_spot_gate`` are refused by TLC under those rules."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import trace_doctoring as doctoring
from trace_doctoring import Records

from zlink_model.vocabulary import ADMIT, TRANSFER, transition
from zlink_tool.cli.main import main
from zlink_tool.tla.transcript import WIRE_STEP_ACTIONS, refused_as

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"

pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC"),
    pytest.mark.xdist_group("trace_spot_wide"),
]

ORDER = "required_SE_10_04_same_actor_keeps_submission_order_spot_wide"
PLACED = "required_SE_4_5_spot_wide_turn_is_placed_when_the_actor_reaches_its_turn"
CLAIM = "required_SE_10_11_yielded_spot_wide_actor_holds_only_its_own_next_record"
MAILBOX = "required_SE_10_06_full_actor_mailbox_rejects_only_that_actor_spot_wide"
DISPOSED = "required_SD_1_dispose_cancels_every_queue_of_a_spot_wide_spot"
INSTANCE = "required_SE_4_1_instance_spot_is_one_gate"
CASES = (ORDER, PLACED, CLAIM, MAILBOX, DISPOSED, INSTANCE)


@pytest.fixture(scope="module")
def transcripts(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return doctoring.write_transcripts(tmp_path_factory.mktemp("spot-wide-transcripts"), CASES)


def _swap_runs(records: Records, first: str, second: str) -> tuple[Records, int]:
    """``second``'s started .. finished where ``first``'s were, and the other way round
    (each run two records long); the doctored entry is the first of the two."""
    a, b = doctoring.at(records, "started", first), doctoring.at(records, "started", second)
    assert doctoring.at(records, "finished", first) == a + 1
    assert doctoring.at(records, "finished", second) == b + 1
    records[a:a + 2], records[b:b + 2] = records[b:b + 2], records[a:a + 2]
    return records, min(a, b)


def _actor_out_of_order(records: Records) -> tuple[Records, int]:
    """SE-10.4, SE-4.5: Actor A's a2 runs before a1, accepted ahead of it: the Actor queue
    moved its records' turns out of their order."""
    return _swap_runs(records, "a1", "a2")


def _placed_at_acceptance(records: Records) -> tuple[Records, int]:
    """SE-4.5: a2 runs before s1, as if its turn had been placed on the Spot queue when
    it was accepted; it is placed only once a1, its Actor's claim holder, ended, and s1
    was accepted (on the Spot queue) before then."""
    return _swap_runs(records, "s1", "a2")


def _run_while_claim_held(records: Records) -> tuple[Records, int]:
    """SE-4.6: a2 runs while a1 of the same Actor is yielded: a1 keeps its Actor's claim,
    so a2's turn cannot have been moved to the Spot queue yet."""
    start = doctoring.at(records, "started", "a2")
    moved = records[start:start + 2]
    del records[start:start + 2]
    at = doctoring.at(records, "finished", "b1") + 1
    records[at:at] = moved
    return records, at


def _lost_transfer(records: Records) -> tuple[Records, int]:
    """SE-4.5: a2 never runs, though a1 ended and its Actor is free: a settle is answered
    with a2's turn never moved to the Spot queue."""
    start = doctoring.at(records, "started", "a2")
    del records[start:start + 2]
    # refused at the first settle answered after that: a command's own reply (the gate's
    # opening, say) is no point at which the runtime must have moved the turn
    settle = next(i for i in range(start, len(records))
                  if records[i]["dir"] == "sent" and records[i]["message"].get("cmd") == "settle")
    reply = next(i for i in range(settle + 1, len(records))
                 if records[i]["dir"] == "received" and "re" in records[i]["message"])
    return records, reply


def _cancelled_record_runs(records: Records) -> tuple[Records, int]:
    """SD-1 on an Actor queue: ``a2``, still in its Actor's line when ``dispose`` was
    called, runs once the yielded ``a1`` holding the claim was cancelled, instead of
    being cancelled itself (its turn is never moved to the Spot queue)."""
    record = records.pop(doctoring.at(records, "cancelled", "a2"))
    at = doctoring.at(records, "cancelled", "a1") + 1
    message = {**record["message"], "owner": "S"}
    records[at:at] = [
        {**record, "message": {**message, "event": "started", "on_submitter_stack": False}},
        {**record, "message": {**message, "event": "finished"}}]
    return records, at


def _accepted_past_the_mailbox(records: Records) -> tuple[Records, int]:
    """SE-5.1 on the Actor queue: a4 accepted by Actor A's queue, which holds three
    records already (its application_message_capacity is 3)."""
    at = doctoring.at(records, "rejected", "a4")
    records[at]["message"] = {"event": "accepted", "work": "a4",
                              "owner": records[at]["message"]["owner"]}
    return records, at


def test_SE_4_5_tlc_matches_spot_wide_transcripts_and_refuses_doctored_ones(
    transcripts: Path,
) -> None:
    def read(case: str) -> Records:
        return doctoring.records(transcripts / f"{case}.jsonl")

    honest = [doctoring.one_queue(read(case)) for case in CASES]
    assert all(q.not_checked is None for q in honest), [q.not_checked for q in honest]
    # every one is a Spot's queues walked together, with records its Actor queues admitted
    assert all(q.queue_count > 1 and any(s.actor for s in q.steps) for q in honest), \
        [q.members for q in honest]
    doctored = [
        (_actor_out_of_order(read(ORDER)), "started"),
        (_placed_at_acceptance(read(PLACED)), "started"),
        (_run_while_claim_held(read(CLAIM)), "started"),
        (_lost_transfer(read(PLACED)), "settle reply"),
        (_accepted_past_the_mailbox(read(MAILBOX)), "accepted"),
        (_cancelled_record_runs(read(DISPOSED)), "started"),
    ]
    refused = doctoring.assert_tlc_matches_honest_and_refuses_doctored(honest, doctored,
                                                                       MODELS)
    # each refusal is reported under the rules of what it broke: a moved turn's (TakeNext
    # after Transfer, the claim), but the Actor queue's admission for the mailbox
    moved_rules = WIRE_STEP_ACTIONS[TRANSFER][1]
    assert {"SE-4.5", "SE-4.6", "SE-6.6"} <= set(moved_rules.split(", "))
    keys = [refused_as(q, step) for q, step in refused]
    assert keys == [TRANSFER] * 4 + [ADMIT, TRANSFER], keys
    assert WIRE_STEP_ACTIONS[ADMIT][1] == transition(ADMIT).rule_text


@pytest.mark.slow  # a conformance run of the mutant, then TLC
def test_SE_4_6_tlc_refuses_the_transcripts_of_a_mutant_that_skips_the_spot_gate(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The catalogued mutant ``spot_wide_skips_spot_gate`` (SpotWide Actor work runs on its
    Actor queue without the Spot gate): the kit fails the case, and TLC, given its
    transcript, refuses ``a2`` started while ``a1`` of the same Actor holds the claim,
    under the rules of a moved turn."""
    import zlink_reference_adapter

    preload = Path(zlink_reference_adapter.__file__).parent / "preload_mutant.py"
    monkeypatch.setenv("ZLINK_ADAPTER_PRELOAD", str(preload))
    monkeypatch.setenv("ZLINK_MUTANT_NAME", "spot_wide_skips_spot_gate")
    code = main(["conformance", "run", "--only", CLAIM, "--tlc", "-q",
                 "--transcripts", str(tmp_path)])
    out = capsys.readouterr().out
    assert code == 1, out
    (line,) = [line for line in out.splitlines() if line.startswith(f"  {CLAIM}: TLC")]
    assert "TLC refuses it too" in line and f"({WIRE_STEP_ACTIONS[TRANSFER][1]})" in line, line
    assert "started of a2" in line, line
