"""State-space agreement: a breadth-first enumeration of the pure core, under the bounds
of a SerialQueue run, reaches exactly the numbers of distinct and generated states TLC
reached (models/manifest.json), and every reached core satisfies the queue invariants.

The enumeration drives ``QueueCore`` itself (``zlink_tool.statespace``), so the
numbers agree only if every transition does what its TLA+ action does; the last tests
show that a broken transition moves the numbers or is refused outright.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from zlink_model.queue import QueueCore
from zlink_model.statespace import SERIAL_QUEUE_CI, graph
from zlink_tool.statespace import AgreementError, explore, load_bounds, manifest_counts

MODELS = Path(__file__).resolve().parents[2] / "models"


# SerialQueueBarrierStreak (45,917 states, the largest) is slow: ./dev verify's symbolic
# step and ./dev test --all enumerate it; the default run enumerates the other three.
@pytest.mark.parametrize("run", ["SerialQueueTwoWorks", "SerialQueueLiveness", "SerialQueue",
                                 pytest.param("SerialQueueBarrierStreak",
                                              marks=pytest.mark.slow)])
def test_SE_6_6_core_enumeration_reproduces_tlc_state_counts(run: str) -> None:
    cfg, distinct, total = manifest_counts(MODELS, run)
    result = explore(load_bounds(cfg))
    print(f"\n{run}: TLC {distinct:,} distinct / {total:,} total; core enumeration "
          f"{result.distinct:,} / {result.total:,} in {result.seconds:.1f} s")
    assert (result.distinct, result.total) == (distinct, total)
    assert result.deadlocks == 0
    assert not result.violations, result.violations


def test_the_bounds_are_read_from_the_model_files() -> None:
    bounds = load_bounds(MODELS / "MCSerialQueue.cfg")
    assert bounds.works == (1, 2, 3, 4)
    assert dict(bounds.lane) == {1: "app", 2: "life", 3: "barrier", 4: "life"}
    assert dict(bounds.script) == {"s1": (1, 4), "s2": (3, 2)}
    assert (bounds.app_count_cap, bounds.app_byte_cap, bounds.life_count_cap,
            bounds.life_byte_cap, bounds.fixed_cost, bounds.burst_limit) == (2, 2, 1, 2, 1, 1)


def test_SE_6_6_the_graph_explore_walks_is_the_ci_run_of_tlc() -> None:
    """``explore --strategy graph`` walks ``graph(SERIAL_QUEUE_CI)``: its bounds are the
    files' and its states and transitions are TLC's counts (generated = transitions + 1,
    Init)."""
    cfg, distinct, total = manifest_counts(MODELS, "SerialQueue")
    assert load_bounds(cfg) == SERIAL_QUEUE_CI
    walked = graph(SERIAL_QUEUE_CI)
    assert (len(walked.states), len(walked.steps) + 1) == (distinct, total)


def test_SE_6_5_a_slice_that_forgets_to_reschedule_changes_the_space(
        monkeypatch: pytest.MonkeyPatch) -> None:
    end_slice = QueueCore.end_slice

    def broken(self: QueueCore, now: float) -> None:
        end_slice(self, now)
        self.drain_scheduled = False

    monkeypatch.setattr(QueueCore, "end_slice", broken)
    cfg, distinct, total = manifest_counts(MODELS, "SerialQueueTwoWorks")
    result = explore(load_bounds(cfg))
    assert (result.distinct, result.total) != (distinct, total)
    assert any(v.startswith("NoLostWakeup") for v in result.violations)


def test_SE_5_1_an_admission_off_by_one_is_refused_as_disagreement(
        monkeypatch: pytest.MonkeyPatch) -> None:
    place = QueueCore._place

    def broken(self: QueueCore, rec: object, lane: int, nbytes: int, barrier: bool,
               judged: bool) -> bool:
        if lane == 1 and self.life_count == self.config.life_count_cap:
            judged = False  # one lifecycle work more than the limit
        return place(self, rec, lane, nbytes, barrier, judged)  # type: ignore[arg-type]

    monkeypatch.setattr(QueueCore, "_place", broken)
    with pytest.raises(AgreementError, match=r"Reject\(s\d\): the core admits"):
        explore(load_bounds(MODELS / "MCSerialQueue.cfg"))
