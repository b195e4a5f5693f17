"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that turns the reference runtime into one
that runs its owners' drains on a bounded pool of ``ZLINK_POOL_THREADS`` threads (default
4), the way an executor per owner over a fixed thread pool does.

A work that started and has not ended holds its thread, parked at a gate or not. A
drain posted while every thread is held waits for one to free: it does not run, and the
owner's ready work waits although owners are independent (SE-4.2). A runtime like this
is not a single execution resource, so the handshake leaves that capability out.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

from zlink_reference._shell.queue import ZLinkSerialExecutionQueue
from zlink_reference_adapter.adapter import ReferenceAdapter, WorkState

THREADS = int(os.environ.get("ZLINK_POOL_THREADS", "4"))
_held: set[int] = set()  # works holding a thread (started, not ended)
_waiting: deque[ZLinkSerialExecutionQueue] = deque()  # drains waiting for a thread

_drain = ZLinkSerialExecutionQueue._drain
_begin = ReferenceAdapter._begin
_end = ReferenceAdapter._end
_end_as = ReferenceAdapter._end_as
_hello = ReferenceAdapter.hello
_run_command = ReferenceAdapter._run_command


def _pooled_drain(self: ZLinkSerialExecutionQueue) -> None:
    if len(_held) >= THREADS:
        _waiting.append(self)  # no free thread: the posted drain does not run
        return
    _drain(self)


def _release(ws: WorkState) -> None:
    if id(ws) in _held:
        _held.discard(id(ws))
        if _waiting:
            queue = _waiting.popleft()
            queue._rt.loop.call_soon(_pooled_drain, queue)


def _pooled_begin(self: ReferenceAdapter, ws: WorkState, inline: bool) -> None:
    _held.add(id(ws))
    _begin(self, ws, inline)


def _pooled_end(self: ReferenceAdapter, ws: WorkState, what: str, **fields: Any) -> None:
    _end(self, ws, what, **fields)
    _release(ws)


def _pooled_end_as(self: ReferenceAdapter, ws: WorkState, what: str, owner: str,
                   **fields: Any) -> None:
    _end_as(self, ws, what, owner, **fields)
    _release(ws)


def _pool_hello(self: ReferenceAdapter, cmd: dict[str, Any]) -> dict[str, Any]:
    reply = _hello(self, cmd)
    reply["capabilities"] = [c for c in reply["capabilities"]
                             if c != "single_execution_resource"]
    return reply


def _pool_run_command(self: ReferenceAdapter, name: Any, cmd: dict[str, Any]) -> Any:
    if name == "reset":  # a new case: the old case's works and drains are dropped
        _held.clear()
        _waiting.clear()
    return _run_command(self, name, cmd)


ZLinkSerialExecutionQueue._drain = _pooled_drain  # type: ignore[method-assign]
ReferenceAdapter._begin = _pooled_begin  # type: ignore[method-assign]
ReferenceAdapter._end = _pooled_end  # type: ignore[method-assign]
ReferenceAdapter._end_as = _pooled_end_as  # type: ignore[method-assign]
ReferenceAdapter.hello = _pool_hello  # type: ignore[method-assign]
ReferenceAdapter._run_command = _pool_run_command  # type: ignore[method-assign]
