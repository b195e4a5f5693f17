"""The kill matrix: every catalogued mutant (zlink_reference_adapter/mutants.py) is caught by
at least one state machine.

Each mutant is switched on in a pytest run of its own (``ZLINK_MUTANT``), forked from a
process that has loaded what a run loads before its mutant is applied (``mutant_runs``
says why that is a fresh run), that runs the four machines in the ``ci`` profile and,
where the unit suites have a test written for the rule the mutant breaks, that test. A
layer kills a mutant when its test fails. The matrix is printed (run with ``-s``;
docs/properties.md records one run).

Each mutant must be killed by the machine written for the layer it breaks (``OWNERS``):
those kills come within the first few dozen examples of a ci run. Each mutant with a
test written for its rule in the tables of ``tests/test_mutants_unit.py`` and
``tests/test_mutants_coordinators.py`` (``KILLERS``) must fail that test in the same
process: this run is the one that shows the unit tests kill the mutants (it ran those
tests under each mutant already; a second fresh process per mutant only to run them
again was most of the mutants step's time). Other cells of the matrix are kills a
machine makes along the way; a change of a machine's code changes its derandomized
examples and may move them, so they are printed, not required.

By default only the owners and the unit test run under each mutant (about 35 s in all on
a 2-core machine); ``ZLINK_KILL_MATRIX=full`` runs every machine under every mutant
(about 11 minutes), which is how the table in docs/properties.md is made.
"""

from __future__ import annotations

import os
import queue
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from mutant_runs import MutantRuns

from zlink_reference_adapter import mutants

from test_mutants_coordinators import DISPOSAL_KILLER
from test_mutants_coordinators import KILLER as COORDINATOR_KILLER
from test_mutants_unit import KILLER as QUEUE_KILLER

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "properties.md"

MACHINES = {
    "core": "tests/stateful/test_core_machine.py",
    "runtime": "tests/stateful/test_runtime_machine.py",
    "coordinator": "tests/stateful/test_coordinator_machine.py",
    "disposal": "tests/stateful/test_disposal_machine.py",
}
LAYERS = [*MACHINES, "unit"]

# mutant -> (unit test file, test name) written for the rule it breaks
UNIT_TESTS: dict[str, tuple[str, str]] = {
    **{m: ("tests/coordinators/test_se10.py", t) for m, t in COORDINATOR_KILLER.items()},
    **{m: ("tests/coordinators/test_disposal.py", t) for m, t in DISPOSAL_KILLER.items()},
    **{m: ("tests/core tests/shell", t) for m, t in QUEUE_KILLER.items()},
    # the invariants' own mutants, and the unit tests written for their rules
    "end_slice_drops_wakeup": ("tests/shell/test_queue.py",
                               "test_SE_6_4_slice_ends_when_the_time_budget_is_used"),
    "closed_queue_admits": ("tests/shell/test_queue.py",
                            "test_SE_6_2_close_rejects_new_work_and_finishes_accepted_work"),
    "dispose_safely_keeps_waiters": (
        "tests/coordinators/test_disposal.py",
        "test_SD_3_await_completion_returns_once_dispose_safely_leaves_only_zombies"),
    "final_counted_once_placed": (
        "tests/coordinators/test_d22_final_from_acceptance.py",
        "test_D_22_a_final_work_is_active_from_acceptance"),
    "scope_wait_check_off": (
        "tests/coordinators/test_se8_2_scope_waits.py",
        "test_SE_8_2_scope_wait_from_its_own_work_raises_at_once"),
    # a wrong streak the runtime reports faithfully: only a derived streak sees it
    "barrier_keeps_streak": (
        "tests/stateful/test_invariants.py",
        "test_D_4_the_trace_checker_derives_the_streak_a_barrier_take_resets"),
    # a wrong choice of line that keeps the streak and every line's order: only a
    # checker deriving the line each take serves sees it
    "lifecycle_waits_for_application": (
        "tests/stateful/test_invariants.py",
        "test_SE_6_6_the_trace_checker_derives_the_line_each_take_serves"),
    # a bound after dispose_safely that spares the zombies (D-27)
    "bound_spares_zombies": (
        "tests/coordinators/test_disposal.py",
        "test_SD_1_dispose_after_timeout_after_dispose_safely_cancels_the_zombies"),
    # a view that leaves the barrier-next line out: only barrier-next work shows it
    "statistics_skip_barrier_line": (
        "tests/coordinators/test_statistics_threads.py",
        "test_D_24_statistics_from_threads_is_one_consistent_view"),
}


# mutant -> every (unit test paths, test) written for the rule it breaks, each of which
# must fail under it: the queue's, the coordinators' (SE-10) and the disposal (SD) tests.
KILLERS: dict[str, list[tuple[str, str]]] = {}
for _paths, _table in (("tests/core tests/shell", QUEUE_KILLER),
                       ("tests/coordinators/test_se10.py", COORDINATOR_KILLER),
                       ("tests/coordinators/test_disposal.py", DISPOSAL_KILLER)):
    for _mutant, _test in _table.items():
        KILLERS.setdefault(_mutant, []).append((_paths, _test))


# mutant -> the machines that must kill it: those of the layer it breaks
OWNERS: dict[str, tuple[str, ...]] = {
    "drain_without_flag_check": ("core", "runtime"),
    "drain_on_submitter_stack": ("runtime",),
    "lifecycle_ignores_burst": ("core", "runtime"),
    "barrier_keeps_streak": ("core", "runtime"),
    "lifecycle_waits_for_application": ("core", "runtime"),
    "close_drops_accepted": ("core", "runtime"),
    "capacity_off_by_one": ("core", "runtime"),
    "fifo_swap": ("core", "runtime"),
    "time_budget_ignored": ("core", "runtime"),
    "end_slice_drops_wakeup": ("core", "runtime"),
    "closed_queue_admits": ("core", "runtime"),
    "resume_skips_requeue": ("runtime",),
    "post_capacity_off_by_one": ("runtime",),
    "admission_split": ("runtime",),
    "spotwide_releases_claim_on_yield": ("coordinator",),
    "payload_reserved_twice": ("coordinator",),
    "per_actor_shares_spot_queue": ("coordinator",),
    "spot_wide_skips_spot_gate": ("coordinator",),
    "timers_share_one_queue": ("coordinator",),
    "actors_share_one_mailbox": ("coordinator",),
    "actor_queue_ignores_payload": ("coordinator",),
    "snapshot_reads_live_state": ("coordinator",),
    "reentrancy_check_off": ("coordinator",),
    "scope_wait_check_off": ("coordinator",),
    "queue_exposed": ("coordinator",),
    "dispose_safely_counts_zombies": ("core", "disposal"),
    "dispose_runs_never_started": ("core", "disposal"),
    "cancel_off_turn": ("disposal",),
    "dispose_safely_keeps_waiters": ("disposal",),
    "final_counted_once_placed": ("disposal",),
    # the disposal machine derives the timer and the pending cancellations from its own
    # calls and the clock; the copying machine, which followed the trace, let these by
    "timeout_fires_late": ("disposal",),
    "timeout_expires_one_queue": ("disposal",),
    "bound_spares_zombies": ("disposal",),
    "dispose_safely_cancels_queued": ("disposal",),
    # statistics() held to the trace, not believed
    "statistics_skip_barrier_line": ("runtime",),
}


FULL = os.environ.get("ZLINK_KILL_MATRIX") == "full"


# The environment of every mutant's run but the mutant itself.
RUN_ENV = dict(os.environ, ZLINK_HYPOTHESIS_PROFILE="ci", ZLINK_TEST_TIMEOUT="5")


def kills(mutant: str, runs: MutantRuns | None = None
          ) -> tuple[dict[str, bool | None], list[str]]:
    """Run the layers against one mutant (every machine with ``FULL``, else its owners,
    and its unit tests); which layers fail (kill it), None for a layer not run, and the
    required unit tests (``KILLERS``) that did not fail. ``runs``: the server to fork
    the run from (None: one of its own, for this run only)."""
    run = list(MACHINES) if FULL else list(OWNERS[mutant])
    paths = [MACHINES[layer] for layer in run]
    select = "runTest"
    unit = UNIT_TESTS.get(mutant)
    required = KILLERS.get(mutant, [])
    for where, test in ([unit] if unit is not None else []) + required:
        paths += [p for p in where.split() if p not in paths]
        select += f" or {test}"
    args = [*paths, "-k", select, "-q", "-rf", "--tb=no", "-p", "no:cacheprovider",
            "-o", "timeout=240"]
    if runs is None:
        with MutantRuns(ROOT, RUN_ENV) as own:
            code, stdout = own.run(args, {"ZLINK_MUTANT": mutant}, timeout=900)
    else:
        code, stdout = runs.run(args, {"ZLINK_MUTANT": mutant}, timeout=900)
    failed = re.findall(r"^FAILED (\S+)", stdout, re.M)
    passed_or_failed = re.search(r"\d+ (passed|failed)", stdout)
    if passed_or_failed is None:
        raise AssertionError(f"{mutant}: the run did not complete (exit {code}):\n"
                             f"{stdout[-6000:]}")
    out: dict[str, bool | None] = {
        layer: any(path in f for f in failed) if layer in run else None
        for layer, path in MACHINES.items()}
    out["unit"] = unit is not None and any(unit[1] in f for f in failed)
    missed = [test for _, test in required if not any(test in f for f in failed)]
    return out, missed


def _cell(value: bool | None) -> str:
    return "x" if value else ("-" if value is not None else " ")


def render(matrix: dict[str, dict[str, bool | None]]) -> str:
    """The matrix as the Markdown table docs/properties.md records."""
    lines = ["| mutant | rule | " + " | ".join(LAYERS) + " |",
             "|---|---|" + "---|" * len(LAYERS)]
    for name in sorted(matrix):
        row = matrix[name]
        unit = "x" if row["unit"] else ("-" if name in UNIT_TESTS else "n/a")
        cells = [_cell(row[layer]) for layer in MACHINES] + [unit]
        lines.append(f"| `{name}` | {mutants.CATALOGUE[name].rule} | " +
                     " | ".join(cells) + " |")
    return "\n".join(lines)


def recorded() -> dict[str, dict[str, bool]]:
    """The matrix recorded in docs/properties.md (between the kill-matrix markers)."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- kill-matrix -->\n(.*?)\n<!-- /kill-matrix -->", text, re.S)
    assert found, "docs/properties.md lost its kill-matrix markers"
    rows = {}
    for line in found.group(1).strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].strip("`")] = {layer: cells[2 + i] == "x"
                                     for i, layer in enumerate(LAYERS)}
    return rows


def test_every_mutant_has_owners_and_a_recorded_row() -> None:
    """The catalogue, the owners and the recorded matrix name the same mutants, and the
    recorded matrix shows each owner's kill."""
    assert sorted(OWNERS) == sorted(mutants.CATALOGUE)
    rows = recorded()
    assert sorted(rows) == sorted(mutants.CATALOGUE)
    for name, owners in OWNERS.items():
        assert all(rows[name][m] for m in owners), f"docs/properties.md: {name} row"


@pytest.mark.slow
@pytest.mark.timeout(1800 if FULL else 900)
def test_every_mutant_is_killed_by_a_machine() -> None:
    names = sorted(mutants.CATALOGUE)
    servers: queue.Queue[MutantRuns] = queue.Queue()

    def kills_on_a_server(name: str) -> tuple[dict[str, bool | None], list[str]]:
        server = servers.get()
        try:
            return kills(name, server)
        finally:
            servers.put(server)

    with MutantRuns(ROOT, RUN_ENV) as one, MutantRuns(ROOT, RUN_ENV) as two:
        servers.put(one)
        servers.put(two)
        with ThreadPoolExecutor(max_workers=2) as pool:
            runs = dict(zip(names, pool.map(kills_on_a_server, names), strict=True))
    results = {name: row for name, (row, _) in runs.items()}
    print("\nkill matrix (x: the layer fails under the mutant; n/a: no unit test mapped;"
          " blank: not run, see ZLINK_KILL_MATRIX=full)")
    print(render(results))
    survivors = [m for m, row in results.items() if not any(row[k] for k in MACHINES)]
    assert not survivors, f"mutants no machine catches: {survivors}"
    missed = [(m, o) for m, owners in OWNERS.items() for o in owners if not results[m][o]]
    assert not missed, f"mutants their own machine no longer catches: {missed}"
    unit_missed = {name: tests for name, (_, tests) in runs.items() if tests}
    assert not unit_missed, f"mutants the test written for their rule no longer " \
                            f"catches: {unit_missed}"
