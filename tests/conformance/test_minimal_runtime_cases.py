"""Cases a minimal runtime can run, each failed by a broken adapter (a bug switch): the
``core`` profile (an Actor, a PerActor Spot and an Entry Spot whose works can wait
synchronously, nothing more) runs at least 30 cases, among them owners that stay
independent when there are more of them than a pool has threads, a parked drain that
keeps no other owner waiting, the Entry Spot variants of the PerActor cases, concurrent
FIFO admission without a capacity policy from several owners at once, and the self-wait
SE-8.2 forbids to deadlock; ``list`` says what a handshake's capabilities run and what
each missing one would add."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from scripted_kit import ev, run_scripted

from zlink_conformance.catalog import load_catalogue, select
from zlink_conformance.profiles import PROFILES, coverage, in_profile
from zlink_conformance.runner import Runner
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from kit_helpers import FAKES, child_env

POOL = str(FAKES / "preload_bounded_pool.py")
# Each new case and the bug switch that fails it: (preload file, its environment).
KILLERS: dict[str, tuple[str, dict[str, str]]] = {
    "required_SE_4_2_eight_gated_actors_are_all_in_progress_at_once": (POOL, {}),
    "required_SE_4_2_eight_gated_actors_of_an_entry_spot_are_all_in_progress_at_once":
        (POOL, {}),
    "required_SE_2_3_eight_gated_actor_executors_are_all_in_progress_at_once": (POOL, {}),
    "required_SE_4_2_a_parked_drain_does_not_keep_another_actor_waiting":
        (POOL, {"ZLINK_POOL_THREADS": "1"}),
    "required_SE_4_2_a_parked_drain_does_not_keep_another_actor_of_an_entry_spot_waiting":
        (POOL, {"ZLINK_POOL_THREADS": "1"}),
    "required_SE_2_3_a_parked_drain_does_not_keep_another_actor_executor_waiting":
        (POOL, {"ZLINK_POOL_THREADS": "1"}),
    "required_D_11_a_failing_work_fails_alone_on_an_entry_spot":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "per_actor_shares_spot_queue"}),
    "required_SE_10_01_entry_spot_entries_route_by_the_runtime":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "per_actor_shares_spot_queue"}),
    "required_SE_10_04_same_actor_keeps_submission_order_on_an_entry_spot":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "fifo_swap"}),
    "required_SE_10_05_entry_spot_timers_overlap_by_name_and_keep_order_per_name":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "timers_share_one_queue"}),
    "required_SE_10_06_full_actor_mailbox_rejects_only_that_actor_on_an_entry_spot":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "capacity_off_by_one"}),
    "required_SE_4_2_nested_submission_to_another_actor_of_an_entry_spot_runs_meanwhile":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "actors_share_one_mailbox"}),
    "required_SE_4_2_entry_spot_five_owners_in_progress_at_once":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "actors_share_one_mailbox"}),
    "required_SE_6_2_closing_an_entry_spot_finishes_accepted_work_and_refuses_new_work":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "close_drops_accepted"}),
    # Racing nested submissions into one Actor executor: a second drain, a FIFO break.
    "required_SE_6_3_submissions_racing_from_several_owners_into_one_actor_run_one_at_a_time_in_admission_order":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "drain_without_flag_check"}),
    # No reentrancy detection declared: the runtime blocks at the self-wait.
    "required_SE_8_2_a_work_waiting_for_later_work_of_its_own_actor_executor_raises_at_once":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "reentrancy_check_off"}),
    "required_SE_8_2_a_work_waiting_for_later_work_of_its_own_actor_raises_at_once_on_an_entry_spot":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "reentrancy_check_off"}),
    "optional_SE_6_3_concurrent_submissions_to_one_actor_run_one_at_a_time_in_admission_order":
        (str(PRELOAD_FILE), {"ZLINK_MUTANT_NAME": "drain_without_flag_check"}),
}


def test_the_core_profile_runs_at_least_30_cases_among_them_the_new_ones() -> None:
    catalogue = load_catalogue()
    core = {c.id for c in in_profile(catalogue.cases, "core")}
    assert PROFILES["core"] == ("actor", "spot.user.per_actor", "spot.entry", "synchronous_wait")
    assert len(core) >= 30, len(core)
    assert {k for k in KILLERS if k.startswith("required_")} <= core
    # concurrent admission, starvation across owners (eight gated owners, more than a
    # pool of four has threads), self-waits
    for kind in ("required_SE_6_3_submissions_racing_from_several_owners_",
                 "required_SE_4_2_eight_gated_actors_", "required_SE_8_2_a_work_waiting_"):
        assert any(c.startswith(kind) for c in core), kind


def test_SE_6_3_racing_nested_submissions_out_of_admission_order_fail_the_model() -> None:
    """The second broken runtime for the racing case: one that runs an owner's works out
    of admission order (the reference's fifo_swap) fails it on the model's FIFO."""
    cases = select(load_catalogue(), [
        "required_SE_6_3_submissions_racing_from_several_owners_into_one_actor_run_one_at_"
        "a_time_in_admission_order"])
    with Runner(reference_adapter_command(),
                env=child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE),
                              ZLINK_MUTANT_NAME="fifo_swap"), timeout=10) as runner:
        bad = runner.run(cases).results[0]
    assert bad.status == "failed", bad.messages
    assert any(m.startswith("[SE-6.6 model FifoWithinLane] started:") for m in bad.messages), \
        bad.messages


@pytest.mark.parametrize("case_id", sorted(KILLERS))
def test_each_new_case_fails_on_its_bug_switch_and_passes_on_the_reference(
        case_id: str) -> None:
    catalogue = load_catalogue()
    cases = select(catalogue, [case_id])
    preload, extra = KILLERS[case_id]
    with Runner(reference_adapter_command(), env=child_env(), timeout=10) as runner:
        good = runner.run(cases).results[0]
    assert good.status == "passed", good.messages
    with Runner(reference_adapter_command(),
                env=child_env(ZLINK_ADAPTER_PRELOAD=preload, **extra), timeout=10) as runner:
        bad = runner.run(cases).results[0]
    assert bad.status == "failed", (bad.status, bad.messages)
    # every line leads with the rule it is about (the case's, an invariant's, the model's)
    assert bad.messages and all(m.startswith("[") for m in bad.messages), bad.messages


def test_SE_4_2_a_bounded_pool_is_told_it_starves(tmp_path: Path) -> None:
    """The model's wording on the bounded-pool runtime: the drain was posted and did not
    run, and a bounded pool may starve here (it declares no single execution resource)."""
    cases = select(load_catalogue(),
                   ["required_SE_4_2_eight_gated_actors_are_all_in_progress_at_once"])
    with Runner(reference_adapter_command(), env=child_env(ZLINK_ADAPTER_PRELOAD=POOL),
                timeout=10) as runner:
        bad = runner.run(cases).results[0]
    model = [m for m in bad.messages if m.startswith("[SE-4.2 model NoLostWakeup]")]
    assert model, bad.messages
    assert "a drain was posted and did not run while a1 on S/actor:A1" in model[0]
    assert "a runtime that runs works on a bounded pool may starve here" in model[0]


def test_SE_8_2_a_work_that_hangs_waiting_for_later_work_of_its_owner_fails_the_rule(
        tmp_path: Path) -> None:
    """A runtime that deadlocks on a wait for its own owner's later work (instead of the
    immediate error SE-8.2 demands) fails SE-8.2, not a bare timeout: with the wait alone
    (synchronous_wait), reentrancy detection not declared."""
    case = {"id": "required_SE_8_2_self_wait", "rules": ["SE-8.2"],
            "capabilities": ["actor", "synchronous_wait"],
            "steps": [{"cmd": "create", "target": "A", "type": "actor"},
                      {"cmd": "submit", "work": "w", "target": "A", "entry": "execute_actor",
                       "script": [{"op": "submit", "work": "n", "target": "A",
                                   "entry": "execute_actor", "script": []},
                                  {"op": "wait_for", "work": "n"}]}],
            "expect": [{"check": "errors", "work": "w", "kinds": ["reentrancy"]}]}
    steps = [{"cmd": "submit", "work": "w", "events": [
                 ev("accepted", "w", "A"), ev("started", "w", "A"), ev("accepted", "n", "A")]},
             {"cmd": "settle", "hang": True}]
    result = run_scripted(tmp_path, case, steps,
                          capabilities=["actor", "synchronous_wait"], timeout=1.0)
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith(
        "[SE-8.2] w (started@"), result.messages
    assert "waits synchronously for n, which its own owner A admitted" in result.messages[0]


def test_list_says_what_a_hello_runs_and_what_each_missing_capability_adds(
        tmp_path: Path) -> None:
    hello = tmp_path / "hello.json"
    hello.write_text(json.dumps({"protocol": 1, "runtime": {"name": "x"},
                                 "capabilities": list(PROFILES["core"])}))
    proc = subprocess.run([sys.executable, "-m", "zlink_conformance.cli", "list", "--hello",
                           str(hello)], capture_output=True, text=True, timeout=60,
                          env=child_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    catalogue = load_catalogue()
    cov = coverage(catalogue.cases, PROFILES["core"])
    assert f"with capabilities actor, spot.user.per_actor, spot.entry, synchronous_wait: "\
           f"{cov.runs} of " \
           f"{len(catalogue.cases)} cases run" in proc.stdout
    assert "each missing capability would add:" in proc.stdout
    yield_adds = [n for cap, n, _ in cov.would_add if cap == "yield"]
    assert yield_adds and f"yield{' ' * (28 - 5)} +{yield_adds[0]} (" in proc.stdout
    alone = sum(1 for c in catalogue.cases if c.missing(PROFILES["core"]) == ["yield"])
    assert yield_adds[0] == alone


def test_run_profile_core_runs_only_core_cases(tmp_path: Path) -> None:
    catalogue = load_catalogue()
    core = in_profile(catalogue.cases, "core")
    proc = subprocess.run([sys.executable, "-m", "zlink_conformance.cli", "list",
                           "--profile", "core"], capture_output=True, text=True, timeout=60,
                          env=child_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.rstrip().endswith(f"{len(core)} cases ({sum(c.required for c in core)}"
                                         f" required, "
                                         f"{len(core) - sum(c.required for c in core)} "
                                         f"optional)")
