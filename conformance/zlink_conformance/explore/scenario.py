"""A generated scenario: the targets it creates and the commands it sends, as plain
protocol messages, and how it becomes a case the runner can run and a case file.

A scenario is kept as the *body* of its commands (``create``, ``submit``, ``open``,
``settle``, ...). What releases everything the body left blocked (a gate never opened,
a call never completed) is not part of the body: ``steps()`` computes that tail from the
body every time. So a shrinker may drop any command, op or work and the scenario still
ends with every accepted work free to end, and a scenario never depends on a tail kept
in step with an edit.
"""

from __future__ import annotations

import copy
import dataclasses
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..catalog import Case, parse_case
from ..protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND

__all__ = ["GENERATED_RULE", "Scenario", "case_id", "iter_scripts", "walk_submissions"]

GENERATED_RULE = "SE-10.14"
"""The rule a generated scenario is run under until it breaks one: every runtime gives
the same results (the invariants and the model oracle judge them)."""


def walk_submissions(message: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Every submission a command makes, nested ones (``submit`` ops) included."""
    if message.get("cmd") == "submit_concurrent":
        for sub in message.get("submissions", []):
            yield from _with_nested(sub)
    elif message.get("cmd") == "submit":
        yield from _with_nested(message)


def _with_nested(sub: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield sub
    for op in sub.get("script", []):
        if op.get("op") == "submit":
            yield from _with_nested(op)


def iter_scripts(body: Sequence[Mapping[str, Any]]) -> Iterator[Mapping[str, Any]]:
    """Every op of every script of the body, nested submissions' ops included."""
    for message in body:
        for sub in walk_submissions(message):
            yield from sub.get("script", [])


@dataclasses.dataclass(slots=True)
class Scenario:
    """One scenario: its body of commands, and where it came from."""

    body: list[dict[str, Any]]
    seed: int = 0
    index: int = 0
    strategy: str = "random"

    def copy(self) -> Scenario:
        """A deep copy (the shrinker edits copies)."""
        return Scenario(copy.deepcopy(self.body), self.seed, self.index, self.strategy)

    def tail(self) -> list[dict[str, Any]]:
        """The commands that release what the body left blocked: ``open`` for every gate
        a script waits at and the body never opens, ``complete`` for every call a script
        makes and the body never settles (each exactly once: a call settled twice is a
        bad command)."""
        gates: list[str] = []
        calls: list[str] = []
        for op in iter_scripts(self.body):
            if op.get("op") == "gate" and op["gate"] not in gates:
                gates.append(op["gate"])
            elif op.get("op") == "call" and op["call"] not in calls:
                calls.append(op["call"])
        opened = {m["gate"] for m in self.body if m.get("cmd") == "open"}
        settled = {m["call"] for m in self.body if m.get("cmd") in ("complete", "fail")}
        out: list[dict[str, Any]] = [{"cmd": "open", "gate": g} for g in gates
                                     if g not in opened]
        out += [{"cmd": "complete", "call": c} for c in calls if c not in settled]
        return out

    def steps(self) -> list[dict[str, Any]]:
        """Body, a settle, then the tail (the runner adds the last settle)."""
        tail = self.tail()
        return [*self.body, *([{"cmd": "settle"}, *tail] if tail else [])]

    def well_formed(self) -> bool:
        """Every ``close``, ``dispose`` and ``submit_concurrent`` comes right after a
        ``settle``: what they do depends on how far the works got, which only a settle
        fixes (a rule of every case, docs/conformance.md section 4), and a race must
        not meet a running work's own submissions. The shrinker keeps it, so a shrunk case
        never trades the failure it was shrunk on for a race of its own."""
        settled_first = (CLOSE_COMMAND, DISPOSE_COMMAND, "submit_concurrent")
        for before, message in zip(self.body, self.body[1:], strict=False):
            if message.get("cmd") in settled_first and before.get("cmd") != "settle":
                return False
        return not self.body or self.body[0].get("cmd") not in settled_first

    @property
    def size(self) -> tuple[int, int, int, int]:
        """What the shrinker makes smaller, most important first: commands, works and
        ops, then the sum of every number (payloads, capacities, clock moves)."""
        works = sum(1 for m in self.body for _ in walk_submissions(m))
        ops = sum(1 for _ in iter_scripts(self.body))
        return len(self.body), works, ops, _numbers(self.body)

    def raw_case(self, *, case: str, rule: str, violation: str, capabilities: Sequence[str],
                 runtime: str | None = None) -> dict[str, Any]:
        """The scenario as a case file's content, strength ``found``."""
        found: dict[str, Any] = {"seed": self.seed, "strategy": self.strategy,
                                 "scenario": self.index, "violation": violation}
        if runtime:
            found["runtime"] = runtime
        what = "breaks" if violation else "is judged under"
        return {
            "id": case, "strength": "found", "rules": [rule],
            "capabilities": sorted(capabilities),
            "intent": f"A scenario explore generated (strategy {self.strategy}, seed "
                      f"{self.seed}, scenario {self.index}) that {what} {rule}; the "
                      f"invariants and the model oracle judge it.",
            "found": found, "steps": self.steps(),
        }

    def case(self, rules_text: Mapping[str, str], capabilities: Sequence[str],
             *, rule: str = GENERATED_RULE, violation: str = "",
             case: str | None = None) -> tuple[Case | None, list[str]]:
        """The scenario as a runnable case (or the loader's problems with it)."""
        ident = case or f"found_SE_10_14_explore_s{abs(self.seed)}_{_where(self.index)}"
        raw = self.raw_case(case=ident, rule=rule, violation=violation,
                            capabilities=capabilities)
        return parse_case(raw, f"{ident}.json", rules_text, {})


def _numbers(obj: Any) -> int:
    if isinstance(obj, bool):
        return 0
    if isinstance(obj, int):
        return obj
    if isinstance(obj, dict):
        return sum(_numbers(v) for v in obj.values())
    if isinstance(obj, list):
        return sum(_numbers(v) for v in obj)
    return 0


def case_id(rule: str, invariant: str | None, seed: int, index: int) -> str:
    """``found_SE_6_6_fifo_within_lane_s7_n12``: the rule, the invariant in words, and
    where it was found."""
    words = re.sub(r"(?<!^)(?=[A-Z])", "_", invariant).lower() if invariant else "violation"
    rule_part = re.sub(r"[^A-Za-z0-9]+", "_", rule).strip("_")
    return f"found_{rule_part}_{words}_s{abs(seed)}_{_where(index)}"


def _where(index: int) -> str:
    """``n12`` for scenario 12; ``handshake`` for the run's one check of the handshake
    (scenario -1, judged before the first scenario)."""
    return f"n{index}" if index >= 0 else "handshake"
