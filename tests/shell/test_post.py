"""``post(work)``: the handle-less submission (SE-6.2), through the public surface.

An untraced queue admits a posted work with the core's ``admit_plain`` (no handle); a
traced one takes ``enqueue``'s path. Either way the work keeps every rule of
``enqueue``: the same capacity answers, FIFO with handled work, one drain, a failure
reported to the error hook once, disposal ends it like any accepted work."""

from __future__ import annotations

import asyncio
import contextvars
import threading
from typing import Any, cast

import pytest

from zlink_model.queue import is_plain
from zlink_reference import (
    RejectReason,
    ZLinkClosedError,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    current_work,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from helpers import Gate, policy


class Untraced:
    """A queue without an observer (posts take the plain lane) and what it saw."""

    def __init__(self, **kw: Any) -> None:
        self.errors: list[tuple[BaseException, ZLinkWorkHandle[Any]]] = []
        self.log: list[Any] = []
        self.queue = ZLinkSerialExecutionQueue(
            policy(**kw), name="p", clock=VirtualClock(),
            error_hook=lambda exc, h: self.errors.append((exc, h)))

    def note(self, value: Any) -> Any:
        return lambda: self.log.append(value)


async def test_SE_6_6_posted_work_keeps_fifo_with_handled_work() -> None:
    u = Untraced(application_message_capacity=100)
    q = u.queue
    for i in range(12):
        if i % 3 == 0:
            q.enqueue(u.note(i))
        else:
            assert q.post(u.note(i)) is None  # type: ignore[func-returns-value]
    assert q.statistics().application_count == 12
    await run_until_idle()
    assert u.log == list(range(12))
    stats = q.statistics()
    assert (stats.application_count, stats.application_bytes, stats.ready) == (0, 0, 0)
    assert not stats.draining and not stats.drain_scheduled


@pytest.mark.parametrize(("kw", "reason"), [
    ({"application_message_capacity": 3}, RejectReason.APPLICATION_COUNT),
    ({"application_byte_capacity": 3 * 256}, RejectReason.APPLICATION_BYTES),
])
async def test_SE_5_1_post_rejects_exactly_at_its_limit_like_enqueue(
    kw: dict[str, int], reason: RejectReason,
) -> None:
    u = Untraced(**kw)
    q = u.queue
    gate = Gate()
    q.enqueue(gate.wait)
    q.post(u.note(0))
    q.post(u.note(1))
    with pytest.raises(ZLinkRejectedError) as err:
        q.post(u.note("over"))
    assert err.value.reason is reason
    assert q.statistics().application_count == 3
    gate.open()
    await run_until_idle()
    assert u.log == [0, 1]
    q.post(u.note("room again"))
    await run_until_idle()
    assert u.log[-1] == "room again"
    q.close()
    with pytest.raises(ZLinkClosedError):
        q.post(u.note("closed"))


async def test_SE_6_7_a_posted_failure_reaches_the_error_hook_once() -> None:
    u = Untraced()
    boom = ValueError("boom")

    def fail() -> None:
        raise boom

    u.queue.post(fail)
    u.queue.post(u.note("after"))
    await run_until_idle()
    assert len(u.errors) == 1
    exc, handle = u.errors[0]
    assert exc is boom and handle.done() and handle.outcome() == "failed"
    assert handle.exception() is boom
    assert u.log == ["after"]
    assert u.queue.statistics().application_count == 0


async def test_SE_6_2_is_current_holds_inside_a_posted_work() -> None:
    u = Untraced()
    q = u.queue
    seen: list[Any] = []
    q.post(lambda: seen.append((q.is_current(), current_work())))
    await run_until_idle()
    assert seen == [(True, None)]  # it holds the turn; it has no handle
    assert not q.is_current()


async def test_SE_6_7_a_posted_coroutine_gets_a_handle_and_keeps_its_task_context() -> None:
    u = Untraced()
    q = u.queue
    var: contextvars.ContextVar[str] = contextvars.ContextVar("v", default="unset")
    gate = Gate()
    seen: list[Any] = []

    async def work() -> None:
        var.set("inside")
        seen.append(("start", q.is_current(), current_work() is not None,
                     asyncio.current_task() is not None))
        async with asyncio.timeout(10):
            await gate.wait()
        seen.append(("end", var.get(), q.is_current()))

    q.post(work)
    q.post(u.note("next"))
    await run_until_idle()
    assert seen == [("start", True, True, True)] and u.log == []  # it holds the turn
    gate.open()
    await run_until_idle()
    assert seen[1] == ("end", "inside", True) and u.log == ["next"]
    assert var.get() == "unset"
    assert q.statistics().application_count == 0


async def test_SE_6_3_a_traced_queue_posts_through_admit() -> None:
    trace = TraceRecorder()
    q = ZLinkSerialExecutionQueue(policy(), name="t", clock=VirtualClock(), observer=trace)
    log: list[int] = []
    q.post(lambda: log.append(1))
    await run_until_idle()
    assert log == [1]
    assert [e.event for e in trace] == ["admit", "enter_drain", "take_next", "finish",
                                        "exit_drain"]


async def test_SE_6_3_a_post_from_another_thread_waits_for_the_loops_verdict() -> None:
    u = Untraced(application_message_capacity=1)
    q = u.queue
    gate = Gate()
    q.enqueue(gate.wait)
    await run_until_idle()
    out: list[BaseException | None] = []

    def submit() -> None:
        try:
            q.post(u.note("x"))
            out.append(None)
        except ZLinkRejectedError as exc:
            out.append(exc)

    t = threading.Thread(target=submit)
    t.start()
    while t.is_alive():
        await asyncio.sleep(0.001)
    assert isinstance(out[0], ZLinkRejectedError)
    gate.open()
    await run_until_idle()


async def test_SD_1_dispose_ends_queued_posts_and_dispose_safely_keeps_them_running() -> None:
    u = Untraced()
    q = u.queue
    gate = Gate()
    q.enqueue(gate.wait)
    await run_until_idle()
    q.post(u.note("never"))
    q.post(u.note("never either"))
    assert q.active_count() == 3  # accounting promotes posted works to handles
    q.dispose()
    gate.open()
    await run_until_idle()
    assert u.log == []
    assert q.statistics().application_count == 0

    v = Untraced()
    gate2 = Gate()
    v.queue.enqueue(gate2.wait)
    await run_until_idle()
    v.queue.post(v.note("zombie"))
    v.queue.dispose_safely()
    assert v.queue.zombie_count() == 2
    gate2.open()
    await run_until_idle()
    assert v.log == ["zombie"] and v.queue.zombie_count() == 0
    assert v.queue.statistics().application_count == 0


def test_SE_6_3_post_on_an_owner_made_before_its_loop_ran_takes_the_plain_lane() -> None:
    """An owner made before its loop runs has no loop thread yet (D-24): a post from the
    thread that made it must still take the plain lane (``admit_plain``), not fall back
    to ``enqueue``'s path for ever because the fast thread test alone says "foreign".
    The line shows which lane admitted a work: the plain lane keeps the work itself in
    line, ``enqueue``'s path a handle made for it (so the test holds for the compiled
    build too, where the queue calls the core directly)."""
    loop = asyncio.new_event_loop()
    try:
        log: list[int] = []
        queue = ZLinkSerialExecutionQueue(policy(application_message_capacity=10), name="p",
                                          clock=VirtualClock(), loop=loop)
        works = [lambda i=i: log.append(i) for i in range(3)]
        for work in works:
            queue.post(work)
        line = list(queue._core.app or ())
        assert all(is_plain(item) for item in line) and line == works, (
            f"SE-6.3: post took enqueue's path on the thread that made the owner: {line}")
        loop.run_until_complete(run_until_idle())
        assert log == [0, 1, 2]
    finally:
        loop.close()


async def test_SD_1_a_posted_work_may_dispose_its_own_queue_safely() -> None:
    """Disposal promotes every live plain work to a record (``promote_plain``), the
    running one included. A posted work that disposes its own queue safely, in the
    middle of a run of posted works, still ends, on its own turn; the rest run on as
    zombies (SD-1, SD-2) and the drain leaves. On the code before this test the drain
    stopped at once on ``finish_plain``'s refusal and the queue stayed draining, with
    the rest never run."""
    u = Untraced()
    q = u.queue
    seen: list[Any] = []

    def dispose_inside() -> None:
        q.dispose_safely()
        seen.append((q.is_current(), q.zombie_count()))

    q.post(u.note(0))
    q.post(dispose_inside)
    q.post(u.note(2))
    await run_until_idle()
    assert u.log == [0, 2] and seen == [(True, 2)] and u.errors == []
    stats = q.statistics()
    assert (stats.application_count, stats.draining, stats.running) == (0, False, False)
    assert q.zombie_count() == 0 and q.closed


async def test_SD_2_a_posted_work_that_counts_its_scope_ends_as_its_record() -> None:
    """Counting the scope's works from inside a posted work promotes it while it runs;
    it then ends as that record: a value returned completes it, an exception reaches
    the error hook once, with the promoted handle settled failed."""
    u = Untraced()
    q = u.queue
    counts: list[int] = []
    boom = ValueError("boom")

    def count() -> int:
        counts.append(q.active_count())
        return 7

    def count_then_fail() -> None:
        counts.append(q.active_count())
        raise boom

    q.post(count)
    q.post(count_then_fail)
    q.post(u.note("after"))
    await run_until_idle()
    assert counts == [3, 2] and u.log == ["after"]
    assert [(e, h.outcome()) for e, h in u.errors] == [(boom, "failed")]
    assert q.statistics().application_count == 0 and not q.statistics().draining


async def test_SD_2_a_posted_work_that_counts_its_scope_then_returns_a_coroutine_runs_it(
) -> None:
    """A posted work promoted while it ran (it counted its scope) and then returned a
    coroutine: the coroutine runs on the promoted record's turn, its value settles that
    record, and the queue drains on."""
    u = Untraced()
    q = u.queue
    seen: list[object] = []

    async def later() -> int:
        await asyncio.sleep(0)
        seen.append(current_work())
        return 5

    def count_then_async() -> Any:
        seen.append(q.active_count())
        return later()

    q.post(count_then_async)
    q.post(u.note("after"))
    await asyncio.wait_for(q.await_quiescence(), 5)
    assert seen[0] == 2 and isinstance(seen[1], ZLinkWorkHandle)
    assert cast("ZLinkWorkHandle[int]", seen[1]).result() == 5
    assert u.log == ["after"] and not u.errors
    assert q.statistics().application_count == 0 and not q.statistics().draining


async def test_SD_1_a_posted_work_that_disposes_its_queue_cancels_the_queued_rest() -> None:
    """``dispose`` from inside a posted work: the running work finishes (a synchronous
    turn is never interrupted, D-8), the queued posts never start."""
    u = Untraced()
    q = u.queue

    def dispose_inside() -> None:
        u.log.append("first")
        q.dispose()

    q.post(dispose_inside)
    q.post(u.note("never"))
    await run_until_idle()
    assert u.log == ["first"] and u.errors == []
    stats = q.statistics()
    assert (stats.application_count, stats.draining, stats.ready) == (0, False, 0)
