"""The runtime end (SD-5): the application ends when no active work is left, and the
zombies still running then are cancelled, within a bound, so that a zombie stuck on an
external call can never keep the process alive.

``run(main)`` is the entry: it makes an event loop, runs ``main(runtime)``, waits until
every scope made meanwhile has no active work left, destroys each scope by its flag
(SD-4), cancels the zombies, gives them ``zombie_grace_ms`` (on the runtime's clock) to
end on their own turn, logs every zombie it had to cancel and every one that did not end
in time, and closes the loop without waiting any longer. What stays stuck is abandoned
with the loop (its task is dropped), never waited for.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

from .._shell import (
    MonotonicClock,
    ScopeSurface,
    ZLinkClock,
    ZombieInfo,
    dispose_with_survivors,
    scope_registry,
)

__all__ = ["ShutdownReport", "ZLinkRuntime", "run"]

T = TypeVar("T")
log = logging.getLogger("zlink.zombies")


@dataclasses.dataclass(frozen=True, slots=True)
class ShutdownReport:
    """What the runtime end found and did."""

    scopes: int
    cancelled_zombies: tuple[ZombieInfo, ...]  # zombies cancelled at the end
    abandoned: tuple[ZombieInfo, ...]  # zombies still running after the grace period


class ZLinkRuntime:
    """The registry of scopes (queues made with their own runtime, coordinators) made
    while this runtime runs, and the end-of-application procedure (SD-5)."""

    def __init__(self, *, zombie_grace_ms: float = 1000, clock: ZLinkClock | None = None
                 ) -> None:
        if isinstance(zombie_grace_ms, bool) or not isinstance(zombie_grace_ms, int | float):
            raise TypeError(f"zombie_grace_ms must be a number, got {zombie_grace_ms!r}")
        if not math.isfinite(zombie_grace_ms) or zombie_grace_ms < 0:
            # The runtime end is bounded (SD-5): an endless grace would let zombies hold it.
            raise ValueError(f"zombie_grace_ms must be a finite number >= 0 (infinity is "
                             f"not allowed), got {zombie_grace_ms} (SD-5)")
        self.zombie_grace_ms = zombie_grace_ms
        self.clock = clock if clock is not None else MonotonicClock()
        self.scopes: list[ScopeSurface] = []
        self.report: ShutdownReport | None = None

    def active_count(self) -> int:
        """Active works over every scope (the global active counter of SD-5)."""
        return sum(s.active_count() for s in self.scopes)

    def zombies(self) -> list[ZombieInfo]:
        """Every zombie running now, in every scope."""
        return [z for s in self.scopes for z in s.zombies()]

    async def finish(self) -> ShutdownReport:
        """Wait until no active work is left anywhere, then destroy every scope by its
        flag and cancel the zombies, waiting at most ``zombie_grace_ms`` for them."""
        while True:
            busy = [s for s in self.scopes if s.active_count()]
            if not busy:
                break
            for s in busy:
                await s.await_completion()
        for s in self.scopes:
            s.destroy()
        cancelled = tuple(self.zombies())
        for z in cancelled:
            log.warning("runtime end: cancelling zombie work %s of %s (%s, %s)",
                        z.work, z.queue, z.label or "unlabelled", z.state)
        for s in self.scopes:
            # Zombies of a scope cancelled before (works that did not end within that
            # cancellation, SD-3a) are cancelled once more, like every other zombie.
            dispose_with_survivors(s)
        abandoned = tuple(await self._wait_zombies())
        for z in abandoned:
            log.error("runtime end: zombie work %s of %s did not end within %s ms after "
                      "cancellation; abandoned with the event loop", z.work, z.queue,
                      self.zombie_grace_ms)
        self.report = ShutdownReport(len(self.scopes), cancelled, abandoned)
        return self.report

    async def _wait_zombies(self) -> list[ZombieInfo]:
        def left() -> list[ZombieInfo]:
            return [z for s in self.scopes for z in s.zombies()]

        if not left():
            return []
        loop = asyncio.get_running_loop()
        deadline: asyncio.Future[None] = loop.create_future()

        def expire() -> None:
            if not deadline.done():
                deadline.set_result(None)

        timer = self.clock.call_later(self.zombie_grace_ms, expire)
        try:
            while left() and not deadline.done():
                waits = [asyncio.ensure_future(s.await_after_cancellation(lambda e, s: None))
                         for s in self.scopes if s.zombie_count()]
                await asyncio.wait([deadline, *waits],
                                   return_when=asyncio.FIRST_COMPLETED)
                for w in waits:
                    if not w.done():
                        w.cancel()
        finally:
            timer.cancel()
        return left()


def run(main: Callable[[ZLinkRuntime], Awaitable[T]], *, zombie_grace_ms: float = 1000,
        clock: ZLinkClock | None = None) -> T:
    """Run ``main(runtime)`` on a new event loop and end the application as SD-5 says:
    once no active work is left, zombies are cancelled and given ``zombie_grace_ms`` to
    end; the loop is closed whatever they do. Returns ``main``'s result (the report of
    the end is ``runtime.report``)."""
    runtime = ZLinkRuntime(zombie_grace_ms=zombie_grace_ms, clock=clock)
    loop = asyncio.new_event_loop()
    token = scope_registry.set(runtime.scopes)
    try:
        result = loop.run_until_complete(main(runtime))
        loop.run_until_complete(runtime.finish())
        return result
    finally:
        scope_registry.reset(token)
        _abandon(loop)


def _abandon(loop: asyncio.AbstractEventLoop) -> None:
    """Close the loop without waiting for tasks that refuse to end: each left task is
    cancelled once and given one loop turn; the rest are dropped with the loop."""
    try:
        tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
        for t in tasks:
            t.cancel()
        if tasks:
            loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(loop.shutdown_asyncgens())
    finally:
        loop.close()
