"""The decision rules (``zlink_model/rules.py``) with literal expected answers. The core
tests compare the core with these functions, so a wrong rule changes both sides; these
pin the rules themselves (survivors of a sampled cosmic-ray run, issue 15; the CrossHair
contracts in tests/symbolic pin them too, but take minutes)."""

from __future__ import annotations

from zlink_model.errors import RejectReason
from zlink_model.queue import LANE_NAMES, QueueConfig, QueueCore, WorkRecord
from zlink_model.rules import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    Source,
    admission_verdict,
    reservation_bytes,
    select_next,
)
from zlink_reference import ZLinkExecutionLanePolicy


def test_SE_6_1_a_reservation_adds_payload_and_fixed_cost() -> None:
    assert reservation_bytes(3, 1) == 4
    assert reservation_bytes(1000, 256) == 1256


def test_SE_6_3_each_lane_is_refused_with_its_own_reason() -> None:
    assert admission_verdict(False, True, 8, 0, 0, 8, 100) is RejectReason.LIFECYCLE_COUNT
    assert admission_verdict(False, False, 8, 0, 0, 8, 100) is RejectReason.APPLICATION_COUNT
    assert admission_verdict(False, True, 0, 90, 11, 8, 100) is RejectReason.LIFECYCLE_BYTES
    assert admission_verdict(False, False, 0, 90, 11, 8, 100) is RejectReason.APPLICATION_BYTES
    assert admission_verdict(False, True, 7, 90, 10, 8, 100) is None


def test_SE_6_1_the_lifecycle_streak_counts_only_while_application_work_waits() -> None:
    assert select_next(0, 1, 1, 1, 8) == (Source.LIFECYCLE, 2)
    assert select_next(0, 1, 1, 2, 8) == (Source.LIFECYCLE, 3)
    assert select_next(0, 1, 0, 0, 8) == (Source.LIFECYCLE, 0)
    assert select_next(0, 1, 0, 5, 8) == (Source.LIFECYCLE, 0)


def test_SE_10_09_after_the_burst_limit_one_application_work_runs() -> None:
    assert select_next(0, 1, 1, 8, 8) == (Source.APPLICATION, 0)
    assert select_next(0, 1, 1, 7, 8) == (Source.LIFECYCLE, 8)
    assert select_next(1, 1, 1, 8, 8) == (Source.BARRIER, 0)


def test_SE_6_1_the_lanes_index_their_names() -> None:
    assert (APPLICATION_LANE, LIFECYCLE_LANE) == (0, 1)
    assert LANE_NAMES[LIFECYCLE_LANE] == "lifecycle"
    events: list[dict[str, object]] = []
    core: QueueCore[WorkRecord] = QueueCore(QueueConfig(
        ZLinkExecutionLanePolicy(), observer=lambda _q, _e, f: events.append(f)), "q")
    core.admit(WorkRecord(), LIFECYCLE_LANE)
    assert events[0]["lane"] == "lifecycle"


def test_SE_6_7_each_requeue_counts_one_resume() -> None:
    core: QueueCore[WorkRecord] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy()), "q")
    rec = WorkRecord()
    core.admit(rec)
    core.enter_drain(0)
    for n in (1, 2):
        assert core.take_next(0) is rec
        core.yield_turn(rec)
        core.requeue(rec)
        assert rec.resumes == n
