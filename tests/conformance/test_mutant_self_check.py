"""The suite catches deliberate bugs: with a mutant of zlink_reference_adapter/mutants.py
switched on in the reference adapter (through ZLINK_ADAPTER_PRELOAD), the cases of the rule
it breaks fail. A few representatives; the full kill matrix is a separate self-test."""

from __future__ import annotations

import pytest

from zlink_conformance.catalog import Catalogue, select
from zlink_conformance.runner import Runner
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from kit_helpers import child_env

pytestmark = pytest.mark.slow  # one adapter process per mutant


@pytest.mark.parametrize(("mutant", "rule"), [
    ("time_budget_ignored", "SE-10.10"),
    ("reentrancy_check_off", "SE-10.13"),
    ("snapshot_reads_live_state", "SE-10.12"),
    ("spotwide_releases_claim_on_yield", "SE-10.11"),
    ("cancel_off_turn", "D-8"),
    ("dispose_safely_counts_zombies", "SD-2"),
    ("drain_without_flag_check", "SE-10.9"),
])
def test_a_mutant_fails_the_cases_of_the_rule_it_breaks(catalogue: Catalogue, mutant: str,
                                                        rule: str) -> None:
    env = child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE),
                    ZLINK_MUTANT_NAME=mutant)
    with Runner(reference_adapter_command(), env=env, timeout=5) as runner:
        report = runner.run(select(catalogue, [rule]))
    assert report.results
    assert not report.success(), f"{mutant} survived the cases of {rule}"
