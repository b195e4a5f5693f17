"""Draws added to a random scenario after its main draw, each from a stream of its own.

The main draw (``generate``) was fixed when the first kills were recorded; what it left
out is added here, over the finished body: races of several threads on one queue,
waiters on a scope, a disposal's timeout met to the millisecond, a bound set on the
zombies of a scope disposed safely, Actor registrations read by snapshots while they
change, barrier-next work placed inside a lifecycle streak, and one owner flooding the
one execution resource while another waits. Each addition draws from
``random.Random(f"{seed}:{index}:{name}")``, a stream no other draw touches, so a
scenario the additions leave alone is exactly what it was before them, and every
scenario of a seed is still named by its seed and number.

Everything added is still only what the handshake declares: a race with
``concurrent_submission``, a waiter with ``disposal`` (``queue_observation`` for a bare
queue's quiescence), the timeout's clock move with ``virtual_clock``, registrations and
``snapshot`` ops with ``snapshots``, barrier-next work with ``queue``, the flood with
``single_execution_resource`` and ``virtual_clock``; a policy field only where the
adapter has not refused it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from zlink_model.vocabulary import DISPOSE_AFTER_TIMEOUT, DISPOSE_SAFELY

from ..protocol.routing import LIFECYCLE_ENTRIES, PAYLOAD_ENTRIES
from ..protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND
from .scenario import walk_submissions

__all__ = ["ADDITIONS", "add_to"]

Body = list[dict[str, Any]]

ONE_QUEUE_RACE_SHARE = 0.5
"""The share of ``submit_concurrent`` commands turned into a race on one queue."""
MAX_RACERS = 4
"""A race on one queue has up to this many racers: the model judges their verdicts in
every order, by the set judged so far (``2**n`` sets of ``n`` racers), which with six
took an eighth of the runner's time."""
WAITER_SHARE = 0.3
"""The share of scenarios given waiters (``await``) on their targets."""
BOUND_SHARE = 0.5
"""The share of ``dispose_safely`` commands followed by a ``dispose_after_timeout``."""
DEADLINE_SHARE = 0.5
"""The share of ``dispose_after_timeout`` commands followed by a clock move of exactly
their timeout."""
BARRIER_SHARE = 0.5
"""The share of a bare queue's lifecycle works that submit a barrier-next work to their
own queue first thing."""
FLOOD_SHARE = 0.15
"""The share of scenarios that end with one owner flooding the one execution resource
while another becomes ready."""
SNAPSHOT_SHARE = 0.35
"""The share of scenarios whose Actors are registered and read by snapshots."""


def _one_queue_race(body: Body, rng: random.Random, caps: frozenset[str],
                    fields: Sequence[str]) -> None:
    """Some races of the main draw run on one queue: every submission of the race takes
    the first one's target, entry, Actor and timer (its work, script and payload stay).
    The main draw gives each racing submission owners of its own; here the threads race
    for one queue's admission (SE-6.3: check and insertion one step, so a capacity is
    never overfilled). The model judges the accepted verdicts of a race in every order
    the runtime may have admitted them, so the FIFO and burst order stay judged. The
    queue's count capacity of the lane they race for is set below the number of racers
    where its policy has none (and the adapter keeps the field), so the race is for the
    last places."""
    if "concurrent_submission" not in caps:
        return
    creates = {m["target"]: m for _, m in _targets(body)}
    n = 0
    for message in body:
        if message.get("cmd") != "submit_concurrent" or rng.random() >= ONE_QUEUE_RACE_SHARE:
            continue
        subs = message["submissions"]
        first = subs[0]
        for _ in range(rng.randint(len(subs), MAX_RACERS) - len(subs)):
            n += 1
            subs.append({**first, "work": f"wr{n}", "script": []})
        entry = first["entry"]
        field = ("lifecycle_message_capacity" if entry in LIFECYCLE_ENTRIES
                 else "application_message_capacity")
        create = creates[first["target"]]
        key = {"execute_actor": "actor_policy", "execute_timer": "timer_policy"}.get(
            entry, "policy") if create["type"] == "spot" else "policy"
        if field in fields:
            create.setdefault(key, {}).setdefault(field, rng.randint(1, len(subs) - 1))
        for sub in subs[1:]:
            for key in ("target", "entry", "actor_id", "timer_name"):
                if key in first:
                    sub[key] = first[key]
                else:
                    sub.pop(key, None)
            if first["entry"] not in PAYLOAD_ENTRIES:
                sub.pop("payload_bytes", None)
            elif first["entry"] == "enqueue_with_payload_bytes" and "payload_bytes" not in sub:
                sub["payload_bytes"] = rng.choice((0, 16, 64, 250))


_SETTLED_FIRST = frozenset({CLOSE_COMMAND, DISPOSE_COMMAND, "submit_concurrent"})


def _point(body: Body, lo: int, rng: random.Random) -> int:
    """A random place in ``body`` at or after ``lo`` to insert a command at, never
    between a settle and the command that must follow it (``Scenario.well_formed``)."""
    free = [p for p in range(lo, len(body) + 1)
            if p == len(body) or body[p].get("cmd") not in _SETTLED_FIRST]
    return rng.choice(free)


def _script(sub: Mapping[str, Any]) -> list[dict[str, Any]]:
    """A submission's script, to add ops to (every submission the generator makes has
    one; ``walk_submissions`` hands them out read-only)."""
    script: list[dict[str, Any]] = sub["script"]
    return script


def _targets(body: Body) -> list[tuple[int, dict[str, Any]]]:
    return [(i, m) for i, m in enumerate(body) if m.get("cmd") == "create"]


def _waiters(body: Body, rng: random.Random, caps: frozenset[str],
             fields: Sequence[str]) -> None:
    """Waiters on the scenario's targets: ``await`` mode ``completion`` on a scope (it
    returns once no active work of the scope is left, zombies not counted, SD-3) and
    mode ``quiescence`` on a bare queue (once every work it accepted has ended, SE-6.2),
    each sent at a random point after its target is made. The oracle's waiter judge
    holds each to when it may and must return."""
    if rng.random() >= WAITER_SHARE:
        return
    choices = []
    for i, create in _targets(body):
        if create["type"] == "queue":
            if "queue_observation" in caps:
                choices.append((i, create["target"], "quiescence"))
        elif "disposal" in caps:
            choices.append((i, create["target"], "completion"))
    if not choices:
        return
    inserts: list[tuple[int, dict[str, Any]]] = []
    for n in range(rng.choice((1, 1, 2))):
        at, target, mode = rng.choice(choices)
        where = _point(body, at + 1, rng)
        inserts.append((where, {"cmd": "await", "target": target, "waiter": f"v{n + 1}",
                                "mode": mode}))
    for where, message in sorted(inserts, key=lambda x: x[0], reverse=True):
        body.insert(where, message)


def _insert_after(body: Body, rng: random.Random, share: float,
                  matches: Callable[[dict[str, Any]], bool],
                  make: Callable[[dict[str, Any]], list[dict[str, Any]]]) -> None:
    """After each message ``matches`` picks, with probability ``share``, the messages
    ``make`` builds from it; what is inserted is never itself considered (one draw per
    original match, in the order of the body, so a seed gives the same scenario)."""
    i = 0
    while i < len(body):
        message = body[i]
        i += 1
        if not matches(message) or rng.random() >= share:
            continue
        added = make(message)
        body[i:i] = added
        i += len(added)


def _bound_after_safely(body: Body, rng: random.Random, caps: frozenset[str],
                        fields: Sequence[str]) -> None:
    """After some ``dispose_safely`` (and ``destroy``, which disposes safely unless told
    otherwise), a ``dispose_after_timeout`` on the same scope, after a settle: a bound on
    its zombies (D-27), which must cancel every one left when it expires."""
    if not {"disposal", "virtual_clock"} <= caps:
        return
    _insert_after(
        body, rng, BOUND_SHARE,
        lambda m: m.get("cmd") == DISPOSE_COMMAND and m.get("mode") in (DISPOSE_SAFELY,
                                                                        "destroy"),
        lambda m: [{"cmd": "settle"},
                   {"cmd": DISPOSE_COMMAND, "target": m["target"],
                    "mode": DISPOSE_AFTER_TIMEOUT, "timeout_ms": rng.choice((1, 10, 50))}])


def _deadline(body: Body, rng: random.Random, caps: frozenset[str],
              fields: Sequence[str]) -> None:
    """After some ``dispose_after_timeout``, the clock moved by exactly its timeout and
    a settle: the timer is due at that very moment (SD-1: what is left is cancelled
    once the timeout has passed, not a tick later)."""
    if "virtual_clock" not in caps:
        return
    _insert_after(
        body, rng, DEADLINE_SHARE,
        lambda m: m.get("cmd") == DISPOSE_COMMAND and m.get("mode") == DISPOSE_AFTER_TIMEOUT,
        lambda m: [{"cmd": "advance", "ms": m["timeout_ms"]}, {"cmd": "settle"}])


def _barrier_in_turn(body: Body, rng: random.Random, caps: frozenset[str],
                     fields: Sequence[str]) -> None:
    """Some lifecycle works of a bare queue submit a barrier-next work to their own queue
    first thing, as a runtime's own code does between two lifecycle steps: the barrier
    is taken right after the turn that placed it, in the middle of a lifecycle streak,
    and taking it counts as taking application work (D-4: the streak starts again). The
    queue gets a burst limit of 1 or 2 when it has none (and the adapter keeps the
    field), so the streak decides what comes after the barrier. Never inside a race: a
    racing work submits nowhere (``generate``, ``do_concurrent``)."""
    if "queue" not in caps:
        return
    queues = {m["target"]: m for _, m in _targets(body) if m["type"] == "queue"}
    placed: set[str] = set()
    n = 0
    for message in body:
        if message.get("cmd") != "submit":
            continue
        for sub in walk_submissions(message):
            if sub.get("target") not in queues or sub.get("entry") != "enqueue_lifecycle" \
                    or rng.random() >= BARRIER_SHARE:
                continue
            n += 1
            _script(sub).insert(0, {
                "op": "submit", "work": f"wb{n}", "target": sub["target"],
                "entry": "enqueue_barrier_next", "script": []})
            placed.add(sub["target"])
    if "lifecycle_burst_limit" not in fields:
        return
    for target in sorted(placed):
        policy = queues[target].setdefault("policy", {})
        policy.setdefault("lifecycle_burst_limit", rng.choice((1, 2)))


def _snapshots(body: Body, rng: random.Random, caps: frozenset[str],
               fields: Sequence[str]) -> None:
    """Actor registrations read while they change: each Actor target, and each Actor a
    Spot's submissions name, is registered right after its target is made; some of its
    messages (``execute_actor``) read their snapshot at the start and at the end of
    their script (a gate or call between the two lets a change come mid-message), and
    ``update_registration`` commands change the values at random points after. A
    message keeps the values it started with for its whole run (SE-7.2)."""
    if "snapshots" not in caps or rng.random() >= SNAPSHOT_SHARE:
        return
    kinds = {m["target"]: m for _, m in _targets(body)}
    actors: dict[tuple[str, str | None], int] = {}  # (target, actor id) -> create index
    for message in body:
        for sub in walk_submissions(message):
            create = kinds.get(sub.get("target", ""))
            if create is None or sub.get("entry") != "execute_actor":
                continue
            key = (sub["target"], sub.get("actor_id"))
            if create["type"] in ("actor", "spot") and key not in actors:
                actors[key] = next(j for j, m in enumerate(body) if m is create)
            if rng.random() < 0.7:
                script = _script(sub)
                last = len(script) - (1 if script and script[-1]["op"] == "raise" else 0)
                script.insert(last, {"op": "snapshot"})
                script.insert(0, {"op": "snapshot"})
    if not actors:
        return
    inserts: list[tuple[int, dict[str, Any]]] = []
    version = 0
    for (target, actor), at in actors.items():
        register: dict[str, Any] = {"cmd": "register", "target": target, "actor_type": "npc",
                                    "values": {"hp": 10, "name": "orc"}}
        if actor is not None:
            register["actor_id"] = actor
        inserts.append((at + 1, register))
        for _ in range(rng.choice((1, 2, 3))):
            version += 1
            update: dict[str, Any] = {"cmd": "update_registration", "target": target,
                                      "values": rng.choice(({"hp": version},
                                                            {"name": f"v{version}"},
                                                            {"hp": version,
                                                             "name": f"v{version}"}))}
            if actor is not None:
                update["actor_id"] = actor
            inserts.append((_point(body, at + 1, rng), update))
    # The register of a target goes before any of its updates at the same point.
    order = {id(m): n for n, (_, m) in enumerate(inserts)}
    for where, message in sorted(inserts, key=lambda x: (x[0], order[id(x[1])]),
                                 reverse=True):
        body.insert(where, message)


def _flood(body: Body, rng: random.Random, caps: frozenset[str],
           fields: Sequence[str]) -> None:
    """One owner floods the one execution resource while another becomes ready: two
    targets made anew (copies of a kind the scenario already made, one owner each; two
    Actors of one Spot for a PerActor or Entry Spot), the flooding owner with a time
    budget of a few milliseconds. Its first work waits at a gate, then submits a work
    to the other owner and is busy; three to five more works of the flooding owner, each
    busy a few milliseconds, wait behind it. Once the gate opens, the slice must end
    when the budget is used, and the other owner, ready since the first work, runs
    before the flood goes on (SE-6.4, D-13). Only for a runtime that declares one
    execution resource for every owner and a virtual clock (else a cut slice cannot be
    seen)."""
    if not {"single_execution_resource", "virtual_clock"} <= caps \
            or "owner_time_budget_ms" not in fields or rng.random() >= FLOOD_SHARE:
        return
    kinds = [m for _, m in _targets(body) if not (
        m["type"] == "spot" and (m.get("kind") == "instance" or m.get("mode") == "spot_wide"))]
    if not kinds:
        return
    kind = rng.choice(kinds)
    make = {k: v for k, v in kind.items() if k in ("cmd", "type", "kind", "mode")}
    budget = rng.choice((5, 8, 10, 20))
    busy = rng.choice((4, 5, 10))
    flood: dict[str, Any] = {**make, "target": "F0"}
    entry = {"spot": "execute_actor", "actor": "execute_actor", "session":
             "execute_application", "queue": "enqueue"}[kind["type"]]
    added: Body = [flood]
    if kind["type"] == "spot":
        flood["actor_policy"] = {"owner_time_budget_ms": budget}
        mine: dict[str, Any] = {"target": "F0", "entry": entry, "actor_id": "fa"}
        other: dict[str, Any] = {"target": "F0", "entry": entry, "actor_id": "fb"}
    else:
        flood["policy"] = {"owner_time_budget_ms": budget}
        added.append({**make, "target": "F1"})
        mine = {"target": "F0", "entry": entry}
        other = {"target": "F1", "entry": entry}
    first = {"cmd": "submit", "work": "f0", **mine, "script": [
        {"op": "gate", "gate": "fg"},
        {"op": "submit", "work": "fo", **other, "script": [{"op": "busy", "ms": busy}]},
        {"op": "busy", "ms": busy}]}
    added.append(first)
    for n in range(1, rng.randint(3, 5) + 1):
        added.append({"cmd": "submit", "work": f"f{n}", **mine,
                      "script": [{"op": "busy", "ms": busy}]})
    added += [{"cmd": "settle"}, {"cmd": "open", "gate": "fg"}]
    body += added


Addition = Callable[[Body, random.Random, frozenset[str], Sequence[str]], None]

ADDITIONS: Mapping[str, Addition] = {
    "race": _one_queue_race,
    "waiters": _waiters,
    "bound": _bound_after_safely,
    "deadline": _deadline,
    "snapshots": _snapshots,
    "barrier": _barrier_in_turn,
    "flood": _flood,
}
"""Each addition by the name of its stream, applied in this order."""


def add_to(body: Body, caps: frozenset[str], fields: Sequence[str], seed: int,
           index: int) -> None:
    """Apply every addition to scenario ``index`` of ``seed``, in place (``fields``: the
    policy fields the adapter has not refused)."""
    for name, addition in ADDITIONS.items():
        addition(body, random.Random(f"{seed}:{index}:{name}"), caps, fields)

