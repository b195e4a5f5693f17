"""Profiles of the manifest: ``ci`` (the pinned runs), ``deep`` (larger bounds) and
``simulate`` (TLC's random simulation), and the progress a long run reports.

The deep and simulate runs themselves take minutes and are not run here; their entries,
configurations and command lines are checked, a simulation is run briefly on a bug
configuration (it must find the bug), and the progress wrapper is run on a small
configuration (it reports TLC's counters and moves no count).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from zlink_tool.tla.runner import (
    ManifestError,
    Progress,
    Simulation,
    ToolMissingError,
    find_jar,
    find_java,
    load_manifest,
    parse_tlc_output,
    profile_names,
    run_entry,
    tlc_command,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
MANIFEST = MODELS / "manifest.json"


def _tools() -> tuple[str, Path]:
    try:
        return find_java(), find_jar()
    except ToolMissingError as exc:
        pytest.skip(str(exc))


def test_profiles_are_ci_deep_and_simulate() -> None:
    manifest = load_manifest(MANIFEST)
    assert manifest.profile == "ci"
    assert profile_names(manifest) == ["ci", "deep", "simulate"]
    deep = load_manifest(MANIFEST, "deep")
    names = {e.name for e in deep.entries}
    assert {"SerialQueueDeep", "SpotWideDeep"} <= names
    for entry in deep.entries:
        assert entry.simulate is None
        assert entry.distinct is not None and entry.total is not None, \
            f"{entry.name}: a deep run's counts are pinned when measured"
    simulate = load_manifest(MANIFEST, "simulate")
    assert all(e.simulate is not None for e in simulate.entries)
    with pytest.raises(ManifestError, match="no profile 'nightly'; profiles: ci, deep"):
        load_manifest(MANIFEST, "nightly")


def test_a_simulation_run_passes_num_depth_and_seed(tmp_path: Path) -> None:
    entry = load_manifest(MANIFEST, "simulate").entries[0]
    assert entry.simulate is not None
    argv = tlc_command("java", Path("t.jar"), entry, tmp_path)
    at = argv.index("-simulate")
    assert argv[at:at + 6] == ["-simulate", f"num={entry.simulate.traces}", "-depth",
                               str(entry.simulate.depth), "-seed", str(entry.simulate.seed)]
    assert argv[-1] == entry.module


def test_a_simulation_without_a_violation_is_a_success() -> None:
    text = ("Starting... (2026-12-03 09:36:52)\nProgress(-1) at 2026-12-03 09:37:02: 200001 "
            "states generated, -1 distinct states found, -1 states left on queue.\n"
            "Finished in 10899ms at (2026-12-03 09:37:02)\n")
    assert parse_tlc_output(text, 0, simulation=True).result == "success"
    assert parse_tlc_output(text, 0).result == "error"


@pytest.mark.slow
def test_SE_6_1_a_short_simulation_finds_the_burst_bug() -> None:
    java, jar = _tools()
    entry = next(e for e in load_manifest(MANIFEST, "simulate").entries
                 if e.expected.name == "LifecycleBurstBounded")
    short = dataclasses.replace(entry, simulate=Simulation(depth=60, seed=1, traces=2000))
    seen: list[Progress] = []
    result = run_entry(short, MODELS, java, jar, timeout=120, on_progress=seen.append,
                       progress_every=1)
    assert result.ok, result.problems
    assert all("simulating" in p.describe() for p in seen)
    assert result.outcome.violated == "LifecycleBurstBounded"


@pytest.mark.slow
def test_progress_reports_tlc_counters_and_moves_no_count() -> None:
    java, jar = _tools()
    entry = next(e for e in load_manifest(MANIFEST).entries
                 if e.name == "SerialQueueTwoWorks")
    seen: list[Progress] = []
    result = run_entry(entry, MODELS, java, jar, timeout=120, on_progress=seen.append,
                       progress_every=1)
    assert result.ok, result.problems  # the pinned distinct and total counts
    assert seen, "no progress reported"
    assert all(p.distinct >= 0 and p.queue >= 0 for p in seen)
    assert "distinct states found" in seen[0].describe()
