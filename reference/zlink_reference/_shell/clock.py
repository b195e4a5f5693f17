"""Clocks. The core compares times in the clock's own units; a clock says how many of its
units make one millisecond, so an integer virtual clock compares exactly."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Cancellable", "MonotonicClock", "ZLinkClock"]


class Cancellable(Protocol):
    """What ``call_later`` returns."""

    def cancel(self) -> None: ...


@runtime_checkable
class ZLinkClock(Protocol):
    """The time source of a runtime: read between works (SE-6.4) and used for disposal
    timeouts (SD-1)."""

    units_per_ms: float

    def now(self) -> float:
        """Current time in this clock's units."""
        ...

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> Cancellable:
        """Run ``callback`` on the event loop once ``delay_ms`` have passed."""
        ...


class MonotonicClock:
    """The real clock: ``time.monotonic`` seconds, timers on the running event loop."""

    units_per_ms = 0.001

    def __init__(self) -> None:
        self.now: Callable[[], float] = time.monotonic

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> Cancellable:
        """Schedule on the running loop."""
        return asyncio.get_running_loop().call_later(delay_ms / 1000.0, callback)

    def __repr__(self) -> str:
        return "MonotonicClock()"
