"""ZLinkSerialExecutionQueue through its public surface (SE-5, SE-6), with the virtual
clock and run-until-idle: no sleeps, no wall-clock timing."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from zlink_reference import (
    RejectReason,
    ZLinkClosedError,
    ZLinkNotOnTurnError,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle

from helpers import Gate, Rig, policy

# ------------------------------------------------------------------ ordering


async def test_SE_6_6_fifo_within_the_application_lane() -> None:
    rig = Rig(policy(application_message_capacity=100))
    for i in range(20):
        rig.queue.enqueue(rig.note(i))
    await run_until_idle()
    assert rig.log == list(range(20))


async def test_SE_6_6_fifo_within_the_lifecycle_lane() -> None:
    rig = Rig(policy(lifecycle_burst_limit=8))
    for i in range(6):
        rig.queue.enqueue_lifecycle(rig.note(f"L{i}"))
    await run_until_idle()
    assert rig.log == [f"L{i}" for i in range(6)]


async def test_SE_6_2_lifecycle_overtakes_queued_application_work() -> None:
    rig = Rig()
    gate = Gate()
    rig.queue.enqueue(gate.wait)  # holds the turn while the rest queue up
    await run_until_idle()
    for i in range(3):
        rig.queue.enqueue(rig.note(f"A{i}"))
    rig.queue.enqueue_lifecycle(rig.note("L0"))
    rig.queue.enqueue_lifecycle(rig.note("L1"))
    await run_until_idle()
    gate.open()
    await run_until_idle()
    assert rig.log == ["L0", "L1", "A0", "A1", "A2"]


@pytest.mark.parametrize("limit", [1, 2, 3, 8])
async def test_SE_6_1_lifecycle_burst_limit_boundary(limit: int) -> None:
    """Exactly ``limit`` lifecycle items run ahead of waiting application work, then one
    application item, then lifecycle again."""
    rig = Rig(policy(lifecycle_burst_limit=limit))
    gate = Gate()
    rig.queue.enqueue(gate.wait)  # takes the turn first, so the rest wait together
    await run_until_idle()
    for i in range(3):
        rig.queue.enqueue(rig.note(f"A{i}"))
    for i in range(2 * limit + 1):
        rig.queue.enqueue_lifecycle(rig.note(f"L{i}"))
    await run_until_idle()
    gate.open()
    await run_until_idle()
    expected = [f"L{i}" for i in range(limit)] + ["A0"]
    expected += [f"L{i}" for i in range(limit, 2 * limit)] + ["A1"]
    expected += [f"L{2 * limit}", "A2"]
    assert rig.log == expected


async def test_SE_6_1_lifecycle_without_waiting_application_work_is_not_limited() -> None:
    rig = Rig(policy(lifecycle_burst_limit=2))
    for i in range(5):
        rig.queue.enqueue_lifecycle(rig.note(f"L{i}"))
    await run_until_idle()
    assert rig.log == [f"L{i}" for i in range(5)]


async def test_SE_6_2_barrier_next_runs_right_after_the_current_turn_in_order() -> None:
    rig = Rig()
    q = rig.queue

    def first() -> None:
        rig.log.append("first")
        q.enqueue_barrier_next(rig.note("B0"))
        q.enqueue_barrier_next(rig.note("B1"))

    q.enqueue(first)
    q.enqueue(rig.note("A0"))
    q.enqueue_lifecycle(rig.note("L0"))
    q.enqueue(rig.note("A1"))
    await run_until_idle()
    # L0 overtakes everything waiting at the start; the barriers then run right after
    # "first", before the application work queued ahead of them.
    assert rig.log == ["L0", "first", "B0", "B1", "A0", "A1"]


# ------------------------------------------------------------------ capacity


@pytest.mark.parametrize(
    ("kw", "submit", "reason"),
    [
        ({"application_message_capacity": 3}, "app", RejectReason.APPLICATION_COUNT),
        ({"application_byte_capacity": 3 * 256}, "app", RejectReason.APPLICATION_BYTES),
        ({"lifecycle_message_capacity": 3}, "life", RejectReason.LIFECYCLE_COUNT),
        ({"lifecycle_byte_capacity": 3 * 256}, "life", RejectReason.LIFECYCLE_BYTES),
    ],
)
async def test_SE_5_1_each_capacity_axis_rejects_exactly_at_its_limit(
    kw: dict[str, int], submit: str, reason: RejectReason
) -> None:
    rig = Rig(policy(**kw))
    q = rig.queue
    enqueue = q.enqueue if submit == "app" else q.enqueue_lifecycle
    gate = Gate()
    handles = [enqueue(gate.wait)] + [enqueue(rig.note(i)) for i in range(2)]
    before = q.statistics()
    with pytest.raises(ZLinkRejectedError) as err:
        enqueue(rig.note("over"))
    assert err.value.reason is reason
    after = q.statistics()
    assert (after.application_count, after.application_bytes, after.lifecycle_count,
            after.lifecycle_bytes, after.ready) == (
        before.application_count, before.application_bytes, before.lifecycle_count,
        before.lifecycle_bytes, before.ready), "a rejection inserted or reserved something"
    gate.open()
    await run_until_idle()
    assert rig.log == [0, 1]
    assert all(h.done() for h in handles)
    enqueue(rig.note("room again"))  # released on finish: room again
    await run_until_idle()
    assert rig.log[-1] == "room again"


async def test_SE_5_1_byte_axis_counts_payload_plus_fixed_cost() -> None:
    rig = Rig(policy(application_byte_capacity=1000, fixed_work_byte_cost=100))
    q = rig.queue
    gate = Gate()
    q.enqueue_with_payload_bytes(gate.wait, 400)  # 500 reserved
    q.enqueue_with_payload_bytes(rig.note("fits"), 400)  # 1000: exactly full
    with pytest.raises(ZLinkRejectedError) as err:
        q.enqueue_with_payload_bytes(rig.note("over"), 0)  # 1100
    assert err.value.reason is RejectReason.APPLICATION_BYTES
    gate.open()
    await run_until_idle()
    assert rig.log == ["fits"]


async def test_SE_6_3_admission_is_atomic_when_many_threads_submit() -> None:
    cap = 50
    rig = Rig(policy(application_message_capacity=cap))
    q = rig.queue
    gate = Gate()
    q.enqueue(gate.wait)
    accepted: list[Any] = []
    rejected: list[RejectReason] = []
    lock = threading.Lock()

    def submitter(tid: int) -> None:
        for i in range(20):
            try:
                h = q.enqueue(rig.note((tid, i)))
            except ZLinkRejectedError as err:
                with lock:
                    rejected.append(err.reason)
            else:
                with lock:
                    accepted.append(h)

    threads = [threading.Thread(target=submitter, args=(t,)) for t in range(8)]
    for t in threads:
        t.start()
    while any(t.is_alive() for t in threads):
        await asyncio.sleep(0.001)  # let the loop take the marshalled submissions
    for t in threads:
        t.join()
    assert len(accepted) == cap - 1, "over- or under-admission"
    assert len(rejected) == 8 * 20 - (cap - 1)
    assert set(rejected) == {RejectReason.APPLICATION_COUNT}
    gate.open()
    await run_until_idle()
    admitted = [e["work"] for e in rig.events("admit")]
    started = [e["work"] for e in rig.events("take_next")]
    assert started == admitted, "sequence numbers and run order disagree"
    # each thread's own submissions keep their order
    for tid in range(8):
        mine = [v for v in rig.log if v[0] == tid]
        assert mine == sorted(mine)


# ------------------------------------------------------------------ drain start


async def test_SE_6_5_one_drain_per_idle_to_busy_transition_never_on_the_submitter_stack() -> None:
    rig = Rig()
    q = rig.queue
    for round_ in range(3):
        for i in range(5):
            q.enqueue(rig.note((round_, i)))
            assert (round_, i) not in rig.log, "the work ran on the submitter's stack"
        await run_until_idle()
    wakes = [e for e in rig.events("admit") if e["wake"]]
    enters = rig.events("enter_drain")
    assert len(wakes) == 3 and len(enters) == 3
    assert [e.event for e in rig.trace][:6] == ["admit"] * 5 + ["enter_drain"]


async def test_SE_6_5_submission_during_a_drain_does_not_wake_again() -> None:
    rig = Rig()
    q = rig.queue

    def chain(n: int) -> Any:
        def work() -> None:
            rig.log.append(n)
            if n < 5:
                q.enqueue(chain(n + 1))
        return work

    q.enqueue(chain(0))
    await run_until_idle()
    assert rig.log == list(range(6))
    assert len(rig.events("enter_drain")) == 1
    assert [e["wake"] for e in rig.events("admit")] == [True] + [False] * 5


# ------------------------------------------------------------------ fairness


async def test_SE_6_4_slice_ends_when_the_time_budget_is_used() -> None:
    clock_rig = Rig(policy(owner_time_budget_ms=10), name="A")
    from zlink_reference import ZLinkSerialExecutionQueue as Q

    other = Q(name="B", clock=clock_rig.clock, observer=clock_rig.trace)
    a = clock_rig.queue
    for i in range(6):
        a.enqueue(clock_rig.busy(f"A{i}", 4))
    other.enqueue(clock_rig.note("B0"))
    await run_until_idle()
    # 4 + 4 + 4 = 12 ms >= 10: A's slice ends after its third work; B, ready since
    # before, runs next; A goes on in a new slice (SE-6.4, decision D-8).
    assert clock_rig.log == ["A0", "A1", "A2", "B0", "A3", "A4", "A5"]
    slices = [e for e in clock_rig.trace.of("A") if e.event == "end_slice"]
    assert [s["reschedule"] for s in slices] == [True, False]  # the second found nothing left


async def test_SE_6_4_budget_is_checked_only_between_works() -> None:
    rig = Rig(policy(owner_time_budget_ms=10))
    rig.queue.enqueue(rig.busy("long", 50))  # one work far over the budget runs whole
    rig.queue.enqueue(rig.note("next"))
    await run_until_idle()
    assert rig.log == ["long", "next"]
    assert [e.event for e in rig.trace].count("end_slice") == 1


# ------------------------------------------------------------------ yield


async def test_SE_6_7_yield_gives_the_turn_back_and_resume_goes_through_the_queue() -> None:
    rig = Rig()
    q = rig.queue
    ext: asyncio.Future[str] = asyncio.get_running_loop().create_future()

    async def yielding() -> str:
        rig.log.append("y:start")
        value = await yield_framework_call(ext)
        rig.log.append(("y:resumed", q.is_current()))
        return value

    h = q.enqueue(yielding)
    q.enqueue(rig.note("other"))
    await run_until_idle()
    assert rig.log == ["y:start", "other"]  # "other" ran while y waited
    assert not h.done()
    gate = Gate()
    q.enqueue(gate.wait)  # holds the turn when the external call completes
    await run_until_idle()
    ext.set_result("answer")
    await run_until_idle()
    assert ("y:resumed", True) not in rig.log, "resumed while another work held the turn"
    gate.open()
    assert await h == "answer"
    assert rig.log[-1] == ("y:resumed", True)
    names = [(e.event, e.get("work")) for e in rig.trace if e.get("work") == h.wid]
    assert names == [("admit", 0), ("take_next", 0), ("yield_turn", 0), ("requeue", 0),
                     ("take_next", 0), ("finish", 0)]
    resume = [e for e in rig.events("take_next") if e["work"] == h.wid][1]
    assert resume["resume"] is True


async def test_SE_6_7_a_call_already_done_returns_without_yielding() -> None:
    rig = Rig()
    done: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    done.set_result(7)

    async def work() -> int:
        return await yield_framework_call(done)

    h = rig.queue.enqueue(work)
    await run_until_idle()
    assert h.result() == 7
    assert not rig.events("yield_turn", "requeue")


async def test_SE_6_7_external_failure_is_raised_on_the_works_own_turn() -> None:
    rig = Rig()
    ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    async def work() -> None:
        try:
            await yield_framework_call(ext)
        except KeyError:
            rig.log.append(("caught", rig.queue.is_current()))

    h = rig.queue.enqueue(work)
    await run_until_idle()
    ext.set_exception(KeyError("x"))
    await run_until_idle()
    assert h.done() and rig.log == [("caught", True)]


async def test_SE_6_7_yield_outside_a_turn_is_a_usage_error() -> None:
    loop_fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
    with pytest.raises(ZLinkNotOnTurnError):
        await yield_framework_call(loop_fut)


# ------------------------------------------------------------------ close, errors


async def test_SE_6_2_close_rejects_new_work_and_finishes_accepted_work() -> None:
    rig = Rig()
    q = rig.queue
    gate = Gate()
    q.enqueue(gate.wait)
    q.enqueue(rig.note("accepted"))
    q.enqueue_lifecycle(rig.note("accepted-life"))
    q.close()
    q.close()  # idempotent
    for submit in (q.enqueue, q.enqueue_lifecycle, q.enqueue_barrier_next):
        with pytest.raises(ZLinkClosedError) as err:
            submit(rig.note("late"))
        assert err.value.reason is RejectReason.CLOSED
    gate.open()
    await q.await_quiescence()
    assert rig.log == ["accepted-life", "accepted"]


async def test_SE_6_6_an_exception_fails_only_its_own_work() -> None:
    rig = Rig()
    q = rig.queue

    def boom() -> None:
        raise ValueError("boom")

    async def aboom() -> None:
        raise RuntimeError("aboom")

    h1 = q.enqueue(boom)
    h2 = q.enqueue(rig.note("after sync failure"))
    h3 = q.enqueue(aboom)
    h4 = q.enqueue(rig.note("after async failure"))
    await run_until_idle()
    assert rig.log == ["after sync failure", "after async failure"]
    with pytest.raises(ValueError, match="boom"):
        h1.result()
    with pytest.raises(RuntimeError, match="aboom"):
        await h3
    assert h2.outcome() == h4.outcome() == "completed"
    assert [type(e) for e in rig.errors] == [ValueError, RuntimeError]
    assert [e["outcome"] for e in rig.events("finish")] == [
        "failed", "completed", "failed", "completed"]


async def test_SE_5_2_reservation_is_released_when_the_work_finishes_not_when_it_starts() -> None:
    rig = Rig(policy(application_message_capacity=1))
    q = rig.queue
    gate = Gate()
    q.enqueue(gate.wait)
    await run_until_idle()
    assert q.statistics().running
    with pytest.raises(ZLinkRejectedError):  # the running work still holds its place
        q.enqueue(rig.note("x"))
    gate.open()
    await run_until_idle()
    ext: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def suspended() -> None:
        await yield_framework_call(ext)

    h = q.enqueue(suspended)
    await run_until_idle()
    stats = q.statistics()
    assert stats.suspended == 1 and stats.application_count == 1  # suspended: still reserved
    with pytest.raises(ZLinkRejectedError):
        q.enqueue(rig.note("x"))
    ext.set_result(None)
    await run_until_idle()
    assert h.done() and q.statistics().application_count == 0
    q.enqueue(rig.note("x"))
    await run_until_idle()
    assert rig.log == ["x"]


async def test_SE_6_2_is_current_only_inside_this_queues_work() -> None:
    rig = Rig()
    q = rig.queue
    other = ZLinkSerialExecutionQueue(name="other", clock=rig.clock)
    seen: list[tuple[str, bool, bool]] = []

    async def awork() -> None:
        seen.append(("async", q.is_current(), other.is_current()))

    q.enqueue(lambda: seen.append(("sync", q.is_current(), other.is_current())))
    q.enqueue(awork)
    await run_until_idle()
    assert seen == [("sync", True, False), ("async", True, False)]
    assert not q.is_current()


async def test_SE_6_2_await_quiescence_waits_for_every_accepted_work() -> None:
    rig = Rig()
    q = rig.queue
    await q.await_quiescence()  # idle: returns at once
    gate = Gate()
    q.enqueue(gate.wait)
    q.enqueue(rig.note("x"))
    waiter = asyncio.ensure_future(q.await_quiescence())
    await run_until_idle()
    assert not waiter.done()
    gate.open()
    await waiter
    assert rig.log == ["x"]


async def test_SE_8_2_waiting_on_work_of_the_same_queue_raises_at_once() -> None:
    rig = Rig()
    q = rig.queue
    inner: list[Any] = []

    async def outer() -> str:
        h = q.enqueue(rig.note("inner"))
        inner.append(h)
        try:
            await h
        except ZLinkReentrancyError:
            return "raised"
        return "waited"

    h = q.enqueue(outer)
    await run_until_idle()
    assert h.result() == "raised"
    assert inner[0].done() and rig.log == ["inner"]


@pytest.mark.parametrize("own_clock", [False, True], ids=["shared-runtime", "own-runtime"])
async def test_SE_8_2_a_bare_queue_is_its_own_coordinator(own_clock: bool) -> None:
    """D-14: holding its turn, a work may wait for another bare queue's work, even when
    the two queues share the default runtime (nothing of their own to keep)."""
    kw: dict[str, Any] = {"clock": VirtualClock()} if own_clock else {}
    q1, q2 = ZLinkSerialExecutionQueue(name="q1", **kw), ZLinkSerialExecutionQueue(name="q2", **kw)
    gate = Gate()
    other = q2.enqueue(gate.wait)

    async def waits() -> str:
        await other
        return "waited"

    h = q1.enqueue(waits)
    await run_until_idle()
    assert not h.done()  # waiting for q2's work, which can run meanwhile
    gate.open()
    await run_until_idle()
    assert h.result() == "waited"


async def test_SE_6_2_bad_input_is_a_clear_error_with_nothing_inserted() -> None:
    rig = Rig()
    q = rig.queue
    with pytest.raises(ValueError, match="payload_bytes must be >= 0, got -1"):
        q.enqueue_with_payload_bytes(rig.note(1), -1)
    with pytest.raises(TypeError, match="payload_bytes must be an integer"):
        q.enqueue_with_payload_bytes(rig.note(1), 1.5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="work must be a zero-argument callable"):
        q.enqueue(42)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="policy must be"):
        ZLinkSerialExecutionQueue({"application_message_capacity": 1})  # type: ignore[arg-type]
    assert not rig.trace.events


async def test_SE_6_4_waiting_for_the_drive_task_does_not_use_the_owners_budget() -> None:
    """B's drain takes its first async work and hands it to a task that starts one loop
    turn later; A's work, run meanwhile, uses 30 ms. That time is A's, not B's: B's
    slice still runs all its works (D-13)."""
    clock = VirtualClock()
    trace = TraceRecorder()
    b = ZLinkSerialExecutionQueue(policy(owner_time_budget_ms=10), name="B", clock=clock,
                                  observer=trace)
    a = ZLinkSerialExecutionQueue(name="A", clock=clock, observer=trace)
    order: list[str] = []

    def async_work(name: str) -> Any:
        async def work() -> None:
            order.append(name)
        return work

    for i in range(3):
        b.enqueue(async_work(f"B{i}"))
    a.enqueue(lambda: (order.append("A"), clock.advance(30)))
    await run_until_idle()
    assert order == ["A", "B0", "B1", "B2"]
    assert [e.event for e in trace.of("B")].count("enter_drain") == 1
    assert not [e for e in trace.of("B") if e.event == "end_slice"]


async def test_SE_6_5_owners_that_feed_each_other_let_a_timer_run() -> None:
    """D-13: the drain start is posted on the loop's next turn, where I/O and timers run,
    like the slice cut. Two owners whose works submit to each other never use up a
    budget, so no slice is cut; a timer due before the first hop still fires within a
    few hops (a start posted as a microtask would let the chain run for ever)."""
    loop = asyncio.get_running_loop()
    a = ZLinkSerialExecutionQueue(name="a")
    b = ZLinkSerialExecutionQueue(name="b")
    hops = 0
    fired_at: list[int] = []

    def ping(to: ZLinkSerialExecutionQueue, back: ZLinkSerialExecutionQueue) -> None:
        nonlocal hops
        hops += 1
        if not fired_at and hops < 10_000:
            to.enqueue(lambda: ping(back, to))

    loop.call_later(0, lambda: fired_at.append(hops))
    a.enqueue(lambda: ping(b, a))
    while not fired_at and hops < 10_000:
        await asyncio.sleep(0)
    assert fired_at and fired_at[0] <= 3, (fired_at, hops)
    await run_until_idle()


async def test_SE_5_2_each_awaiter_of_a_handle_waits_on_its_own_view() -> None:
    """Three awaiters of one handle: one cancelled, one timed out; the third and the
    work itself are untouched, and every accepted work still ends once."""
    gate = asyncio.Event()
    q = ZLinkSerialExecutionQueue(name="q")

    async def work() -> str:
        await gate.wait()
        return "done"

    h = q.enqueue(work)

    async def await_it() -> str:
        return await h

    cancelled = asyncio.ensure_future(await_it())
    kept = asyncio.ensure_future(await_it())
    await asyncio.sleep(0)
    with pytest.raises(TimeoutError):
        await asyncio.wait_for(await_it(), 0.01)
    cancelled.cancel()
    with pytest.raises(asyncio.CancelledError):
        await cancelled
    assert not kept.done() and not h.done()
    gate.set()
    assert await kept == "done" and await h == "done"
    q.close()
    await q.await_quiescence()
