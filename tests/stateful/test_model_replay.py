"""Model replay (``zlink_model.replay``): a trace recorded from the asyncio runtime
replays through the pure core event by event, and a trace the model does not allow is
refused at its first wrong event, with the reason and what the model would have done."""

from __future__ import annotations

import asyncio
import dataclasses
import io
import json
from typing import Any

from zlink_model.replay import TraceReplayer, check_trace, replay
from zlink_model.trace import read_trace
from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkSerialExecutionQueue,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    yield_framework_call,
)
from zlink_reference.testing import TraceEvent, TraceRecorder, VirtualClock, run_until_idle

POLICY = ZLinkExecutionLanePolicy(application_message_capacity=2, lifecycle_burst_limit=1,
                                  owner_time_budget_ms=3)


def recorded() -> list[TraceEvent]:
    """A queue's trace: admissions in every lane, a rejection, a long work that ends the
    slice, a yield and its resume, a failure, close."""

    async def go() -> list[TraceEvent]:
        clock, trace = VirtualClock(), TraceRecorder()
        q = ZLinkSerialExecutionQueue(POLICY, name="q", clock=clock, observer=trace,
                                      error_hook=lambda e, h: None)
        ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def yields() -> int:
            return await yield_framework_call(ext)

        def fails() -> None:
            raise ValueError("fails")

        q.enqueue(yields)
        q.enqueue_lifecycle(lambda: clock.advance(4))
        q.enqueue(fails)
        try:
            q.enqueue(lambda: None)
        except Exception:
            pass
        await run_until_idle()
        ext.set_result(1)
        q.close()
        await run_until_idle()
        return trace.events

    return asyncio.run(go())


def test_a_recorded_trace_replays_and_its_json_lines_too() -> None:
    events = recorded()
    assert [e.event for e in events].count("end_slice") == 1
    result = replay(events, POLICY)
    assert result.ok and result.replayed == len(events)
    assert result.core.is_idle() and result.core.closed
    text = io.StringIO()
    for e in events:
        text.write(json.dumps(e.to_json()) + "\n")
    assert replay(read_trace(text.getvalue().splitlines()), POLICY).ok


def _change(events: list[TraceEvent], i: int, **fields: Any) -> list[TraceEvent]:
    out = list(events)
    out[i] = dataclasses.replace(out[i], fields={**out[i].fields, **fields})
    return out


def _first(events: list[TraceEvent], name: str) -> int:
    return next(i for i, e in enumerate(events) if e.event == name)


def test_SE_6_6_a_take_of_the_wrong_work_is_refused_with_the_models_choice() -> None:
    events = recorded()
    i = _first(events, "take_next")
    d = replay(_change(events, i, work=0, pos=0, source="application", streak=0),
               POLICY).disagreement
    assert d is not None and d.index == i
    assert d.model is not None and d.model["source"] == "lifecycle"


def test_SE_6_3_an_admission_past_the_limit_is_refused() -> None:
    events = recorded()
    i = _first(events, "reject")
    bad = list(events)
    bad[i] = TraceEvent(events[i].seq, "q", "admit", {
        "work": 3, "pos": 3, "lane": "application", "barrier": False, "bytes": 256,
        "wake": False})
    d = replay(bad, POLICY).disagreement
    assert d is not None and "rejects this submission (application_count)" in d.reason


def test_SE_6_7_a_finish_off_the_turn_is_refused() -> None:
    events = recorded()
    i = _first(events, "yield_turn")
    bad = [*events[:i + 1], TraceEvent(-1, "q", "finish", {"work": 0, "outcome": "completed"})]
    d = replay(bad, POLICY).disagreement
    assert d is not None and "refuses it: finish" in d.reason and "SE-6.7" in d.reason


def test_SE_6_5_a_wrong_wake_flag_is_a_disagreement() -> None:
    events = recorded()
    i = next(i for i, e in enumerate(events) if e.event == "admit" and not e["wake"])
    d = replay(_change(events, i, wake=True), POLICY).disagreement
    assert d is not None and d.model is not None and d.model["wake"] is False


def test_SD_1_dispose_must_be_followed_by_its_cancel_events() -> None:
    async def go() -> list[TraceEvent]:
        trace = TraceRecorder()
        q = ZLinkSerialExecutionQueue(POLICY, name="q", clock=VirtualClock(), observer=trace)
        gate: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def holds() -> None:
            await gate

        q.enqueue(holds)
        q.enqueue(lambda: None)
        await run_until_idle()
        q.dispose()
        await run_until_idle()
        return trace.events

    events = asyncio.run(go())
    assert replay(events, POLICY).ok
    i = _first(events, "cancel")
    d = replay(events[:i], POLICY).disagreement
    assert d is not None and "ends before the model's step does" in d.reason
    assert d.model is not None and d.model["event"] == "cancel"


def test_an_unknown_event_is_refused() -> None:
    d = replay([TraceEvent(0, "q", "teleport", {})], POLICY).disagreement
    assert d is not None and "no transition is named 'teleport'" in d.reason


def test_a_spot_wide_coordinator_trace_replays_queue_by_queue() -> None:
    async def go() -> list[TraceEvent]:
        trace = TraceRecorder()
        spot = ZLinkSpotSerialExecutor(
            "S", mode=ZLinkUserSpotExecutionMode.SPOT_WIDE, policy=POLICY,
            actor_policy=POLICY, clock=VirtualClock(), observer=trace)
        ext: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        async def yields() -> int:
            return await yield_framework_call(ext)

        spot.execute_actor("A", yields, 10)
        spot.execute_actor("A", lambda: None)
        spot.execute_actor("B", lambda: None)
        spot.execute_timer("t", lambda: None)
        await run_until_idle()
        ext.set_result(2)
        await run_until_idle()
        return trace.events

    events = asyncio.run(go())
    assert {e.queue for e in events} == {"spot:S", "spot:S/actor:A", "spot:S/actor:B"}
    assert any(e.event == "transfer" for e in events)
    replayer = TraceReplayer(POLICY)
    assert replayer.feed(events) == [] and replayer.finished() == []
    report = check_trace(events, POLICY)
    assert report.ok, report.lines()
