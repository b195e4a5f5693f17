"""Counterexamples a person can read, checked against both layers.

For every bug configuration of models/manifest.json, TLC's counterexample is read into
steps (``zlink_tool.tla.counterexample``) and printed; the printed trace must name the
invariant the manifest expects, with its rules, and end in a state that breaks it:

* the TLA+ side: a module that starts in exactly the last state, checked for that one
  invariant, is refused by TLC at once (``check_state_with_tlc``);
* for SerialQueue configurations, the Python side too: the last state is read into a
  ``QueueCore`` (``zlink_tool.statespace.state_of`` and ``concretize``, the abstraction
  the state-space agreement uses) and the Python invariant of the same name must find
  it broken, so the two layers agree on the counterexample.

The liveness bug (``close_drops_accepted``) ends in a state the behaviour never leaves
(stuttering) with an accepted work that is not done: what AcceptedWorkCompletes forbids.

The parsing tests at the end need no Java: they read saved TLC output under ``data/``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path

import pytest

from zlink_model.invariants import check_core
from zlink_model.queue import QueueConfig
from zlink_tool.cli.main import main
from zlink_tool.resultcache import ResultCache
from zlink_tool.statespace import concretize, load_bounds, state_of
from zlink_tool.tla.counterexample import (
    Counterexample,
    check_state_with_tlc,
    describe_invariant,
    from_run,
    overrides_of,
    parse_counterexample,
    parse_value,
    render,
    to_json,
)
from zlink_tool.tla.runcache import RunCache
from zlink_tool.tla.runner import (
    RunResult,
    ToolMissingError,
    check_manifest,
    find_jar,
    find_java,
    load_manifest,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
DATA = Path(__file__).resolve().parent / "data"

BUG_RUNS = (
    "SerialQueue_drain_without_flag_check",
    "SerialQueue_resume_skips_requeue",
    "SerialQueue_admission_split",
    "SerialQueue_lifecycle_ignores_burst",
    "SerialQueue_close_drops_accepted",
    "SpotWidePerActorOverlap",
    "SpotWide_spotwide_releases_claim_on_yield",
    "SpotWide_payload_reserved_twice",
    "Disposal_dispose_safely_counts_zombies",
)


def _tools() -> tuple[str, Path]:
    try:
        return find_java(), find_jar()
    except ToolMissingError as exc:
        pytest.skip(str(exc))


# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("counterexamples")


def _run_cache(java: str, jar: Path) -> RunCache | None:
    """``zlink verify``'s TLC outcomes (its tests step names the folder in
    ``ZLINK_TLC_CACHE``), which its models step reads too: a bug configuration is run
    by TLC once per verify, by whichever of the two comes first. The outcome is kept with
    the digests of its modules, configuration, command, jar and Java (``RunCache``), so a
    kept one is the outcome TLC gives these inputs. None outside verify: TLC runs."""
    folder = os.environ.get("ZLINK_TLC_CACHE")
    if not folder:
        return None
    store = ResultCache(ROOT, location=Path(folder).resolve())
    return RunCache(store, MODELS, java, jar)


@pytest.fixture(scope="module")
def bug_runs() -> Mapping[str, RunResult]:
    """Every bug configuration, run once for the whole module (two at a time)."""
    java, jar = _tools()
    manifest = load_manifest(MODELS / "manifest.json")
    entries = [e for e in manifest.entries if e.name in BUG_RUNS]
    assert sorted(e.name for e in entries) == sorted(BUG_RUNS)
    runs = _run_cache(java, jar)
    kept = {e.name: hit for e in entries if runs is not None and (hit := runs.load(e))}
    fresh = [e for e in entries if e.name not in kept]
    report = check_manifest(manifest, fresh, workers=2, java=java, jar=jar,
                            on_done=None if runs is None else lambda r, _i, _n: runs.keep(r)
                            ) if fresh else None
    return {r.entry.name: r for r in (report.results if report else ())} | kept


def _counterexample(result: RunResult) -> Counterexample:
    assert result.ok, result.problems
    cex = from_run(result.output, result.outcome.result, result.outcome.violated)
    assert cex is not None
    return cex


def _printed(result: RunResult, cex: Counterexample) -> str:
    assert cex.violated is not None
    return render(cex, describe_invariant(cex.violated, ROOT),
                  overrides_of(MODELS, result.entry.config))


def _check_safety(result: RunResult, invariant: str, rule: str) -> Counterexample:
    """The printed trace names the invariant and its rule, marks the last step, and
    TLC itself finds the last state breaking the invariant."""
    cex = _counterexample(result)
    assert cex.violated == invariant
    assert cex.kind == "invariant"
    text = _printed(result, cex)
    assert text.startswith(f"counterexample: invariant {invariant} is violated")
    assert f"rule {rule} " in text
    assert text.splitlines()[-1].strip() and f"<- {invariant} breaks here" in text
    assert "broken variant:" in text or result.entry.name == "SpotWidePerActorOverlap"
    java, jar = _tools()
    assert check_state_with_tlc(cex.final, invariant, MODELS, result.entry.module,
                                result.entry.config, java, jar), \
        f"TLC does not find {invariant} broken in the counterexample's last state"
    return cex


def _python_verdict(result: RunResult, cex: Counterexample, index: int = -1) -> set[str]:
    """The Python invariants broken by state ``index`` of a SerialQueue counterexample,
    read into a core."""
    bounds = load_bounds(MODELS / result.entry.config, broken_ok=True)
    state = state_of(cex.steps[index].values, bounds)
    core, records = concretize(state, bounds, QueueConfig(bounds.policy(), units_per_ms=1))
    return {v.invariant for v in check_core(core, records=records.values())}


def _check_serial_queue(result: RunResult, invariant: str, rule: str) -> None:
    cex = _check_safety(result, invariant, rule)
    assert invariant in _python_verdict(result, cex), \
        f"the Python {invariant} does not find the counterexample's last state broken"
    assert invariant not in _python_verdict(result, cex, -2)


# --------------------------------------------------------- SerialQueue: two layers
@pytest.mark.slow
def test_SE_6_5_drain_without_flag_check_counterexample_breaks_NoDoubleDrain_in_both_layers(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_serial_queue(bug_runs["SerialQueue_drain_without_flag_check"], "NoDoubleDrain",
                        "SE-6.5")


@pytest.mark.slow
def test_SE_6_7_resume_skips_requeue_counterexample_breaks_NoResumeWithoutRequeue_in_both(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_serial_queue(bug_runs["SerialQueue_resume_skips_requeue"],
                        "NoResumeWithoutRequeue", "SE-6.7")


@pytest.mark.slow
def test_SE_5_1_admission_split_counterexample_breaks_CapacityRespected_in_both_layers(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_serial_queue(bug_runs["SerialQueue_admission_split"], "CapacityRespected",
                        "SE-5.1")


@pytest.mark.slow
def test_SE_6_1_lifecycle_ignores_burst_counterexample_breaks_LifecycleBurstBounded_in_both(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_serial_queue(bug_runs["SerialQueue_lifecycle_ignores_burst"],
                        "LifecycleBurstBounded", "SE-6.1")


@pytest.mark.slow
def test_SE_6_6_close_drops_accepted_counterexample_leaves_an_accepted_work_for_ever(
        bug_runs: Mapping[str, RunResult]) -> None:
    result = bug_runs["SerialQueue_close_drops_accepted"]
    cex = _counterexample(result)
    assert (cex.kind, cex.violated) == ("property", "AcceptedWorkCompletes")
    text = _printed(result, cex)
    assert text.startswith("counterexample: property AcceptedWorkCompletes is violated")
    assert "rule SE-6.6 " in text
    assert "close  [SE-6.2]  (broken variant close_drops_accepted)" in text
    # The behaviour ends standing still (or in a loop) with a work accepted, not done.
    assert cex.stuttering or cex.loop_to is not None
    ending = cex.steps[(cex.loop_to or len(cex.steps)) - 1:]
    live = {"queued", "running", "suspended", "requeued"}
    stuck = [w for w, p in enumerate(cex.final.values["phase"], 1)
             if all(s.values["phase"][w - 1] in live for s in ending)]
    assert stuck, "no accepted work stays unfinished in the counterexample's end"


# ------------------------------------------------------ SpotWide, Disposal: TLA+ side
@pytest.mark.slow
def test_SE_4_2_per_actor_overlap_counterexample_breaks_NoOverlap(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_safety(bug_runs["SpotWidePerActorOverlap"], "NoOverlap", "SE-4.2")


@pytest.mark.slow
def test_SE_4_6_releases_claim_on_yield_counterexample_breaks_YieldedActorKeepsClaim(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_safety(bug_runs["SpotWide_spotwide_releases_claim_on_yield"],
                  "YieldedActorKeepsClaim", "SE-4.6")


@pytest.mark.slow
def test_SE_5_3_payload_reserved_twice_counterexample_breaks_PayloadReservedOnce(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_safety(bug_runs["SpotWide_payload_reserved_twice"], "PayloadReservedOnce",
                  "SE-5.3")


@pytest.mark.slow
def test_SD_3_counts_zombies_counterexample_breaks_AwaitCompletionIgnoresZombies(
        bug_runs: Mapping[str, RunResult]) -> None:
    _check_safety(bug_runs["Disposal_dispose_safely_counts_zombies"],
                  "AwaitCompletionIgnoresZombies", "SD-3")


@pytest.mark.slow
def test_cli_prints_json_and_draws_the_counterexample(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _tools()
    out_json, out_html = tmp_path / "report.json", tmp_path / "cex.html"
    code = main(["models", "check", "--only", "SerialQueue_drain_without_flag_check",
                 "--counterexamples", "--json", str(out_json), "--html", str(out_html)])
    printed = capsys.readouterr().out
    assert code == 0
    assert "counterexample: invariant NoDoubleDrain is violated" in printed
    assert "drain_scheduled" in printed and "<- NoDoubleDrain breaks here" in printed
    data = json.loads(out_json.read_text(encoding="utf-8"))
    cex = data["runs"][0]["counterexample"]
    assert cex["violated"] == "NoDoubleDrain"
    assert cex["steps"][0]["event"] == "init"
    assert cex["steps"][-1]["state"]["drain_scheduled"] is True
    assert cex["steps"][-1]["state"]["draining"] is True
    assert any(r["id"] == "SE-6.5" for r in cex["invariant"]["rules"])
    page = out_html.read_text(encoding="utf-8")
    assert "<svg" in page and "diverges:" in page and "NoDoubleDrain" in page


# -------------------------------------------------------------- parsing (no Java)
def test_values_as_tlc_prints_them() -> None:
    assert parse_value('<<1, "a", TRUE>>') == (1, "a", True)
    assert parse_value("{}") == frozenset()
    assert parse_value("[a1 |-> <<>>, a2 |-> <<3>>]") == {"a1": (), "a2": (3,)}
    assert parse_value('(1 :> "x" @@ 2 :> "y")') == {1: "x", 2: "y"}
    assert parse_value("-1") == -1
    with pytest.raises(ValueError):
        parse_value("<<1, ~>>")


def test_SE_6_7_saved_counterexample_reads_as_steps_with_changes_only() -> None:
    text = (DATA / "counterexample.resume_skips_requeue.tool.out").read_text(encoding="utf-8")
    cex = parse_counterexample(text, "NoResumeWithoutRequeue")
    assert cex is not None
    assert [s.event for s in cex.steps] == [
        "init", "admit", "enter_drain", "take_next", "yield_turn", "call_returns", "requeue"]
    assert cex.final.variant == "ResumeSkipsRequeue"
    assert cex.about(1) == [1]
    assert {name for name, _, _ in cex.changes(2)} == {"drainScheduled", "draining"}
    printed = render(cex, describe_invariant("NoResumeWithoutRequeue", ROOT))
    assert "step  3: take_next work 1  [SE-6.6, SE-6.1]" in printed
    assert "phase[1]" in printed and "suspended -> running" in printed
    assert "current (turn holder)              none -> 1" in printed
    data = to_json(cex)
    assert data["steps"][-1]["changed"]["phase"] == {
        "before": ["suspended", "new", "new", "new"], "after": ["running", "new", "new", "new"]}


def test_SE_5_3_saved_spot_wide_counterexample_names_items_and_actor_queues() -> None:
    text = (DATA / "counterexample.payload_reserved_twice.tool.out").read_text(
        encoding="utf-8")
    cex = parse_counterexample(text, "PayloadReservedOnce")
    assert cex is not None
    printed = render(cex)
    assert "step  2: transfer item 1" in printed
    assert "a_line (Actor queue line)[a1]" in printed


def test_SE_6_6_saved_liveness_counterexample_ends_standing_still() -> None:
    text = (DATA / "counterexample.close_drops_accepted.tool.out").read_text(
        encoding="utf-8")
    cex = parse_counterexample(text, "AcceptedWorkCompletes", "property")
    assert cex is not None and cex.stuttering
    assert "nothing happens any more" in render(cex)
