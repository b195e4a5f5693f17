"""Run an asyncio loop until nothing is left to do without outside input."""

from __future__ import annotations

import asyncio

__all__ = ["run_until_idle"]


async def run_until_idle(max_iterations: int = 100_000) -> int:
    """Let the running loop turn until no callback is ready, twice in a row.

    Returns the number of loop turns taken. Pending I/O, timers of the real clock and
    futures nobody will complete are not "ready", so a gate that is still shut or an
    external call not yet answered leaves the loop idle: that is the point. Raises
    RuntimeError when the loop is still busy after ``max_iterations`` turns (a livelock).
    """
    loop = asyncio.get_running_loop()
    quiet = 0
    for turn in range(1, max_iterations + 1):
        await asyncio.sleep(0)
        ready = getattr(loop, "_ready", None)
        if ready is not None and len(ready) == 0:
            quiet += 1
            if quiet >= 2:
                return turn
        elif ready is None and turn >= 64:  # a loop without the attribute: bounded turns
            return turn
        else:
            quiet = 0
    raise RuntimeError(f"loop still busy after {max_iterations} turns")
