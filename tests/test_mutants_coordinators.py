"""The coordinators' catalogued mutants and, for each, the SE-10 or SD test written for
the rule it breaks: that test must fail when the mutant is on.

``tests/stateful/test_kill_matrix.py`` shows it, in the one fresh process per mutant
that also runs the machines (``KILLERS`` there); this file no longer starts a second
process per mutant to run the same test again."""

from __future__ import annotations

# mutant -> the SE-10 test written for the rule it breaks
KILLER = {
    "queue_exposed": "test_SE_10_01_no_public_member_of_a_handle_coordinator_or_queue_hands",
    "per_actor_shares_spot_queue": "test_SE_10_02_per_actor_long_work_on_two_actors_overlaps",
    "spot_wide_skips_spot_gate": "test_SE_10_03_spot_wide_same_submissions_run_one_after",
    "fifo_swap": "test_SE_10_04_same_actor_keeps_submission_order",
    "timers_share_one_queue": "test_SE_10_05_per_actor_timers_overlap_by_name",
    "actors_share_one_mailbox": "test_SE_10_06_full_actor_mailbox_rejects_only_that_actor",
    "actor_queue_ignores_payload": "test_SE_10_07_spot_wide_large_payload_is_rejected",
    "payload_reserved_twice": "test_SE_10_08_spot_queue_fills_by_count_regardless",
    "lifecycle_ignores_burst": "test_SE_10_09_lifecycle_overtakes_then_one_application",
    "time_budget_ignored": "test_SE_10_10_owner_past_its_time_budget_has_its_slice_cut",
    "spotwide_releases_claim_on_yield": "test_SE_10_11_yielded_spot_wide_actor_holds_only",
    "snapshot_reads_live_state": "test_SE_10_12_registration_change_mid_message",
    "reentrancy_check_off": "test_SE_10_13_waiting_on_the_same_coordinator_raises",
}


# mutant -> the SD test written for the rule it breaks
DISPOSAL_KILLER = {
    "dispose_safely_counts_zombies":
        "test_SD_2_dispose_safely_turns_live_work_into_zombies_that_run_on",
    "dispose_runs_never_started": "test_SD_1_dispose_cancels_never_started_and_suspended_work",
    "cancel_off_turn": "test_SD_1_dispose_cancels_never_started_and_suspended_work",
}
