"""Every catalogued mutant of the queue is killed by the unit tests.

Each mutant is switched on in a fresh pytest process (ZLINK_MUTANT) over tests/core and
tests/shell; the run must fail, and among the failures must be the test written for the
rule the mutant breaks. The kill matrix is printed (run with -s to see it).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

# mutant -> the test (by name) written for the rule it breaks
KILLER = {
    "drain_without_flag_check": "test_SE_6_5_one_drain_per_idle_to_busy_transition",
    "drain_on_submitter_stack":
        "test_SE_6_5_one_drain_per_idle_to_busy_transition_never_on_the_submitter_stack",
    "resume_skips_requeue": "test_SE_6_7_yield_gives_the_turn_back_and_resume_goes_through",
    "admission_split": "test_SE_6_3_admission_is_atomic_when_many_threads_submit",
    "lifecycle_ignores_burst": "test_SE_6_1_lifecycle_burst_limit_boundary",
    "close_drops_accepted": "test_SE_6_2_close_rejects_new_work_and_finishes_accepted_work",
    "capacity_off_by_one": "test_SE_5_1_each_capacity_axis_rejects_exactly_at_its_limit",
    "fifo_swap": "test_SE_6_6_fifo_within_the_application_lane",
    "time_budget_ignored": "test_SE_6_4_slice_ends_when_the_time_budget_is_used",
    "post_capacity_off_by_one": "test_SE_5_1_post_rejects_exactly_at_its_limit_like_enqueue",
}


def run_with(mutant: str, paths: list[str] | None = None, select: str | None = None
             ) -> tuple[int, list[str]]:
    """Run pytest over ``paths`` (default: the queue's unit tests) with a mutant on,
    only the tests matching ``select`` if given; returns the exit code and the failing
    tests. A mutant may hang a test: async tests give up after 5 s, others after 20 s."""
    env = dict(os.environ, ZLINK_MUTANT=mutant, ZLINK_TEST_TIMEOUT="5")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *(paths or ["tests/core", "tests/shell"]),
         *(["-k", select] if select else []),
         "-q", "-rf", "--tb=no", "-p", "no:cacheprovider", "-o", "timeout=20"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=600,
    )
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, re.M)
    return proc.returncode, failed


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(KILLER))
def test_unit_tests_kill_mutant(mutant: str) -> None:
    code, failed = run_with(mutant)
    print(f"\n{mutant}: {len(failed)} failing test(s)")
    for name in failed:
        print(f"    {name}")
    assert code != 0, f"mutant {mutant} survived the unit tests"
    assert any(KILLER[mutant] in name for name in failed), (
        f"mutant {mutant} was not caught by {KILLER[mutant]}"
    )
