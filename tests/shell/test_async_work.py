"""Async works inside the drive task (SE-6.7, SD-1, D-13), through the public surface.

The first async work of a slice makes the slice's drive task; every later async work of
the slice starts inside that task at once, without a task of its own, and one that never
waits ends there like a synchronous work. These tests hold what a work's code can see
to what a task of its own would give it: ``asyncio.current_task()`` is one task from the
work's first step to its end, ``asyncio.timeout`` fires in it and leaves nothing behind,
context variables set by the submitter are seen and those the work sets stay with it,
``current_work()`` is its handle. Each check looks at a work the drive task made
(the first of the slice), at works started inside it, and at works after a suspension.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Callable, Coroutine
from typing import Any

import pytest

from zlink_reference import (
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    current_work,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from helpers import Gate, Rig, policy

VAR: contextvars.ContextVar[str] = contextvars.ContextVar("zlink_test_var", default="unset")

AsyncWork = Callable[[], Coroutine[Any, Any, Any]]


class Lane:
    """A queue and a way to submit to it: ``enqueue`` on a traced queue (every work has
    a handle from the start) or ``post`` on an untraced one (a posted coroutine becomes
    a handle when it returns its coroutine)."""

    def __init__(self, how: str, **kw: Any) -> None:
        self.how = how
        self.errors: list[tuple[BaseException, ZLinkWorkHandle[Any]]] = []
        self.trace = TraceRecorder() if how == "enqueue" else None
        self.clock = VirtualClock()
        self.queue = ZLinkSerialExecutionQueue(
            policy(**kw), name=how, clock=self.clock, observer=self.trace,
            error_hook=lambda exc, h: self.errors.append((exc, h)))

    def submit(self, work: Callable[[], Any]) -> None:
        if self.how == "enqueue":
            self.queue.enqueue(work)
        else:
            self.queue.post(work)


LANES = ["enqueue", "post"]


def task_id() -> int | None:
    task = asyncio.current_task()
    return None if task is None else id(task)


@pytest.mark.parametrize("how", LANES)
async def test_SE_6_7_an_async_work_keeps_one_task_and_its_handle_from_first_step_to_end(
    how: str,
) -> None:
    """Three async works of one slice: the first (its drive task's), a second started
    inside that task, a third after a synchronous one. On each one's first step and
    after each await, ``current_task()`` is the same task, ``current_work()`` is the
    same handle, and the queue's turn is the work's."""
    lane = Lane(how)
    q = lane.queue
    gate = Gate()
    seen: dict[str, list[tuple[int | None, object, bool]]] = {}

    def work(name: str, wait: Callable[[], Coroutine[Any, Any, Any]]) -> AsyncWork:
        async def run() -> str:
            marks = seen.setdefault(name, [])
            marks.append((task_id(), current_work(), q.is_current()))
            await wait()
            marks.append((task_id(), current_work(), q.is_current()))
            await asyncio.sleep(0)
            marks.append((task_id(), current_work(), q.is_current()))
            return name
        return run

    outer = task_id()
    lane.submit(work("a", gate.wait))
    lane.submit(work("b", lambda: asyncio.sleep(0)))
    lane.submit(lambda: None)
    lane.submit(work("c", lambda: asyncio.sleep(0)))
    await run_until_idle()
    assert list(seen) == ["a"]
    gate.open()
    await q.await_quiescence()
    assert list(seen) == ["a", "b", "c"]
    for name, marks in seen.items():
        tasks = {t for t, _, _ in marks}
        handles = {id(h) for _, h, _ in marks}
        assert len(marks) == 3 and len(tasks) == 1 and None not in tasks, (name, marks)
        assert outer not in tasks, name  # never the submitter's task
        assert len(handles) == 1 and marks[0][1] is not None, (name, marks)
        assert all(current for _, _, current in marks), (name, marks)
        handle = marks[0][1]
        assert isinstance(handle, ZLinkWorkHandle) and handle.result() == name


@pytest.mark.parametrize("how", LANES)
async def test_SE_6_7_asyncio_timeout_inside_an_async_work_fires_and_leaves_nothing_behind(
    how: str,
) -> None:
    """A timeout entered on a work's first step and one entered after it waited both
    fire inside the work (TimeoutError, the work goes on); the drive task is left
    uncancelled, so the next works (one started inside the same task) run their own
    timeouts and awaits undisturbed, and a work that never waits can use one too."""
    lane = Lane(how)
    gate = Gate()
    log: list[Any] = []

    async def first() -> None:
        try:
            async with asyncio.timeout(0):  # entered on the first step
                await gate.wait()
        except TimeoutError:
            log.append(("first step", asyncio.current_task().cancelling()))  # type: ignore[union-attr]
        await asyncio.sleep(0)
        try:
            async with asyncio.timeout(0):  # entered after the work waited
                await gate.wait()
        except TimeoutError:
            log.append(("after a wait", asyncio.current_task().cancelling()))  # type: ignore[union-attr]
        try:
            # It fires while the work waits on no future (a bare loop turn): only the
            # task's own delivery can bring it into the work.
            async with asyncio.timeout(0):
                for _ in range(100):
                    await asyncio.sleep(0)
            log.append("the timeout never reached the work")
        except TimeoutError:
            log.append(("between turns", asyncio.current_task().cancelling()))  # type: ignore[union-attr]

    async def never_waits() -> None:
        async with asyncio.timeout(3600):
            log.append(("never waits", asyncio.current_task().cancelling()))  # type: ignore[union-attr]

    async def next_work() -> None:
        async with asyncio.timeout(3600) as cm:
            for _ in range(3):
                await asyncio.sleep(0)
        log.append(("next", cm.expired(), asyncio.current_task().cancelling()))  # type: ignore[union-attr]
        await gate.wait()
        log.append("next passed the gate")

    lane.submit(first)
    lane.submit(never_waits)
    lane.submit(next_work)
    await run_until_idle()
    assert log == [("first step", 0), ("after a wait", 0), ("between turns", 0),
                   ("never waits", 0), ("next", False, 0)]
    gate.open()
    await lane.queue.await_quiescence()
    assert log[-1] == "next passed the gate"
    assert lane.errors == []


@pytest.mark.parametrize("how", LANES)
async def test_SE_6_7_each_async_work_runs_in_a_context_of_its_own(how: str) -> None:
    """The submitter's variable is seen by every work of the slice; what a work sets is
    seen by the rest of that work (across its awaits) and by the tasks it makes, never
    by the works after it, whether they start in the same drive task or after it, nor
    by the submitter."""
    lane = Lane(how)
    log: list[tuple[str, str]] = []

    def work(name: str, waits: bool) -> AsyncWork:
        async def run() -> None:
            log.append((name, VAR.get()))
            VAR.set(name)
            if waits:
                await asyncio.sleep(0)
            child = asyncio.get_running_loop().create_task(child_reads(name))
            await child
            log.append((name + " at its end", VAR.get()))
        return run

    async def child_reads(name: str) -> None:
        log.append((name + "'s child", VAR.get()))

    token = VAR.set("submitter")
    try:
        lane.submit(work("a", waits=True))
        lane.submit(work("b", waits=False))
        lane.submit(lambda: log.append(("sync", VAR.get())))
        lane.submit(work("c", waits=True))
        await lane.queue.await_quiescence()
        assert VAR.get() == "submitter"
    finally:
        VAR.reset(token)
    assert log == [
        ("a", "submitter"), ("a's child", "a"), ("a at its end", "a"),
        ("b", "submitter"), ("b's child", "b"), ("b at its end", "b"),
        ("sync", "submitter"),
        ("c", "submitter"), ("c's child", "c"), ("c at its end", "c"),
    ]


@pytest.mark.parametrize("how", LANES)
async def test_SE_6_7_an_async_work_that_never_waits_ends_with_its_value_or_exception(
    how: str,
) -> None:
    """Started inside the drive task and ended there without a wait: its value is its
    handle's result, its exception the handle's exception and the error hook's report,
    a CancelledError it raises itself cancels only it; the works after it still run."""
    lane = Lane(how)
    q = lane.queue
    boom = KeyError("boom")
    ran: list[str] = []
    handles: dict[str, ZLinkWorkHandle[Any]] = {}

    def work(name: str, body: Callable[[], Any]) -> AsyncWork:
        async def run() -> Any:
            handles[name] = current_work()  # type: ignore[assignment]
            ran.append(name)
            return body()
        return run

    def raise_(exc: BaseException) -> Callable[[], Any]:
        def body() -> Any:
            raise exc
        return body

    async def opener() -> None:
        ran.append("opener")
        await asyncio.sleep(0)  # the works below start inside this drive task

    lane.submit(opener)
    lane.submit(work("value", lambda: 42))
    lane.submit(work("fails", raise_(boom)))
    lane.submit(work("cancels itself", raise_(asyncio.CancelledError())))
    lane.submit(work("after", lambda: "last"))
    await q.await_quiescence()
    assert ran == ["opener", "value", "fails", "cancels itself", "after"]
    assert handles["value"].result() == 42
    assert handles["fails"].exception() is boom
    assert handles["cancels itself"].cancelled()
    assert handles["after"].result() == "last"
    assert [(exc, h) for exc, h in lane.errors] == [(boom, handles["fails"])]
    stats = q.statistics()
    assert (stats.application_count, stats.running, stats.draining) == (0, False, False)


@pytest.mark.parametrize("how", LANES)
async def test_SD_1_dispose_cancels_an_async_work_waiting_inside_the_drive_task(
    how: str,
) -> None:
    """A work started inside the drive task waits (holding its turn) when its queue is
    disposed: it gets CancelledError at its await, in its own context, and ends
    cancelled; the work queued behind it never starts; the queue ends quiescent."""
    lane = Lane(how)
    q = lane.queue
    gate = Gate()
    log: list[Any] = []
    handles: dict[str, ZLinkWorkHandle[Any]] = {}

    async def opener() -> None:
        await asyncio.sleep(0)

    async def waiting() -> None:
        handles["waiting"] = current_work()  # type: ignore[assignment]
        VAR.set("waiting")
        try:
            await gate.wait()
        except asyncio.CancelledError:
            log.append(("cancelled at its await", VAR.get(), q.is_current()))
            raise

    lane.submit(opener)
    lane.submit(waiting)
    lane.submit(lambda: log.append("never"))
    await run_until_idle()
    assert "waiting" in handles and not handles["waiting"].done()
    q.dispose()
    await q.await_quiescence()
    assert log == [("cancelled at its await", "waiting", True)]
    assert handles["waiting"].cancelled()
    stats = q.statistics()
    assert (stats.application_count, stats.running, stats.suspended) == (0, False, 0)


async def test_SE_6_7_yield_from_a_work_started_inside_the_drive_task() -> None:
    """The second work of a slice (started inside the first one's drive task) yields on
    its first step: the turn goes back, the works behind it run meanwhile in the drain's
    context (not the yielded work's), and it resumes through the queue in the same task
    with its own context and handle."""
    rig = Rig()
    q = rig.queue
    ext: asyncio.Future[str] = asyncio.get_running_loop().create_future()
    log: list[Any] = []
    handle: dict[str, Any] = {}

    async def opener() -> None:
        await asyncio.sleep(0)

    async def yielding() -> str:
        handle["h"] = current_work()
        VAR.set("yielding")
        before = task_id()
        value = await yield_framework_call(ext)
        log.append(("resumed", value, VAR.get(), task_id() == before,
                    current_work() is handle["h"], q.is_current()))
        return value

    async def behind() -> None:
        log.append(("behind", VAR.get(), q.is_current()))
        await asyncio.sleep(0)

    token = VAR.set("submitter")
    try:
        q.enqueue(opener)
        h = q.enqueue(yielding)
        q.enqueue(behind)
        q.enqueue(lambda: log.append(("sync behind", VAR.get())))
    finally:
        VAR.reset(token)
    await run_until_idle()
    assert log == [("behind", "submitter", True), ("sync behind", "submitter")]
    assert not h.done()
    ext.set_result("answer")
    assert await h == "answer"
    assert log[-1] == ("resumed", "answer", "yielding", True, True, True)
    assert handle["h"] is h
    names = [e.event for e in rig.trace if e.get("work") == h.wid]
    assert names == ["admit", "take_next", "yield_turn", "requeue", "take_next", "finish"]


async def test_SE_6_4_async_works_started_inside_the_drive_task_keep_the_time_budget() -> None:
    """Async works that never wait, each using 4 ms of a 10 ms budget, inside one drive
    task: the core is asked between works, the slice ends after the third (SE-6.4), and
    the rest runs in the next slice."""
    clock = VirtualClock()
    trace = TraceRecorder()
    q = ZLinkSerialExecutionQueue(policy(owner_time_budget_ms=10), name="b", clock=clock,
                                  observer=trace)
    order: list[str] = []

    def busy(name: str) -> AsyncWork:
        async def run() -> None:
            order.append(name)
            clock.advance(4)
        return run

    for i in range(5):
        q.enqueue(busy(f"w{i}"))
    await q.await_quiescence()
    assert order == ["w0", "w1", "w2", "w3", "w4"]
    events = [e.event for e in trace.of("b")]
    assert events.count("end_slice") == 1
    cut = events.index("end_slice")
    assert events[:cut].count("finish") == 3


async def test_SD_1_dispose_before_the_drive_task_first_ran_cancels_the_work_unstarted() -> None:
    """The drain gave an async work the turn and made its drive task, which runs a loop
    turn later; a disposal in between must still reach the work: it ends cancelled
    without starting (SD-1: nothing starts after a cancelling disposal), the queued work
    behind it is cancelled too, and the queue becomes quiescent."""
    q = ZLinkSerialExecutionQueue(name="q")
    loop = asyncio.get_running_loop()
    started: list[str] = []

    async def waits() -> None:
        started.append("waits")
        await asyncio.Event().wait()

    first = q.enqueue(waits)
    second = q.enqueue(lambda: started.append("second"))
    loop.call_soon(q.dispose)  # after the drain callback, before the drive task's step
    await asyncio.wait_for(q.await_quiescence(), 5)
    await run_until_idle()
    assert started == []
    assert (first.outcome(), second.outcome()) == ("cancelled", "cancelled")
    assert not q.statistics().running


class _Awaitable:
    """An awaitable that is no coroutine: ``__await__`` waits on a future."""

    def __init__(self, fut: asyncio.Future[str]) -> None:
        self.fut = fut

    def __await__(self) -> Any:
        return (yield from self.fut.__await__())


@pytest.mark.parametrize("how", LANES)
@pytest.mark.parametrize("kind", ["future", "awaitable object"])
@pytest.mark.parametrize("where", ["first of its slice", "inside the drive task"])
async def test_SE_6_7_a_work_returning_an_awaitable_that_is_no_coroutine_keeps_its_turn(
    how: str, kind: str, where: str,
) -> None:
    """A work may return any awaitable, not only a coroutine: a future, or an object
    with ``__await__``. It holds its turn until that ends (the work after it waits), and
    its handle takes the awaitable's result, or its exception, as an ``await`` would
    give them; whether it makes the slice's drive task or starts inside one. (A posted
    work has no handle while it runs synchronously: its failure's report carries one.)"""
    lane = Lane(how)
    loop = asyncio.get_running_loop()
    futs: list[asyncio.Future[str]] = [loop.create_future(), loop.create_future()]
    ran: list[str] = []
    handles: list[ZLinkWorkHandle[Any]] = []

    def returning(fut: asyncio.Future[str]) -> Callable[[], Any]:
        def work() -> Any:
            ran.append(f"start {len(ran)}")
            handles.append(current_work())  # type: ignore[arg-type]
            return fut if kind == "future" else _Awaitable(fut)
        return work

    async def opener() -> None:
        await asyncio.sleep(0)

    if where == "inside the drive task":
        lane.submit(opener)
    lane.submit(returning(futs[0]))
    lane.submit(returning(futs[1]))
    lane.submit(lambda: ran.append("after"))
    for _ in range(5):
        await asyncio.sleep(0)
    assert ran == ["start 0"]  # the first holds the turn while its awaitable waits
    futs[0].set_result("one")
    for _ in range(5):
        await asyncio.sleep(0)
    assert ran == ["start 0", "start 1"]
    boom = KeyError("boom")
    futs[1].set_exception(boom)
    await lane.queue.await_quiescence()
    assert ran == ["start 0", "start 1", "after"]
    if how == "enqueue":  # a posted work has a handle only once it returned
        assert handles[0].result() == "one"
        assert handles[1].exception() is boom
    assert [exc for exc, _h in lane.errors] == [boom]
    assert lane.errors[0][1].exception() is boom
