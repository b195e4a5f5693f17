"""A virtual clock in integer milliseconds: time moves only when a test (or a work that
"stays busy") calls ``advance``. Budgets and timeouts then fire at exact boundaries."""

from __future__ import annotations

import asyncio
import heapq
import itertools
from collections.abc import Callable

__all__ = ["VirtualClock"]


class _Timer:
    __slots__ = ("callback", "cancelled", "due")

    def __init__(self, due: int, callback: Callable[[], None]) -> None:
        self.due = due
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class VirtualClock:
    """``now()`` in whole milliseconds; ``advance(ms)`` moves time and posts the timers
    that came due, in due order, to the running event loop (never on the caller's
    stack, so a work that advances time does not run timer code inside itself)."""

    units_per_ms = 1

    def __init__(self, start_ms: int = 0) -> None:
        self._now = int(start_ms)
        self._timers: list[tuple[int, int, _Timer]] = []
        self._order = itertools.count()

    def now(self) -> int:
        """Current virtual time in milliseconds."""
        return self._now

    def advance(self, ms: int) -> None:
        """Move time forward by ``ms`` (a non-negative integer)."""
        if isinstance(ms, bool) or not isinstance(ms, int):
            raise TypeError(f"ms must be an integer, got {ms!r}")
        if ms < 0:
            raise ValueError(f"time cannot go back: advance({ms})")
        self._now += ms
        due: list[_Timer] = []
        while self._timers and self._timers[0][0] <= self._now:
            timer = heapq.heappop(self._timers)[2]
            if not timer.cancelled:
                due.append(timer)
        if due:
            loop = asyncio.get_running_loop()
            for timer in due:
                loop.call_soon(timer.callback)

    def call_later(self, delay_ms: float, callback: Callable[[], None]) -> _Timer:
        """Run ``callback`` on the loop once ``advance`` has moved past the delay."""
        if delay_ms < 0:
            raise ValueError(f"delay_ms must be >= 0, got {delay_ms}")
        timer = _Timer(self._now + int(delay_ms), callback)
        if delay_ms <= 0:
            asyncio.get_running_loop().call_soon(callback)
            return timer
        heapq.heappush(self._timers, (timer.due, next(self._order), timer))
        return timer

    def pending_timers(self) -> int:
        """How many timers wait (cancelled ones excluded)."""
        return sum(1 for _, _, t in self._timers if not t.cancelled)

    def __repr__(self) -> str:
        return f"VirtualClock(now={self._now}ms, timers={self.pending_timers()})"
