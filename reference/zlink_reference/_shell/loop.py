"""The event loop as the rest of the runtime names it.

The coordinators take a loop and cancel a session's final work, but decide nothing about
scheduling; they name the loop's type and its cancellation through this module so that
only the shell (and disposal, which runs a loop of its own) imports asyncio, and a
layering test can say so.
"""

from __future__ import annotations

import asyncio

__all__ = ["Cancelled", "EventLoop"]

EventLoop = asyncio.AbstractEventLoop
Cancelled = asyncio.CancelledError
