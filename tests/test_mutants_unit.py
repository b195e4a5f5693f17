"""The queue's catalogued mutants and, for each, the unit test written for the rule it
breaks: that test must fail when the mutant is on.

``tests/stateful/test_kill_matrix.py`` shows it: for each mutant it starts one fresh
pytest process (ZLINK_MUTANT) that runs the machines written for the mutant's layer and
the tests named here (``-k``), and requires both to fail. This file ran each mutant a
second time in a process of its own over the whole of tests/core and tests/shell, to
check the same test failed; that run is gone, the table stays here for the kill matrix,
the default-run check and the ``--since`` soundness test.
"""

from __future__ import annotations

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
