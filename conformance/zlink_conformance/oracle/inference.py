"""What the kit infers from the order of events alone, without a mark from the adapter.

**A start before the verdict.** An adapter writes a work's verdict (``accepted`` or
``rejected``) before any other event of it (AP-7): a work that begins on another thread
waits for its verdict to be written first. The one work an adapter cannot hold is one
that begins on the submitting thread inside the submit call: its verdict is written only
once the call returns, and holding the work would hold the call for ever. So a
``started`` written before its own verdict began inside that call, on the submitter's
stack: SE-6.5, not the adapter's AP-7, on any runtime and whether or not the adapter
marks ``on_submitter_stack``. On a runtime that declared ``single_execution_resource``
the order proves it outright (nothing else runs while the one thread is inside the
call); on a pool it rests on the adapter holding its pool threads, and the line says so.
The mark, when given, decides: ``true`` is judged by the ``OffSubmitterStack`` invariant,
``false`` says a pool thread began the work, so the early ``started`` is the adapter's
AP-7 (it did not hold that thread). A verdict after any other first event (no inline run
writes anything but ``started`` first) is always AP-7.

**Hangs.** An adapter that does not answer within the case timeout is hung, and the case
would be an error of the adapter. But two hangs are the runtime's, and the log says so:

- **A submit that does not return while its own work runs.** The runner waits for the
  reply to ``submit w`` and the log already holds ``started:w`` with no end: the work
  began before the entry returned and now holds the submitting thread, which waits for
  it (at a gate the runner would open only after the reply). Only a drain run inside the
  submit call, on the submitter's stack, does that: SE-6.5, whether or not the adapter
  marks ``on_submitter_stack`` (the mark, when given, only confirms it).
- **A settle that never answers while works are parked, on a pool.** Works hold their
  owners' turns (started, not ended: at gates, waits or calls the runner has not
  released) and an accepted work of another owner, whose turn nobody holds, never
  started: its drain was posted and did not run. Owners are independent (SE-4.2), so the
  parked works must not keep it waiting; a runtime that runs works on a bounded pool
  starves exactly here when the parked works hold every thread. A runtime that declared
  ``single_execution_resource`` parks its works at awaits, which hold no thread, so
  there the same hang is not read as starvation but left to the adapter.

- **A work that waits for later work of its own owner.** A work that started and has not
  ended runs a ``wait_for`` on a work its own owner admitted, which has not started: it
  can only start once the waiting work gives the turn back, which it never does. SE-8.2
  demands an immediate error at that wait, never a deadlock, so a hang there fails
  SE-8.2, whatever any command the runner was waiting for (the detection declared or
  not: without it the runtime is expected to hang, and that is the failure).

- **A work that awaits its own scope.** A work that started and has not ended reached an
  ``await_scope`` op (every op before it could not hold it: its gates were opened, its
  calls settled, its waits returned) and reported no error there: the wait on its own
  target's quiescence, completion or after-cancellation waits for the waiter itself.
  SE-8.2 (SE-10.13) demands an immediate error, so a hang there fails SE-8.2.

Anything else a hang shows is left as the adapter's error: the log cannot tell a hung
runtime from a hung adapter.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .invariants import WorkInfo
from .log import TERMINAL, CaseLog

__all__ = ["hang_evidence", "inline_starts"]


def inline_starts(log: CaseLog, *, single_resource: bool) -> list[str]:
    """SE-6.5 lines for works whose unmarked ``started`` came before their own verdict
    (module docstring): on one execution resource the order proves it; on any other
    runtime it rests on the adapter holding a pool thread's work until its verdict."""
    out = []
    for work in dict.fromkeys(e.work for _, e in log.events if e.work is not None):
        events = log.of(work)
        verdict = next((pos for pos, e in events if e.name in ("accepted", "rejected")), None)
        if verdict is None or not events or events[0][0] > verdict:
            continue
        start, event = events[0]
        if event.name != "started" or "on_submitter_stack" in event.fields:
            continue  # another first event is AP-7; a marked start is judged by its mark
        if single_resource:
            how = ("on a runtime with one execution resource nothing else can have run it "
                   "before the call returned")
        else:
            how = ("an adapter holds a work that begins on another thread until its verdict "
                   "is written (AP-7), so only the submitting thread, inside the call, can "
                   "have written this start first; if the adapter does not hold its pool "
                   "threads, that is its AP-7 instead, which the on_submitter_stack mark "
                   "tells apart")
        out.append(f"[SE-6.5] {work} started@{start} before its verdict@{verdict}, inside the "
                   f"submit call that admitted it: {how} (inferred from the order; no "
                   f"on_submitter_stack mark): the drain must be posted, never run on the "
                   f"submitter's stack")
    return out


def hang_evidence(log: CaseLog, works: Mapping[str, WorkInfo], hung: str,
                  *, single_resource: bool = False) -> str | None:
    """The failure line a hang at the log's last command supports, or None. ``hung`` is
    the runner's own words for the hang (``no answer within ...``)."""
    command = _unanswered(log)
    if command is None:
        return None
    name = command.get("cmd")
    self_wait = _self_wait(log, works, hung) or _scope_self_wait(log, hung)
    if self_wait is not None:
        return self_wait
    if name == "submit":
        return _inline_submit(log, str(command.get("work")), hung)
    if name == "settle" and not single_resource:
        return _starved_settle(log, works, hung)
    return None


def _unanswered(log: CaseLog) -> dict[str, Any] | None:
    """The last command the runner sent, if no reply came after it."""
    for direction, message in reversed(log.entries):
        if direction == "sent":
            sent: dict[str, Any] = dict(message)
            return sent
        if "re" in message:
            return None
    return None


def _inline_submit(log: CaseLog, work: str, hung: str) -> str | None:
    starts = [pos for pos, e in log.of(work) if e.name == "started"]
    if not starts:
        return None
    ended = any(e.name in TERMINAL for _, e in log.of(work))
    marked = any(e.name == "started" and e.fields.get("on_submitter_stack") is True
                 for _, e in log.of(work))
    how = ("the adapter marks it on_submitter_stack" if marked else
           "inferred from the order: it started before its submit call returned and holds "
           "the submitting thread")
    state = "ended, and the call still did not return" if ended else "has not ended"
    return (f"[SE-6.5] the submit of {work} did not return while {work} ran: "
            f"{work} started@{starts[0]} inside the submit call and {state} ({how}): the "
            f"runtime ran the drain on the submitter's stack, which must be posted, never run "
            f"by the submitter; seen as: {hung}")


def _self_wait(log: CaseLog, works: Mapping[str, WorkInfo], hung: str) -> str | None:
    for work, script in log.scripts().items():
        names = log.names(work)
        if "started" not in names or any(n in TERMINAL for n in names):
            continue
        info = works.get(work)
        for op in script:
            if not isinstance(op, dict) or op.get("op") != "wait_for":
                continue
            other = str(op.get("work"))
            target = works.get(other)
            if info is None or target is None or target.route.run != info.route.run:
                continue
            if "started" in log.names(other) or "waited" in names:
                continue
            start = log.first("started", work)
            return (f"[SE-8.2] {work} (started@{start}, not ended) waits synchronously for "
                    f"{other}, which its own owner {info.route.run} admitted and which cannot "
                    f"start while {work} holds the turn: a deadlock; a wait for the same "
                    f"coordinator's work must raise at once (error kind reentrancy); seen "
                    f"as: {hung}")
    return None


def _scope_self_wait(log: CaseLog, hung: str) -> str | None:
    opened = {str(m.get("gate")) for d, m in log.entries
              if d == "sent" and m.get("cmd") == "open"}
    settled = {str(m.get("call")) for d, m in log.entries
               if d == "sent" and m.get("cmd") in ("complete", "fail")}
    for work, script in log.scripts().items():
        events = log.of(work)
        names = [e.name for _, e in events]
        if "started" not in names or any(n in TERMINAL for n in names):
            continue
        ended_ops = {e.fields.get("op") for _, e in events if e.name == "error"}
        waits = sum(1 for n in names if n == "waited")
        for index, op in enumerate(script):
            if not isinstance(op, dict):
                break
            kind = op.get("op")
            if kind == "await_scope":
                if index in ended_ops:
                    continue
                start = log.first("started", work)
                return (f"[SE-8.2] {work} (started@{start}, not ended) awaits its own "
                        f"target's {op.get('mode')} (op {index}), which waits for {work} "
                        f"itself: a deadlock; a wait on one's own coordinator or scope must "
                        f"raise at once (error kind reentrancy, SE-10.13); seen as: {hung}")
            # An op before it that may still hold the work: then the hang is not this.
            if kind == "gate" and str(op.get("gate")) not in opened:
                break
            if kind == "call" and str(op.get("call")) not in settled:
                break
            if kind == "wait_for":
                if waits == 0 and index not in ended_ops:
                    break
                waits -= 1 if index not in ended_ops else 0
    return None


def _starved_settle(log: CaseLog, works: Mapping[str, WorkInfo], hung: str) -> str | None:
    holder: dict[str, str] = {}  # owner -> work holding its turn
    state: dict[str, str] = {}
    for _, e in log.events:
        work = e.work
        info = works.get(work or "")
        if work is None or info is None:
            continue
        run = info.route.run
        if e.name == "accepted" and work not in state:
            state[work] = "queued"
        elif e.name in ("started", "resumed"):
            state[work] = "running"
            holder[run] = work
        elif e.name == "yielded" or e.name in TERMINAL:
            state[work] = "done" if e.name in TERMINAL else "yielded"
            if holder.get(run) == work:
                del holder[run]
    parked = sorted((w, o) for o, w in holder.items())
    starved = sorted((w, works[w].route.run) for w, s in state.items()
                     if s == "queued" and works[w].route.run not in holder)
    if not parked or not starved:
        return None
    held = ", ".join(f"{w} on {o}" for w, o in parked)
    waiting = ", ".join(f"{w} on {o}" for w, o in starved)
    return (f"[SE-4.2] settle never answered while {held} held their turns (parked) and "
            f"{waiting}, accepted with nobody holding its owner's turn, never started: its "
            f"drain was posted and did not run, although owners are independent; a runtime "
            f"that runs works on a bounded pool starves here when the {len(parked)} parked "
            f"work(s) hold every thread; seen as: {hung}")
