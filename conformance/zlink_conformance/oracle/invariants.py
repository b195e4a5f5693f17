"""Properties every case's log must have, whatever the case checks on top.

These are judged on the whole event log of every case, from what the protocol guarantees:
each event names its work and owner, and the runner knows from its own commands which
entry and target each work was submitted through (so which owner must admit it, which
owner's turn it runs on and which Actor claim it holds, ``protocol.routing``).

========================  ==========  ===================================================
invariant                 rule        what must hold
========================  ==========  ===================================================
WorkLifecycle             D-11        each work: accepted or rejected once; then started
                                      (or cancelled before starting); turns alternate
                                      yielded/resumed; one terminal event; nothing after
Routing                   SE-3        every event's owner is the one the routing table
                                      gives for the work's entry, target kind and mode
OneTurnPerOwner           SE-1.1      no two works hold the same owner's turn at once
ActorClaimHeld            SE-4.6      SpotWide: no two works of one Actor in progress at
                                      once (a yielded work keeps its Actor's claim)
CancelledOnOwnTurn        D-8         a yielded work is cancelled only after it resumed
VerdictBeforeReply        SE-6.3      a submission's accepted/rejected event comes
                                      before the reply to its ``submit`` command
NoFault                   SE-1.1      the runtime reported no broken invariant of its own
                                      (a ``fault`` event)
OffSubmitterStack         SE-6.5      no ``started`` says the work began inside the
                                      submit call that admitted it (an adapter with
                                      capability submitter_stack marks every start)
========================  ==========  ===================================================

A later model oracle replays the same log through the reference protocol core; these are
the properties that need no model.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from ..protocol.routing import Route
from .log import TERMINAL, CaseLog

__all__ = ["INVARIANTS", "WorkInfo", "check_invariants", "unended_works"]

INVARIANTS: Mapping[str, str] = {
    "WorkLifecycle": "D-11",
    "Routing": "SE-3",
    "OneTurnPerOwner": "SE-1.1",
    "ActorClaimHeld": "SE-4.6",
    "CancelledOnOwnTurn": "D-8",
    "VerdictBeforeReply": "SE-6.3",
    "NoFault": "SE-1.1",
    "OffSubmitterStack": "SE-6.5",
}
MAX_REPORTED = 12

# state -> event -> next state ("" keeps the state)
_MOVES: Mapping[str, Mapping[str, str]] = {
    "new": {"accepted": "queued", "rejected": "rejected"},
    "queued": {"started": "running", "cancelled": "done", "zombie": "",
               "zombie_warning": ""},
    "running": {"yielded": "yielded", "finished": "done", "failed": "done", "cancelled": "done",
                "snapshot": "", "current": "", "error": "", "waited": "", "zombie": "",
                "zombie_warning": ""},
    "yielded": {"resumed": "running", "zombie": "", "zombie_warning": ""},
    "rejected": {},
    "done": {},
}


@dataclasses.dataclass(frozen=True, slots=True)
class WorkInfo:
    """A work as the runner submitted it: where and through which entry."""

    id: str
    target: str
    entry: str
    route: Route
    command_id: int | None  # the submit command's id; None for a nested submission


def _label(name: str) -> str:
    """``[SE-1.1 OneTurnPerOwner]``: the rule first, so the line leads with it."""
    return f"[{INVARIANTS[name]} {name}]"


def check_invariants(log: CaseLog, works: Mapping[str, WorkInfo]) -> list[str]:
    """Every violation of the invariants above, in log order (at most a dozen)."""
    out: list[str] = []
    state: dict[str, str] = {}
    started: set[str] = set()
    holder: dict[str, str] = {}  # owner -> work holding its turn
    claim: dict[str, str] = {}  # Actor claim -> work in progress
    inline: set[str] = set()  # started on the submitter's stack, verdict still to come
    for pos, ev in log.events:
        if len(out) >= MAX_REPORTED:
            break
        if ev.name == "returned":
            continue
        if ev.name == "fault":
            out.append(f"{_label('NoFault')} the runtime reported a fault@{pos}: "
                       f"{ev.fields['message']}")
            continue
        work = ev.work
        info = works.get(work or "")
        if work is None or info is None:
            out.append(f"{_label('WorkLifecycle')} {ev.name}@{pos} names work {work!r}, "
                       f"which this case never submitted")
            continue
        now = state.get(work, "new")
        if ev.name == "started" and ev.fields.get("on_submitter_stack") is True:
            out.append(f"{_label('OffSubmitterStack')} {work} started@{pos} inside the "
                       f"submit call that admitted it, on the submitter's stack: the drain "
                       f"must be posted, never run by the submitter")
            if now == "new":
                # Its verdict can only come once the submit call returns: judged above,
                # not again as a lifecycle out of order.
                inline.add(work)
                now = "queued"
        elif ev.name in ("accepted", "rejected") and work in inline:
            inline.discard(work)
            continue
        nxt = _MOVES[now].get(ev.name)
        if nxt is None:
            if now == "yielded" and ev.name == "cancelled":
                out.append(f"{_label('CancelledOnOwnTurn')} {work} cancelled@{pos} while "
                           f"yielded: the cancellation must reach it on its own turn "
                           f"(resumed first)")
            else:
                out.append(f"{_label('WorkLifecycle')} {work}: {ev.name}@{pos} after "
                           f"{log.describe(work, pos)}")
            state[work] = "done" if ev.name in TERMINAL else now
            continue
        if nxt:
            state[work] = nxt
        out += _owner_problems(pos, ev.name, ev.owner, info, work in started)
        route = info.route
        if ev.name in ("started", "resumed"):
            other = holder.get(route.run)
            if other is not None and other != work:
                out.append(f"{_label('OneTurnPerOwner')} {work} {ev.name}@{pos} on "
                           f"{route.run} while {other} held its turn")
            holder[route.run] = work
            if ev.name == "started":
                started.add(work)
                if route.claim is not None:
                    other = claim.get(route.claim)
                    if other is not None and other != work:
                        out.append(f"{_label('ActorClaimHeld')} {work} started@{pos} while "
                                   f"{other} of the same Actor ({route.claim}) was in "
                                   f"progress")
                    claim[route.claim] = work
        elif ev.name == "yielded" or (ev.name in TERMINAL and now in ("running", "yielded")):
            if holder.get(route.run) == work:
                del holder[route.run]
            if ev.name in TERMINAL and route.claim is not None and claim.get(route.claim) == work:
                del claim[route.claim]
    for work, info in works.items():
        if info.command_id is None or len(out) >= MAX_REPORTED:
            continue
        replied = log.replies.get(info.command_id)
        if replied is None:
            continue  # the case stopped before this reply came
        verdicts = [p for p, e in log.of(work) if e.name in ("accepted", "rejected")]
        if not verdicts or verdicts[0] > replied[0]:
            out.append(f"{_label('VerdictBeforeReply')} {work}: no accepted/rejected event "
                       f"before the reply to its submit command@{replied[0]}")
    return out


def _owner_problems(pos: int, name: str, owner: str | None, info: WorkInfo,
                    was_started: bool) -> list[str]:
    route = info.route
    if name in ("accepted", "rejected"):
        want = {route.admit}
        if name == "rejected":
            want.add(info.target)  # a closed coordinator refuses before routing
    elif name in ("cancelled", "zombie", "zombie_warning") and not was_started:
        want = {route.admit}
    else:
        want = {route.run}
    if owner in want:
        return []
    return [f"{_label('Routing')} {info.id} {name}@{pos} names owner {owner!r}; "
            f"{info.entry} on {info.target} must use {' or '.join(sorted(want))}"]


def unended_works(log: CaseLog) -> list[str]:
    """Every accepted work that has no terminal event: ``EveryAcceptedWorkEndsOnce``
    (D-11) at the end of a log whose commands left nothing blocked.

    Only for such logs: a case that leaves a gate shut or a call pending may end with
    works that rightly never ran. The scenarios ``explore`` generates (cases of strength
    ``found``) end by opening every gate and settling every call their works use, so
    after their last settle every accepted work must have ended (finished, failed,
    cancelled), a zombie included: a work still in progress waits for something only
    the runtime can give, which it never will (a wait on the waiter's own turn that was
    not refused, a lost wakeup the settle could not see). A started work whose
    ``await_scope`` op reported no error is that first case, and its line, on SE-8.2,
    leads."""
    out: list[str] = []
    self_waits: list[str] = []  # the cause leads: the works queued behind it come after
    scripts = log.scripts()
    for work in sorted({ev.work for _, ev in log.events if ev.work is not None}):
        names = log.names(work)
        if "accepted" in names and not any(n in TERMINAL for n in names):
            refused = {e.fields.get("op") for _, e in log.of(work) if e.name == "error"}
            waits = [(i, op.get("mode")) for i, op in enumerate(scripts.get(work, []))
                     if isinstance(op, dict) and op.get("op") == "await_scope"
                     and i not in refused]
            if "started" in names and waits:
                # The wait on its own scope counts the waiter: not refused, it never ends.
                i, mode = waits[0]
                self_waits.append(
                    f"[SE-8.2] {work}: {log.describe(work)}, never ended, and its await_scope "
                    f"op {i} (its own target's {mode}) reported no error: a wait on one's "
                    f"own coordinator or scope waits for the waiter itself and must raise "
                    f"at once (error kind reentrancy, SE-10.13), never deadlock")
                continue
            returned = {e.fields.get("target") for _, e in log.of(work) if e.name == "waited"}
            blocked = [(i, op.get("work")) for i, op in enumerate(scripts.get(work, []))
                       if isinstance(op, dict) and op.get("op") == "wait_for"
                       and i not in refused and op.get("work") not in returned]
            if "started" in names and blocked:
                # A synchronous wait for a work of its own coordinator (the only waits
                # explore draws) that neither raised nor returned: the waiter holds what
                # the other work needs.
                i, other = blocked[0]
                self_waits.append(
                    f"[SE-8.2] {work}: {log.describe(work)}, never ended, and its wait_for "
                    f"op {i} (for {other}, a work of the same coordinator) neither raised "
                    f"nor returned: a synchronous wait on work of one's own coordinator "
                    f"must raise at once (error kind reentrancy), never deadlock")
                continue
            out.append(f"[EveryAcceptedWorkEndsOnce D-11] {work}: {log.describe(work)}, "
                       f"and never ended, although every gate was opened and every call "
                       f"settled: an accepted work must end")
        if len(out) >= MAX_REPORTED:
            break
    return (self_waits + out)[:MAX_REPORTED]
