"""Where an owner's time slice must have ended, judged from the log: SE-6.4 on a
runtime that declares one execution resource for every owner
(``single_execution_resource``, D-13: ready owners served first come, first served) and
a virtual clock.

The model oracle never cuts a slice (within one owner the order of turns does not
depend on it). Across owners sharing one resource it does: an owner whose slice has
used its budget (``owner_time_budget_ms``) gives the resource up after the work that
used it, and an owner that was waiting for the resource all along runs before it
continues. Where a slice starts is the runtime's business, but a bound follows from
positions alone:

    Owner O runs works ``w_i .. w_j`` one after another (no turn of any other owner in
    between), the ``busy`` ops of their scripts add up to at least O's budget, and
    another owner P had a work waiting, accepted before ``w_i`` started, with no turn of
    P from before ``w_i`` until after O's next work ``w_j+1`` started. Had O's slice been
    cut anywhere in ``w_i .. w_j``, P, waiting all along and ahead of O's reposted drain,
    would have run there; so one slice holds all of them, it started no later than
    ``w_i``, and by the end of ``w_j`` it had used at least the busy ms of them all (the
    clock only moves forward): it must end there, and P runs before ``w_j+1``. O
    starting ``w_j+1`` first breaks SE-6.4.

Only what that argument covers is judged: works whose scripts hold nothing but
``busy``, ``submit`` and ``snapshot`` ops (no wait, gate, call or raise, so the work
holds the resource from its start to its end), started once and finished; owners of
Spots whose work passes one Spot queue (SpotWide, Instance) are left out (a SpotWide
Actor queue waits for its Actor's claim, not for the resource), and so is an owner
whose target was closed or disposed before the judged start.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from ..protocol.routing import Submission, TargetInfo, submissions
from ..protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND
from .invariants import MAX_REPORTED
from .log import TERMINAL, CaseLog

__all__ = ["slice_problems"]

_PLAIN_OPS = frozenset({"busy", "submit", "snapshot"})


@dataclasses.dataclass(slots=True)
class _Work:
    info: Submission
    busy: int
    plain: bool
    accepted: int | None = None
    started: int | None = None
    ended: int | None = None
    turns: int = 0  # started and resumed events


def _budget_key(info: Submission) -> str:
    owner = info.route.run
    if "/actor:" in owner:
        return "actor_policy"
    if "/timer:" in owner:
        return "timer_policy"
    return "policy"


def slice_problems(log: CaseLog) -> list[str]:
    """Every owner that went on past a spent time budget while another owner waited for
    the one execution resource (call only for a runtime that declares it and a virtual
    clock)."""
    targets: dict[str, TargetInfo] = {}
    budgets: dict[str, dict[str, int]] = {}  # target -> policy key -> budget ms
    shut: dict[str, int] = {}  # target -> position of its first close or dispose
    works: dict[str, _Work] = {}
    turns: list[tuple[int, str]] = []  # (position, work) of every started/resumed
    for pos, (direction, msg) in enumerate(log.entries):
        if direction == "sent":
            cmd = msg.get("cmd")
            if cmd == "create":
                name = str(msg.get("target"))
                type_ = str(msg.get("type"))
                targets[name] = TargetInfo(
                    name, type_, msg.get("kind", "user") if type_ == "spot" else None,
                    msg.get("mode") if type_ == "spot" else None)
                budgets[name] = {
                    key: policy["owner_time_budget_ms"]
                    for key in ("policy", "actor_policy", "timer_policy")
                    if isinstance(policy := msg.get(key), dict)
                    and isinstance(policy.get("owner_time_budget_ms"), int)}
            elif cmd in (CLOSE_COMMAND, DISPOSE_COMMAND):
                shut.setdefault(str(msg.get("target")), pos)
            elif cmd in ("submit", "submit_concurrent"):
                subs = msg.get("submissions", []) if cmd == "submit_concurrent" else [msg]
                for sub in subs:
                    if isinstance(sub, dict):
                        _read(sub, targets, works)
            continue
        event, work = msg.get("event"), msg.get("work")
        w = works.get(work) if isinstance(work, str) else None
        if w is None:
            continue
        if event == "accepted" and w.accepted is None:
            w.accepted = pos
        elif event in ("started", "resumed"):
            w.turns += 1
            if w.started is None:
                w.started = pos
            turns.append((pos, str(work)))
        elif event in TERMINAL and w.ended is None:
            w.ended = pos
    out: list[str] = []
    for k in range(len(turns)):
        if len(out) >= MAX_REPORTED:
            break
        problem = _judge_window(k, turns, works, budgets, shut)
        if problem is not None:
            out.append(problem)
    return out


def _read(sub: Mapping[str, Any], targets: Mapping[str, TargetInfo],
          works: dict[str, _Work]) -> None:
    for info in submissions(sub, targets):
        if info.work in works:
            continue
        script = _script_of(sub, info.work)
        ops = [op.get("op") for op in script if isinstance(op, dict)]
        busy = sum(int(op.get("ms", 0)) for op in script
                   if isinstance(op, dict) and op.get("op") == "busy"
                   and isinstance(op.get("ms"), int))
        works[info.work] = _Work(info, busy, all(o in _PLAIN_OPS for o in ops))


def _script_of(sub: Mapping[str, Any], work: str) -> list[Any]:
    if sub.get("work") == work:
        script = sub.get("script")
        return script if isinstance(script, list) else []
    for op in sub.get("script", []) or []:
        if isinstance(op, dict) and op.get("op") == "submit":
            found = _script_of(op, work)
            if found or op.get("work") == work:
                return found
    return []


def _judged(w: _Work, shut: Mapping[str, int], before: int) -> bool:
    """A work the argument covers: on an owner with a resource of its own to wait for,
    plain, one turn, finished, its target still open at ``before``."""
    target = w.info.target
    return (not target.spot_wide_wiring and w.plain and w.turns == 1
            and w.started is not None and w.ended is not None
            and shut.get(target.name, before + 1) > before)


def _judge_window(k: int, turns: list[tuple[int, str]], works: Mapping[str, _Work],
                  budgets: Mapping[str, Mapping[str, int]], shut: Mapping[str, int]
                  ) -> str | None:
    """With ``turns[k]`` as ``w_j+1``: the longest run of the same owner's judged works
    right before it, and whether a waiting owner's turn was due first."""
    pos, name = turns[k]
    nxt = works[name]
    owner = nxt.info.route.run
    budget = budgets.get(nxt.info.target.name, {}).get(_budget_key(nxt.info))
    if budget is None or budget <= 0 or not _judged(nxt, shut, pos):
        return None
    run: list[_Work] = []
    for _, prev in reversed(turns[:k]):
        w = works[prev]
        if w.info.route.run != owner or not _judged(w, shut, pos) or w.ended is None \
                or w.ended > pos:
            break
        run.insert(0, w)
    # the shortest suffix w_i .. w_j whose busy ms reach the budget: the latest w_i
    total = 0
    first: _Work | None = None
    for w in reversed(run):
        total += w.busy
        if total >= budget:
            first = w
            break
    if first is None or first.started is None:
        return None
    start = first.started
    for other in works.values():
        o = other.info.route.run
        if o == owner or other.info.target.spot_wide_wiring or other.accepted is None \
                or other.info.final:
            continue
        if other.accepted > start or (other.started is not None and other.started < pos) \
                or (other.ended is not None and other.ended < pos):
            continue
        if shut.get(other.info.target.name, pos + 1) <= pos:
            continue
        # P had no turn from before w_i until after w_j+1 started
        if any(works[t].info.route.run == o and p > other.accepted and p < pos
               for p, t in turns):
            continue
        accepted = other.accepted
        if any(works[t].info.route.run == o and (works[t].started or pos) < pos
               and (works[t].ended or pos + 1) > accepted
               for _, t in turns):
            continue  # P held its own turn (or a yielded work) meanwhile: not waiting
        names = ", ".join(w.info.work for w in run[run.index(first):])
        return (f"[SE-6.4 SliceBounded] {nxt.info.work} started@{pos} on {owner}, whose "
                f"time budget is {budget} ms, right after {names}, whose busy ops "
                f"alone took {total} ms of one slice, while {other.info.work} waited on "
                f"{o} for the one execution resource from before {first.info.work} "
                f"started: the slice ends once the budget is used, and a waiting owner "
                f"runs before the owner continues (SE-6.4, D-13)")
    return None
