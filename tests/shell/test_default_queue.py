"""Queues built by the default constructor share one runtime and one config (issue 16:
an idle default queue as small as a coordinator's), and still behave as owners of their
own: each is a scope of its own (SD-1, SD-4), its flags and disposal state are its own,
and the arguments that make a runtime different (clock, error hook, observer, loop)
still take effect.

Each test here fails when the sharing leaks: with ``Scope.own_runtime`` returning
the shared runtime itself (and the write guard of ``_SharedRuntime`` removed) the flag and
disposal tests fail, and with the guard kept they fail on its ``ZLinkUsageError``."""

from __future__ import annotations

import asyncio
import sys
import threading
from typing import Any

import pytest

from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkSerialExecutionQueue,
    ZLinkUsageError,
    ZLinkWorkHandle,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from helpers import Gate


async def test_SE_6_1_default_queues_share_one_runtime_and_config() -> None:
    """What a user writes, ``ZLinkSerialExecutionQueue()``, keeps no runtime, config,
    clock or policy of its own: two such queues share them (the idle owner's size)."""
    a, b = ZLinkSerialExecutionQueue(), ZLinkSerialExecutionQueue(name="b")
    assert a._rt is b._rt and a._rt.shared
    assert a._core.config is b._core.config
    assert a.policy is b.policy == ZLinkExecutionLanePolicy()
    mine = ZLinkExecutionLanePolicy(application_message_capacity=3)
    c = ZLinkSerialExecutionQueue(mine)
    assert c._rt is a._rt and c.policy is mine and c._core.config is not a._core.config


async def test_SE_6_1_an_idle_default_queue_takes_at_most_256_bytes() -> None:
    """Issue 16's target, what a user writes: an idle ``ZLinkSerialExecutionQueue()``
    (it ran a work and is idle again) owns two objects, the queue and its core, and
    nothing else (its runtime, config, clock and policy are shared, its lines and aux
    state are gone): with the slot of a list holding it, at most 256 bytes,
    interpreted or with the compiled core. Sizes, not times: this is deterministic.
    (``benchmarks/bench_queue.py`` measures the same with tracemalloc.)"""
    queues = [ZLinkSerialExecutionQueue() for _ in range(3)]
    for q in queues:
        q.post(lambda: None)
    await run_until_idle()
    q = queues[1]
    core = q._core
    assert q._aux is None and core.app is None and core.life is None
    assert core.barrier is None and core.suspended is None and core.turn_holder is None
    assert q._rt is queues[0]._rt and core.config is queues[2]._core.config
    assert q.name is queues[0].name  # the default name is one string
    owned = sys.getsizeof(q) + sys.getsizeof(core) + 8  # the list slot
    assert owned <= 256, f"an idle default queue takes {owned} B"


async def test_SE_6_1_arguments_that_differ_still_give_a_runtime_or_config_of_its_own(
) -> None:
    """A clock, an error hook or an observer is the queue's own: such a queue does not
    share, and what it was given is what it uses."""
    errors: list[BaseException] = []
    shared = ZLinkSerialExecutionQueue()
    hooked = ZLinkSerialExecutionQueue(error_hook=lambda exc, h: errors.append(exc))
    clocked = ZLinkSerialExecutionQueue(clock=VirtualClock())
    traced = ZLinkSerialExecutionQueue(observer=TraceRecorder())
    assert not hooked._rt.shared and not clocked._rt.shared and traced._rt is shared._rt
    assert traced._core.config is not shared._core.config
    assert isinstance(clocked.clock, VirtualClock)

    def boom() -> None:
        raise ValueError("boom")

    hooked.post(boom)
    await run_until_idle()
    assert [str(e) for e in errors] == ["boom"]
    assert shared._rt.error_hook is None


async def test_SD_4_as_not_safely_on_one_default_queue_leaves_the_others_safe() -> None:
    """The scope flag (SD-4) belongs to one scope: setting it on one default queue must
    not change it on another that shares its runtime."""
    a, b = ZLinkSerialExecutionQueue(name="a"), ZLinkSerialExecutionQueue(name="b")
    a.as_not_safely()
    assert not a.dispose_safely_on_exit
    assert b.dispose_safely_on_exit and ZLinkSerialExecutionQueue().dispose_safely_on_exit


async def test_SD_1_disposing_one_default_queue_disposes_only_that_scope() -> None:
    """Each default queue is a scope of its own (SD-1): a disposal after a timeout on one
    keeps its timer and state to itself; the other queue stays open and its work runs."""
    a, b = ZLinkSerialExecutionQueue(name="a"), ZLinkSerialExecutionQueue(name="b")
    gate = Gate()
    held = a.enqueue(gate.wait)
    await run_until_idle()
    a.dispose_after_timeout(60_000)
    assert a.closed and not b.closed
    assert b._rt.peek_scope_state(b) is None
    assert a._rt.peek_scope_state(a) is not None and a._rt is not b._rt
    ran: list[str] = []
    b.post(lambda: ran.append("b"))
    a.dispose()
    await run_until_idle()
    assert ran == ["b"] and held.cancelled()
    assert b.active_count() == 0 and not b.closed


async def test_SE_6_1_the_shared_runtime_refuses_every_write() -> None:
    """Nothing may change the shared runtime in place: it would change every default
    queue at once. Code that needs per-owner state takes the queue's own copy."""
    q = ZLinkSerialExecutionQueue()
    with pytest.raises(ZLinkUsageError):
        q._rt.zombie_warn_after_ms = 5
    with pytest.raises(ZLinkUsageError):
        q._rt.scope_state(q)
    own = q._scope().own_runtime()
    own.zombie_warn_after_ms = 5
    assert q._rt is own and not own.shared and own.loop is asyncio.get_running_loop()
    assert ZLinkSerialExecutionQueue()._rt.zombie_warn_after_ms == 10_000


def test_D_24_default_queues_of_other_loops_and_starts_do_not_share() -> None:
    """The shared runtime belongs to one loop and one start: a queue made before its
    loop runs (``thread_id`` -1, D-24) and one made on the running loop, or on another
    loop, or on another thread, get different runtimes; each one's submissions still
    run on its own loop."""
    loop = asyncio.new_event_loop()
    try:
        early = ZLinkSerialExecutionQueue(loop=loop)
        assert early._rt.thread_id == -1
        assert ZLinkSerialExecutionQueue(loop=loop)._rt is early._rt
        log: list[str] = []
        early.post(lambda: log.append("early"))

        async def on_loop() -> ZLinkSerialExecutionQueue:
            q = ZLinkSerialExecutionQueue()
            q.post(lambda: log.append("running"))
            await run_until_idle()
            return q

        running = loop.run_until_complete(on_loop())
        assert running._rt is not early._rt and running._rt.thread_id == threading.get_ident()
        assert log == ["early", "running"]
        other: list[Any] = []

        def elsewhere() -> None:
            async def go() -> None:
                q = ZLinkSerialExecutionQueue()
                other.append(q._rt)
                h: ZLinkWorkHandle[Any] = q.enqueue(lambda: 7)
                other.append(await h)

            asyncio.run(go())

        t = threading.Thread(target=elsewhere)
        t.start()
        t.join()
        assert other[1] == 7 and other[0] is not running._rt and other[0] is not early._rt
    finally:
        loop.close()
