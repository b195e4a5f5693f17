"""The reliability bar at CI size (``reliability_bar.py`` says what is counted and why):
every accepted work ends exactly once and every reservation returns to zero, under each
fault. The counts are printed in the terminal summary (``conftest.py``).

Shown to fail: ``test_D_11_the_bar_fails_on_a_finish_that_drops_one_work`` plants a
break in-process, and ``test_D_11_the_bar_fails_on_a_catalogue_mutant`` runs the script
against ``close_drops_accepted`` (``dispose_runs_never_started`` fails the disposal
scenario the same way: ``--mutant dispose_runs_never_started disposal_modes``).
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import reliability_bar
from reliability_bar import CI, Counts, Size, run_scenario

from zlink_model.queue import QueueCore


def _held(name: str) -> Counts:
    counts = run_scenario(name, CI)
    reliability_bar.RESULTS.append(counts)
    assert counts.ok, f"{counts.scenario}: {counts.violations[:5]}"
    assert counts.accepted > 0 and counts.lost == 0 and counts.twice == 0
    assert counts.reserved_left == 0
    assert sum(counts.outcomes.values()) == counts.accepted
    return counts


def test_D_11_every_accepted_work_ends_once_under_handler_exceptions() -> None:
    counts = _held("handler_exceptions")
    assert counts.outcomes["failed"] > 0 and counts.outcomes["completed"] > 0


def test_D_11_a_cancelled_waiting_submitter_never_loses_or_cancels_the_work() -> None:
    counts = _held("cancelled_submitters")
    # Cancelling the submitter ends only its wait (D-24, defect 8 of issue 15).
    assert counts.outcomes == {"completed": counts.accepted}


def test_SE_6_2_close_during_a_drain_finishes_what_was_accepted() -> None:
    counts = _held("close_during_drain")
    assert counts.outcomes == {"completed": counts.accepted}
    assert counts.rejected["closed"] > 0


def test_SD_1_each_disposal_mode_with_works_queued_running_and_yielded() -> None:
    counts = _held("disposal_modes")
    assert counts.outcomes["cancelled"] > 0 and counts.outcomes["completed"] > 0


def test_SE_6_3_a_flood_into_a_small_capacity_accepts_exactly_the_capacity() -> None:
    counts = _held("flood")
    assert counts.submitted == CI.flood == 100_000
    assert counts.accepted == 16


def test_SE_6_3_submissions_from_8_threads_racing_close_and_dispose() -> None:
    counts = _held("threads")
    assert CI.threads == 8
    assert counts.rejected["closed"] > 0


def test_SE_6_3_writes_through_handles_never_reach_the_books() -> None:
    counts = _held("handle_writes")
    assert counts.outcomes == {"completed": counts.accepted}


def test_SD_1_a_sessions_final_work_counts_and_is_bounded_from_acceptance() -> None:
    counts = _held("session_finals")
    assert counts.outcomes["completed"] > 0 and counts.outcomes["cancelled"] > 0


TINY = Size(rounds=1, works=12, flood=100, threads=2, per_thread=4, settle_s=0.5)


def test_D_11_the_bar_fails_on_a_finish_that_drops_one_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A core whose third ``finish`` forgets the work (no release, no event): the bar
    must see the lost end and the reservation left behind."""
    finish = QueueCore.finish
    calls = [0]

    def dropping(self: QueueCore[Any], rec: Any, outcome: int = 0) -> None:
        calls[0] += 1
        if calls[0] == 3:
            self.current = None  # the turn is given back, the work is forgotten
            return
        finish(self, rec, outcome)

    monkeypatch.setattr(QueueCore, "finish", dropping)
    counts = run_scenario("handler_exceptions", TINY)
    assert not counts.ok
    assert counts.lost >= 1 and counts.reserved_left > 0


def test_D_11_the_bar_fails_on_a_catalogue_mutant() -> None:
    script = Path(reliability_bar.__file__)
    run = subprocess.run(
        [sys.executable, str(script), "--mutant", "close_drops_accepted", "--settle", "0.5",
         "close_during_drain"], capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "VIOLATED in close() during a drain" in run.stdout
    assert "reliability bar: FAILED" in run.stdout
