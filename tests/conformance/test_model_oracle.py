"""The model oracle catches what a case's own checks and the log invariants let through.

Each test is a small case (its steps and expectations, in the shipped format) and a
doctored log of it: what a wrong runtime could report. The case's checks and the
invariants every log must hold pass on that log; the model oracle, which replays it
through the reference core, names the first divergent event, the rule and the invariant.
The same case with the log a correct runtime writes passes all three.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from zlink_conformance.catalog import Case, Command, load_catalogue, parse_case
from zlink_conformance.oracle import CheckContext, check_invariants
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.oracle.model import check_model, replay_entries
from zlink_conformance.protocol.wire import Event, Reply

from kit_helpers import FullRun

Entry = tuple[str, Mapping[str, Any]]


def make_case(steps: list[dict[str, Any]], expect: list[dict[str, Any]]) -> Case:
    catalogue = load_catalogue()
    raw = {"id": "required_SE_6_6_doctored", "strength": "required", "rules": ["SE-6.6"],
           "capabilities": sorted({"queue", "yield", "spot.user.spot_wide", "disposal"}),
           "intent": "a doctored log", "steps": steps, "expect": expect}
    case, problems = parse_case(raw, "required_SE_6_6_doctored.json", catalogue.rules, {})
    assert case is not None, problems
    return case


def play(case: Case, events: Mapping[int, Sequence[dict[str, Any]]]) -> CaseLog:
    """The log of ``case`` where the adapter wrote ``events[i]`` before its reply to the
    case's i-th command (0 is its first; the last is the runner's final settle)."""
    log = CaseLog()
    commands = [{"cmd": "reset"}] + [dict(s.message) for s in case.steps
                                     if isinstance(s, Command)] + [{"cmd": "settle"}]
    for ident, command in enumerate(commands):
        log.sent(command)
        for e in events.get(ident - 1, ()):
            log.event(Event(e["event"], {k: v for k, v in e.items() if k != "event"}))
        fields: dict[str, Any] = {"now_ms": 0} if command["cmd"] == "settle" else {}
        if command["cmd"] == "submit":
            fields["verdict"] = "accepted"
        log.reply(Reply(ident, True, fields))
    return log


def ev(name: str, work: str, owner: str, **fields: Any) -> dict[str, Any]:
    return {"event": name, "work": work, "owner": owner, **fields}


def case_problems(case: Case, log: CaseLog) -> list[str]:
    """What the case's own checks and the invariants say about a complete log."""
    ctx = CheckContext({})
    out = [p for c in case.expect for p in c.evaluate(log, ctx)]
    return out + check_invariants(log, case.works)


def run_of(_: str, work: str, owner: str) -> list[dict[str, Any]]:
    return [ev("started", work, owner), ev("finished", work, owner)]


QUEUE = {"cmd": "create", "target": "q", "type": "queue"}


def submit(work: str, entry: str = "enqueue", script: list[Any] | None = None,
           target: str = "q", **extra: Any) -> dict[str, Any]:
    return {"cmd": "submit", "work": work, "target": target, "entry": entry,
            "script": script or [], **extra}


def test_FifoWithinLane_SE_6_6_a_runtime_that_swaps_two_queued_works() -> None:
    case = make_case(
        [QUEUE, submit("a", script=[{"op": "gate", "gate": "g"}]), {"cmd": "settle"},
         submit("b"), submit("c"), {"cmd": "settle"}, {"cmd": "open", "gate": "g"}],
        [{"check": "status", "works": {"a": "finished", "b": "finished", "c": "finished"}}])
    accepted = {1: [ev("accepted", "a", "q")], 2: [ev("started", "a", "q")],
                3: [ev("accepted", "b", "q")], 4: [ev("accepted", "c", "q")]}
    good = play(case, {**accepted, 6: [ev("finished", "a", "q"), *run_of("", "b", "q"),
                                       *run_of("", "c", "q")]})
    bad = play(case, {**accepted, 6: [ev("finished", "a", "q"), *run_of("", "c", "q"),
                                      *run_of("", "b", "q")]})
    assert case_problems(case, good) == [] and check_model(good).divergence is None
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None
    assert (div.rule, div.invariant, div.what()) == ("SE-6.6", "FifoWithinLane", "started:c@20")
    assert "gives the turn to b" in div.explanation
    assert [m.get("event") for _, _, m in div.leading][-1] == "finished"


def test_LifecycleBurstBounded_SE_6_1_a_runtime_that_ignores_the_burst_limit() -> None:
    policy = {"lifecycle_burst_limit": 1}
    case = make_case(
        [{**QUEUE, "policy": policy}, submit("g0", script=[{"op": "gate", "gate": "g"}]),
         {"cmd": "settle"}, submit("app"), submit("l1", "enqueue_lifecycle"),
         submit("l2", "enqueue_lifecycle"), {"cmd": "settle"}, {"cmd": "open", "gate": "g"}],
        [{"check": "order", "events": ["started:l1", "started:app"]}])
    events = {1: [ev("accepted", "g0", "q")], 2: [ev("started", "g0", "q")],
              3: [ev("accepted", "app", "q")], 4: [ev("accepted", "l1", "q")],
              5: [ev("accepted", "l2", "q")]}
    bad = play(case, {**events, 7: [ev("finished", "g0", "q"), *run_of("", "l1", "q"),
                                    *run_of("", "l2", "q"), *run_of("", "app", "q")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None
    assert (div.rule, div.invariant, div.what()) == ("SE-6.1", "LifecycleBurstBounded",
                                                     "started:l2@25")


def test_CapacityRespected_SE_5_1_one_work_more_than_the_capacity() -> None:
    case = make_case(
        [{**QUEUE, "policy": {"application_message_capacity": 1}},
         submit("a", script=[{"op": "gate", "gate": "g"}]), submit("b"),
         {"cmd": "open", "gate": "g"}],
        [{"check": "status", "works": {"a": "finished"}}])
    bad = play(case, {1: [ev("accepted", "a", "q")], 2: [ev("accepted", "b", "q")],
                      3: [*run_of("", "a", "q"), *run_of("", "b", "q")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None
    assert (div.rule, div.invariant, div.what()) == ("SE-5.1", "CapacityRespected",
                                                     "accepted:b@8")


def test_NoResumeWithoutRequeue_SE_6_7_a_work_that_resumes_before_its_call_returns() -> None:
    case = make_case(
        [QUEUE, submit("a", script=[{"op": "call", "call": "c1"}]), {"cmd": "settle"},
         {"cmd": "complete", "call": "c1"}],
        [{"check": "events", "work": "a",
          "events": ["accepted", "started", "yielded", "resumed", "finished"]}])
    bad = play(case, {1: [ev("accepted", "a", "q")],
                      2: [ev("started", "a", "q"), ev("yielded", "a", "q", call="c1"),
                          ev("resumed", "a", "q"), ev("finished", "a", "q")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None
    assert (div.rule, div.invariant) == ("SE-6.7", "NoResumeWithoutRequeue")
    assert "c1 is still pending" in div.explanation


def test_NoLostWakeup_SE_6_5_settle_answers_while_a_queued_work_never_runs() -> None:
    case = make_case([QUEUE, submit("a"), submit("b")],
                     [{"check": "status", "works": {"a": "finished"}}])
    bad = play(case, {1: [ev("accepted", "a", "q")], 2: [ev("accepted", "b", "q")],
                      3: run_of("", "a", "q")})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None
    assert (div.rule, div.invariant, div.what()) == ("SE-6.5", "NoLostWakeup",
                                                     "settle reply@13")
    assert "b waited on q" in div.explanation


def test_FifoWithinLane_of_an_actor_queue_a_spot_wide_actor_work_that_overtakes() -> None:
    spot = {"cmd": "create", "target": "S", "type": "spot", "kind": "user",
            "mode": "spot_wide"}
    case = make_case(
        [spot, submit("s0", "execute_spot", [{"op": "gate", "gate": "g"}], "S"),
         {"cmd": "settle"},
         submit("a1", "execute_actor", [], "S", actor_id="A"),
         submit("a2", "execute_actor", [], "S", actor_id="A"),
         {"cmd": "settle"}, {"cmd": "open", "gate": "g"}],
        [{"check": "status", "works": {"a1": "finished", "a2": "finished"}}])
    events = {1: [ev("accepted", "s0", "S")], 2: [ev("started", "s0", "S")],
              3: [ev("accepted", "a1", "S/actor:A")], 4: [ev("accepted", "a2", "S/actor:A")]}
    bad = play(case, {**events, 6: [ev("finished", "s0", "S"), *run_of("", "a2", "S"),
                                    *run_of("", "a1", "S")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None
    assert (div.rule, div.invariant, div.what()) == ("SE-6.6", "FifoWithinLane",
                                                     "started:a2@20")
    assert "S/actor:A" in div.explanation


def test_SD_1_a_runtime_that_cancels_work_nobody_disposed() -> None:
    case = make_case([QUEUE, submit("a", script=[{"op": "gate", "gate": "g"}]),
                      submit("b"), {"cmd": "settle"}],
                     [{"check": "status", "works": {"a": "running"}}])
    bad = play(case, {1: [ev("accepted", "a", "q")], 2: [ev("accepted", "b", "q")],
                      3: [ev("started", "a", "q"), ev("cancelled", "b", "q")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None and div.rule == "SD-1"
    assert "nothing cancelled q" in div.explanation


def test_SE_5_1_a_rejection_with_room_left() -> None:
    case = make_case([QUEUE, submit("a")], [{"check": "rejected", "work": "a",
                                              "reason": "application_count"}])
    bad = play(case, {1: [ev("rejected", "a", "q", reason="application_count")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None and div.rule == "SE-5.1"


def test_SE_5_1_a_refusal_as_closed_by_an_open_queue_says_nothing_closed_it() -> None:
    """A refusal as closed with nothing closed before it is explained as such, not by
    the bytes that would fit (what a verdict written before the acceptance of the final
    work that closed a session looks like)."""
    case = make_case([QUEUE, submit("a")], [{"check": "rejected", "work": "a",
                                              "reason": "closed"}])
    bad = play(case, {1: [ev("rejected", "a", "q", reason="closed")]})
    assert case_problems(case, bad) == []
    div = check_model(bad).divergence
    assert div is not None and div.rule == "SE-5.1"
    assert "a rejected as closed by q, but nothing the log reports before it closed q" \
        in div.explanation
    assert "bytes fit" not in div.explanation


def test_the_model_passes_every_case_of_the_reference_run(full_run: FullRun) -> None:
    """Sound on a correct runtime: no divergence and no undecided log in the whole run
    (test_reference_run runs every case in the lazy and eager progress modes too, with
    the model on)."""
    for result in full_run.report.results:
        assert result.log is not None
        verdict = check_model(result.log)
        assert (result.case.id, verdict.divergence, verdict.undecided) == (
            result.case.id, None, None)


def test_a_transcript_replays_through_the_model_from_its_entries() -> None:
    entries: list[Entry] = [
        ("sent", {"cmd": "reset"}), ("received", {"re": 0, "ok": True}),
        ("sent", QUEUE), ("received", {"re": 1, "ok": True}),
        ("sent", submit("a")), ("received", {"event": "accepted", "work": "a", "owner": "q"}),
        ("received", {"re": 2, "ok": True}),
        ("sent", {"cmd": "settle"}),
        ("received", {"event": "finished", "work": "a", "owner": "q"}),
    ]
    div = replay_entries(entries).divergence
    assert div is not None and div.invariant == "OneTurnPerOwner"
    assert div.message().startswith("[SE-1.1 model OneTurnPerOwner] finished:a@8")


def _bound_case(second: dict[str, Any]) -> Case:
    return make_case([QUEUE, submit("a", script=[{"op": "gate", "gate": "g"}]),
                      {"cmd": "settle"}, {"cmd": "dispose", "target": "q",
                                          "mode": "dispose_safely"}, second],
                     [{"check": "status", "works": {"a": "cancelled"}}])


def _bound_log(case: Case) -> CaseLog:
    return play(case, {1: [ev("accepted", "a", "q")], 2: [ev("started", "a", "q")],
                       3: [ev("zombie", "a", "q")], 5: [ev("cancelled", "a", "q")]})


def test_D_27_the_model_cancels_zombies_when_the_bound_after_dispose_safely_expires() -> None:
    """A zombie cancelled after dispose_after_timeout bounded a scope disposed safely is
    what D-27 asks: the model replays it (before, it ignored the call once the scope was
    no longer open and took the cancellation for one nobody asked for)."""
    case = _bound_case({"cmd": "dispose", "target": "q", "mode": "dispose_after_timeout",
                        "timeout_ms": 50})
    log = _bound_log(case)
    assert case_problems(case, log) == []
    verdict = check_model(log)
    assert verdict.divergence is None and verdict.undecided is None, verdict


def test_D_27_without_a_bound_a_cancelled_zombie_still_diverges() -> None:
    """The same log after a second dispose_safely (no bound): nothing asked for the
    cancellation, and the model names SD-1."""
    case = _bound_case({"cmd": "dispose", "target": "q", "mode": "dispose_safely"})
    log = _bound_log(case)
    div = check_model(log).divergence
    assert div is not None and div.rule == "SD-1", div


def _survivor_case() -> Case:
    return make_case(
        [QUEUE, submit("a", script=[{"op": "gate", "gate": "g", "ignore_cancel": True},
                                    {"op": "call", "call": "c"}]),
         {"cmd": "settle"}, {"cmd": "dispose", "target": "q", "mode": "dispose"},
         {"cmd": "open", "gate": "g"}, {"cmd": "settle"},
         {"cmd": "complete", "call": "c"}], [{"check": "status", "works": {"a": "finished"}}])


def test_SD_3_a_work_that_survives_its_cancellation_and_yields_waits_for_its_call() -> None:
    """SD-3a: the cancellation reached the turn holder at its gate, which swallowed it and
    went on; its later yield is a zombie's wait for its call, not a second cancellation.
    (The oracle used to demand the wait be cut short, and refused this log, which all
    three runtimes write: explore seed 31, scenario 9,470.)"""
    case = _survivor_case()
    good = play(case, {1: [ev("accepted", "a", "q")], 2: [ev("started", "a", "q")],
                       4: [ev("yielded", "a", "q", call="c")],
                       6: [ev("resumed", "a", "q"), ev("finished", "a", "q")]})
    assert check_model(good).divergence is None


def test_SD_1_a_work_yielded_when_its_scope_is_cancelled_still_has_its_wait_cut() -> None:
    """The exemption above is for a work the cancellation reached: one that was waiting
    on its call when the scope was cancelled must be woken to meet it (D-8)."""
    case = make_case([QUEUE, submit("a", script=[{"op": "call", "call": "c"}]),
                      {"cmd": "settle"}, {"cmd": "dispose", "target": "q", "mode": "dispose"},
                      {"cmd": "settle"}], [{"check": "status", "works": {"a": "cancelled"}}])
    bad = play(case, {1: [ev("accepted", "a", "q")],
                      2: [ev("started", "a", "q"), ev("yielded", "a", "q", call="c")]})
    div = check_model(bad).divergence
    assert div is not None and div.rule == "SE-6.5", div
