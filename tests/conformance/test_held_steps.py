"""Capability ``held_steps``: a bare queue created ``held`` takes none of its own steps
(enter its drain, take the next turn, end a slice, leave the drain, requeue a returned
call's work) until a ``step`` command names it (specs/adapter-protocol.md, "Held steps").

The reference adapter offers it through ``zlink_reference.testing.held``; these tests
drive a held queue through the runner in each of the adapter's progress modes, show a
step that is not enabled refused, and show AP-8 catching an instrumented adapter whose
queue takes a turn without its command (a planted break, applied by the preload hook).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from zlink_conformance.catalog import load_catalogue, needed_capabilities
from zlink_conformance.explore.scenario import Scenario
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.protocol.faults import held_step_faults
from zlink_conformance.protocol.wire import Event
from zlink_conformance.runner import Runner
from zlink_conformance.runner.suite import CaseResult
from zlink_model.vocabulary import ENTER_DRAIN, EXIT_DRAIN, REQUEUE, TAKE_NEXT
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import child_env

POLICY = {"owner_time_budget_ms": 10}


def _run(body: list[dict[str, Any]], **env: str) -> CaseResult:
    scenario = Scenario(body, 0, 0, "graph")
    needs = needed_capabilities(scenario.steps())
    case, problems = scenario.case(load_catalogue().rules, needs)
    assert case is not None, problems
    with Runner(reference_adapter_command(), env=child_env(**env)) as runner:
        assert "held_steps" in runner.start().capabilities
        return runner.run_case(case)


def _events(result: CaseResult) -> list[str]:
    assert result.log is not None
    return [f"{e.name}:{e.work}" for _, e in result.log.events]


def _held_body() -> list[dict[str, Any]]:
    return [
        {"cmd": "create", "target": "Q", "type": "queue", "policy": POLICY, "held": True},
        {"cmd": "submit", "target": "Q", "work": "w1", "entry": "enqueue",
         "script": [{"op": "gate", "gate": "g1"}, {"op": "call", "call": "c1"}]},
        {"cmd": "submit", "target": "Q", "work": "w2", "entry": "enqueue",
         "script": [{"op": "gate", "gate": "g2"}]},
        {"cmd": "settle"},
        {"cmd": "step", "target": "Q", "step": ENTER_DRAIN},
        {"cmd": "settle"},
        {"cmd": "step", "target": "Q", "step": TAKE_NEXT},
        {"cmd": "settle"},
        {"cmd": "open", "gate": "g1"},
        {"cmd": "settle"},
        {"cmd": "complete", "call": "c1"},
        {"cmd": "settle"},
        {"cmd": "step", "target": "Q", "step": TAKE_NEXT},
        {"cmd": "settle"},
        {"cmd": "step", "target": "Q", "step": REQUEUE, "work": "w1"},
        {"cmd": "settle"},
        {"cmd": "open", "gate": "g2"},
        {"cmd": "settle"},
        {"cmd": "step", "target": "Q", "step": TAKE_NEXT},
        {"cmd": "settle"},
        {"cmd": "step", "target": "Q", "step": EXIT_DRAIN},
        {"cmd": "settle"},
    ]


@pytest.mark.parametrize("progress", ["default", "lazy", "eager"])
def test_SE_10_14_a_held_queue_takes_each_step_of_its_own_on_its_command(
        progress: str) -> None:
    result = _run(_held_body(), ZLINK_ADAPTER_PROGRESS=progress)
    assert result.status == "passed", result.messages
    assert _events(result) == [
        "accepted:w1", "accepted:w2", "started:w1", "yielded:w1", "started:w2",
        "finished:w2", "resumed:w1", "finished:w1"]
    log = result.log
    assert log is not None
    # nothing begins before its step: w1 starts after the take_next, not after enter_drain
    sent = [pos for pos, (d, m) in enumerate(log.entries)
            if d == "sent" and m.get("cmd") == "step"]
    started = log.first("started", "w1")
    assert started is not None and sent[1] < started
    # w1's call returned before w2's turn, yet w1 resumes only after its requeue and
    # after w2, whose turn the step took first
    assert log.first("resumed", "w1") > log.first("finished", "w2")  # type: ignore[operator]


def test_SE_6_6_a_step_the_runtime_refuses_fails_under_the_step_s_rules() -> None:
    """A case holds each of its steps enabled; a held runtime that refuses one has left
    the state the case leads to: the case fails under that step's rules."""
    body = [*_held_body()[:4], {"cmd": "step", "target": "Q", "step": TAKE_NEXT}]
    result = _run(body)
    assert result.status == "failed"
    text = " ".join(result.messages)
    assert text.startswith("[SE-6.6] steps[4] step take_next"), text
    assert "step take_next is not enabled" in text and "enter_drain" in text, text


def test_SE_10_14_a_step_needs_a_held_target() -> None:
    body = [{"cmd": "create", "target": "Q", "type": "queue"},
            {"cmd": "step", "target": "Q", "step": ENTER_DRAIN}]
    problems = Scenario(body, 0, 0, "graph").case(load_catalogue().rules,
                                                   ["queue", "held_steps"])[1]
    assert any("created with held" in p for p in problems), problems


LEAK = '''
from zlink_reference.testing import held

_take = held._HeldCore.next_step


def _leaky(self, now, prev=None, outcome=0):
    """Planted break: the drain takes its next turn at once, asked or not."""
    if prev is not None:
        self.finish(prev, outcome)
    if self.app or self.life or self.barrier:
        self.granted = "leak"
    return _take(self, now, None, outcome)


held._HeldCore.next_step = _leaky
'''


def test_AP_8_a_turn_the_held_queue_takes_without_its_step_is_an_adapter_fault(
        tmp_path: Path) -> None:
    preload = tmp_path / "leak.py"
    preload.write_text(LEAK, encoding="utf-8")
    result = _run(_held_body(), ZLINK_ADAPTER_PRELOAD=str(preload))
    assert result.status == "error", result.messages
    text = " ".join(result.messages)
    assert "adapter fault [AP-8] started:w1" in text, text
    assert "after 0 step take_next command(s)" in text, text


def test_AP_8_is_read_from_the_log_alone() -> None:
    log = CaseLog()
    log.sent({"cmd": "create", "target": "Q", "type": "queue", "held": True})
    log.sent({"cmd": "step", "target": "Q", "step": TAKE_NEXT})
    log.event(Event("started", {"work": "a", "owner": "Q"}))
    assert held_step_faults(log.entries) == []
    log.event(Event("resumed", {"work": "b", "owner": "Q"}))
    faults = held_step_faults(log.entries)
    assert len(faults) == 1 and faults[0].startswith("adapter fault [AP-8] resumed:b@3")
    # a queue not created held is the runtime's to run
    other = CaseLog()
    other.sent({"cmd": "create", "target": "Q", "type": "queue"})
    other.event(Event("started", {"work": "a", "owner": "Q"}))
    assert held_step_faults(other.entries) == []


def test_SE_6_7_a_held_requeue_waits_for_its_call_and_its_step() -> None:
    """In process, on the seam itself: a yielded work's requeue is refused before its
    call returned and after it was granted once; granted, it happens on the loop, and
    the turn comes back only on take_next."""
    import asyncio

    from zlink_reference import ZLinkExecutionLanePolicy, yield_framework_call
    from zlink_reference.testing import run_until_idle
    from zlink_reference.testing.held import HeldQueue, HeldStepError

    async def walk() -> list[str]:
        seen: list[str] = []
        queue = HeldQueue(ZLinkExecutionLanePolicy(), name="Q",
                          observer=lambda q, event, fields: seen.append(event))
        call: asyncio.Future[None] = asyncio.get_running_loop().create_future()

        async def work() -> None:
            await yield_framework_call(call)

        handle = queue.enqueue(work)
        await run_until_idle()
        assert seen == ["admit"]  # the drain is due, not entered
        queue.step(ENTER_DRAIN)
        queue.step(TAKE_NEXT)
        await run_until_idle()
        queue.step(EXIT_DRAIN)
        with pytest.raises(HeldStepError, match="its call has not returned"):
            queue.step(REQUEUE, handle)
        call.set_result(None)
        await run_until_idle()
        assert seen[-1] == EXIT_DRAIN  # the call returned; no requeue of its own
        queue.step(REQUEUE, handle)
        with pytest.raises(HeldStepError, match="granted already"):
            queue.step(REQUEUE, handle)
        await run_until_idle()
        queue.step(ENTER_DRAIN)
        queue.step(TAKE_NEXT)
        await run_until_idle()
        queue.step(EXIT_DRAIN)
        assert handle.done()
        return seen

    assert asyncio.run(walk()) == [
        "admit", ENTER_DRAIN, TAKE_NEXT, "yield_turn", EXIT_DRAIN, REQUEUE, ENTER_DRAIN,
        TAKE_NEXT, "finish", EXIT_DRAIN]
