"""The core machine: Hypothesis drives the pure ``QueueCore`` through the TLA+ actions.

Each rule is one action of ``models/SerialQueue.tla`` (and the core transitions
``models/Disposal.tla`` adds), enabled only when that action's guard holds on the core's
state and the machine's model-only variables (``budgetUsed``, ``returned``, ``yields``),
exactly as ``docs/models.md`` lists them. When a guard holds the core must take the
step; when a submission's guard says Reject the core must refuse it and change nothing.
After every step every queue invariant is checked, over the core and over its trace
(``zlink_model.invariants``): the machine is the TLC run with random instead of
exhaustive exploration, and with policies TLC's bounds never reach.
"""

from __future__ import annotations

from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from zlink_model.invariants import QueueChecker
from zlink_model.queue import (
    COMPLETED,
    MODE_CANCELLED,
    MODE_OPEN,
    MODE_TIMEOUT,
    OUTCOME_NAMES,
    QUEUED,
    SUSPENDED,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from zlink_model.rules import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    Source,
    admission_verdict,
)
from zlink_reference import ZLinkExecutionLanePolicy, ZLinkRejectedError
from zlink_reference.testing import TraceRecorder

from machinery import fail_on, machine_settings, small_policies, stats

MAX_YIELDS = 2  # per work, like MaxYields in the models
MAX_LIVE = 8  # bounds transfers, which are never refused


def _snapshot(core: QueueCore) -> tuple[object, ...]:
    return (core.app_count, core.app_bytes, core.life_count, core.life_bytes, core.next_seq,
            core.drain_scheduled, core.draining, *(core.line(s) for s in Source))


class CoreMachine(RuleBasedStateMachine):
    """SerialQueue.tla's actions (Admit/Reject, EnterDrain, TakeNext, Finish, YieldTurn,
    CallReturns, Requeue, BudgetExpires, EndSlice, ExitDrain, Close) plus the core's
    Transfer, Cancel and disposal transitions, over one ``QueueCore``."""

    def __init__(self) -> None:
        super().__init__()
        stats("core").started()
        self.core: QueueCore
        self.ready = False

    @initialize(policy=small_policies(max_cap=4),
                yield_allowed=st.sampled_from([True, True, True, False]))
    def setup(self, policy: ZLinkExecutionLanePolicy, yield_allowed: bool) -> None:
        self.trace = TraceRecorder()
        self.core = QueueCore(QueueConfig(policy, units_per_ms=1, yield_allowed=yield_allowed,
                                          observer=self.trace), "q")
        self.checker = QueueChecker("q", policy)
        self.fed = 0
        self.now = 0  # the clock reading the next step is given
        self.budget_used = False  # model-only: the slice's budget is used
        self.returned: list[WorkRecord] = []  # model-only: suspended, call returned
        self.yields: dict[int, int] = {}  # model-only: yields per live work
        self.cancel_pending: set[int] = set()  # works a disposal cancelled (Disposal.tla)
        self.late = 0  # submissions made after close
        self.ready = True

    # ------------------------------------------------------------- guards
    def _draining_free(self) -> bool:
        return self.ready and self.core.draining and self.core.current is None

    # ------------------------------------------------------------- Admit / Reject
    @precondition(lambda self: self.ready and (not self.core.closed or self.late < 2))
    @rule(kind=st.sampled_from(["app", "app", "life", "life", "barrier", "transfer"]),
          payload=st.sampled_from([0, 0, 1, 2, 3]))
    def submit(self, kind: str, payload: int) -> None:
        """Admit(s) when ``~closed /\\ Room(w)``, else Reject(s); or a Transfer, a
        SpotWide execution turn placed on this queue, which is never refused (D-6)."""
        core = self.core
        self.late += core.closed  # a few submissions after close are enough
        if kind == "transfer":
            if len(core.live_records()) < MAX_LIVE:
                rec = WorkRecord()
                core.transfer(rec)
                self.yields[rec.wid] = 0
            return
        policy = core.policy
        lane = LIFECYCLE_LANE if kind == "life" else APPLICATION_LANE
        nbytes = payload + policy.fixed_work_byte_cost
        count, used = core.reserved_of(lane)
        ccap, bcap = ((policy.lifecycle_message_capacity, policy.lifecycle_byte_capacity)
                      if lane == LIFECYCLE_LANE else
                      (policy.application_message_capacity, policy.application_byte_capacity))
        room = count < ccap and used + nbytes <= bcap
        before = _snapshot(core)
        rec = WorkRecord()
        if not core.closed and room:
            try:
                core.admit(rec, lane, payload, barrier=kind == "barrier")
            except ZLinkRejectedError as exc:
                raise AssertionError(f"Admit: the core rejects ({exc.reason}) a submission "
                                     f"the model admits") from None
            self.yields[rec.wid] = 0
            return
        verdict = admission_verdict(core.closed, lane == LIFECYCLE_LANE, count, used, nbytes,
                                    ccap, bcap)
        try:
            core.admit(rec, lane, payload, barrier=kind == "barrier")
        except ZLinkRejectedError as exc:
            assert exc.reason is verdict, f"Reject: reason {exc.reason}, the rule says {verdict}"
            assert _snapshot(core) == before, "Reject: a refused submission changed the queue"
            return
        raise AssertionError(f"Reject: the core admits a submission the model rejects "
                             f"(closed={core.closed}, room={room})")

    @precondition(lambda self: self.ready and self.core.closed and self.late >= 2)
    @rule()
    def terminated(self) -> None:
        """Terminated: a stuttering step, so a run that has nothing left to do (closed,
        every work ended) can still be extended, as in the models."""

    # ------------------------------------------------------------- the drain
    @precondition(lambda self: self.ready and self.core.drain_scheduled
                  and not self.core.draining)
    @rule()
    def enter_drain(self) -> None:
        """EnterDrain."""
        self.core.enter_drain(self.now)
        self.budget_used = False

    @precondition(lambda self: self._draining_free() and not self.budget_used
                  and self.core.has_ready())
    @rule()
    def take_next(self) -> None:
        """TakeNext."""
        self.core.take_next(self.now)

    @precondition(lambda self: self.ready and self.core.current is not None)
    @rule(outcome=st.sampled_from(range(len(OUTCOME_NAMES))))
    def finish(self, outcome: int) -> None:
        """Finish(w) of the turn holder."""
        rec = self.core.current
        assert rec is not None
        self.core.finish(rec, outcome)
        self.yields.pop(rec.wid, None)
        self.cancel_pending.discard(rec.wid)

    @precondition(lambda self: self.ready and self.core.current is not None
                  and self.core.config.yield_allowed
                  and self.yields.get(self.core.current.wid, 0) < MAX_YIELDS
                  and self.core.current.wid not in self.cancel_pending)
    @rule()
    def yield_turn(self) -> None:
        """YieldTurn(w) of the turn holder (not one whose cancellation is pending: that
        one meets its cancellation at this await point instead, Disposal.tla)."""
        rec = self.core.current
        assert rec is not None
        self.core.yield_turn(rec)
        self.yields[rec.wid] += 1

    def _waiting_calls(self) -> list[WorkRecord]:
        return sorted((r for r in self.core.suspended_records() if r not in self.returned),
                      key=lambda r: r.wid)

    @precondition(lambda self: self.ready and bool(self._waiting_calls()))
    @rule(data=st.data())
    def call_returns(self, data: st.DataObject) -> None:
        """CallReturns(w): environment."""
        rec = data.draw(st.sampled_from(self._waiting_calls()), label="work")
        self.returned.append(rec)

    @precondition(lambda self: self.ready and bool(self.returned))
    @rule(data=st.data())
    def requeue(self, data: st.DataObject) -> None:
        """Requeue(w)."""
        rec = data.draw(st.sampled_from(self.returned), label="work")
        self.returned.remove(rec)
        self.core.requeue(rec)

    @precondition(lambda self: self.ready and self.core.draining and not self.budget_used)
    @rule(extra=st.integers(0, 2))
    def budget_expires(self, extra: int) -> None:
        """BudgetExpires: environment; the next clock reading is past the budget."""
        budget = self.core.policy.owner_time_budget_ms
        self.now = max(self.now, int(self.core.slice_started_at) + int(budget) + extra)
        self.budget_used = True

    @precondition(lambda self: self.ready and self.core.draining and not self.budget_used)
    @rule(ms=st.integers(1, 3))
    def time_passes(self, ms: int) -> None:
        """Time passes within the budget (the model's budgetUsed stays FALSE)."""
        end = int(self.core.slice_started_at) + int(self.core.policy.owner_time_budget_ms)
        self.now = min(self.now + ms, end - 1) if self.now < end - 1 else self.now

    @precondition(lambda self: self._draining_free() and self.budget_used)
    @rule()
    def end_slice(self) -> None:
        """EndSlice."""
        self.core.end_slice(self.now)
        self.budget_used = False

    @precondition(lambda self: self._draining_free() and not self.budget_used
                  and not self.core.has_ready())
    @rule()
    def exit_drain(self) -> None:
        """ExitDrain."""
        self.core.exit_drain(self.now)

    @precondition(lambda self: self.ready and self.core.draining)
    @rule(outcome=st.sampled_from(range(len(OUTCOME_NAMES))))
    def next_step(self, outcome: int) -> None:
        """The shell's drain step (``QueueCore.next_step``): Finish of the turn holder if
        there is one, then EndSlice, TakeNext or ExitDrain, as the guards say."""
        core = self.core
        prev = core.current
        ready_after = core.has_ready()
        got = core.next_step(self.now, prev, outcome if prev is not None else COMPLETED)
        if prev is not None:
            self.yields.pop(prev.wid, None)
            self.cancel_pending.discard(prev.wid)
        if self.budget_used:
            assert got is None and not core.draining, "next_step: the budget is used, " \
                "the slice must end"
            self.budget_used = False
        elif ready_after:
            assert got is not None and core.current is got, "next_step: work is ready, " \
                "a turn must be taken"
        else:
            assert got is None and not core.draining, "next_step: nothing is ready, " \
                "the drain must leave"

    # ------------------------------------------------------------- the owner
    def _never_started(self) -> list[WorkRecord]:
        return [r for r in self.core.live_records() if r.phase == QUEUED]

    def _owner_actions(self) -> list[str]:
        core = self.core
        acts = []
        if not core.closed:
            acts.append("close")
        if core.mode != MODE_CANCELLED:
            acts.append("dispose")
        if core.mode == MODE_OPEN:
            acts += ["dispose_safely", "dispose_after_timeout"]
        if core.mode == MODE_TIMEOUT:
            acts.append("expire_timeout")
        if self._never_started():
            acts.append("cancel")
        return acts

    @precondition(lambda self: self.ready and self.core.next_seq >= 3
                  and bool(self._owner_actions()))
    @rule(data=st.data())
    def owner(self, data: st.DataObject) -> None:
        """What the queue's owner does, one of: Close; Cancel(w) of a work that never
        started (relocation takes such works out, SE-4.7); the disposal calls of
        Disposal.tla (Dispose, DisposeSafely, DisposeAfterTimeout) and the environment's
        ExpireTimeout. One rule, so that shutting down is one choice among many."""
        action = data.draw(st.sampled_from(self._owner_actions()), label="action")
        core = self.core
        emitted = len(self.trace.events)
        if action == "close":
            core.close()
        elif action == "cancel":
            rec = data.draw(st.sampled_from(self._never_started()), label="work")
            core.cancel(rec)
            self.yields.pop(rec.wid, None)
        elif action == "dispose":
            self._cancel_all(core.dispose())
        elif action == "dispose_safely":
            before = {r.wid for r in core.live_records() if not r.zombie}
            marked = core.dispose_safely()
            assert {r.wid for r in marked} == before, "DisposeSafely marks every live work"
        elif action == "dispose_after_timeout":
            core.dispose_after_timeout()
        else:
            self._cancel_all(core.expire_timeout())
        names = [e.event for e in self.trace.events[emitted:]]
        assert names[:1] == [action], f"{action}: the core emits {names}, not the call"
        if action in ("dispose", "expire_timeout"):
            # Disposal.tla: a never-started work whose cancellation is pending can only
            # be cancelled; the core ends them all within the call (SD-1).
            assert not self._never_started(), f"{action}: never-started works stay queued"
            assert all(n == "cancel" for n in names[1:]), f"{action}: emits {names}"

    def _cancel_all(self, result: tuple[list[WorkRecord], list[WorkRecord]]) -> None:
        # CancelAll: pending delivery for every live work; suspended works' external
        # calls are cut short, so they may requeue. Never-started works ended already.
        ended, live = result
        for rec in ended:
            self.yields.pop(rec.wid, None)
        self.cancel_pending |= {r.wid for r in live}
        for rec in live:
            if rec.phase == SUSPENDED and rec not in self.returned:
                self.returned.append(rec)

    # ------------------------------------------------------------- invariants
    @invariant()
    def every_invariant_holds(self) -> None:
        """Every queue invariant, over the core and over the trace so far."""
        if not self.ready:
            return
        stats("core").steps += 1
        found = []
        for ev in self.trace.events[self.fed:]:
            found += self.checker.feed(ev)
        self.fed = len(self.trace.events)
        found += self.checker.check(self.core)
        fail_on(found)

    def teardown(self) -> None:
        stats("core").stopped()


CoreMachine.TestCase.settings = machine_settings("core")
TestCoreMachine = CoreMachine.TestCase
