"""Every coordinator mutant is killed by the SE-10 tests: each mutant is switched on in
a fresh pytest process over tests/coordinators; the test written for the SE-10 item the
mutant breaks must be among the failures."""

from __future__ import annotations

import pytest

from test_mutants_unit import run_with

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


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(DISPOSAL_KILLER))
def test_SD_tests_kill_disposal_mutant(mutant: str) -> None:
    code, failed = run_with(mutant, ["tests/coordinators/test_disposal.py"],
                            DISPOSAL_KILLER[mutant])
    print(f"\n{mutant}: {len(failed)} failing test(s)")
    assert code != 0, f"mutant {mutant} survived the disposal tests"
    assert any(DISPOSAL_KILLER[mutant] in name for name in failed), (
        f"mutant {mutant} was not caught by {DISPOSAL_KILLER[mutant]}"
    )


@pytest.mark.slow
@pytest.mark.parametrize("mutant", sorted(KILLER))
def test_coordinator_mutants_are_killed_by_the_SE_10_tests(mutant: str) -> None:
    code, failed = run_with(mutant, ["tests/coordinators/test_se10.py"], KILLER[mutant])
    print(f"\n{mutant}: {len(failed)} failing test(s)")
    for name in failed:
        print(f"    {name}")
    assert code != 0, f"mutant {mutant} survived the coordinator tests"
    assert any(KILLER[mutant] in name for name in failed), (
        f"mutant {mutant} was not caught by {KILLER[mutant]}"
    )
