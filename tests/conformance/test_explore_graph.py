"""``explore --strategy graph``: paths of the model's bounded SerialQueue graph, driven
through an adapter, judged by the oracle and compared event by event with the path.

The unit tests hold the walk to its promises (every move of the graph on some path, each
path a well-formed scenario that uses only what the handshake declares, what is out of
reach said with its reason); the adapter tests show it biting: catalogued mutants of the
reference are killed, one of them on a rule the random strategy sees only through
another, and a log that leaves its path is reported with the state where code and model
part. The whole walk against the reference (every transition the protocol can bring
about, no failure, no log off its path) is the slow test.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from zlink_conformance.catalog import load_catalogue, needed_capabilities
from zlink_conformance.explore import Declared, ExploreConfig, explore
from zlink_conformance.explore.graph import RUNTIME_ACTIONS, GraphStrategy
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.protocol.schemas import load_schema, schema_texts
from zlink_conformance.protocol.wire import CAPABILITIES, Event, Reply
from zlink_conformance.runner import Runner
from zlink_conformance.selftest import rule_matches
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from kit_helpers import child_env


def _everything() -> GraphStrategy:
    """Every capability but held_steps: the walk of a runtime driven from outside."""
    return GraphStrategy(Declared.of([c for c in CAPABILITIES if c != "held_steps"], None),
                         seed=0)


def _held() -> GraphStrategy:
    """Every capability, held_steps included: the runtime's own steps are commands."""
    return GraphStrategy(Declared.of(list(CAPABILITIES), None), seed=0)


def _paths_cover_the_moves_and_chain(strategy: GraphStrategy) -> list[int]:
    """Every move of the walk lies on a path, every path starts at Init and each move
    starts where the one before ended; the state where each path ends."""
    walk = strategy.walk
    assert walk is not None
    on_paths = {m for path in strategy.paths for m in path}
    assert on_paths == set(range(len(walk.moves)))
    ends = []
    for path in strategy.paths:
        here = 0
        for m in path:
            assert walk.moves[m].source == here
            here = walk.moves[m].target
        ends.append(here)
    return ends


def test_SE_10_14_graph_paths_take_every_move_of_the_graph() -> None:
    strategy = _everything()
    walk = strategy.walk
    assert walk is not None
    _paths_cover_the_moves_and_chain(strategy)
    # a move is one environment transition and the runtime's own after it
    for move in walk.moves:
        kinds = [strategy.g.steps[i][1].split("(")[0] for i in move.steps]
        assert kinds[0] not in RUNTIME_ACTIONS
        assert all(k in RUNTIME_ACTIONS for k in kinds[1:])
    assert len(strategy.g.steps) == 35466


def test_SE_10_14_graph_bounds_what_any_runtime_driven_from_outside_can_reach() -> None:
    """The 95 %-of-all figure is out of any protocol's reach, and the docs say how far."""
    strategy = _everything()
    walk = strategy.walk
    assert walk is not None
    steps = strategy.g.steps
    assert walk.drivable <= walk.ceiling
    # no environment transition out of a state between two turns of a drain is in the bound
    for i in walk.ceiling:
        source = steps[i][0]
        between = {steps[j][1].split("(")[0] for j in walk.out[source]} & {
            "TakeNext", "EndSlice", "ExitDrain"}
        if between:
            assert steps[i][1].split("(")[0] in RUNTIME_ACTIONS, (
                f"SE-10.14: {steps[i][1]} from state {source} (between two turns) is "
                "counted as reachable from outside")
    share = len(walk.ceiling) / len(steps)
    assert share < 0.95
    docs = (Path(__file__).resolve().parents[2] / "docs" / "conformance.md").read_text()
    figure = f"{len(walk.ceiling):,} transitions remain reachable from Init, {100 * share:.1f} %"
    assert figure in " ".join(docs.split()), (
        f"SE-10.14: docs/conformance.md does not state the computed bound ({figure})")
    assert any(line.startswith(f"  at most {len(walk.ceiling):,} ")
               for line in strategy.coverage.lines())


def test_SE_10_14_held_graph_paths_take_every_transition_and_end_at_rest() -> None:
    strategy = _held()
    walk = strategy.walk
    assert walk is not None and strategy.held
    steps = strategy.g.steps
    # every transition of the graph is a move of its own, the runtime's included
    assert walk.drivable == frozenset(range(len(steps))) and len(steps) == 35466
    assert all(len(move.steps) == 1 for move in walk.moves)
    for here in _paths_cover_the_moves_and_chain(strategy):
        # each path ends with every work it admitted ended and the drain idle
        end = strategy.g.states[here]
        assert not end.draining and not end.drain_scheduled
        assert all(p in ("new", "done", "rejected") for p in end.phase), end
    # the bound of a runtime driven from outside is still computed, and printed
    lines = strategy.coverage.lines()
    assert f"without them at most {len(walk.ceiling):,} " in lines[1], lines[1]


def test_SE_10_14_held_graph_scenarios_send_the_runtime_s_steps_as_commands() -> None:
    strategy = _held()
    caps = set(CAPABILITIES)
    seen: set[str] = set()
    for index in range(0, len(strategy.paths), 61):
        scenario = strategy.scenario(index)
        assert scenario is not None and scenario.well_formed()
        assert "held_steps" in needed_capabilities(scenario.steps())
        assert set(needed_capabilities(scenario.steps())) <= caps
        body = scenario.body
        assert body[0]["held"] is True
        assert scenario.tail() == []  # every gate opened, every call completed in the body
        for before, message in itertools.pairwise(body):
            if message["cmd"] == "step":
                seen.add(message["step"])
            if message["cmd"] == "close":
                assert before["cmd"] == "settle"
    assert seen == {"enter_drain", "take_next", "end_slice", "exit_drain", "requeue"}


def test_SE_10_14_held_graph_reports_a_refused_step_with_the_model_state() -> None:
    strategy = _held()
    index = next(i for i in range(len(strategy.paths)) if len(strategy.expected(i)) >= 3)
    scenario = strategy.scenario(index)
    assert scenario is not None
    at: list[int] = []
    body = strategy._body(strategy.paths[index], at)
    k = next(k for k, m in enumerate(body) if m["cmd"] == "step" and k > 2)
    log = CaseLog()
    log.sent({"cmd": "reset"})
    for message in body[:k + 1]:
        log.sent(message)
    for n, _step, (name, work) in strategy._expected(strategy.paths[index]):
        if n < at[k]:  # the moves before the refused one went as the model says
            log.event(Event(name, {"work": work, "owner": "Q"}))
    log.reply(Reply(k + 2, False, {}, "bad_command", "Q: step take_next is not enabled"))
    parted = strategy.observe(scenario, log)
    assert parted is not None
    assert f"move {at[k] + 1} of " in parted and "the adapter refused its command" in parted
    assert "step take_next is not enabled" in parted and "current=" in parted


def test_SE_10_14_graph_scenarios_are_well_formed_and_use_what_is_declared() -> None:
    strategy = _everything()
    caps = set(CAPABILITIES)
    for index in range(0, len(strategy.paths), 97):
        scenario = strategy.scenario(index)
        assert scenario is not None and scenario.strategy == "graph"
        assert scenario.well_formed()
        assert set(needed_capabilities(scenario.steps())) <= caps
        # one command, one settle: the runtime rests before every move
        body = scenario.body
        assert all(m["cmd"] == "settle" for m in body[1::2])
    assert strategy.scenario(len(strategy.paths)) is None


def test_SE_10_14_graph_says_what_an_adapter_without_a_capability_cannot_reach() -> None:
    no_queue = GraphStrategy(Declared.of(["actor"], None), seed=0)
    assert no_queue.paths == [] and no_queue.unavailable is not None
    assert "queue" in no_queue.unavailable
    no_yield = GraphStrategy(Declared.of(["queue", "virtual_clock"], None), seed=0)
    assert no_yield.unavailable is None and no_yield.paths
    reasons = no_yield.coverage.not_drivable()
    assert any("capability yield" in why for why in reasons), list(reasons)
    for path in no_yield.paths:
        scenario = no_yield.scenario(no_yield.paths.index(path))
        assert scenario is not None
        assert "yield" not in needed_capabilities(scenario.steps())
        break


def _log_of(events: list[tuple[str, str]]) -> CaseLog:
    log = CaseLog()
    for name, work in events:
        log.event(Event(name, {"work": work, "owner": "Q"}))
    return log


def test_SE_10_14_graph_reports_the_state_where_code_and_model_part() -> None:
    strategy = _everything()
    index = next(i for i in range(len(strategy.paths)) if len(strategy.expected(i)) >= 4)
    scenario = strategy.scenario(index)
    assert scenario is not None
    wanted = strategy.expected(index)
    assert strategy.observe(scenario, _log_of(wanted)) is None
    driven = len(strategy.coverage.driven)
    assert driven > 0
    # the same log with its third event changed: code and model part there
    broken = [*wanted[:2], ("finished", "w9"), *wanted[3:]]
    parted = strategy.observe(scenario, _log_of(broken))
    assert parted is not None
    assert "the runtime's finished:w9" in parted and f"{wanted[2][0]}:{wanted[2][1]}" in parted
    assert "current=" in parted  # the model state where they part
    assert strategy.coverage.parted[-1] == (index, parted)


def _mutant_env(name: str, held: bool = False) -> dict[str, str]:
    """The reference adapter with mutant ``name`` on; without held_steps unless
    ``held`` (the walk of a runtime driven from outside)."""
    return child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE), ZLINK_MUTANT_NAME=name,
                     ZLINK_ADAPTER_HELD_STEPS="on" if held else "off")


# Catalogued mutants of the reference the graph walk kills early on its path order
# (docs/conformance.md, the kill matrix's graph column): the mutant, its rule, and the
# scenarios that suffice.
@pytest.mark.parametrize(("mutant", "rule", "runs"), [
    ("resume_skips_requeue", "SE-6.7", 20),
    ("capacity_off_by_one", "SE-5.1", 20),
])
def test_SE_10_14_graph_kills_catalogued_mutants_and_shrinks_them(
        tmp_path: Path, mutant: str, rule: str, runs: int) -> None:
    config = ExploreConfig(reference_adapter_command(), runs=runs, out=tmp_path,
                           env=_mutant_env(mutant), strategy="graph", repeat=1,
                           shrink_seconds=20)
    report = explore(config, say=lambda line: None)
    assert report.verdict == "FAIL"
    finding = report.findings[0]
    assert rule_matches(rule, finding.rule), finding.to_json()["messages"]
    assert finding.replayed and finding.shrunk is not None
    files = list(tmp_path.glob("found_*.json"))
    assert len(files) == 1
    written = json.loads(files[0].read_text(encoding="utf-8"))
    assert written["found"]["strategy"] == "graph"
    # the correct reference passes the written case
    with Runner(reference_adapter_command(), env=child_env()) as runner:
        assert runner.run(load_catalogue(tmp_path).cases).results[0].status == "passed"


def test_SE_6_4_the_held_walk_kills_a_mutant_seen_only_between_two_turns(
        tmp_path: Path) -> None:
    """``time_budget_ignored`` never ends a slice: on one queue the order of turns is the
    same, so a walk that cannot stand between two turns sees nothing (the slow test
    below walks every path of it); the held walk asks for the end of the slice there."""
    config = ExploreConfig(reference_adapter_command(), runs=20, out=tmp_path,
                           env=_mutant_env("time_budget_ignored", held=True),
                           strategy="graph", repeat=1)
    report = explore(config, say=lambda line: None)
    assert report.verdict == "FAIL"
    finding = report.findings[0]
    assert finding.rule == "SE-6.4", finding.to_json()["messages"]
    assert finding.replayed
    assert finding.parted is not None and "(EndSlice)" in finding.parted
    # shrunk along the model only: a shorter path of the graph through one of its moves
    assert finding.shrunk is not None and finding.shrunk.size < finding.scenario.size
    # the case written is a case file of the suite's format (held create, step commands)
    files = list(tmp_path.glob("found_*.json"))
    assert len(files) == 1
    written = json.loads(files[0].read_text(encoding="utf-8"))
    assert "held_steps" in written["capabilities"]
    assert any(step.get("cmd") == "step" for step in written["steps"])
    schema = Draft202012Validator(load_schema("case.schema.json"), registry=Registry()
                                  .with_resources((uri, Resource.from_contents(text))
                                                  for uri, text in schema_texts().items()))
    assert [e.message for e in schema.iter_errors(written)] == []
    # it replays on the correct reference, held, and passes there
    with Runner(reference_adapter_command(), env=child_env()) as runner:
        assert runner.run(load_catalogue(tmp_path).cases).results[0].status == "passed"


@pytest.mark.slow
@pytest.mark.soak
def test_SE_6_4_the_walk_without_held_steps_does_not_kill_it(tmp_path: Path) -> None:
    """The measurement behind the kill matrix's "survived" for this mutant without held
    steps (docs/conformance.md): a soak test, run by ``./dev soak``."""
    config = ExploreConfig(reference_adapter_command(), runs=None, out=tmp_path,
                           env=_mutant_env("time_budget_ignored"), strategy="graph")
    report = explore(config, say=lambda line: None)
    assert report.verdict == "PASS"


@pytest.mark.slow
def test_SE_10_14_graph_drives_every_transition_the_protocol_can_bring_about(
        tmp_path: Path) -> None:
    config = ExploreConfig(reference_adapter_command(), runs=None, out=tmp_path,
                           env=child_env(ZLINK_ADAPTER_HELD_STEPS="off"), strategy="graph")
    report = explore(config, say=lambda line: None)
    assert report.verdict == "PASS", [f.to_json()["messages"] for f in report.findings]
    assert report.graph is not None
    graph = report.graph.report()
    assert graph["driven"] == graph["drivable"] > 0
    assert graph["left_the_path"] == []


@pytest.mark.slow
def test_SE_10_14_the_held_walk_drives_every_transition_of_the_graph(
        tmp_path: Path) -> None:
    config = ExploreConfig(reference_adapter_command(), runs=None, out=tmp_path,
                           env=child_env(), strategy="graph")
    report = explore(config, say=lambda line: None)
    assert report.verdict == "PASS", [f.to_json()["messages"] for f in report.findings]
    assert report.graph is not None
    graph = report.graph.report()
    assert graph["held_steps"] is True
    assert graph["driven"] == graph["drivable"] == graph["transitions"] == 35466
    assert graph["left_the_path"] == []
