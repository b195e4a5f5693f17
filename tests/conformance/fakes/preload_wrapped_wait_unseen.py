"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that puts back the reference runtime's old
SE-8.2 detection, which saw a wait only in the waiting work's own task: a wait wrapped in
``asyncio.wait_for`` (a child task) for work queued behind the waiter's turn then hangs
instead of raising."""

import asyncio
from typing import Any

from zlink_reference._shell import context
from zlink_reference._shell.loop import thread_state

_original = context.turn_in_context


def _own_task_only() -> Any:
    rec = _original()
    if rec is None or thread_state().turn.sync is not None:
        return rec
    return rec if getattr(rec, "_task", None) is asyncio.current_task() else None


context.turn_in_context = _own_task_only
