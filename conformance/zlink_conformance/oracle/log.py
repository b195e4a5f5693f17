"""The log of one case: every command sent, every event and reply received, in order.

Positions in the log are the only notion of time a check uses. Events arrive in the order
the adapter wrote them, and the protocol asks the adapter to write them in the order the
runtime did the things they report, so "started:a came before started:b" and "a was in
progress when b started" are questions about positions, never about clocks.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterator, Mapping
from typing import Any

from zlink_model.vocabulary import OUTCOMES

from ..protocol.wire import Event, Reply

__all__ = ["TERMINAL", "CaseLog", "Lifetime"]

TERMINAL = tuple(o.wire for o in OUTCOMES)  # the wire events that end a work


@dataclasses.dataclass(frozen=True, slots=True)
class Lifetime:
    """From a work's ``started`` to its terminal event (``math.inf`` while running)."""

    start: float
    end: float

    def overlaps(self, other: Lifetime) -> bool:
        """Both were in progress at one moment."""
        return self.start < other.end and other.start < self.end


class CaseLog:
    """Commands, replies and events of one case, each at a position."""

    def __init__(self) -> None:
        self.entries: list[tuple[str, dict[str, Any]]] = []  # ("sent"|"received", message)
        self.events: list[tuple[int, Event]] = []
        self.replies: dict[int, tuple[int, Reply]] = {}
        self._by_work: dict[str, list[tuple[int, Event]]] = {}

    def __len__(self) -> int:
        return len(self.entries)

    # ------------------------------------------------------------- recording
    def sent(self, command: dict[str, Any]) -> int:
        """Record a command; returns its position."""
        self.entries.append(("sent", command))
        return len(self.entries) - 1

    def record_event(self, event: Event) -> None:
        """Record an event (the form the adapter process's event callback takes)."""
        self.event(event)

    def event(self, event: Event) -> int:
        """Record an event; returns its position."""
        pos = len(self.entries)
        self.entries.append(("received", event.to_json()))
        self.events.append((pos, event))
        work = event.work
        if work is not None:
            self._by_work.setdefault(work, []).append((pos, event))
        return pos

    def reply(self, reply: Reply) -> int:
        """Record a reply; returns its position."""
        pos = len(self.entries)
        message = {"re": reply.re, "ok": reply.ok, **reply.fields}
        if not reply.ok:
            message["error"] = {"kind": reply.error_kind, "message": reply.error_message}
        self.entries.append(("received", message))
        self.replies[reply.re] = (pos, reply)
        return pos

    # --------------------------------------------------------------- queries
    def of(self, work: str) -> list[tuple[int, Event]]:
        """The events about one work, in order."""
        return self._by_work.get(work, [])

    def names(self, work: str) -> list[str]:
        """The names of one work's events, in order."""
        return [e.name for _, e in self.of(work)]

    def first(self, name: str, work: str) -> int | None:
        """Position of the first ``name`` event of ``work``."""
        for pos, e in self.of(work):
            if e.name == name:
                return pos
        return None

    def status(self, work: str) -> str:
        """Where a work is now, by its last lifecycle event: ``unknown`` (nothing heard),
        ``rejected``, ``queued`` (accepted, not started), ``running`` (holds its turn:
        started or resumed), ``yielded``, ``finished``, ``failed`` or ``cancelled``. A
        verdict written after the work's start (a work run inside its submit call) does
        not send it back to ``queued``: the status says what the log shows it did."""
        status = "unknown"
        for _, e in self.of(work):
            name = e.name
            if name == "accepted":
                if status == "unknown":
                    status = "queued"
            elif name in ("started", "resumed"):
                status = "running"
            elif name in ("rejected", "yielded", *TERMINAL):
                status = name
        return status

    def lifetime(self, work: str) -> Lifetime | None:
        """When the work was in progress, or None if it never started."""
        start = self.first("started", work)
        if start is None:
            return None
        end: float = math.inf
        for pos, e in self.of(work):
            if e.name in TERMINAL and pos > start:
                end = pos
                break
        return Lifetime(start, end)

    def named(self, name: str) -> Iterator[tuple[int, Event]]:
        """Every event of one name, in order."""
        return ((pos, e) for pos, e in self.events if e.name == name)

    def scripts(self) -> dict[str, list[Any]]:
        """Each work's script, from the submit commands the runner sent (nested ones
        and those of ``submit_concurrent`` too)."""
        out: dict[str, list[Any]] = {}

        def visit(submission: Mapping[str, Any]) -> None:
            script = submission.get("script")
            if isinstance(submission.get("work"), str) and isinstance(script, list):
                out[submission["work"]] = script
                for op in script:
                    if isinstance(op, dict) and op.get("op") == "submit":
                        visit(op)

        for direction, message in self.entries:
            if direction == "sent" and message.get("cmd") == "submit":
                visit(message)
            elif direction == "sent" and message.get("cmd") == "submit_concurrent":
                for submission in message.get("submissions", []):
                    if isinstance(submission, dict):
                        visit(submission)
        return out

    def describe(self, work: str, before: int | None = None) -> str:
        """A work's events for a failure message: ``accepted@3 started@7`` (only those
        before position ``before``, if given)."""
        items = [f"{e.name}@{pos}" for pos, e in self.of(work) if before is None or pos < before]
        return " ".join(items) if items else "no events"

    def transcript(self) -> list[dict[str, Any]]:
        """The whole log as JSON-ready records (``--transcripts``)."""
        return [{"pos": i, "dir": d, "message": m} for i, (d, m) in enumerate(self.entries)]
