"""The adapter's own obligations (``AP-`` rules of ``specs/adapter-protocol.md``) and how
a breach of one is reported: as an adapter fault of the case that caused it, never as a
rule break of the runtime and never charged to another case."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from zlink_model.vocabulary import TAKE_NEXT

from .wire import Event

__all__ = ["PROTOCOL_RULES", "adapter_fault", "first_events", "held_step_faults",
           "verdict_order_faults"]

PROTOCOL_RULES: Final[Mapping[str, str]] = {
    "AP-1": "Every line the adapter writes on stdout is one JSON object of the protocol: "
            "a reply or an event.",
    "AP-2": "Every command gets exactly one reply, to that command: never a second one, "
            "and none to a command that was not sent.",
    "AP-3": "The reply to hello is the adapter's first line.",
    "AP-4": "Every event of something that happened before a reply is written before that "
            "reply.",
    "AP-5": "settle answers only once nothing can progress without further input, so "
            "nothing is written after its reply until a command gives new input (a "
            "confirming settle sent right after it is answered with no event before it).",
    "AP-6": "Everything of a case is written before the reply to the reset that ends it, "
            "and nothing after that reply until the next case's first command (before a "
            "fresh adapter's first reset reply, nothing at all).",
    "AP-7": "A submission's accepted or rejected event comes before any other event of "
            "that work.",
    "AP-8": "A queue created held (capability held_steps) takes none of its own steps "
            "until a step command names it: no turn begins on it without a take_next.",
}


def adapter_fault(rule: str, seen: str) -> str:
    """One message: ``adapter fault [AP-5] what was seen; protocol rule AP-5: ...``."""
    return (f"adapter fault [{rule}] {seen}; protocol rule {rule}: "
            f"{PROTOCOL_RULES[rule].rstrip('.')} (specs/adapter-protocol.md)")


def first_events(events: Sequence[Event], limit: int = 3) -> str:
    """The first few events of a list, for a message."""
    shown = ", ".join(f"{e.name}:{e.work}" if e.work else e.name for e in events[:limit])
    more = f" and {len(events) - limit} more" if len(events) > limit else ""
    return shown + more


def verdict_order_faults(events: Sequence[tuple[int, Event]]) -> list[str]:
    """AP-7: a work whose ``accepted``/``rejected`` came after another event of it. The
    runtime cannot run a work it has not admitted; the adapter wrote the verdict late,
    unless the work's first event is a ``started`` that did not say it ran on a pool
    thread: a start on the submitter's stack comes before the verdict the submitter writes
    once the call returns, which is the runtime's SE-6.5 (``oracle.inference``, and the
    ``OffSubmitterStack`` invariant for a start marked ``on_submitter_stack: true``)."""
    first: dict[str, tuple[int, Event]] = {}
    out = []
    for pos, event in events:
        work = event.work
        if work is None or event.name in ("zombie_warning",):
            continue
        if work not in first:
            first[work] = (pos, event)
            continue
        if event.name in ("accepted", "rejected"):
            before_pos, before = first[work]
            if before.name == "started" and \
                    before.fields.get("on_submitter_stack", True) is not False:
                continue  # SE-6.5's, judged from the mark or the order
            if before.name not in ("accepted", "rejected"):
                why = ("its started says on_submitter_stack false: a pool thread began the "
                       "work and the adapter did not hold it until the verdict was written"
                       if before.name == "started" else
                       "no run on the submitter's stack writes anything but started first")
                out.append(adapter_fault(
                    "AP-7", f"{work}: {event.name}@{pos} was written after "
                            f"{before.name}@{before_pos} ({why})"))
    return out


def held_step_faults(entries: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """AP-8: a turn began on a held queue that no ``step take_next`` asked for. Counted
    from the log alone: at every event, the turns begun on a held queue (its ``started``
    and ``resumed`` events, which the routing invariant holds to the right owner) are at
    most the ``take_next`` steps the runner sent it. The drain's steps with no event of
    their own (enter, end of a slice, exit, a requeue) show when taken unasked as a
    later ``step`` the adapter refuses, or as a log that leaves the model's path."""
    held: set[str] = set()
    asked: dict[str, int] = {}
    begun: dict[str, int] = {}
    out: list[str] = []
    for pos, (direction, msg) in enumerate(entries):
        if direction == "sent":
            cmd = msg.get("cmd")
            if cmd == "reset":
                held.clear()
                asked.clear()
                begun.clear()
            elif cmd == "create" and msg.get("held") is True:
                held.add(str(msg.get("target")))
            elif cmd == "step" and msg.get("step") == TAKE_NEXT:
                target = str(msg.get("target"))
                asked[target] = asked.get(target, 0) + 1
            continue
        owner = msg.get("owner")
        if msg.get("event") not in ("started", "resumed") or owner not in held:
            continue
        begun[owner] = begun.get(owner, 0) + 1
        if begun[owner] > asked.get(owner, 0):
            out.append(adapter_fault(
                "AP-8", f"{msg['event']}:{msg.get('work')}@{pos} is turn "
                        f"{begun[owner]} begun on the held queue {owner}, after "
                        f"{asked.get(owner, 0)} step take_next command(s): the runtime "
                        "took the turn on its own"))
    return out
