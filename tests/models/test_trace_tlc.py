"""Trace validation with TLC (zlink trace check --tlc): a log recorded from the reference
runtime is a behaviour of SerialQueue.tla; a corrupted log is refused at its first bad
event; log content never reaches the generated data module as TLA+ text."""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from zlink_tool.tla.trace import TraceFormatError, build_trace_model, check_with_tlc

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_trace import POLICY, record  # noqa: E402

pytestmark = pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC")


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
