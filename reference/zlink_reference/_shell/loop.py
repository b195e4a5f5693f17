"""The event loop as the rest of the runtime names it.

The coordinators take a loop and cancel a session's final work, but decide nothing about
scheduling; they name the loop's type and its cancellation through this module so that
only the shell (and disposal, which runs a loop of its own) imports asyncio, and a
layering test can say so.
"""

from __future__ import annotations

import asyncio

__all__ = ["Cancelled", "EventLoop", "running_loop"]

EventLoop = asyncio.AbstractEventLoop
Cancelled = asyncio.CancelledError
# The loop running on the calling thread, or None (asyncio's C accessor, no error when
# none runs): the cheap test of "is this call on the owner's loop" (D-24).
running_loop = asyncio.events._get_running_loop
