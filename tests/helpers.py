"""Small helpers shared by the tests: gates a test opens by hand, and a queue wired to a
virtual clock and a trace recorder."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from zlink_reference import ZLinkExecutionLanePolicy, ZLinkSerialExecutionQueue
from zlink_reference.testing import TraceRecorder, VirtualClock


class Gate:
    """A door that works wait behind until the test opens it. Overlap is shown with
    gates, never with sleeps: a work that waits here holds its turn."""

    def __init__(self, name: str = "gate") -> None:
        self.name = name
        self._event = asyncio.Event()

    def open(self) -> None:
        self._event.set()

    async def wait(self) -> None:
        await self._event.wait()


class Rig:
    """A queue with a virtual clock, a trace recorder and a log of what ran."""

    def __init__(self, policy: ZLinkExecutionLanePolicy | None = None, name: str = "q",
                 **kw: Any) -> None:
        self.clock = VirtualClock()
        self.trace = TraceRecorder()
        self.errors: list[BaseException] = []
        self.log: list[Any] = []
        self.queue = ZLinkSerialExecutionQueue(
            policy, name=name, clock=self.clock, observer=self.trace,
            error_hook=lambda exc, h: self.errors.append(exc), **kw,
        )

    def note(self, value: Any) -> Callable[[], None]:
        """A synchronous work that appends ``value`` to the log."""
        return lambda: self.log.append(value)

    def busy(self, value: Any, ms: int) -> Callable[[], None]:
        """A synchronous work that logs ``value`` and stays busy ``ms`` of virtual time."""
        def work() -> None:
            self.log.append(value)
            self.clock.advance(ms)
        return work

    def events(self, *names: str) -> list[Any]:
        return [e for e in self.trace if not names or e.event in names]


def policy(**kw: Any) -> ZLinkExecutionLanePolicy:
    return ZLinkExecutionLanePolicy(**kw)


class Timeline:
    """Start and end marks of named works, to show overlap or order without clocks."""

    def __init__(self) -> None:
        self.marks: list[tuple[str, str]] = []

    def sync(self, name: str) -> Callable[[], None]:
        def work() -> None:
            self.marks.append(("start", name))
            self.marks.append(("end", name))
        return work

    def gated(self, name: str, gate: Gate) -> Callable[[], Any]:
        async def work() -> None:
            self.marks.append(("start", name))
            await gate.wait()
            self.marks.append(("end", name))
        return work

    def started(self) -> list[str]:
        return [n for k, n in self.marks if k == "start"]

    def ended(self) -> list[str]:
        return [n for k, n in self.marks if k == "end"]

    def overlap(self, a: str, b: str) -> bool:
        """Both were in progress at one moment."""
        idx = {m: i for i, m in enumerate(self.marks)}
        sa, ea = idx.get(("start", a)), idx.get(("end", a), len(self.marks))
        sb, eb = idx.get(("start", b)), idx.get(("end", b), len(self.marks))
        if sa is None or sb is None:
            return False
        return sa < eb and sb < ea
