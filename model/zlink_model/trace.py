"""Trace recording: every core transition as one JSON object (specs/trace-format.md)."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TextIO

__all__ = ["TraceEvent", "TraceRecorder", "read_trace"]


@dataclasses.dataclass(frozen=True, slots=True)
class TraceEvent:
    """One transition: global order, queue name, event (= transition) name, fields."""

    seq: int
    queue: str
    event: str
    fields: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        """The wire form: ``{"seq", "queue", "event", ...fields}``."""
        return {"seq": self.seq, "queue": self.queue, "event": self.event, **self.fields}

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> TraceEvent:
        """Parse the wire form; missing keys raise ``KeyError``."""
        fields = {k: v for k, v in obj.items() if k not in ("seq", "queue", "event")}
        return cls(int(obj["seq"]), str(obj["queue"]), str(obj["event"]), fields)

    def __getitem__(self, key: str) -> Any:
        return self.fields[key]

    def get(self, key: str, default: Any = None) -> Any:
        """A field, or ``default``."""
        return self.fields.get(key, default)


class TraceRecorder:
    """An observer that keeps events in memory (and optionally streams JSON lines).

    Pass it as ``observer=`` to a queue or coordinator; one recorder can observe many
    queues, and its ``seq`` orders their events globally.
    """

    def __init__(self, stream: TextIO | None = None) -> None:
        self.events: list[TraceEvent] = []
        self._stream = stream

    def __call__(self, queue: str, event: str, fields: dict[str, Any]) -> None:
        ev = TraceEvent(len(self.events), queue, event, dict(fields))
        self.events.append(ev)
        if self._stream is not None:
            self._stream.write(json.dumps(ev.to_json(), separators=(",", ":")) + "\n")

    def of(self, queue: str) -> list[TraceEvent]:
        """The events of one queue, in order."""
        return [e for e in self.events if e.queue == queue]

    def names(self, queue: str | None = None) -> list[str]:
        """Event names, optionally of one queue."""
        return [e.event for e in self.events if queue is None or e.queue == queue]

    def dump(self, path: str | Path) -> None:
        """Write the trace as JSON lines."""
        with open(path, "w", encoding="utf-8") as fh:
            for ev in self.events:
                fh.write(json.dumps(ev.to_json(), separators=(",", ":")) + "\n")

    def __iter__(self) -> Iterator[TraceEvent]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)


def read_trace(lines: Iterable[str]) -> list[TraceEvent]:
    """Parse JSON lines into events (blank lines skipped)."""
    out = []
    for n, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"line {n}: not JSON: {exc.msg}") from None
        if not isinstance(obj, dict):
            raise ValueError(f"line {n}: expected a JSON object")
        try:
            out.append(TraceEvent.from_json(obj))
        except (KeyError, ValueError, TypeError) as exc:
            raise ValueError(f"line {n}: missing or bad field {exc}") from None
    return out
