"""Shrinking a failing scenario to a smallest one that still breaks the same rule.

Greedy and structural: each pass proposes smaller variants of the current scenario
(whole chunks of commands dropped, then single commands, a work's ops, nested
submissions, concurrent submissions, policy fields, then numbers halved toward zero) and
keeps the first one that still fails *the same way* (``still_fails``, which runs it
against the adapter). It stops when no variant fails any more, or when its budget of
runs or seconds is spent. Every variant is a valid scenario or is skipped (``valid``):
a command on a target whose ``create`` was dropped is never sent, and the tail that
opens gates and completes calls is computed from the smaller body (``Scenario.tail``),
so no variant ever leaves a work blocked for want of a command that was removed.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from .scenario import Scenario, walk_submissions

__all__ = ["ShrinkResult", "shrink"]


class ShrinkResult:
    """The smallest scenario found, and what it took."""

    def __init__(self, scenario: Scenario, runs: int, seconds: float, complete: bool
                 ) -> None:
        self.scenario = scenario
        self.runs = runs
        self.seconds = seconds
        self.complete = complete  # False when the budget ended the search


def shrink(scenario: Scenario, still_fails: Callable[[Scenario], bool],
           valid: Callable[[Scenario], bool], *, max_runs: int = 400,
           max_seconds: float = 60.0, model_paths: Sequence[Scenario] = ()
           ) -> ShrinkResult:
    """The smallest variant of ``scenario`` for which ``still_fails`` holds."""
    t0 = time.monotonic()
    if any(m.get("cmd") == "step" for m in scenario.body):
        # A held runtime's steps (capability held_steps) are enabled only where the
        # model's path leads: a variant that drops a command before one would ask for a
        # step the model does not enable there, and fail on any runtime. Only other
        # paths of the model (``model_paths``, shortest first) are tried.
        runs = 0
        for candidate in model_paths:
            if runs >= max_runs or time.monotonic() - t0 > max_seconds:
                return ShrinkResult(scenario, runs, time.monotonic() - t0, False)
            if candidate.size >= scenario.size or not valid(candidate):
                continue
            runs += 1
            if still_fails(candidate):
                return ShrinkResult(candidate, runs, time.monotonic() - t0, True)
        return ShrinkResult(scenario, runs, time.monotonic() - t0, True)
    runs = 0
    best = scenario
    improved = True
    while improved:
        improved = False
        for candidate in _variants(best):
            if runs >= max_runs or time.monotonic() - t0 > max_seconds:
                return ShrinkResult(best, runs, time.monotonic() - t0, False)
            if candidate.size >= best.size or not valid(candidate):
                continue
            runs += 1
            if still_fails(candidate):
                best = candidate
                improved = True
                break
    return ShrinkResult(best, runs, time.monotonic() - t0, True)


def _variants(s: Scenario) -> Iterator[Scenario]:
    """Smaller variants, the biggest cuts first."""
    body = s.body
    n = len(body)
    # Chunks of commands, halves first (a create stays: dropping it drops its target's
    # commands too, below).
    size = n // 2
    while size >= 1:
        for start in range(0, n, size):
            cut = [m for i, m in enumerate(body) if not start <= i < start + size]
            yield _with(s, cut)
        size //= 2
    # A target and everything on it.
    for m in body:
        if m.get("cmd") == "create":
            yield _with(s, _without_target(body, m["target"]))
    # A work's ops, one at a time; a nested submission; a concurrent submission.
    for i, m in enumerate(body):
        for path, script in _scripts(m):
            for j in range(len(script)):
                variant = s.copy()
                target = _follow(variant.body[i], path)
                del target["script"][j]
                yield variant
        if m.get("cmd") == "submit_concurrent":
            subs = m["submissions"]
            for j in range(len(subs)):
                variant = s.copy()
                rest = [x for k, x in enumerate(subs) if k != j]
                if len(rest) >= 2:
                    variant.body[i]["submissions"] = rest
                else:
                    variant.body[i] = {"cmd": "submit", **rest[0]}
                yield variant
    # Policies and their fields; then numbers, halved toward zero.
    for i, m in enumerate(body):
        for key in ("policy", "actor_policy", "timer_policy"):
            if key in m:
                variant = s.copy()
                del variant.body[i][key]
                yield variant
                for field in list(m[key]):
                    variant = s.copy()
                    del variant.body[i][key][field]
                    if not variant.body[i][key]:
                        del variant.body[i][key]
                    yield variant
    yield from _smaller_numbers(s)


def _with(s: Scenario, body: list[dict[str, Any]]) -> Scenario:
    out = s.copy()
    out.body = [dict(m) for m in body]
    return out.copy()


def _without_target(body: list[dict[str, Any]], target: str) -> list[dict[str, Any]]:
    out = []
    for m in body:
        if m.get("target") == target:
            continue
        if any(sub.get("target") == target for sub in walk_submissions(m)):
            continue
        out.append(m)
    return out


Path = tuple[tuple[str, int], ...]


def _scripts(m: dict[str, Any], path: Path = ()) -> Iterator[tuple[Path, list[Any]]]:
    """(path, script) of every script in a command, nested ones included."""
    if m.get("cmd") == "submit_concurrent":
        for k, sub in enumerate(m["submissions"]):
            yield from _scripts(sub, (*path, ("submissions", k)))
        return
    script = m.get("script")
    if isinstance(script, list):
        yield path, script
        for k, op in enumerate(script):
            if op.get("op") == "submit":
                yield from _scripts(op, (*path, ("script", k)))


def _follow(m: dict[str, Any], path: Path) -> dict[str, Any]:
    for key, k in path:
        m = m[key][k]
    return m


def _smaller_numbers(s: Scenario) -> Iterator[Scenario]:
    """Each number of the body (payloads, policy values, clock moves, timeouts) halved,
    and set to its smallest, one at a time."""
    def spots(obj: Any, trail: tuple[Any, ...]) -> Iterator[tuple[tuple[Any, ...], int]]:
        if isinstance(obj, dict):
            for key, value in obj.items():
                if isinstance(value, bool):
                    continue
                if isinstance(value, int) and value > 0:
                    yield (*trail, key), value
                else:
                    yield from spots(value, (*trail, key))
        elif isinstance(obj, list):
            for k, value in enumerate(obj):
                yield from spots(value, (*trail, k))

    for trail, value in list(spots(s.body, ())):
        key = trail[-1]
        low = 1 if key in ("ms", "application_message_capacity",
                           "lifecycle_message_capacity", "lifecycle_burst_limit",
                           "owner_time_budget_ms", "timeout_ms") else 0
        for smaller in sorted({low, value // 2}):
            if low <= smaller < value:
                variant = s.copy()
                obj: Any = variant.body
                for part in trail[:-1]:
                    obj = obj[part]
                obj[key] = smaller
                yield variant
