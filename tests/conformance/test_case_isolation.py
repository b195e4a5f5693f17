"""Cases are isolated in one adapter process (adapter-protocol.md, ``reset``): whatever a
case leaves behind (an exception nobody retrieved, a task still pending) is reported with
that case and cleared before the next, so a case's verdict in the full suite, run twice
in one reference adapter process, is its verdict when it runs alone in a fresh one. Each
fresh adapter is forked from a server that has loaded the adapter and run nothing
(``adapter_forks``): a fresh process's state when the adapter's ``main`` begins.

Checked with the reference runtime as it is and with a mutant whose faults outlive the
case that causes them (``cancel_off_turn``: a drive task dies with an exception nobody
retrieves, reported when the task is collected, which used to be during a later case)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from zlink_conformance.catalog import Case, Catalogue
from zlink_conformance.runner import Runner
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from adapter_forks import AdapterForks
from kit_helpers import child_env

pytestmark = pytest.mark.slow  # the suite twice, then every case in a fresh adapter


def _env(mutant: str | None) -> dict[str, str]:
    if mutant is None:
        return child_env()
    return child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE), ZLINK_MUTANT_NAME=mutant)


def _alone(case: Case, forks: AdapterForks) -> str:
    with Runner(forks.command, timeout=10) as runner:
        (result,) = runner.run([case]).results
    return result.status


@pytest.mark.parametrize("mutant", [None, "cancel_off_turn"])
def test_SE_1_1_a_case_has_the_same_verdict_in_the_suite_as_alone(
    catalogue: Catalogue, mutant: str | None,
) -> None:
    env = _env(mutant)
    cases = list(catalogue.cases)
    with Runner(reference_adapter_command(), env=env, timeout=10) as runner:
        report = runner.run(cases + cases)
    assert report.restarts == 0, "the suite must run in one adapter process"
    first = {r.case.id: (r.status, r.messages) for r in report.results[:len(cases)]}
    second = {r.case.id: (r.status, r.messages) for r in report.results[len(cases):]}
    with AdapterForks(reference_adapter_command()[0], env) as forks, \
            ThreadPoolExecutor(max_workers=4) as pool:
        alone = dict(zip([c.id for c in cases],
                         pool.map(lambda c: _alone(c, forks), cases), strict=True))
    differ = {cid: {"alone": alone[cid], "suite": first[cid], "again": second[cid]}
              for cid in alone
              if not alone[cid] == first[cid][0] == second[cid][0]}
    assert differ == {}
    if mutant is None:
        assert set(alone.values()) == {"passed"}
    else:
        assert "failed" in alone.values()  # the mutant is seen, by its own cases
