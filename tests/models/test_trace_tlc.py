"""Trace validation with TLC (zlink trace check --tlc): a log recorded from the reference
runtime is a behaviour of SerialQueue.tla; a corrupted log is refused at its first bad
event; log content never reaches the generated data module as TLA+ text."""

from __future__ import annotations

import asyncio
import re
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_tool.tla.trace import (
    TraceFormatError,
    TraceRangeError,
    build_trace_model,
    check_with_tlc,
)

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_trace import POLICY, record  # noqa: E402

# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = [
    pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC"),
    pytest.mark.xdist_group("trace_tlc"),
]


@pytest.fixture(scope="module")
def log() -> list[dict[str, Any]]:
    return asyncio.run(record(400, seed=7))


def test_SE_6_6_a_recorded_log_is_a_behaviour_of_the_model(log: list[dict[str, Any]]) -> None:
    verdict = check_with_tlc(log, POLICY, ROOT / "models")
    assert verdict.matched and verdict.steps == len(log), verdict.output[-2000:]


def test_SE_6_6_a_corrupted_log_is_refused_at_its_first_bad_event(
    log: list[dict[str, Any]],
) -> None:
    bad = [dict(e) for e in log]
    at = next(i for i, e in enumerate(bad) if i > 150 and e["event"] == "take_next"
              and not e["resume"])
    wrong = next(e["work"] for e in bad[:at]
                 if e["event"] == "admit" and e["work"] != bad[at]["work"])
    bad[at]["work"] = wrong
    verdict = check_with_tlc(bad, POLICY, ROOT / "models")
    assert not verdict.matched and verdict.first_unmatched == at


def test_SE_6_5_a_lost_drain_entry_is_refused(log: list[dict[str, Any]]) -> None:
    at = next(i for i, e in enumerate(log) if i > 100 and e["event"] == "enter_drain")
    verdict = check_with_tlc(log[:at] + log[at + 1:], POLICY, ROOT / "models")
    assert not verdict.matched and verdict.first_unmatched == at


def test_log_text_never_reaches_the_module() -> None:
    hostile = [{"event": 'admit"] \\/ TRUE \\/ ["', "work": 0}]
    with pytest.raises(TraceFormatError, match="has no action"):
        build_trace_model(hostile, POLICY)
    with pytest.raises(TraceFormatError, match="lane must be"):
        build_trace_model([{"event": "admit", "lane": '"x" \\/ TRUE', "work": 0,
                            "pos": 0, "bytes": 256, "barrier": False, "wake": True}], POLICY)
    with pytest.raises(TraceFormatError, match="must be an integer"):
        build_trace_model([{"event": "take_next", "work": "1 + 1"}], POLICY)
    model = build_trace_model([{"event": "admit", "lane": "application", "work": 0, "pos": 0,
                                "bytes": 256, "barrier": False, "wake": True}], POLICY)
    assert "\\/ TRUE" not in model.module


def test_events_outside_the_model_are_named() -> None:
    with pytest.raises(TraceFormatError, match=r"'transfer' has no action in SerialQueue\.tla"):
        build_trace_model([{"event": "transfer", "work": 0}], POLICY)


def test_the_example_data_module_is_what_the_generator_writes() -> None:
    """models/TraceLog.tla (the data the manifest run TraceSerialQueue checks) is the
    generator's output for the log docs/models.md names: regenerate it with
    ``build_trace_model(asyncio.run(record(60, seed=3)), POLICY).module`` when the
    generator or the runtime changes."""
    model = build_trace_model(asyncio.run(record(60, seed=3)), POLICY)
    checked_in = (ROOT / "models" / "TraceLog.tla").read_text(encoding="utf-8")
    assert model.module == checked_in


GIB = 2**30
BIG = ZLinkExecutionLanePolicy(application_byte_capacity=2 * GIB, fixed_work_byte_cost=GIB,
                               lifecycle_byte_capacity=8 * GIB)


def _admit(work: int, pos: int, wake: bool) -> dict[str, Any]:
    return {"event": "admit", "work": work, "pos": pos, "lane": "application",
            "barrier": False, "bytes": GIB, "wake": wake}


def _two_gib_log(third_admitted: bool) -> list[dict[str, Any]]:
    """Under a 2 GiB application byte capacity and a 1 GiB fixed cost two works fit and
    a third does not: it is rejected (or, doctored, admitted)."""
    third = _admit(2, 2, False) if third_admitted else {
        "event": "reject", "lane": "application", "barrier": False, "bytes": GIB,
        "reason": "application_bytes"}
    return [_admit(0, 0, True), _admit(1, 1, False), third,
            {"event": "enter_drain"}, {"event": "take_next", "work": 0},
            {"event": "finish", "work": 0}]


def test_SE_5_1_a_2_GiB_policy_is_checked_by_rescaling_exactly() -> None:
    """TLC 2.15 cannot read 2^31: the byte values are divided by their common divisor
    (1 GiB here) and the capacity still binds: the log that rejects the third work
    matches, the doctored one that admits it is refused at that event."""
    model = build_trace_model(_two_gib_log(False), BIG)
    assert not re.search(r"\d{10,}", model.module), model.module
    assert any("divided by 1073741824" in n for n in model.notes), model.notes
    good = check_with_tlc(_two_gib_log(False), BIG, ROOT / "models")
    assert good.matched, good.output[-2000:]
    bad = check_with_tlc(_two_gib_log(True), BIG, ROOT / "models")
    assert not bad.matched and bad.first_unmatched == 2, bad.output[-2000:]


def test_SE_5_1_what_no_exact_rescaling_brings_under_2_31_is_refused_before_tlc() -> None:
    odd = [{**_admit(0, 0, True), "bytes": 2 * GIB + 1}]
    policy = ZLinkExecutionLanePolicy(application_byte_capacity=4 * GIB + 1,
                                      fixed_work_byte_cost=1)
    with pytest.raises(TraceRangeError, match="even after exact rescaling"):
        build_trace_model(odd, policy)
    with pytest.raises(TraceRangeError, match=r"pos 2147483648 is outside TLC 2\.15's"):
        build_trace_model([_admit(0, 2**31, True)], POLICY)
