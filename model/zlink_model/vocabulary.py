"""The one table of names: every transition of a queue, and what each layer calls it.

A rule is checked from several sides (the Python core, the TLA+ models, the trace
format, the conformance wire protocol), and a finding is only useful when every side
names the same step the same way. So the names live here and nowhere else: the core's
``EVENTS``, the rules a refused trace event is reported under (``zlink_model.replay``),
the events TLC can replay (``zlink_tool.tla.trace``), the wire events of the kit
(``zlink_conformance.protocol.wire``), the status names of a work on the wire and the
tables of ``specs/trace-format.md`` are all read from, or checked against, this module
(``tests/test_vocabulary.py`` fails on a table kept anywhere else). Code that acts on an
event compares it with the constants below (``ADMIT``, ``TAKE_NEXT``, ...) or dispatches
through a table built by ``dispatch_table``, which refuses to build unless every event has
a handler or is skipped on purpose; no other module quotes an event name
(``tests/test_vocabulary_names.py``).

Where two layers use different words for one thing, the table says so in one row: the
core's ``take_next`` is the wire's ``started`` (or ``resumed`` for a resume permit); the
core's phase ``suspended`` is the wire status ``yielded``; the core's outcome
``completed`` is the wire event ``finished``. Three steps of the core are never seen on
the wire (``transfer``, ``requeue`` and the drain's own steps): the kit's model oracle
explores them as hidden steps.

Replay, in this project, always means one thing: feeding recorded events to the model's
transitions one by one (``zlink_model.replay``); the kit's ``replay`` action re-sends a
case's recorded *commands* to an adapter, and is called "re-send" in its documentation.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import Final, TypeVar

__all__ = [
    "ADMIT",
    "CANCEL",
    "CLOSE",
    "DISPOSALS",
    "DISPOSE",
    "DISPOSE_AFTER_TIMEOUT",
    "DISPOSE_SAFELY",
    "DRAIN_TRANSITIONS",
    "END_SLICE",
    "ENTER_DRAIN",
    "EVENTS",
    "EXIT_DRAIN",
    "EXPIRE_TIMEOUT",
    "FINISH",
    "HELD_STEPS",
    "OUTCOMES",
    "PHASES",
    "PLAIN_TRANSITIONS",
    "REJECT",
    "REQUEUE",
    "SURVIVE_CANCEL",
    "TAKE_NEXT",
    "TRANSFER",
    "TRANSITIONS",
    "TURN_STEPS",
    "TURN_WIRE_EVENTS",
    "WIRE_EVENTS",
    "WORK_TRANSITIONS",
    "YIELD_TURN",
    "Outcome",
    "Phase",
    "Transition",
    "UnhandledEventError",
    "WireEvent",
    "dispatch_table",
    "event_rules",
    "tla_actions",
    "transition",
    "wire_status",
]


@dataclasses.dataclass(frozen=True, slots=True)
class Transition:
    """One transition of a queue's core, named for every layer.

    ``event`` is the core method and the trace event; ``action`` the TLA+ action in the
    ``modules`` that define it; ``wire`` the adapter-protocol events that report it (empty
    when the wire never shows it); ``rules`` the rule IDs a refused event is reported
    under; ``fields`` the trace event's fields (specs/trace-format.md)."""

    event: str
    action: str
    modules: tuple[str, ...]
    wire: tuple[str, ...]
    rules: tuple[str, ...]
    fields: tuple[str, ...]
    meaning: str

    @property
    def rule_text(self) -> str:
        """The rules as one string, ``"SE-6.3, SE-5.1"``."""
        return ", ".join(self.rules)


# The core events by name, for code that dispatches on them: compare an event with these
# constants, or key a table by them through ``dispatch_table``, never with a quoted name
# (tests/test_vocabulary_names.py fails on a quoted event name outside this module).
ADMIT: Final = "admit"
TRANSFER: Final = "transfer"
REJECT: Final = "reject"
ENTER_DRAIN: Final = "enter_drain"
TAKE_NEXT: Final = "take_next"
FINISH: Final = "finish"
YIELD_TURN: Final = "yield_turn"
REQUEUE: Final = "requeue"
CANCEL: Final = "cancel"
END_SLICE: Final = "end_slice"
EXIT_DRAIN: Final = "exit_drain"
CLOSE: Final = "close"
DISPOSE: Final = "dispose"
DISPOSE_SAFELY: Final = "dispose_safely"
DISPOSE_AFTER_TIMEOUT: Final = "dispose_after_timeout"
EXPIRE_TIMEOUT: Final = "expire_timeout"
SURVIVE_CANCEL: Final = "survive_cancel"

_SQ, _SW, _DI = "SerialQueue", "SpotWide", "Disposal"

TRANSITIONS: Final[tuple[Transition, ...]] = (
    Transition(ADMIT, "Admit", (_SQ, _SW, _DI), ("accepted",), ("SE-6.3", "SE-5.1"),
               ("work", "pos", "lane", "barrier", "bytes", "wake"),
               "a submission is accepted: reserved, placed in its lane, the drain posted "
               "if the queue was idle"),
    Transition(TRANSFER, "Transfer", (_SW,), (), ("SE-4.5", "SE-5.3", "D-6"),
               ("work", "pos", "lane", "barrier", "bytes", "wake"),
               "a SpotWide Actor queue places its head's execution turn on the Spot queue"),
    Transition(REJECT, "Reject", (_SQ, _SW, _DI), ("rejected",), ("SE-6.3", "SE-5.1"),
               ("lane", "barrier", "bytes", "reason"),
               "a submission is refused: closed, or no room on one axis"),
    Transition(ENTER_DRAIN, "EnterDrain", (_SQ,), (), ("SE-6.5",), ("now",),
               "the posted drain starts a slice"),
    Transition(TAKE_NEXT, "TakeNext", (_SQ, _SW, _DI), ("started", "resumed"),
               ("SE-6.6", "SE-6.1"),
               ("work", "pos", "source", "resume", "streak", "now"),
               "the next work (barrier, lifecycle within the burst, application) gets "
               "the turn"),
    Transition(FINISH, "Finish", (_SQ, _SW, _DI), ("finished", "failed", "cancelled"),
               ("SE-5.2",), ("work", "outcome"),
               "the work holding the turn ends and gives back its reservation"),
    Transition(YIELD_TURN, "YieldTurn", (_SQ, _SW, _DI), ("yielded",), ("SE-6.7",),
               ("work",), "the work gives the turn back while its external call runs"),
    Transition(REQUEUE, "Requeue", (_SQ, _SW, _DI), (), ("SE-6.7",),
               ("work", "pos", "wake"),
               "the call returned: the work's resume permit queues at the back"),
    Transition(CANCEL, "Cancel", (_DI,), ("cancelled",), ("SD-1", "D-8"),
               ("work", "phase"), "a disposal ends a work that does not hold the turn"),
    Transition(END_SLICE, "EndSlice", (_SQ,), (), ("SE-6.4",), ("now", "reschedule"),
               "the time budget is spent: the drain gives the thread back"),
    Transition(EXIT_DRAIN, "ExitDrain", (_SQ,), (), ("SE-6.6",), ("now",),
               "nothing is ready: the drain ends"),
    Transition(CLOSE, "Close", (_SQ, _SW), (), ("SE-6.2",), (),
               "no new work is accepted; accepted work still runs"),
    Transition(DISPOSE, "Dispose", (_DI,), (), ("SD-1",), (),
               "the scope closes and cancels its live works"),
    Transition(DISPOSE_SAFELY, "DisposeSafely", (_DI,), ("zombie",), ("SD-1", "SD-2"),
               ("zombies",), "the scope closes; live works become zombies"),
    Transition(DISPOSE_AFTER_TIMEOUT, "DisposeAfterTimeout", (_DI,), (), ("SD-1",), (),
               "the scope closes; a timer will dispose what is left"),
    Transition(EXPIRE_TIMEOUT, "ExpireTimeout", (_DI,), (), ("SD-1",), (),
               "the timer of dispose_after_timeout fires: as dispose"),
    Transition(SURVIVE_CANCEL, "SurviveCancel", (_DI,), (), ("SD-2", "SD-3"),
               ("work",), "a cancelled work suspends again instead of ending: a zombie"),
)

EVENTS: Final[tuple[str, ...]] = tuple(t.event for t in TRANSITIONS)

# The plain lane: transitions of untraced queues only, each the general transition it is
# restricted from (held equal to it by tests/core/test_plain_lane.py). They emit no trace
# event and have no TLA+ action: a traced queue takes the general transition instead.
# (core method, the general transition, what it is restricted to)
PLAIN_TRANSITIONS: Final[tuple[tuple[str, str, str], ...]] = (
    ("admit_plain", "admit", "application work at the fixed reservation, with no record"),
    ("finish_plain", "finish", "the end of the turn of such a work"),
    ("next_plain", "finish", "finish_plain, then take_next of the next plain work while one "
                             "heads the application line with nothing else ready"),
    ("promote_plain", "", "every live plain work becomes a record, in place "
                          "(no transition: the state of the lane is unchanged)"),
    ("promote_current", "", "the turn holder alone becomes a record"),
)
# The runtime's own steps on a queue: taken alone and at once by a runtime left to
# itself, one at a time on a ``step`` command under the adapter protocol's capability
# ``held_steps`` (the model's EnterDrain, TakeNext, EndSlice, ExitDrain, Requeue).
HELD_STEPS: Final[tuple[str, ...]] = (ENTER_DRAIN, TAKE_NEXT, END_SLICE, EXIT_DRAIN, REQUEUE)
# The three calls that dispose a scope (SD-1), as the wire's dispose modes name them too.
DISPOSALS: Final[tuple[str, ...]] = (DISPOSE, DISPOSE_SAFELY, DISPOSE_AFTER_TIMEOUT)
_BY_EVENT: Final[Mapping[str, Transition]] = {t.event: t for t in TRANSITIONS}


# The two state machines of a queue, as tables: (state before, transition, state after).
# docs/design.md draws its diagrams from these tables (docs/make_state_diagrams.py), and a
# property test holds the transitions above to them, so table, code and picture agree.
#
# The drain: "idle" (neither flag), "scheduled" (drain_scheduled), "draining" (in a
# slice, no turn held) and "turn" (in a slice, a work holds the turn).
DRAIN_TRANSITIONS: Final = (
    ("idle", "admit [wake]", "scheduled"),
    ("idle", "transfer [wake]", "scheduled"),
    ("idle", "requeue [wake]", "scheduled"),
    ("scheduled", "enter_drain", "draining"),
    ("draining", "take_next", "turn"),
    ("turn", "finish", "draining"),
    ("turn", "yield_turn", "draining"),
    ("draining", "end_slice [work left]", "scheduled"),
    ("draining", "end_slice [nothing left]", "idle"),
    ("draining", "exit_drain", "idle"),
)
# A work: its phase from admission to the end, with its transitions.
WORK_TRANSITIONS: Final = (
    ("new", "admit", "queued"),
    ("new", "transfer", "queued"),
    ("queued", "take_next", "running"),
    ("running", "finish", "done"),
    ("running", "yield_turn", "suspended"),
    ("suspended", "requeue", "requeued"),
    ("requeued", "take_next [resume]", "running"),
    ("queued", "cancel", "done"),
    ("suspended", "cancel", "done"),
    ("requeued", "cancel", "done"),
)

# The wire events that report a step of a work's turn: it got the turn, gave it back,
# or ended.
TURN_STEPS: Final[tuple[str, ...]] = (TAKE_NEXT, YIELD_TURN, FINISH, CANCEL)


_H = TypeVar("_H")


class UnhandledEventError(LookupError):
    """A table keyed by event name does not match the vocabulary: an event of the table
    has no entry (a transition was added and this consumer was not told), or an entry
    names no event. Raised when the consumer's module is imported, so the gap shows at
    once rather than as a silently ignored event."""


def dispatch_table(where: str, handlers: Mapping[str, _H], *, skip: Iterable[str] = (),
                   events: Iterable[str] | None = None) -> dict[str, _H]:
    """``handlers`` as a dispatch table by event name, checked against the vocabulary.

    Every event of ``events`` (every core event, unless a consumer works on fewer) must
    have a handler or be listed in ``skip`` (the events this consumer deliberately does
    not act on), and no key may name anything else; otherwise ``UnhandledEventError``
    naming ``where`` (the consumer) and the events at fault. So a transition added to
    the table without a handler in each consumer fails loudly where the consumer is
    built, and a consumer never dispatches on a name of its own."""
    known = EVENTS if events is None else tuple(events)
    skipped = set(skip)
    missing = [e for e in known if e not in handlers and e not in skipped]
    unknown = sorted((set(handlers) | skipped) - set(known))
    both = sorted(set(handlers) & skipped)
    if missing or unknown or both:
        parts = []
        if missing:
            parts.append(f"no handler for {', '.join(missing)}")
        if unknown:
            parts.append(f"{', '.join(unknown)} not an event of the vocabulary")
        if both:
            parts.append(f"{', '.join(both)} both handled and skipped")
        raise UnhandledEventError(
            f"{where}: {'; '.join(parts)} (every event of zlink_model.vocabulary needs a "
            "handler here or a place in its skip list)")
    return dict(handlers)


def transition(event: str) -> Transition:
    """The row of ``event`` (a core event name); KeyError for a name not in the table."""
    return _BY_EVENT[event]


def event_rules() -> dict[str, str]:
    """Core event -> the rules a refused event is reported under, as text."""
    return {t.event: t.rule_text for t in TRANSITIONS}


def tla_actions(module: str) -> dict[str, Transition]:
    """Core event -> its row, for the events ``module`` (``"SerialQueue"``, ...) has an
    action for."""
    return {t.event: t for t in TRANSITIONS if module in t.modules}


@dataclasses.dataclass(frozen=True, slots=True)
class WireEvent:
    """An event of the adapter protocol: the core transitions it reports (none for the
    events about a work's own operations, waits and faults) and what it means."""

    name: str
    transitions: tuple[str, ...]
    meaning: str


WIRE_EVENTS: Final[tuple[WireEvent, ...]] = (
    *(WireEvent(name, tuple(t.event for t in TRANSITIONS if name in t.wire), meaning)
      for name, meaning in (
          ("accepted", "the runtime accepted the work"),
          ("rejected", "the runtime refused the work, with the reason"),
          ("started", "the work got its first turn"),
          ("yielded", "the work gave its turn back while its call runs"),
          ("resumed", "the work's call returned, it queued again and got the turn back "
                      "(the core's requeue, then take_next of the resume permit)"),
          ("finished", "the work ended normally (outcome completed)"),
          ("failed", "the work ended by raising (outcome failed)"),
          ("cancelled", "the work ended cancelled: on its turn, or before it started"),
          ("zombie", "a disposal left the live work running as a zombie"),
      )),
    WireEvent("zombie_warning", (), "a zombie is still running when the runtime ends"),
    WireEvent("error", (), "an operation of the work raised one of the protocol's errors"),
    WireEvent("waited", (), "a wait of the work for another work returned"),
    WireEvent("snapshot", (), "the work read its Actor's registration"),
    WireEvent("current", (), "the work asked a bare queue whether it holds that queue's turn"),
    WireEvent("returned", (), "a waiter the adapter started returned"),
    WireEvent("fault", (), "the runtime's own guard reported a broken rule"),
)


@dataclasses.dataclass(frozen=True, slots=True)
class Phase:
    """A work's phase: the core's name, the TLA+ models' name, and the status the wire
    reports for a live work in it (``None``: not live)."""

    core: str
    tla: str
    wire: str | None


PHASES: Final[tuple[Phase, ...]] = (
    Phase("queued", "queued", "queued"),
    Phase("running", "running", "running"),
    Phase("suspended", "suspended", "yielded"),
    Phase("requeued", "requeued", "yielded"),
    Phase("done", "done", None),
)


def wire_status() -> dict[str, str]:
    """Core phase -> wire status, for the live phases (a zombie's ``state``)."""
    return {p.core: p.wire for p in PHASES if p.wire is not None}


@dataclasses.dataclass(frozen=True, slots=True)
class Outcome:
    """How an accepted work ended: the core's (and TLA+'s) name and the wire event."""

    core: str
    wire: str


OUTCOMES: Final[tuple[Outcome, ...]] = (
    Outcome("completed", "finished"),
    Outcome("failed", "failed"),
    Outcome("cancelled", "cancelled"),
)

TURN_WIRE_EVENTS: Final[frozenset[str]] = frozenset(
    w for step in TURN_STEPS for w in _BY_EVENT[step].wire)
