"""The ``random`` strategy: scenarios drawn from what the adapter declared, by seed.

Everything a scenario uses comes from the handshake: the target types, Spot kinds and
modes of its capabilities, the entry points of its ``surface`` (the protocol's entries
where it lists none for a type), the ops and commands its capabilities allow (``call``
with ``yield``, ``busy`` and ``advance`` with ``virtual_clock``, ``await_scope`` with
``scope_wait``, disposal with ``disposal``, ``submit_concurrent`` with
``concurrent_submission``) and the policy fields it has not refused. Nothing it did not
declare is ever sent, so a runtime with four capabilities gets as many judged scenarios
as one with twenty, each within its reach.

A scenario is a ``random.Random(f"{seed}:{index}")`` away from its seed: the same seed
gives the same scenarios, whatever ran before, and scenario ``n`` of a seed can be made
again alone (a soak spread over machines takes one seed each).
"""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Mapping, Sequence
from typing import Any

from zlink_model.vocabulary import DISPOSE, DISPOSE_AFTER_TIMEOUT, DISPOSE_SAFELY

from ..protocol.routing import PAYLOAD_ENTRIES, TargetInfo, route
from ..protocol.wire import (
    CLOSE_COMMAND,
    DISPOSE_COMMAND,
    ENTRIES,
    POLICY_FIELDS,
    SCOPE_WAIT_MODES,
)
from .additions import add_to
from .scenario import Scenario

__all__ = ["Declared", "RandomStrategy", "TargetKind"]


@dataclasses.dataclass(frozen=True, slots=True)
class TargetKind:
    """A kind of target the adapter can create: type, Spot kind and mode."""

    type: str
    kind: str | None = None
    mode: str | None = None

    def create(self, name: str) -> dict[str, Any]:
        """The ``create`` command for a target of this kind named ``name``."""
        out: dict[str, Any] = {"cmd": "create", "target": name, "type": self.type}
        if self.kind is not None:
            out["kind"] = self.kind
        if self.mode is not None:
            out["mode"] = self.mode
        return out

    @property
    def offers_yield(self) -> bool:
        """Entry Spots offer no Yield (SE-4.1)."""
        return self.kind != "entry"

    @property
    def disposable(self) -> bool:
        """A scope with the disposal calls of SD-1 (Spots, Actors, Sessions)."""
        return self.type in ("spot", "actor", "session")


_KINDS: Mapping[str, TargetKind] = {
    "spot.user.per_actor": TargetKind("spot", "user", "per_actor"),
    "spot.user.spot_wide": TargetKind("spot", "user", "spot_wide"),
    "spot.entry": TargetKind("spot", "entry"),
    "spot.instance": TargetKind("spot", "instance"),
    "actor": TargetKind("actor"),
    "session": TargetKind("session"),
    "queue": TargetKind("queue"),
}


@dataclasses.dataclass(slots=True)
class Declared:
    """What the handshake declared, as the generator uses it."""

    capabilities: frozenset[str]
    kinds: tuple[TargetKind, ...]
    entries: Mapping[str, tuple[str, ...]]
    policy_fields: list[str]

    @classmethod
    def of(cls, capabilities: Sequence[str], surface: Mapping[str, Any] | None
           ) -> Declared:
        """From the handshake's capabilities and surface."""
        caps = frozenset(capabilities)
        kinds = tuple(k for name, k in _KINDS.items() if name in caps)
        entries: dict[str, tuple[str, ...]] = {}
        for type_, protocol in ENTRIES.items():
            listed = (surface or {}).get(type_)
            if isinstance(listed, Mapping) and listed:
                chosen = tuple(e for e in protocol if e in listed)
            else:
                chosen = protocol
            entries[type_] = chosen
        return cls(caps, kinds, entries, list(POLICY_FIELDS))

    def refuse_field(self, field: str) -> bool:
        """The adapter refused a policy field: no scenario sends it again. True when it
        was still in use."""
        if field in self.policy_fields:
            self.policy_fields.remove(field)
            return True
        return False


CLOSING_ENTRIES = frozenset({"execute_final"})
"""Entries whose admission closes the target to later work (D-12). Never raced in a
``submit_concurrent``: a submission judged before the final's admission is refused for
its own reason, one judged after it as closed. The model now judges a race's verdicts in
every order (refusals placed among the admissions), but the draw is kept as it was
fixed, so that every scenario of a seed stays what it was."""

# Small numbers make limits bite: capacities of a few works, payloads around them.
_POLICY_RANGES: Mapping[str, tuple[int, int]] = {
    "application_message_capacity": (1, 6),
    "application_byte_capacity": (32, 600),
    "lifecycle_message_capacity": (1, 5),
    "lifecycle_byte_capacity": (32, 600),
    "fixed_work_byte_cost": (0, 64),
    "lifecycle_burst_limit": (1, 4),
    "owner_time_budget_ms": (1, 30),
}


SCOPE_WAIT_SHARE = 0.05
"""The share of top-level works that await their own scope (``await_scope``)."""


class RandomStrategy:
    """Draws scenarios of at most ``max_steps`` commands (before the tail that releases
    what they left blocked)."""

    name = "random"

    def __init__(self, declared: Declared, seed: int, max_steps: int = 24) -> None:
        self.declared = declared
        self.seed = seed
        self.max_steps = max(1, max_steps)

    def scenario(self, index: int) -> Scenario:
        """Scenario ``index`` of this seed."""
        scenario = _Draw(self.declared, random.Random(f"{self.seed}:{index}"), self.max_steps,
                         random.Random(f"{self.seed}:{index}:side")).scenario(self.seed, index)
        add_to(scenario.body, self.declared.capabilities, self.declared.policy_fields,
               self.seed, index)
        return scenario


class _Draw:
    """The state of one scenario's drawing: names used, gates and calls pending."""

    def __init__(self, declared: Declared, rng: random.Random, max_steps: int,
                 aux: random.Random) -> None:
        self.d = declared
        self.rng = rng
        # A side stream for ops added after the main draw was fixed: drawing them never
        # moves the main stream, so every earlier scenario of a seed is drawn alike.
        self.aux = aux
        self.max_steps = max_steps
        self.body: list[dict[str, Any]] = []
        self.targets: list[tuple[str, TargetKind]] = []
        self.works: dict[str, str] = {}  # work -> target
        self.pending_gates: list[str] = []
        self.pending_calls: list[str] = []
        self.counter = 0
        self.closed: set[str] = set()
        # Actor ids and timer names: more owners than a plausible pool has threads.
        self.actor_ids = [f"a{i}" for i in range(rng.choice((1, 2, 3, 6, 9)))]
        self.timer_names = [f"t{i}" for i in range(rng.choice((1, 2, 3)))]

    def name(self, prefix: str) -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    # ---------------------------------------------------------------- targets
    def policy(self) -> dict[str, int] | None:
        fields = self.d.policy_fields
        if not fields or self.rng.random() < 0.4:
            return None
        if "owner_time_budget_ms" in fields and "virtual_clock" not in self.d.capabilities:
            fields = [f for f in fields if f != "owner_time_budget_ms"]
        chosen = self.rng.sample(fields, self.rng.randint(1, min(3, len(fields))))
        return {f: self.rng.randint(*_POLICY_RANGES[f]) for f in sorted(chosen)}

    def create(self, kind: TargetKind) -> None:
        name = f"T{len(self.targets)}"
        message = kind.create(name)
        keys = ["policy", "actor_policy", "timer_policy"] if kind.type == "spot" \
            else ["policy"]
        for key in keys:
            policy = self.policy()
            if policy:
                message[key] = policy
        self.body.append(message)
        self.targets.append((name, kind))

    # ------------------------------------------------------------------ works
    def submission(self, depth: int = 0, target: str | None = None, *,
                   concurrent: bool = False) -> dict[str, Any] | None:
        choices = [(n, k) for n, k in self.targets if self.d.entries.get(k.type)]
        if target is not None:
            choices = [(n, k) for n, k in choices if n == target] or choices
        if not choices:
            return None
        name, kind = self.rng.choice(choices)
        entries = self.d.entries[kind.type]
        if concurrent:
            # A final work closes its session: racing it against other admissions makes
            # their verdicts depend on an order no event shows (see CLOSING_ENTRIES).
            entries = tuple(e for e in entries if e not in CLOSING_ENTRIES) or entries
        entry = self.rng.choice(entries)
        work = self.name("w")
        sub: dict[str, Any] = {"work": work, "target": name, "entry": entry}
        if kind.type == "spot" and entry == "execute_actor":
            sub["actor_id"] = self.rng.choice(self.actor_ids)
        if entry == "execute_timer":
            sub["timer_name"] = self.rng.choice(self.timer_names)
        if entry == "enqueue_with_payload_bytes" or (
                entry in PAYLOAD_ENTRIES and self.rng.random() < 0.6):
            sub["payload_bytes"] = self.rng.choice((0, 1, 16, 64, 100, 250))
        self.works[work] = name
        sub["script"] = self.script(kind, depth, name)
        return sub

    def script(self, kind: TargetKind, depth: int, target: str) -> list[dict[str, Any]]:
        caps = self.d.capabilities
        ops: list[dict[str, Any]] = []
        for _ in range(self.rng.choice((0, 0, 1, 1, 2, 3))):
            roll = self.rng.random()
            if roll < 0.35:
                gate = self.name("g")
                op: dict[str, Any] = {"op": "gate", "gate": gate}
                if "disposal" in caps and self.rng.random() < 0.1:
                    op["ignore_cancel"] = True
                ops.append(op)
                self.pending_gates.append(gate)
            elif roll < 0.6 and "yield" in caps:
                call = self.name("c")
                ops.append({"op": "call", "call": call})
                self.pending_calls.append(call)
            elif roll < 0.72 and "virtual_clock" in caps:
                ops.append({"op": "busy", "ms": self.rng.choice((1, 5, 10, 40))})
            elif roll < 0.88 and depth == 0:
                # Nested: on the same target (same or another owner) or another one.
                same = target if self.rng.random() < 0.5 else None
                nested = self.submission(depth + 1, same)
                if nested is not None:
                    ops.append({"op": "submit", **nested})
            elif roll < 0.93 and "synchronous_wait" in caps and depth == 0:
                # A wait for an earlier work of the same coordinator: SE-8.2 says it
                # raises at once (a wait across coordinators could deadlock by design).
                mine = [w for w, t in self.works.items() if t == target]
                if mine:
                    ops.append({"op": "wait_for", "work": self.rng.choice(mine),
                                **({"wrapped": True} if self.rng.random() < 0.3 else {})})
            else:
                ops.append({"op": "raise", "message": "boom"})
                break
        if depth == 0 and "scope_wait" in caps and self.aux.random() < SCOPE_WAIT_SHARE:
            # A wait on the work's own target, which counts the waiter: SE-8.2 and
            # SE-10.13 say it raises at once (not_disposed first for an after-cancellation
            # wait on a scope never disposed). Drawn from the side stream, so the
            # scenarios of a seed stay what they were for an adapter without it.
            last = len(ops) - (1 if ops and ops[-1]["op"] == "raise" else 0)
            ops.insert(self.aux.randint(0, last),
                       {"op": "await_scope", "mode": self.aux.choice(SCOPE_WAIT_MODES)})
        return ops

    # --------------------------------------------------------------- commands
    def step(self) -> None:
        caps = self.d.capabilities
        options: list[tuple[float, str]] = [(6.0, "submit"), (2.5, "settle")]
        if self.pending_gates:
            options.append((3.0, "open"))
        if self.pending_calls:
            options.append((3.0, "call"))
        if "virtual_clock" in caps:
            options.append((0.8, "advance"))
        if "concurrent_submission" in caps:
            options.append((0.6, "concurrent"))
        if len(self.targets) < 3 and len(self.d.kinds) > 0:
            options.append((0.5, "create"))
        open_targets = [n for n, _ in self.targets if n not in self.closed]
        if open_targets:
            options.append((0.25, CLOSE_COMMAND))
            if "disposal" in caps and any(k.disposable for n, k in self.targets
                                          if n in open_targets):
                options.append((0.4, DISPOSE_COMMAND))
        total = sum(w for w, _ in options)
        pick = self.rng.random() * total
        what = options[-1][1]
        for weight, name in options:
            pick -= weight
            if pick <= 0:
                what = name
                break
        getattr(self, f"do_{what}")()

    def do_submit(self) -> None:
        sub = self.submission()
        if sub is not None:
            self.body.append({"cmd": "submit", **sub})

    def owners(self, sub: Mapping[str, Any]) -> set[str]:
        """The queues a submission is admitted by and runs on."""
        kinds = dict(self.targets)
        kind = kinds[sub["target"]]
        info = TargetInfo(sub["target"], kind.type, kind.kind, kind.mode)
        r = route(info, sub["entry"], sub.get("actor_id"), sub.get("timer_name"))
        return {r.admit, r.run}

    def do_settle(self) -> None:
        if not self.body or self.body[-1].get("cmd") != "settle":
            self.body.append({"cmd": "settle"})

    def do_open(self) -> None:
        gate = self.pending_gates.pop(self.rng.randrange(len(self.pending_gates)))
        self.body.append({"cmd": "open", "gate": gate})

    def do_call(self) -> None:
        call = self.pending_calls.pop(self.rng.randrange(len(self.pending_calls)))
        if self.rng.random() < 0.25:
            self.body.append({"cmd": "fail", "call": call, "message": "call failed"})
        else:
            self.body.append({"cmd": "complete", "call": call})

    def do_advance(self) -> None:
        self.body.append({"cmd": "advance", "ms": self.rng.choice((1, 5, 20, 100))})

    def do_concurrent(self) -> None:
        # Each racing submission on owners of its own, with no nested submission, after
        # a settle (so no running work submits anywhere meanwhile). Races on one queue
        # are made from these by ``additions`` (a stream of their own, so this draw stays
        # as it was): the model judges a race's verdicts in every order the runtime may
        # have taken them.
        subs: list[dict[str, Any]] = []
        used: set[str] = set()
        before = (list(self.pending_gates), list(self.pending_calls), dict(self.works))
        for _ in range(self.rng.randint(2, 4)):
            saved = (list(self.pending_gates), list(self.pending_calls), dict(self.works))
            # depth 1: no nested submission, which could race the others on their queues
            sub = self.submission(1, concurrent=True)
            if sub is None:
                continue
            owners = self.owners(sub)
            if owners & used:  # drawn in vain: forget its works, gates and calls
                self.pending_gates, self.pending_calls, self.works = saved
                continue
            used |= owners
            subs.append(sub)
        if len(subs) >= 2:
            # From a settled runtime: no running work submits to a racing queue meanwhile.
            self.do_settle()
            self.body.append({"cmd": "submit_concurrent", "submissions": subs})
        else:  # no race after all: nothing of it was sent
            self.pending_gates, self.pending_calls, self.works = before

    def do_create(self) -> None:
        self.create(self.rng.choice(self.d.kinds))

    def do_close(self) -> None:
        name = self.rng.choice([n for n, _ in self.targets if n not in self.closed])
        self.closed.add(name)
        self.do_settle()
        self.body.append({"cmd": CLOSE_COMMAND, "target": name})

    def do_dispose(self) -> None:
        scopes = [(n, k) for n, k in self.targets if k.disposable and n not in self.closed]
        name, kind = self.rng.choice(scopes)
        modes = [DISPOSE, DISPOSE_SAFELY]
        if "virtual_clock" in self.d.capabilities:
            modes.append(DISPOSE_AFTER_TIMEOUT)
        if kind.type in ("spot", "actor"):
            modes.append("destroy")
        mode = self.rng.choice(modes)
        message: dict[str, Any] = {"cmd": DISPOSE_COMMAND, "target": name, "mode": mode}
        if mode == DISPOSE_AFTER_TIMEOUT:
            message["timeout_ms"] = self.rng.choice((1, 10, 50))
        self.closed.add(name)
        self.do_settle()
        self.body.append(message)

    def scenario(self, seed: int, index: int) -> Scenario:
        if not self.d.kinds:
            return Scenario([], seed, index)
        self.create(self.rng.choice(self.d.kinds))
        steps = self.rng.randint(1, self.max_steps)
        for _ in range(4 * steps):  # a draw may add nothing (a settle after a settle)
            if len(self.body) > steps:
                break
            self.step()
        return Scenario(self.body, seed, index)
