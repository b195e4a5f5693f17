"""``explore``: scenarios drawn from the handshake, judged like cases, a failure shrunk to
a case file that ``run --cases`` replays.

The short fixed-seed run against the reference adapter is the CI run of explore: it must
find nothing (a failure there is a false positive of the generator or the oracle, or a
real bug of the reference). The mutant tests show explore biting: a catalogued mutant is
found, shrunk to a small case on the mutant's rule, and that case fails the mutant and
passes the correct reference when replayed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from zlink_conformance.catalog import CaseError, load_catalogue, parse_case
from zlink_conformance.cli import main as kit_main
from zlink_conformance.explore import Declared, ExploreConfig, RandomStrategy, explore
from zlink_conformance.explore.scenario import Scenario, iter_scripts, walk_submissions
from zlink_conformance.explore.shrink import shrink
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.oracle.model import check_model
from zlink_conformance.protocol.wire import CAPABILITIES, Event, Reply
from zlink_conformance.runner import Runner
from zlink_conformance.selftest import rule_matches
from zlink_reference_adapter import PRELOAD_FILE, explore_mutants, reference_adapter_command

from kit_helpers import child_env

FOUND = Path(__file__).parent / "found"


def _mutant_env(name: str) -> dict[str, str]:
    return child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE), ZLINK_MUTANT_NAME=name)


def _everything() -> Declared:
    return Declared.of(list(CAPABILITIES), None)


# ------------------------------------------------------------------ generation
def test_SE_10_14_the_same_seed_gives_the_same_scenarios() -> None:
    a = RandomStrategy(_everything(), seed=5)
    b = RandomStrategy(_everything(), seed=5)
    c = RandomStrategy(_everything(), seed=6)
    assert [a.scenario(i).body for i in range(30)] == [b.scenario(i).body for i in range(30)]
    # scenario n does not depend on which scenarios were drawn before it
    assert RandomStrategy(_everything(), seed=5).scenario(17).body == a.scenario(17).body
    assert [a.scenario(i).body for i in range(30)] != [c.scenario(i).body for i in range(30)]


def test_SE_10_14_scenarios_use_only_what_the_handshake_declares() -> None:
    surface = {"actor": {"execute_actor": ["work", "payload_bytes"]}}
    declared = Declared.of(["actor"], surface)
    strategy = RandomStrategy(declared, seed=1)
    for i in range(200):
        body = strategy.scenario(i).body
        commands = {m["cmd"] for m in body}
        assert commands <= {"create", "submit", "settle", "open", "close"}, commands
        assert {m["type"] for m in body if m["cmd"] == "create"} == {"actor"}
        entries = {s["entry"] for m in body for s in walk_submissions(m)}
        assert entries <= {"execute_actor"}
        ops = {op["op"] for op in iter_scripts(body)}
        assert ops <= {"gate", "submit", "raise"}, ops


def test_SE_10_14_a_scenario_ends_with_every_gate_opened_and_every_call_settled() -> None:
    strategy = RandomStrategy(_everything(), seed=3)
    for i in range(100):
        steps = strategy.scenario(i).steps()
        ops = list(iter_scripts(steps))
        gates = {op["gate"] for op in ops if op["op"] == "gate"}
        calls = {op["call"] for op in ops if op["op"] == "call"}
        assert gates == {m["gate"] for m in steps if m["cmd"] == "open"}
        settled = [m["call"] for m in steps if m["cmd"] in ("complete", "fail")]
        assert sorted(settled) == sorted(calls)  # each exactly once


def test_SE_10_14_a_settle_comes_before_every_close_and_dispose() -> None:
    strategy = RandomStrategy(_everything(), seed=8)
    assert all(strategy.scenario(i).well_formed() for i in range(300))
    broken = Scenario([{"cmd": "create", "target": "A", "type": "actor"},
                       {"cmd": "dispose", "target": "A", "mode": "dispose"}])
    assert not broken.well_formed()


def test_SE_10_14_a_refused_policy_field_is_never_sent_again() -> None:
    declared = _everything()
    assert declared.refuse_field("lifecycle_byte_capacity")
    strategy = RandomStrategy(declared, seed=2)
    for i in range(200):
        for m in strategy.scenario(i).body:
            for key in ("policy", "actor_policy", "timer_policy"):
                assert "lifecycle_byte_capacity" not in m.get(key, {})


# ------------------------------------------------------------------- shrinking
def test_SE_10_14_shrinking_keeps_what_the_failure_needs() -> None:
    """A synthetic failure (a work of the lifecycle lane with a payload-free gate) shrinks
    to the one command that makes it."""
    scenario = RandomStrategy(_everything(), seed=9).scenario(4)

    def fails(s: Scenario) -> bool:
        return any(m["cmd"] == "create" for m in s.body)

    done = shrink(scenario, fails, lambda s: True)
    assert done.complete
    assert len(done.scenario.body) == 1 and done.scenario.body[0]["cmd"] == "create"
    assert "policy" not in done.scenario.body[0]


# ------------------------------------------------------------------ found cases
def test_SE_10_14_a_found_case_must_say_where_it_came_from() -> None:
    rules = load_catalogue().rules
    steps = [{"cmd": "create", "target": "A", "type": "actor"}]
    raw: dict[str, Any] = {"id": "found_SE_6_6_x_s1_n2", "strength": "found",
                           "rules": ["SE-6.6"], "capabilities": ["actor"], "intent": "x",
                           "steps": steps}
    case, problems = parse_case(raw, "found_SE_6_6_x_s1_n2.json", rules, {})
    assert case is None and any("'found'" in p for p in problems)
    raw["found"] = {"seed": 1, "strategy": "random", "scenario": 2, "violation": "v"}
    case, problems = parse_case(raw, "found_SE_6_6_x_s1_n2.json", rules, {})
    assert case is not None, problems
    assert not case.required and case.found is not None and case.found["seed"] == 1
    required = {**raw, "id": "required_SE_6_6_x", "strength": "required",
                "expect": [{"check": "status", "works": {}}]}
    _, problems = parse_case(required, "required_SE_6_6_x.json", rules, {})
    assert any("'found' belongs to cases of strength found" in p for p in problems)


def test_SD_2_found_cases_replay_and_pass_on_the_reference(capsys: pytest.CaptureFixture[str]
                                                           ) -> None:
    """The cases explore found against the reference and that were fixed (in the
    reference adapter, or the oracle) stay fixed: each passes on the reference."""
    catalogue = load_catalogue(FOUND)
    assert catalogue.cases
    argv = " ".join(reference_adapter_command())
    code = kit_main(["run", "--adapter", argv, "--cases", str(FOUND)])
    out = capsys.readouterr().out
    assert code == 0, out


def test_SE_6_7_a_yield_on_a_call_settled_before_its_turn_began_is_refused() -> None:
    """The runtime progresses while the adapter handles a command: a work may start and
    yield on a call before the ``complete`` that settles it took effect. And ``yielded``
    is written while the work still holds its turn, after its call was found pending: a
    multi-threaded runtime may write it after the reply to that complete (the permit is
    then queued at once). Only a call done before the work's turn began (its
    ``started``) returns at once (SE-6.7): a yield on it is refused."""
    def log(when: str) -> CaseLog:
        out = CaseLog()
        out.sent({"cmd": "reset"})
        out.reply(Reply(0, True, {}))
        out.sent({"cmd": "create", "target": "q", "type": "queue"})
        out.reply(Reply(1, True, {}))
        out.sent({"cmd": "submit", "work": "w", "target": "q", "entry": "enqueue",
                  "script": [{"op": "call", "call": "c"}]})
        out.event(Event("accepted", {"work": "w", "owner": "q"}))
        out.reply(Reply(2, True, {"verdict": "accepted"}))
        out.sent({"cmd": "complete", "call": "c"})
        if when == "before_turn":
            out.reply(Reply(3, True, {"state": "completed"}))
        out.event(Event("started", {"work": "w", "owner": "q"}))
        if when == "before_reply":
            out.event(Event("yielded", {"work": "w", "owner": "q", "call": "c"}))
        if when != "before_turn":
            out.reply(Reply(3, True, {"state": "completed"}))
        if when != "before_reply":
            out.event(Event("yielded", {"work": "w", "owner": "q", "call": "c"}))
        out.sent({"cmd": "settle"})
        out.event(Event("resumed", {"work": "w", "owner": "q"}))
        out.event(Event("finished", {"work": "w", "owner": "q"}))
        out.reply(Reply(4, True, {"now_ms": 0}))
        return out

    assert check_model(log("before_reply")).divergence is None
    assert check_model(log("after_reply")).divergence is None
    div = check_model(log("before_turn")).divergence
    assert div is not None and div.rule == "SE-6.7"
    assert "settled before its turn began" in div.explanation


def test_SE_5_2_a_work_s_reservation_is_released_after_its_terminal_event() -> None:
    """``finished`` is written by the work while it still holds its turn, so the queue
    releases its reservation just after (SE-5.2): an admission decided in between may
    still find it there, and a multi-threaded runtime may show that. Once a settle
    answered, the release has happened: a rejection for the same lane is then wrong."""
    def log(settled_first: bool) -> CaseLog:
        out = CaseLog()
        out.sent({"cmd": "reset"})
        out.reply(Reply(0, True, {}))
        out.sent({"cmd": "create", "target": "q", "type": "queue",
                  "policy": {"application_message_capacity": 1}})
        out.reply(Reply(1, True, {}))
        out.sent({"cmd": "submit", "work": "a", "target": "q", "entry": "enqueue",
                  "script": [{"op": "gate", "gate": "g"}]})
        out.event(Event("accepted", {"work": "a", "owner": "q"}))
        out.reply(Reply(2, True, {"verdict": "accepted"}))
        out.event(Event("started", {"work": "a", "owner": "q"}))
        out.sent({"cmd": "open", "gate": "g"})
        out.reply(Reply(3, True, {}))
        out.event(Event("finished", {"work": "a", "owner": "q"}))
        if settled_first:
            out.sent({"cmd": "settle"})
            out.reply(Reply(4, True, {"now_ms": 0}))
        out.sent({"cmd": "submit", "work": "b", "target": "q", "entry": "enqueue",
                  "script": []})
        out.event(Event("rejected", {"work": "b", "owner": "q",
                                     "reason": "application_count"}))
        out.reply(Reply(5, True, {"verdict": "rejected"}))
        out.sent({"cmd": "settle"})
        out.reply(Reply(6, True, {"now_ms": 0}))
        return out

    assert check_model(log(settled_first=False)).divergence is None
    div = check_model(log(settled_first=True)).divergence
    assert div is not None and div.rule == "SE-5.1", div


# ------------------------------------------------------------- against adapters
def test_SE_10_14_explore_finds_nothing_wrong_with_the_reference(tmp_path: Path) -> None:
    """The CI run: a fixed seed, every capability of the reference; no false positive."""
    config = ExploreConfig(reference_adapter_command(), seed=20261206, runs=250,
                           out=tmp_path, env=child_env())
    report = explore(config, say=lambda line: None)
    assert report.verdict == "PASS", [f.to_json()["messages"] for f in report.findings]
    assert report.scenarios == 250 and report.passed == 250
    reached = report.coverage.report()
    # the generator reaches every transition the wire can show
    assert reached["transitions"]["never"] == [], reached["transitions"]["never"]
    assert not list(tmp_path.iterdir())


@pytest.mark.parametrize(("mutant", "rule"), [("fifo_swap", "SE-6.6"),
                                              ("capacity_off_by_one", "SE-5.1")])
def test_SE_10_14_explore_finds_a_mutant_and_its_shrunk_case_replays(
        tmp_path: Path, mutant: str, rule: str) -> None:
    config = ExploreConfig(reference_adapter_command(), seed=1, runs=400, out=tmp_path,
                           env=_mutant_env(mutant))
    report = explore(config, say=lambda line: None)
    assert report.verdict == "FAIL"
    finding = report.findings[0]
    assert rule_matches(rule, finding.rule), finding.to_json()["messages"]
    assert finding.reproduced == finding.reruns and finding.replayed
    assert finding.shrunk is not None and len(finding.shrunk.steps()) <= 12
    files = list(tmp_path.glob("found_*.json"))
    assert len(files) == 1
    written = json.loads(files[0].read_text(encoding="utf-8"))
    assert written["strength"] == "found" and written["found"]["seed"] == 1
    assert rule_matches(rule, written["rules"][0])
    # the mutant fails the replayed case on the same rule ...
    cases = load_catalogue(tmp_path).cases
    with Runner(reference_adapter_command(), env=_mutant_env(mutant)) as runner:
        broken = runner.run(cases).results[0]
    assert broken.status == "failed"
    assert any(rule_matches(rule, have) for have in _rules_named(broken.messages)), \
        broken.messages
    # ... and the correct reference passes it
    with Runner(reference_adapter_command(), env=child_env()) as runner:
        assert runner.run(cases).results[0].status == "passed"


def _rules_named(messages: list[str]) -> set[str]:
    return {m.group(1) for text in messages
            for m in re.finditer(r"((?:SE|SD|D)-[0-9]+(?:\.[0-9]+)?)(?:\]| [A-Za-z ]+\])",
                                 text)}


def test_SE_10_14_explore_on_the_command_line(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    argv = " ".join(reference_adapter_command())
    report = tmp_path / "explore.json"
    code = kit_main(["explore", "--adapter", argv, "--runs", "30", "--seed", "4",
                     "--json", str(report), "--out", str(tmp_path / "found"),
                     "--junit", str(tmp_path / "explore.xml")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "explore verdict: PASS" in out and "per second" in out
    assert "model transitions:" in out and "wire events:" in out
    data = json.loads(report.read_text(encoding="utf-8"))
    assert data["scenarios"] == 30 and data["verdict"] == "PASS"
    assert 'tests="0"' in (tmp_path / "explore.xml").read_text(encoding="utf-8")
    with pytest.raises(SystemExit) as bad:
        kit_main(["explore", "--adapter", argv, "--budget", "soon"])
    assert bad.value.code == 2


def test_SE_10_14_an_invalid_found_directory_is_refused(tmp_path: Path) -> None:
    (tmp_path / "found_SE_6_6_x_s1_n2.json").write_text("{}", encoding="utf-8")
    with pytest.raises(CaseError):
        load_catalogue(tmp_path)


# ------------------------------------------------- mutants only explore kills
def _explore_kills(name: str, runs: int, start: int = 0) -> tuple[str, str | None, int]:
    config = ExploreConfig(reference_adapter_command(), seed=1, runs=runs, start=start,
                           out=None, env=_mutant_env(name), repeat=2)
    report = explore(config, say=lambda line: None)
    confirmed = [f for f in report.findings if not f.flaky]
    assert confirmed, (f"{name}: explore found nothing in {runs} scenario(s) from "
                       f"scenario {start} of seed 1")
    f = confirmed[0]
    return f.rule, f.invariant, len((f.shrunk or f.scenario).steps())


def _suite_failures(name: str) -> list[str]:
    with Runner(reference_adapter_command(), env=_mutant_env(name)) as runner:
        report = runner.run(load_catalogue().cases)
    return [r.case.id for r in report.results if r.status in ("failed", "error")]


def test_SE_6_6_explore_kills_a_mutant_the_fixed_suite_misses() -> None:
    """``nested_jumps_the_line`` (explore_mutants): a nested application submission
    jumps a line of two or more. No fixed case fails it; explore, searching from the
    first scenario of seed 1, does, on FIFO."""
    assert _suite_failures("nested_jumps_the_line") == []
    rule, invariant, steps = _explore_kills("nested_jumps_the_line", 600)
    assert (rule, invariant) == ("SE-6.6", "FifoWithinLane")
    assert steps <= 12


# The first scenario of seed 1 that kills each mutant of ``explore_mutants`` (found by
# searching from scenario 0, as the kill matrix does: ``python
# benchmarks/explore_kill_matrix.py --new-only`` prints it, plus one, in its "scenarios"
# column). A change to the generator that moves a kill fails the test below with the
# scenario it tried: search again and write the new number here.
FIRST_KILL = {
    "dispose_spares_lifecycle": 121,
    "failed_call_resumes_in_application_lane": 1112,
    "failed_work_keeps_bytes": 46,
    "rejection_leaks_a_slot": 49,
    "resume_jumps_the_line": 6,
    "resumed_lifecycle_ignores_burst": 2625,
    "session_final_passes_a_yielded_work": 18,
    "timer_queue_third_first": 2317,
    "yield_leaks_bytes": 46,
}


def test_SE_10_14_every_mutant_the_fixed_suite_misses_has_a_first_kill() -> None:
    """The table above names every mutant of ``explore_mutants`` but the one the default
    run searches for from scenario 0, each within the 3,000 scenarios the search is
    held to."""
    assert set(FIRST_KILL) == set(explore_mutants.CATALOGUE) - {"nested_jumps_the_line"}
    assert all(0 <= n < 3000 for n in FIRST_KILL.values())


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(FIRST_KILL))
def test_SE_10_14_every_mutant_the_fixed_suite_misses_explore_kills(name: str) -> None:
    """Each mutant of ``explore_mutants``: the fixed suite fails no case, and explore
    kills it within 3,000 scenarios of seed 1 and shrinks it. Scenario ``n`` of a seed
    is the same whatever was drawn before it, so a search from scenario 0 reaches
    scenario ``FIRST_KILL[name]`` (or stops at an earlier kill): running that one
    scenario, re-run and shrunk as the search would, shows the kill without paying for
    the scenarios before it (that search is ``test_SE_6_6_explore_kills_a_mutant_the_
    fixed_suite_misses`` for ``nested_jumps_the_line``, in the default run)."""
    assert _suite_failures(name) == []
    rule, _invariant, steps = _explore_kills(name, 1, start=FIRST_KILL[name])
    assert rule and steps <= 20
