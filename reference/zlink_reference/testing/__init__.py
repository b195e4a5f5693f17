"""Deterministic test helpers, shipped because adapters and users need them too: a virtual
clock, run-until-idle for an asyncio loop, and a trace recorder."""

from .clock import VirtualClock
from .idle import run_until_idle
from .trace import TraceEvent, TraceRecorder

__all__ = ["TraceEvent", "TraceRecorder", "VirtualClock", "run_until_idle"]
