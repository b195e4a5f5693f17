"""Deterministic test helpers, shipped because adapters and users need them too: a virtual
clock, run-until-idle for an asyncio loop, and a trace recorder."""

from zlink_model.trace import TraceEvent, TraceRecorder

from .clock import VirtualClock
from .idle import run_until_idle

__all__ = ["TraceEvent", "TraceRecorder", "VirtualClock", "run_until_idle"]
