"""The oracle on hand-made logs: each invariant catches the violation it is named for, each
check fails when its expectation does not hold, and a correct log passes."""

from __future__ import annotations

from typing import Any

import pytest

from zlink_conformance.oracle import (
    CaseLog,
    CheckContext,
    WorkInfo,
    check_invariants,
    match_reply,
    parse_check,
)
from zlink_conformance.protocol.routing import TargetInfo, route
from zlink_conformance.protocol.wire import Event, Reply

PER_ACTOR = TargetInfo("S", "spot", "user", "per_actor")
SPOT_WIDE = TargetInfo("S", "spot", "user", "spot_wide")


def works(target: TargetInfo, **actors: str) -> dict[str, WorkInfo]:
    """Works submitted to actors of the target (command ids 1, 2, ...)."""
    return {w: WorkInfo(w, target.name, "execute_actor", route(target, "execute_actor", a), i)
            for i, (w, a) in enumerate(actors.items(), 1)}


def log_of(*items: tuple[str, ...] | int) -> CaseLog:
    """("started", "a", "S/actor:A") tuples are events; an int n is the reply to command n."""
    log = CaseLog()
    for item in items:
        if isinstance(item, int):
            log.reply(Reply(item, True, {}))
            continue
        name, work, *rest = item
        if name == "fault":
            log.event(Event("fault", {"message": "broken"}))
            continue
        fields: dict[str, Any] = {"work": work, "owner": rest[0]}
        for extra in rest[1:]:
            key, _, value = extra.partition("=")
            fields[key] = value
        log.event(Event(name, fields))
    return log


def accepted(w: str, owner: str) -> tuple[str, ...]:
    return ("accepted", w, owner)


def test_a_correct_log_has_no_violations() -> None:
    log = log_of(accepted("a", "S/actor:A"), 1, accepted("b", "S/actor:A"), 2,
                 ("started", "a", "S/actor:A"), ("yielded", "a", "S/actor:A", "call=c"),
                 ("resumed", "a", "S/actor:A"), ("finished", "a", "S/actor:A"),
                 ("started", "b", "S/actor:A"), ("finished", "b", "S/actor:A"))
    assert check_invariants(log, works(PER_ACTOR, a="A", b="A")) == []


@pytest.mark.parametrize(("target", "events", "violation"), [
    (PER_ACTOR, [accepted("a", "S/actor:A"), 1, accepted("b", "S/actor:A"), 2,
                 ("started", "a", "S/actor:A"), ("started", "b", "S/actor:A")],
     "[SE-1.1 OneTurnPerOwner] b started@5 on S/actor:A while a held its turn"),
    (SPOT_WIDE, [accepted("a", "S/actor:A"), 1, accepted("b", "S/actor:A"), 2,
                 ("started", "a", "S"), ("yielded", "a", "S", "call=c"), ("started", "b", "S")],
     "[SE-4.6 ActorClaimHeld] b started@6 while a of the same Actor (S/actor:A)"),
    (SPOT_WIDE, [accepted("a", "S/actor:A"), 1, ("started", "a", "S/actor:A")],
     "[SE-3 Routing] a started@2 names owner 'S/actor:A'; execute_actor on S must use S"),
    (PER_ACTOR, [accepted("a", "S"), 1],
     "[SE-3 Routing] a accepted@0 names owner 'S'; execute_actor on S must use S/actor:A"),
    (PER_ACTOR, [accepted("a", "S/actor:A"), 1, ("started", "a", "S/actor:A"),
                 ("yielded", "a", "S/actor:A", "call=c"), ("cancelled", "a", "S/actor:A")],
     "[D-8 CancelledOnOwnTurn] a cancelled@4 while yielded"),
    (PER_ACTOR, [("started", "a", "S/actor:A"), accepted("a", "S/actor:A"), 1],
     "[D-11 WorkLifecycle] a: started@0 after no events"),
    (PER_ACTOR, [accepted("a", "S/actor:A"), 1, ("started", "a", "S/actor:A"),
                 ("finished", "a", "S/actor:A"), ("snapshot", "a", "S/actor:A")],
     "[D-11 WorkLifecycle] a: snapshot@4 after"),
    (PER_ACTOR, [accepted("a", "S/actor:A"), 1, ("started", "ghost", "S")],
     "[D-11 WorkLifecycle] started@2 names work 'ghost', which this case never submitted"),
    (PER_ACTOR, [1, accepted("a", "S/actor:A")],
     "[SE-6.3 VerdictBeforeReply] a: no accepted/rejected event before the reply"),
    (PER_ACTOR, [accepted("a", "S/actor:A"), 1, ("fault", "")],
     "[SE-1.1 NoFault] the runtime reported a fault@2"),
])
def test_each_invariant_catches_its_violation(target: TargetInfo, events: list[Any],
                                              violation: str) -> None:
    found = check_invariants(log_of(*events), works(target, a="A", b="A"))
    assert any(violation in v for v in found), found


def test_a_rejection_for_a_closed_coordinator_may_name_the_target() -> None:
    log = log_of(("rejected", "a", "S", "reason=closed"), 1)
    assert check_invariants(log, works(PER_ACTOR, a="A")) == []


def check(obj: dict[str, Any], log: CaseLog, handshake: dict[str, Any] | None = None
          ) -> list[str]:
    parsed, problems = parse_check(obj, "test")
    assert parsed is not None, problems
    return parsed.evaluate(log, CheckContext(handshake or {}))


TWO = log_of(accepted("a", "A"), accepted("b", "B"), ("started", "a", "A"),
             ("started", "b", "B"), ("finished", "b", "B"), ("finished", "a", "A"),
             accepted("c", "A"), ("started", "c", "A"), ("finished", "c", "A"))


def test_overlap_and_order_checks() -> None:
    assert check({"check": "overlap", "works": ["a", "b"]}, TWO) == []
    assert check({"check": "no_overlap", "works": ["a", "b"]}, TWO) != []
    assert check({"check": "no_overlap", "works": ["a", "c"]}, TWO) == []
    assert check({"check": "overlap", "works": ["b", "c"]}, TWO) != []
    assert check({"check": "start_order", "works": ["a", "b", "c"]}, TWO) == []
    assert check({"check": "start_order", "works": ["b", "a"]}, TWO) == [
        "expected start order b a, got a b (started at log positions a@2 b@3)"]
    assert check({"check": "order", "events": ["finished:b", "finished:a"]}, TWO) == []
    assert "came before" in check({"check": "order", "events": ["finished:a", "started:b"]},
                                  TWO)[0]
    assert "never happened" in check({"check": "order", "events": ["started:a", "yielded:a"]},
                                     TWO)[0]
    assert "never started" in check({"check": "overlap", "works": ["a", "d"]}, TWO)[0]


def test_status_and_per_work_checks() -> None:
    assert check({"check": "status", "works": {"a": "finished", "d": "unknown"}}, TWO) == []
    assert check({"check": "status", "works": {"a": "running"}, "why": "w"}, TWO) == [
        "a: expected status running, got finished (accepted@0 started@2 finished@5); why: w"]
    assert check({"check": "events", "work": "c", "events": ["accepted", "started",
                                                             "finished"]}, TWO) == []
    assert check({"check": "rejected", "work": "a", "reason": "closed"}, TWO) != []
    assert check({"check": "failed", "work": "a", "message": "x"}, TWO) != []
    assert check({"check": "errors", "work": "a", "kinds": []}, TWO) == []
    assert check({"check": "errors", "work": "a", "kinds": ["reentrancy"]}, TWO) != []
    assert check({"check": "zombies", "works": ["a"]}, TWO) == [
        "expected zombies ['a'], got [] (no zombie event)"]
    assert check({"check": "waiter", "waiter": "w", "returned": False}, TWO) == []
    assert check({"check": "waiter", "waiter": "w", "returned": True}, TWO) == [
        "waiter w has not returned (no returned event in the 9 entries of the log)"]


def test_surface_check_names_a_parameter_that_could_steer_the_queue() -> None:
    good = {"capabilities": ["actor"], "surface": {"actor": {
        "execute_actor": ["work", "payload_bytes"], "execute_lifecycle": ["work"]}}}
    assert check({"check": "surface"}, TWO, good) == []
    bad = {"capabilities": ["actor"], "surface": {"actor": {
        "execute_actor": ["work", "payload_bytes", "queue"], "execute_lifecycle": ["work"]}}}
    assert check({"check": "surface"}, TWO, bad) == [
        "actor.execute_actor takes ['queue'], beyond ['work', 'payload_bytes']: a caller "
        "could steer the queue"]
    odd = {"capabilities": ["actor"], "surface": {"actor": {
        "execute_actor": "work", "execute_lifecycle": ["work"]}}}
    assert check({"check": "surface"}, TWO, odd) == [
        "actor.execute_actor: the parameters must be a list of names"]
    assert check({"check": "surface"}, TWO, {"capabilities": []}) == [
        "the handshake reports no 'surface' (entry points and their parameters)"]


def test_reply_expectations_match_subsets_and_work_lists_in_any_order() -> None:
    actual = {"active": 0, "zombies": 2, "owners": {"A": {"application_count": 1, "x": 5}},
              "list": [{"work": "b", "state": "queued"}, {"work": "a", "state": "running"}]}
    assert match_reply({"zombies": 2, "owners": {"A": {"application_count": 1}}}, actual) == []
    assert match_reply({"list": [{"work": "a", "state": "running"},
                                 {"work": "b", "state": "queued"}]}, actual) == []
    assert match_reply({"zombies": 1}, actual) == ["reply.zombies: expected 1, got 2"]
    assert match_reply({"active": False}, actual) == ["reply.active: expected False, got 0"]
    assert match_reply({"missing": 1}, actual) == ["reply.missing: missing (expected 1)"]
