"""What the state machines share: the Hypothesis profiles, small policies, run statistics
for the summary, and an event loop a machine drives one rule at a time.

Profiles (env ``ZLINK_HYPOTHESIS_PROFILE``):

* ``ci`` (default): bounded and derandomized, so a run (and the kill matrix) is the same
  on every machine; part of the normal test run.
* ``deep``: many more and longer examples, random seeds, for a long search.

Under a mutant (env ``ZLINK_MUTANT``) the machines skip shrinking: the question is only
whether the mutant is caught, and an unshrunk counterexample answers it as well.
"""

from __future__ import annotations

import asyncio
import dataclasses
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st
from hypothesis.stateful import precondition, rule

from zlink_model.invariants import TraceChecker, Violation
from zlink_model.replay import Disagreement
from zlink_reference import ZLinkExecutionLanePolicy

T = TypeVar("T")

PROFILE = os.environ.get("ZLINK_HYPOTHESIS_PROFILE", "ci")
MUTANT = os.environ.get("ZLINK_MUTANT")

_HEALTH = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
# The Hypothesis profiles (prefixed, so they never shadow Hypothesis's own "ci" profile).
settings.register_profile("zlink-ci", deadline=None, derandomize=True, database=None,
                          print_blob=False, suppress_health_check=_HEALTH)
settings.register_profile("zlink-deep", deadline=None, derandomize=False, print_blob=True,
                          suppress_health_check=_HEALTH)

# machine -> (examples, steps per example), per profile
BUDGETS: dict[str, dict[str, tuple[int, int]]] = {
    "ci": {"core": (200, 80), "runtime": (150, 40), "coordinator": (150, 40),
           "disposal": (200, 30)},
    "deep": {"core": (5000, 100), "runtime": (2000, 60), "coordinator": (2000, 60),
             "disposal": (2000, 50)},
}
if PROFILE not in BUDGETS:
    raise SystemExit(f"unknown ZLINK_HYPOTHESIS_PROFILE {PROFILE!r}; known: "
                     f"{', '.join(sorted(BUDGETS))}")


def machine_settings(machine: str) -> settings:
    """The Hypothesis settings of one machine: the selected profile with the machine's
    budget (and, under a mutant, no shrinking and three times the examples).

    Derandomized examples follow the machine's source: an edit to a machine reshuffles
    them, and a mutant caught at example 120 of 150 today may be missed tomorrow. A
    machine stops at the first failure, so the larger budget under a mutant costs
    nothing when the mutant is caught and makes a kill survive such reshuffles."""
    examples, steps = BUDGETS[PROFILE][machine]
    parent = settings.get_profile(f"zlink-{PROFILE}")
    if MUTANT:
        return settings(parent, max_examples=3 * examples, stateful_step_count=steps,
                        database=None, phases=[Phase.explicit, Phase.generate])
    return settings(parent, max_examples=examples, stateful_step_count=steps)


# ------------------------------------------------------------------ statistics
@dataclasses.dataclass
class MachineStats:
    """Examples and checked steps of one machine in this process."""

    examples: int = 0
    steps: int = 0
    seconds: float = 0.0
    _since: float | None = None

    def started(self) -> None:
        self.examples += 1
        self._since = time.perf_counter()

    def stopped(self) -> None:
        if self._since is not None:
            self.seconds += time.perf_counter() - self._since
            self._since = None


STATS: dict[str, MachineStats] = {}


def stats(machine: str) -> MachineStats:
    """The statistics record of one machine."""
    return STATS.setdefault(machine, MachineStats())


# ------------------------------------------------------------------- policies
@st.composite
def small_policies(draw: st.DrawFn, *, max_cap: int = 3, roomy: bool = False
                   ) -> ZLinkExecutionLanePolicy:
    """Policies with limits small enough that every boundary is reached in a few steps.
    A byte limit always holds at least one fixed-cost item (a policy that admits nothing
    is the policy checker's business, not a machine's); ``roomy`` makes the byte limits
    large, so only the counts bind."""
    fixed = draw(st.integers(0, 2), label="fixed_work_byte_cost")

    def caps() -> tuple[int, int]:
        count = draw(st.integers(1, max_cap))
        low = max(1, fixed)
        nbytes = 1000 if roomy else draw(st.integers(low, low * count + 4))
        return count, nbytes

    app_count, app_bytes = caps()
    life_count, life_bytes = caps()
    return ZLinkExecutionLanePolicy(
        application_message_capacity=app_count,
        application_byte_capacity=app_bytes,
        lifecycle_message_capacity=life_count,
        lifecycle_byte_capacity=life_bytes,
        fixed_work_byte_cost=fixed,
        lifecycle_burst_limit=draw(st.integers(1, 3), label="lifecycle_burst_limit"),
        owner_time_budget_ms=draw(st.integers(1, 4), label="owner_time_budget_ms"),
    )


# ------------------------------------------------------------------ reporting
def fail_on(violations: list[Violation], disagreements: list[Disagreement] | None = None,
            where: str = "") -> None:
    """Fail with every violation and disagreement, one per line."""
    lines = [str(v) for v in violations]
    lines += [f"model agreement: {d}" for d in disagreements or []]
    if lines:
        head = f"{where}: " if where else ""
        raise AssertionError(head + "\n  ".join(["invariants broken:", *lines]))


# ------------------------------------------------------------------ event loop
class LoopDriver:
    """An event loop owned by one machine example: each rule runs a coroutine to the
    end on it, then lets it turn until idle. Errors the loop would only log (an
    exception in a callback, a protocol error in a posted drain) are kept and fail the
    machine."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.errors: list[str] = []
        self.loop.set_exception_handler(self._on_error)

    def _on_error(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        exc = context.get("exception")
        self.errors.append(f"{context.get('message')}: {exc!r}")

    def run(self, fn: Callable[[], Awaitable[T]]) -> T:
        """Run ``fn()`` on the loop, then until idle; return its result."""
        from zlink_reference.testing import run_until_idle

        async def go() -> T:
            result = await fn()
            await run_until_idle()
            return result

        return self.loop.run_until_complete(go())

    def call(self, fn: Callable[[], T]) -> T:
        """Call ``fn()`` on the running loop (for code that needs a running loop), then
        let the loop turn until idle."""

        async def wrapped() -> T:
            return fn()

        return self.run(wrapped)

    def idle(self) -> None:
        """Let the loop turn until nothing is ready."""
        self.call(lambda: None)

    def close(self, release: Callable[[], bool] | None = None) -> None:
        """End the example: ``release()`` answers whatever the machine still holds back
        (external calls, gates; it returns False once nothing is left), so the works end
        on their own; then whatever still waits is cancelled, given a few turns, and the
        loop is closed. (A coroutine left pending on a closed loop is finalized by the
        garbage collector later, far from the example that made it.)"""
        loop = self.loop
        try:
            for _ in range(50):
                if release is None or loop.is_closed() or not release():
                    break
                try:
                    self.idle()
                except Exception:  # the example already failed; this is cleanup
                    break
            for _ in range(3):
                tasks = [t for t in asyncio.all_tasks(loop) if not t.done()]
                if not tasks:
                    break
                for t in tasks:
                    t.cancel()
                loop.run_until_complete(asyncio.sleep(0))
        finally:
            loop.close()


def settled_as_traced(index: int, handle: Any, checker: TraceChecker) -> bool:
    """EveryAcceptedWorkEndsOnce across the API: work ``index``'s handle is settled
    exactly when its queue's trace has it done, with the trace's outcome. Returns whether
    the work failed, for the machines' count of reported failures."""
    image = checker.queue(handle.queue_name).image
    w = image.works.get(handle.wid)
    assert w is not None, f"work {index} has no admit event on {handle.queue_name}"
    if handle.done() != (w.phase == "done"):
        raise AssertionError(
            f"EveryAcceptedWorkEndsOnce: work {index} "
            f"{'settled' if handle.done() else 'is pending'}, the trace has it {w.phase}")
    if not handle.done():
        return False
    assert handle.outcome() == w.outcome, (
        f"work {index} settled {handle.outcome()}, the trace says {w.outcome}")
    return bool(handle.outcome() == "failed")


class WorkFailedError(Exception):
    """What a failing work, or a failing external call, raises."""


class OutsideWorld:
    """The rules the runtime, coordinator and disposal machines share: the world outside
    the runtime, where an external call answers or fails (``CallReturns`` in the model),
    a work holding its turn on a plain await goes on, and time passes. A machine mixes it
    in and provides ``ready``, ``app`` (with ``externals`` and ``jobs``), ``driver`` and
    ``clock``; Hypothesis finds these rules through the machine's class."""

    ready: bool
    app: Any
    driver: Any
    clock: Any

    def _pending_externals(self) -> list[asyncio.Future[int]]:
        return [f for f in self.app.externals if not f.done()]

    @precondition(lambda self: self.ready and bool(self._pending_externals()))
    @rule(data=st.data(), fail=st.booleans())
    def complete_external(self, data: st.DataObject, fail: bool) -> None:
        """CallReturns: an external call a suspended work waits on answers or fails."""
        fut = data.draw(st.sampled_from(self._pending_externals()), label="call")
        if fail:
            fut.set_exception(WorkFailedError("external call failed"))
        else:
            fut.set_result(7)
        self.driver.idle()

    def _closed_gates(self) -> list[Any]:
        return [j for j in self.app.jobs
                if j.gate is not None and not j.gate.done() and j.handle is not None]

    @precondition(lambda self: self.ready and bool(self._closed_gates()))
    @rule(data=st.data())
    def open_gate(self, data: st.DataObject) -> None:
        """A work that holds its turn on an await (not a framework call) goes on."""
        job = data.draw(st.sampled_from(self._closed_gates()), label="gate")
        job.gate.set_result(None)
        self.driver.idle()

    @precondition(lambda self: self.ready)
    @rule(ms=st.integers(1, 5))
    def advance_clock(self, ms: int) -> None:
        """Time passes (the virtual clock)."""
        self.driver.call(lambda: self.clock.advance(ms))

    def _release(self) -> bool:
        """Answer every pending external call and open every gate; False if none."""
        pending = self._pending_externals()
        gates = self._closed_gates()
        for fut in pending:
            fut.set_result(7)
        for job in gates:
            job.gate.set_result(None)
        return bool(pending or gates)
