"""What explore draws besides its main draw (``explore.additions``), and the judges that
read what those additions bring about: waiters (``oracle.waiters``), snapshots
(``oracle.snapshots``), a disposal timer due by the clock (the model oracle), a
synchronous wait that deadlocks (``oracle.invariants.unended_works``) and the
handshake's members (judged once an explore run).

Each judge is shown to bite twice: on a hand-made log, and on a catalogued mutant of the
reference that no explore scenario failed before it (the mutant's scenario fails on the
mutant's rule, the same scenario passes the correct reference).
"""

from __future__ import annotations

import random
import re
from typing import Any

import pytest

from zlink_conformance.catalog import load_catalogue, needed_capabilities
from zlink_conformance.explore import Declared, ExploreConfig, RandomStrategy, explore
from zlink_conformance.explore.additions import ADDITIONS
from zlink_conformance.explore.generate import _Draw
from zlink_conformance.explore.scenario import Scenario, walk_submissions
from zlink_conformance.oracle.invariants import unended_works
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.oracle.slices import slice_problems
from zlink_conformance.oracle.snapshots import snapshot_problems
from zlink_conformance.oracle.waiters import waiter_problems
from zlink_conformance.protocol.wire import CAPABILITIES, Event, Reply
from zlink_conformance.runner import CaseResult, Runner
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from kit_helpers import child_env


def _everything() -> Declared:
    return Declared.of(list(CAPABILITIES), None)


def _main_draw(declared: Declared, seed: int, index: int) -> list[dict[str, Any]]:
    return _Draw(declared, random.Random(f"{seed}:{index}"), 24,
                 random.Random(f"{seed}:{index}:side")).scenario(seed, index).body


def _run(body: list[dict[str, Any]], mutant: str | None = None) -> CaseResult:
    """One scenario body run as explore runs it (a case of strength ``found``)."""
    scenario = Scenario(body, 1, 0)
    case, problems = scenario.case(load_catalogue().rules,
                                   needed_capabilities(scenario.steps()))
    assert case is not None, problems
    env = child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE),
                    ZLINK_MUTANT_NAME=mutant) if mutant else child_env()
    with Runner(reference_adapter_command(), env=env) as runner:
        runner.start()
        return runner.run_case(case)


def _first_line(result: CaseResult) -> str:
    return str(result.messages[0]) if result.messages else ""


# ------------------------------------------------------------------ the additions
def test_SE_10_14_a_scenario_no_addition_touches_is_the_main_draw_unchanged() -> None:
    """Each addition draws from a stream of its own: a scenario none of them changed is
    exactly what the main draw made, so every kill recorded before the additions that
    they leave alone stays where it was; and with nothing they need declared, no
    scenario changes at all."""
    declared = _everything()
    strategy = RandomStrategy(declared, seed=4)
    changed = sum(strategy.scenario(i).body != _main_draw(declared, 4, i) for i in range(200))
    assert 0 < changed < 200
    bare = Declared.of(["actor", "spot.user.per_actor", "session", "yield"], None)
    strategy = RandomStrategy(bare, seed=4)
    assert all(strategy.scenario(i).body == _main_draw(bare, 4, i) for i in range(200))


def test_SE_10_14_additions_keep_scenarios_well_formed_and_within_the_handshake() -> None:
    """Every scenario stays a runnable case (a settle before each close, dispose and
    race; unique names; every gate opened) and needs only what the handshake declares."""
    rules = load_catalogue().rules
    for caps in (list(CAPABILITIES), ["actor", "disposal", "snapshots", "yield"],
                 ["queue", "concurrent_submission", "queue_observation"]):
        declared = Declared.of(caps, None)
        strategy = RandomStrategy(declared, seed=9)
        for i in range(150):
            scenario = strategy.scenario(i)
            assert scenario.well_formed(), (caps, i)
            needs = needed_capabilities(scenario.steps())
            assert set(needs) <= set(caps) | {"synchronous_wait"}, (caps, i, needs)
            case, problems = scenario.case(rules, needs)
            assert case is not None, (caps, i, problems)


def test_SE_6_3_races_on_one_queue_are_drawn_for_its_last_places() -> None:
    """Some races run all their submissions on one queue, whose count capacity of the
    lane they race for is below the number of racers."""
    strategy = RandomStrategy(_everything(), seed=1)
    races = 0
    for i in range(300):
        body = strategy.scenario(i).body
        creates = {m["target"]: m for m in body if m["cmd"] == "create"}
        for m in body:
            if m["cmd"] != "submit_concurrent":
                continue
            subs = m["submissions"]
            owners = {(s["target"], s["entry"], s.get("actor_id"), s.get("timer_name"))
                      for s in subs}
            if len(owners) == 1:
                create = creates[subs[0]["target"]]
                policies = [p for k, p in create.items() if k.endswith("policy")]
                if any(p.get(f, 99) < len(subs) for p in policies for f in
                       ("application_message_capacity", "lifecycle_message_capacity")):
                    races += 1
    assert races >= 5


def test_SE_10_14_every_addition_is_drawn() -> None:
    """Each addition changes some scenario of a seed, and what it adds is there."""
    strategy = RandomStrategy(_everything(), seed=2)
    bodies = [strategy.scenario(i).body for i in range(300)]
    commands = [m for body in bodies for m in body]
    assert any(m["cmd"] == "await" for m in commands)
    assert any(m["cmd"] == "register" for m in commands)
    assert any(m["cmd"] == "update_registration" for m in commands)
    assert any(op.get("op") == "snapshot" for m in commands for s in walk_submissions(m)
               for op in s.get("script", []))
    assert any(s.get("entry") == "enqueue_barrier_next" and s["work"].startswith("wb")
               for m in commands for s in walk_submissions(m))
    bounds = [b for b in bodies if any(
        x["cmd"] == "dispose" and x["mode"] == "dispose_safely" and y["cmd"] == "settle"
        and z["cmd"] == "dispose" and z["mode"] == "dispose_after_timeout"
        for x, y, z in zip(b, b[1:], b[2:], strict=False))]
    assert bounds
    assert any(m["cmd"] == "create" and m["target"] == "F0" for m in commands)
    assert set(ADDITIONS) == {"race", "waiters", "bound", "deadline", "snapshots", "barrier",
                              "flood"}


# ------------------------------------------------------------------ waiter judge
def _log(*items: tuple[str, dict[str, Any]]) -> CaseLog:
    """A log from ("sent", command), ("event", fields with "event"), ("reply", fields)."""
    log = CaseLog()
    n = 0
    for kind, message in items:
        if kind == "sent":
            n += 1
            log.sent(message)
        elif kind == "event":
            fields = {k: v for k, v in message.items() if k != "event"}
            log.event(Event(message["event"], fields))
        else:
            log.reply(Reply(n, True, message))
    return log


_SUBMIT = {"cmd": "submit", "work": "z", "target": "A", "entry": "execute_actor",
           "script": [{"op": "gate", "gate": "g"}]}
_AWAIT = {"cmd": "await", "target": "A", "waiter": "v1", "mode": "completion"}


def test_SD_3_a_waiter_left_waiting_with_only_zombies_left_is_reported() -> None:
    log = _log(("sent", _SUBMIT), ("event", {"event": "accepted", "work": "z", "owner": "A"}),
               ("reply", {}), ("sent", _AWAIT), ("reply", {}),
               ("sent", {"cmd": "dispose", "target": "A", "mode": "dispose_safely"}),
               ("event", {"event": "zombie", "work": "z", "owner": "A"}), ("reply", {}),
               ("sent", {"cmd": "settle"}), ("reply", {}))
    problems = waiter_problems(log)
    assert len(problems) == 1 and problems[0].startswith(
        "[SD-3 AwaitCompletionIgnoresZombies] waiter v1"), problems
    # the same log with the return before the settle's reply: nothing to say
    fixed = _log(("sent", _SUBMIT), ("event", {"event": "accepted", "work": "z", "owner": "A"}),
                 ("reply", {}), ("sent", _AWAIT), ("reply", {}),
                 ("sent", {"cmd": "dispose", "target": "A", "mode": "dispose_safely"}),
                 ("event", {"event": "zombie", "work": "z", "owner": "A"}),
                 ("event", {"event": "returned", "waiter": "v1"}), ("reply", {}),
                 ("sent", {"cmd": "settle"}), ("reply", {}))
    assert waiter_problems(fixed) == []


def test_SD_3_a_waiter_returned_while_active_work_was_left_is_reported() -> None:
    log = _log(("sent", _SUBMIT), ("event", {"event": "accepted", "work": "z", "owner": "A"}),
               ("reply", {}), ("sent", _AWAIT), ("reply", {}),
               ("event", {"event": "returned", "waiter": "v1"}),
               ("sent", {"cmd": "open", "gate": "g"}),
               ("event", {"event": "finished", "work": "z", "owner": "A"}), ("reply", {}))
    problems = waiter_problems(log)
    assert len(problems) == 1 and problems[0].startswith("[SD-3 AwaitCompletionIgnoresZombies]")
    assert "returned@" in problems[0] and "while z" in problems[0]


def test_D_22_a_waiter_returned_while_a_held_final_work_was_active_names_D_22() -> None:
    final = {"cmd": "submit", "work": "fin", "target": "A", "entry": "execute_final",
             "script": []}
    log = _log(("sent", _AWAIT), ("reply", {}), ("sent", final),
               ("event", {"event": "accepted", "work": "fin", "owner": "A"}), ("reply", {}),
               ("sent", {"cmd": "settle"}), ("reply", {}),
               ("event", {"event": "returned", "waiter": "v1"}),
               ("event", {"event": "started", "work": "fin", "owner": "A"}),
               ("event", {"event": "finished", "work": "fin", "owner": "A"}))
    problems = waiter_problems(log)
    assert len(problems) == 1 and problems[0].startswith("[D-22 AwaitCompletionIgnoresZombies]")


_WAITER_BODY = [
    {"cmd": "create", "target": "A", "type": "actor"},
    {"cmd": "submit", "work": "z", "target": "A", "entry": "execute_actor",
     "script": [{"op": "gate", "gate": "g"}]},
    {"cmd": "await", "target": "A", "waiter": "v1", "mode": "completion"},
    {"cmd": "settle"},
    {"cmd": "dispose", "target": "A", "mode": "dispose_safely"},
]


@pytest.mark.parametrize("mutant", ["dispose_safely_keeps_waiters",
                                    "dispose_safely_counts_zombies"])
def test_SD_3_the_waiter_judge_fails_the_mutants_and_passes_the_reference(mutant: str) -> None:
    assert _run(_WAITER_BODY).status == "passed"
    failed = _run(_WAITER_BODY, mutant)
    assert failed.status == "failed"
    assert _first_line(failed).startswith("[SD-3 AwaitCompletionIgnoresZombies]")


# ---------------------------------------------------------------- snapshot judge
def test_SE_7_2_a_snapshot_that_changes_mid_message_is_reported() -> None:
    def log(second: dict[str, Any]) -> CaseLog:
        return _log(
            ("sent", {"cmd": "register", "target": "A", "values": {"hp": 10}}), ("reply", {}),
            ("sent", {"cmd": "submit", "work": "m", "target": "A", "entry": "execute_actor",
                      "script": [{"op": "snapshot"}, {"op": "gate", "gate": "g"},
                                 {"op": "snapshot"}]}),
            ("event", {"event": "accepted", "work": "m", "owner": "A"}), ("reply", {}),
            ("event", {"event": "started", "work": "m", "owner": "A"}),
            ("event", {"event": "snapshot", "work": "m", "owner": "A", "values": {"hp": 10}}),
            ("sent", {"cmd": "update_registration", "target": "A", "values": {"hp": 3}}),
            ("reply", {}),
            ("event", {"event": "snapshot", "work": "m", "owner": "A", "values": second}))

    problems = snapshot_problems(log({"hp": 3}))
    assert len(problems) == 1 and problems[0].startswith("[SE-7.2 SnapshotConsistent] m:")
    assert snapshot_problems(log({"hp": 10})) == []


def test_SE_7_2_a_snapshot_of_values_never_registered_by_the_start_is_reported() -> None:
    log = _log(
        ("sent", {"cmd": "register", "target": "A", "values": {"hp": 10}}), ("reply", {}),
        ("sent", {"cmd": "submit", "work": "m", "target": "A", "entry": "execute_actor",
                  "script": [{"op": "snapshot"}]}),
        ("event", {"event": "accepted", "work": "m", "owner": "A"}), ("reply", {}),
        ("event", {"event": "started", "work": "m", "owner": "A"}),
        ("event", {"event": "snapshot", "work": "m", "owner": "A", "values": {"hp": 3}}))
    problems = snapshot_problems(log)
    assert len(problems) == 1 and "never had" in problems[0]


def test_SE_7_2_the_snapshot_judge_fails_the_mutant_and_passes_the_reference() -> None:
    body = [
        {"cmd": "create", "target": "A", "type": "actor"},
        {"cmd": "register", "target": "A", "actor_type": "npc", "values": {"hp": 10}},
        {"cmd": "submit", "work": "m", "target": "A", "entry": "execute_actor",
         "script": [{"op": "snapshot"}, {"op": "gate", "gate": "g"}, {"op": "snapshot"}]},
        {"cmd": "settle"},
        {"cmd": "update_registration", "target": "A", "values": {"hp": 3}},
    ]
    assert _run(body).status == "passed"
    failed = _run(body, "snapshot_reads_live_state")
    assert _first_line(failed).startswith("[SE-7.2 SnapshotConsistent] m:")


# ------------------------------------------------------------- due disposal timers
_TIMEOUT_BODY = [
    {"cmd": "create", "target": "A", "type": "actor"},
    {"cmd": "submit", "work": "a", "target": "A", "entry": "execute_actor",
     "script": [{"op": "gate", "gate": "g"}]},
    {"cmd": "submit", "work": "b", "target": "A", "entry": "execute_actor", "script": []},
    {"cmd": "settle"},
    {"cmd": "dispose", "target": "A", "mode": "dispose_after_timeout", "timeout_ms": 10},
    {"cmd": "advance", "ms": 10},
    {"cmd": "settle"},
]


def test_SD_1_a_disposal_timer_due_by_the_clock_must_have_fired_at_the_settle() -> None:
    """The model lets a disposal timer expire at any moment after it was set, and at a
    settle once the clock's advances since then add up to its timeout: a timer set a
    millisecond late leaves the queued work running, which the settle shows."""
    assert _run(_TIMEOUT_BODY).status == "passed"
    failed = _run(_TIMEOUT_BODY, "timeout_fires_late")
    assert failed.divergence is not None
    assert (failed.divergence.rule, failed.divergence.invariant) == ("SD-1", "ExpireTimeout")
    # a millisecond short of the timeout, the late timer is no fault
    early = [*_TIMEOUT_BODY[:5], {"cmd": "advance", "ms": 9}, {"cmd": "settle"}]
    assert _run(early, "timeout_fires_late").status == "passed"


def test_D_27_a_bound_on_zombies_due_by_the_clock_must_have_cancelled_them() -> None:
    body = [
        {"cmd": "create", "target": "A", "type": "actor"},
        {"cmd": "submit", "work": "a", "target": "A", "entry": "execute_actor",
         "script": [{"op": "gate", "gate": "g"}]},
        {"cmd": "submit", "work": "b", "target": "A", "entry": "execute_actor", "script": []},
        {"cmd": "settle"},
        {"cmd": "dispose", "target": "A", "mode": "dispose_safely"},
        {"cmd": "settle"},
        {"cmd": "dispose", "target": "A", "mode": "dispose_after_timeout", "timeout_ms": 10},
        {"cmd": "advance", "ms": 10},
        {"cmd": "settle"},
    ]
    assert _run(body).status == "passed"
    failed = _run(body, "bound_spares_zombies")
    assert failed.divergence is not None
    assert (failed.divergence.rule, failed.divergence.invariant) == ("D-27", "ExpireTimeout")


# ------------------------------------------------------------------ slice judge
def _flood_log(other_turn_at: int) -> CaseLog:
    """Owner S/actor:a runs f1..f4 (4 ms each, budget 10 ms) while o, submitted to
    S/actor:b from inside f0, waits; o's turn comes after f``other_turn_at``."""
    create = {"cmd": "create", "target": "S", "type": "spot", "kind": "user",
              "mode": "per_actor", "actor_policy": {"owner_time_budget_ms": 10}}
    items: list[tuple[str, dict[str, Any]]] = [("sent", create), ("reply", {})]
    flood = [{"cmd": "submit", "work": f"f{n}", "target": "S", "entry": "execute_actor",
              "actor_id": "a", "script": [{"op": "busy", "ms": 4}]} for n in range(1, 5)]
    f0 = {"cmd": "submit", "work": "f0", "target": "S", "entry": "execute_actor",
          "actor_id": "a", "script": [
              {"op": "gate", "gate": "g"},
              {"op": "submit", "work": "o", "target": "S", "entry": "execute_actor",
               "actor_id": "b", "script": []}]}
    for message in (f0, *flood):
        items += [("sent", message),
                  ("event", {"event": "accepted", "work": message["work"],
                             "owner": "S/actor:a"}), ("reply", {})]
    items += [("event", {"event": "started", "work": "f0", "owner": "S/actor:a"}),
              ("sent", {"cmd": "open", "gate": "g"}),
              ("event", {"event": "accepted", "work": "o", "owner": "S/actor:b"}),
              ("event", {"event": "finished", "work": "f0", "owner": "S/actor:a"})]
    for n in range(1, 5):
        items += [("event", {"event": "started", "work": f"f{n}", "owner": "S/actor:a"}),
                  ("event", {"event": "finished", "work": f"f{n}", "owner": "S/actor:a"})]
        if n == other_turn_at:
            items += [("event", {"event": "started", "work": "o", "owner": "S/actor:b"}),
                      ("event", {"event": "finished", "work": "o", "owner": "S/actor:b"})]
    return _log(*items, ("reply", {}))


def test_SE_6_4_an_owner_going_on_past_its_budget_while_another_waited_is_reported() -> None:
    """f1..f3 take 12 ms of a 10 ms budget while o waited: o must run before f4."""
    assert slice_problems(_flood_log(3)) == []
    assert slice_problems(_flood_log(2)) == []  # cut earlier than due: not this judge's
    problems = slice_problems(_flood_log(4))
    assert len(problems) == 1 and problems[0].startswith(
        "[SE-6.4 SliceBounded] f4 started@"), problems


def test_SE_6_4_the_slice_judge_fails_the_mutant_and_passes_the_reference() -> None:
    body = [
        {"cmd": "create", "target": "S", "type": "spot", "kind": "user",
         "mode": "per_actor", "actor_policy": {"owner_time_budget_ms": 8}},
        {"cmd": "submit", "work": "f0", "target": "S", "entry": "execute_actor",
         "actor_id": "a", "script": [
             {"op": "gate", "gate": "g"},
             {"op": "submit", "work": "o", "target": "S", "entry": "execute_actor",
              "actor_id": "b", "script": [{"op": "busy", "ms": 4}]},
             {"op": "busy", "ms": 4}]},
        *[{"cmd": "submit", "work": f"f{n}", "target": "S", "entry": "execute_actor",
           "actor_id": "a", "script": [{"op": "busy", "ms": 4}]} for n in range(1, 4)],
        {"cmd": "settle"},
        {"cmd": "open", "gate": "g"},
    ]
    assert _run(body).status == "passed"
    failed = _run(body, "time_budget_ignored")
    assert _first_line(failed).startswith("[SE-6.4 SliceBounded]")


# ------------------------------------------------------------ a deadlocked wait
def test_SE_8_2_a_wait_for_that_never_returned_is_reported_on_SE_8_2() -> None:
    log = _log(
        ("sent", {"cmd": "submit", "work": "a", "target": "A", "entry": "execute_actor",
                  "script": [{"op": "wait_for", "work": "b"}]}),
        ("event", {"event": "accepted", "work": "a", "owner": "A"}), ("reply", {}),
        ("event", {"event": "started", "work": "a", "owner": "A"}),
        ("sent", {"cmd": "submit", "work": "b", "target": "A", "entry": "execute_actor",
                  "script": []}),
        ("event", {"event": "accepted", "work": "b", "owner": "A"}), ("reply", {}))
    problems = unended_works(log)
    assert problems[0].startswith("[SE-8.2] a:") and "wait_for op 0" in problems[0]
    assert problems[1].startswith("[EveryAcceptedWorkEndsOnce D-11] b:")


# ------------------------------------------------------- the handshake's members
def test_SE_3_1_explore_judges_the_handshake_members_once_a_run() -> None:
    """``member_listing`` declared: before its first scenario, explore judges the
    handshake's members like the case of SE-2.5 does; a coordinator that hands out a
    queue fails on SE-3.1 (scenario -1), the reference passes."""
    env = child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE), ZLINK_MUTANT_NAME="queue_exposed")
    report = explore(ExploreConfig(reference_adapter_command(), seed=1, runs=5, out=None,
                                   env=env, repeat=1), say=lambda line: None)
    assert [(f.rule, f.scenario.index, f.flaky) for f in report.findings] == [
        ("SE-3.1", -1, False)]
    assert report.scenarios == 0  # a confirmed failure ends the run, as any does
    clean = explore(ExploreConfig(reference_adapter_command(), seed=1, runs=5, out=None,
                                  env=child_env(), repeat=1), say=lambda line: None)
    assert clean.findings == [] and clean.scenarios == 5


# ------------------------------------------- catalogued mutants, through the additions
# The first scenario of seed 1 that kills each catalogued mutant the fixed suite kills
# and explore reaches only through the additions and their judges (-1: the handshake's
# check, before scenario 0), found by searching from scenario 0 as the kill matrix does
# (``python benchmarks/explore_kill_matrix.py --only NAME --no-suite`` prints it, plus
# one). Before the additions none of them was killed in two minutes (docs/conformance.md,
# "The kill matrix of explore"). A change to the generator that moves a kill fails the
# test below: search again and write the new number here.
CATALOGUED_FIRST_KILL = {
    "admission_split": 10,
    "barrier_keeps_streak": 571,
    "bound_spares_zombies": 242,
    "dispose_safely_counts_zombies": 254,
    "dispose_safely_keeps_waiters": 254,
    "final_counted_once_placed": 18,
    "queue_exposed": -1,
    "snapshot_reads_live_state": 14,
    "timeout_expires_one_queue": 77,
    "timeout_fires_late": 77,
    "time_budget_ignored": 1,
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(CATALOGUED_FIRST_KILL))
def test_SE_10_14_explore_kills_the_catalogued_mutants_the_additions_reach(name: str) -> None:
    """Each of them: explore, from its first killing scenario of seed 1, kills it on its
    rule (or one the self-test counts as its rule) and shrinks it to at most 12 commands."""
    from zlink_conformance.selftest import rule_matches
    from zlink_reference_adapter.mutants import CATALOGUE

    first = CATALOGUED_FIRST_KILL[name]
    env = child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE), ZLINK_MUTANT_NAME=name)
    report = explore(ExploreConfig(reference_adapter_command(), seed=1, runs=1,
                                   start=max(first, 0), out=None, env=env, repeat=2),
                     say=lambda line: None)
    confirmed = [f for f in report.findings if not f.flaky]
    assert confirmed, f"{name}: scenario {first} of seed 1 no longer kills it"
    found = confirmed[0]
    assert found.scenario.index == first
    shown = found.shrunk_result or found.result
    evidence = {found.rule} | set(re.findall(r"\b((?:SE|SD|D|AP)-[0-9]+(?:\.[0-9]+)?)\b",
                                             " ".join(map(str, shown.messages))))
    assert any(rule_matches(CATALOGUE[name].rule, have) for have in evidence), evidence
    assert len((found.shrunk or found.scenario).steps()) <= 12
