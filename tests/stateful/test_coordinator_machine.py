"""The coordinator machine: Hypothesis drives a Spot coordinator in each wiring.

A ``ZLinkSpotSerialExecutor`` is built as a User Spot in PerActor or SpotWide mode, an
Instance Spot (wired like SpotWide) or an Entry Spot (like PerActor, without Yield). Rules
submit works to random Actors (``execute_actor``, with payloads), timers
(``execute_timer``), the Spot (``execute_spot``) and its lifecycle lane
(``execute_lifecycle``); works finish at once, fail, run long on the virtual clock, hold
their turn behind a gate, yield on external calls, read their Actor's snapshot around a
wait, or wait for work of their own coordinator. Other rules answer external calls, open
gates, move the clock, change Actor registrations, take an Actor's pending work out
(relocation), close the Spot, and settle everything.

After every rule:

* every queue of the Spot satisfies the queue invariants over its trace and its core,
  and replays through the model (``zlink_model.invariants``, ``.replay``);
* in the wide wirings, the SpotWide invariants hold over the Spot's queues
  (``OneTurnHoldsSpotGate``, ``YieldedActorKeepsClaim``, ``PayloadReservedOnce`` with
  the payloads the machine submitted, ``SpotQueueReservesFixedCostOnly``,
  ``CapacityRespected``);
* machine-level checks with no TLA+ operator of their own, named after the rule they
  hold: each submission lands on the queue its wiring prescribes (``OneQueuePerOwner``,
  SE-2.2, SE-4.2, SE-4.4, SE-4.5); at most one work runs per gate (``NoOverlap``,
  SE-4.3: the whole Spot in the wide wirings, each queue in PerActor); a message sees one
  snapshot of its Actor however the registration changes meanwhile
  (``SnapshotConsistent``, SE-7.2); waiting for one's own coordinator raises at once
  (``NoSelfWait``, SE-8.2); no public attribute hands out a queue (``NoQueueChoice``,
  SE-3.1); every handle settles once, failures reach the error hook once, and a closed
  Spot accepts nothing.
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from zlink_model.invariants import TraceChecker, Violation, check_spot_wide
from zlink_model.queue import WorkRecord
from zlink_model.replay import TraceReplayer
from zlink_reference import (
    ZLinkClosedError,
    ZLinkExecutionLanePolicy,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
    ZLinkYieldNotSupportedError,
    current_snapshot,
    current_work,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock
from zlink_reference.testing.spot import spot_wide_view

from machinery import (
    LoopDriver,
    OutsideWorld,
    WorkFailedError,
    fail_on,
    machine_settings,
    settled_as_traced,
    small_policies,
    stats,
)

WIRINGS = ("per_actor", "spot_wide", "instance", "entry")
ACTORS = ("A", "B")
TIMERS = ("t1", "t2")
KINDS = ("sync", "raise", "long", "gated", "yield", "snapshot", "selfwait")


BATCHES = st.lists(st.tuples(
    st.sampled_from(["actor:A", "actor:B", "actor:A", "actor:B", "timer:t1", "timer:t2",
                     "spot", "lifecycle"]),
    st.sampled_from(KINDS), st.sampled_from([0, 0, 1, 2, 3]), st.integers(1, 5)),
    min_size=1, max_size=4)


@dataclasses.dataclass(eq=False)
class Job:
    """One submission as the application sees it."""

    index: int
    entry: str  # "spot", "lifecycle", "actor:A", "timer:t1"
    kind: str
    payload: int = 0
    handle: ZLinkWorkHandle[Any] | None = None
    gate: asyncio.Future[None] | None = None
    started: bool = False
    settled: int = 0
    selfwait: str = ""  # "raised", "waited", "skipped" (inner submission refused)
    relocated: bool = False


class SpotApplication:
    """The works the machine submits to the Spot, and what they observe."""

    def __init__(self, machine: CoordinatorMachine) -> None:
        self.m = machine
        self.jobs: list[Job] = []
        self.externals: list[asyncio.Future[int]] = []
        self.broken: list[str] = []
        self.running: dict[str, Job] = {}  # gate -> the job running under it
        self.failures = 0  # error-hook calls

    def gate_of(self, job: Job) -> str:
        """Under which turn a work runs: the Spot gate in the wide wirings, else the
        queue of its entry (SE-4.2, SE-4.3)."""
        if self.m.wide or job.entry in ("spot", "lifecycle"):
            return "spot"
        return job.entry

    def _enter(self, job: Job, where: str) -> None:
        gate = self.gate_of(job)
        other = self.running.get(gate)
        if other is not None and other is not job:
            self.broken.append(f"NoOverlap: work {job.index} ({job.entry}) runs ({where}) "
                               f"while work {other.index} ({other.entry}) runs under the "
                               f"same turn {gate}")
        if current_work() is None:
            self.broken.append(f"work {job.index} runs ({where}) without holding a turn")
        self.running[gate] = job

    def _leave(self, job: Job) -> None:
        gate = self.gate_of(job)
        if self.running.get(gate) is job:
            del self.running[gate]

    async def _wait(self, job: Job) -> None:
        """A wait that gives the turn back where Yield exists (an external call), and
        holds it where it does not (an Entry Spot: a framework call is refused)."""
        ext: asyncio.Future[int] = self.m.driver.loop.create_future()
        self.externals.append(ext)
        self._leave(job)
        try:
            await yield_framework_call(ext)
        except ZLinkYieldNotSupportedError:
            if self.m.yield_allowed:
                self.broken.append(f"work {job.index}: Yield refused where it exists")
            ext.cancel()
        else:
            if not self.m.yield_allowed:
                self.broken.append(f"work {job.index}: yielded on an Entry Spot (SE-4.1)")
        finally:
            self._enter(job, "resume")

    def work(self, job: Job, ms: int) -> Any:
        kind = job.kind
        m = self.m
        if kind in ("sync", "raise", "long"):
            def run() -> int:
                job.started = True
                self._enter(job, "start")
                try:
                    if kind == "raise":
                        raise WorkFailedError(job.index)
                    if kind == "long":
                        m.clock.advance(ms)
                    return job.index
                finally:
                    self._leave(job)
            return run

        async def run_async() -> int:
            job.started = True
            self._enter(job, "start")
            try:
                if kind == "gated":
                    assert job.gate is not None
                    await job.gate
                elif kind == "yield":
                    await self._wait(job)
                elif kind == "snapshot":
                    # Read the Actor's registration, change it (as a handler may), wait,
                    # read it again: one message sees one snapshot (SE-7.2).
                    before = current_snapshot()
                    seen = dict(before.registration) if before is not None else None
                    actor = job.entry[6:]
                    m.spot.update_actor_registration(actor, version=100 + job.index,
                                                     name=f"{actor}-{job.index}")
                    await self._wait(job)
                    after = current_snapshot()
                    again = dict(after.registration) if after is not None else None
                    if seen != again:
                        self.broken.append(
                            f"SnapshotConsistent: work {job.index} saw {seen}, then {again} "
                            f"in one message (SE-7.2)")
                elif kind == "selfwait":
                    await self._selfwait(job)
                return job.index
            finally:
                self._leave(job)
        return run_async

    async def _selfwait(self, job: Job) -> None:
        """Wait, holding the turn, for new work of the same entry: it can only run after
        this one, so the wait must raise at once (SE-8.2). Then wait on the whole Spot
        (its quiescence or its completion, by turns): that wait waits for this work too,
        so it must raise at once as well (SE-10.13)."""
        await self._selfwait_on_work(job)
        scope_wait = (self.m.spot.await_quiescence if job.index % 2 == 0
                      else self.m.spot.await_completion)
        job.selfwait = "waiting"
        try:
            await scope_wait()
        except ZLinkReentrancyError:
            job.selfwait = "raised"
        else:
            job.selfwait = "waited"

    async def _selfwait_on_work(self, job: Job) -> None:
        spot = self.m.spot
        try:
            if job.entry.startswith("actor:"):
                inner = spot.execute_actor(job.entry[6:], lambda: None)
            elif job.entry.startswith("timer:"):
                inner = spot.execute_timer(job.entry[6:], lambda: None)
            elif job.entry == "lifecycle":
                inner = spot.execute_lifecycle(lambda: None)
            else:
                inner = spot.execute_spot(lambda: None)
        except ZLinkRejectedError:
            job.selfwait = "skipped"
            return
        job.selfwait = "waiting"
        try:
            await inner
        except ZLinkReentrancyError:
            job.selfwait = "raised"
        else:
            job.selfwait = "waited"

    def new_job(self, entry: str, kind: str, payload: int = 0) -> Job:
        job = Job(len(self.jobs), entry, kind, payload)
        if kind == "gated":
            job.gate = self.m.driver.loop.create_future()
        self.jobs.append(job)
        return job

    def report(self, exc: BaseException, handle: ZLinkWorkHandle[Any]) -> None:
        self.failures += 1


class CoordinatorMachine(OutsideWorld, RuleBasedStateMachine):
    """One Spot coordinator, in one wiring, checked against the models."""

    def __init__(self) -> None:
        super().__init__()
        stats("coordinator").started()
        self.driver = LoopDriver()
        self.ready = False

    @initialize(wiring=st.sampled_from(WIRINGS), spot_policy=small_policies(max_cap=4),
                actor_policy=small_policies(max_cap=3), timer_policy=small_policies(),
                first=BATCHES)
    def setup(self, wiring: str, spot_policy: ZLinkExecutionLanePolicy,
              actor_policy: ZLinkExecutionLanePolicy,
              timer_policy: ZLinkExecutionLanePolicy,
              first: list[tuple[str, str, int, int]]) -> None:
        """The Spot in its wiring, and the first submissions to it."""
        self.wiring = wiring
        self.wide = wiring in ("spot_wide", "instance")
        self.yield_allowed = wiring != "entry"
        self.clock = VirtualClock()
        self.trace = TraceRecorder()
        self.app = SpotApplication(self)
        kw: dict[str, Any] = {}
        if wiring == "per_actor":
            kw["mode"] = ZLinkUserSpotExecutionMode.PER_ACTOR
        elif wiring == "spot_wide":
            kw["mode"] = ZLinkUserSpotExecutionMode.SPOT_WIDE
        else:
            kw["kind"] = ZLinkSpotKind(wiring)
        self.policies = {"spot": spot_policy, "actor": actor_policy, "timer": timer_policy}
        self.spot = ZLinkSpotSerialExecutor(
            "S", policy=spot_policy, actor_policy=actor_policy, timer_policy=timer_policy,
            clock=self.clock, loop=self.driver.loop, observer=self.trace,
            error_hook=self.app.report, **kw)
        for actor in ACTORS:
            self.spot.register_actor(actor, "player", version=0, name=actor)
        self.checker = TraceChecker(self.policy_of)
        self.replayer = TraceReplayer(self.policy_of,
                                      yield_allowed=lambda q: self.yield_allowed)
        self.fed = 0
        self.payloads: dict[tuple[str, int], int] = {}  # (actor, wid) -> payload
        self.ready = True
        self.submit(first)

    def policy_of(self, queue: str) -> ZLinkExecutionLanePolicy:
        """Each queue's policy, by its name."""
        if "/actor:" in queue:
            return self.policies["actor"]
        if "/timer:" in queue:
            return self.policies["timer"]
        return self.policies["spot"]

    def expected_queue(self, entry: str) -> str:
        """Where a submission through ``entry`` must be admitted (SE-3, SE-4)."""
        if entry.startswith("actor:"):
            return f"spot:S/actor:{entry[6:]}"
        if entry.startswith("timer:") and not self.wide:
            return f"spot:S/timer:{entry[6:]}"
        return "spot:S"

    # ---------------------------------------------------------------- rules
    @precondition(lambda self: self.ready and len(self.app.jobs) < 60)
    @rule(batch=BATCHES)
    def submit(self, batch: list[tuple[str, str, int, int]]) -> None:
        """One to four ``execute_*`` calls, back to back."""
        for entry, kind, payload, ms in batch:
            self._submit_one(entry, kind, payload, ms)
        self.driver.idle()

    def _submit_one(self, entry: str, kind: str, payload: int, ms: int) -> None:
        if kind == "snapshot" and not entry.startswith("actor:"):
            kind = "yield"  # only an Actor work has a snapshot
        app = self.app
        job = app.new_job(entry, kind, payload if entry.startswith("actor:") else 0)
        work = app.work(job, ms)
        spot = self.spot
        mark = len(self.trace.events)
        closed = spot.closed
        try:
            if entry.startswith("actor:"):
                handle = spot.execute_actor(entry[6:], work, payload)
            elif entry.startswith("timer:"):
                handle = spot.execute_timer(entry[6:], work)
            elif entry == "lifecycle":
                handle = spot.execute_lifecycle(work)
            else:
                handle = spot.execute_spot(work)
        except ZLinkRejectedError as exc:
            if closed:
                assert isinstance(exc, ZLinkClosedError), f"closed Spot refused with {exc}"
            self._routed(entry, mark, admitted=False)
            return
        assert not closed, "NoWorkAcceptedAfterClose: a closed Spot accepted work (SE-6.2)"
        job.handle = handle
        handle.add_done_callback(lambda h: setattr(job, "settled", job.settled + 1))
        self._routed(entry, mark, admitted=True)
        if entry.startswith("actor:"):
            self.payloads[(entry[6:], handle.wid)] = payload
            fixed = self.policies["actor"].fixed_work_byte_cost
            assert handle.nbytes == payload + fixed, (
                f"PayloadReservedOnce: the Actor queue reserves {handle.nbytes} bytes for a "
                f"payload of {payload} (SE-5.3: payload + fixed cost {fixed})")

    def _routed(self, entry: str, mark: int, admitted: bool) -> None:
        """OneQueuePerOwner: the admission (or rejection) happened on the queue the
        wiring prescribes, and nowhere else."""
        events = [e for e in self.trace.events[mark:] if e.event in ("admit", "reject")]
        if not events and not admitted:
            return  # refused by the closed coordinator before reaching a queue
        want = self.expected_queue(entry)
        got = [(e.queue, e.event) for e in events]
        assert got == [(want, "admit" if admitted else "reject")], (
            f"OneQueuePerOwner: {entry} should {'admit' if admitted else 'reject'} on "
            f"{want}; the trace shows {got} (SE-2.2, SE-4)")

    @precondition(lambda self: self.ready)
    @rule(actor=st.sampled_from(ACTORS), version=st.integers(1, 9))
    def update_registration(self, actor: str, version: int) -> None:
        """An Actor's registration changes, in one lane turn (SE-7.2)."""
        self.spot.update_actor_registration(actor, version=version, name=f"{actor}{version}")
        self.driver.idle()

    @precondition(lambda self: self.ready)
    @rule(actor=st.sampled_from(ACTORS))
    def relocate(self, actor: str) -> None:
        """Take one Actor's never-started works out (SE-4.7); their handles report
        cancellation and every other queue is untouched."""
        mark = len(self.trace.events)
        taken = self.spot.take_actor_pending(actor)
        others = {e.queue for e in self.trace.events[mark:]} - {f"spot:S/actor:{actor}"}
        assert not others, f"relocating {actor} touched {others} (SE-4.7)"
        for p in taken:
            assert p.handle.cancelled(), "a relocated work's handle must report cancellation"
            for job in self.app.jobs:
                if job.handle is p.handle:
                    job.relocated = True
                    assert not job.started, "a relocated work had started"
                    assert p.payload_bytes == job.payload, "relocation lost the payload"
        self.driver.idle()

    @precondition(lambda self: self.ready and not self.spot.closed and len(self.app.jobs) > 3)
    @rule()
    def close(self) -> None:
        """The Spot is removed: nothing new is accepted, accepted work runs to its end."""
        self.spot.close()
        self.driver.idle()

    @precondition(lambda self: self.ready)
    @rule()
    def settle(self) -> None:
        """Answer every call and open every gate until nothing waits: every accepted work
        ends and every queue is quiescent."""
        for _ in range(60):
            if not self._release():
                break
            self.driver.idle()
        self.check_everything()
        unfinished = [(j.index, j.entry, j.kind) for j in self.app.jobs
                      if j.handle is not None and not j.handle.done()]
        assert not unfinished, f"AcceptedWorkCompletes: works {unfinished} never ended"
        for q in self.spot._made:
            core = q._core
            assert core.is_idle() and not core.draining and not core.drain_scheduled, (
                f"{q.name} is not quiescent")

    # ---------------------------------------------------------------- checks
    def _reservation(self, actor: str, rec: WorkRecord) -> int:
        payload = self.payloads.get((actor, rec.wid), 0)
        return payload + self.policies["actor"].fixed_work_byte_cost

    def check_everything(self) -> None:
        stats("coordinator").steps += 1
        new = self.trace.events[self.fed:]
        self.fed = len(self.trace.events)
        found: list[Violation] = self.checker.feed(new)
        disagreements = self.replayer.feed(new)
        cores = [q._core for q in self.spot._made]
        found += self.checker.check(cores)
        if self.wide:
            found += check_spot_wide(spot_wide_view(self.spot, self._reservation))
        fail_on(found, disagreements, f"coordinator ({self.wiring})")
        assert not self.driver.errors, f"the loop logged errors: {self.driver.errors}"
        assert not self.app.broken, "; ".join(self.app.broken)
        self._no_queue_choice()
        failed = 0
        for job in self.app.jobs:
            h = job.handle
            if h is None:
                continue
            assert job.settled <= 1, f"work {job.index} settled {job.settled} times (D-11)"
            failed += settled_as_traced(job.index, h, self.checker)
            if job.selfwait == "waited" or (job.selfwait == "waiting" and job.started):
                raise AssertionError(
                    f"NoSelfWait: work {job.index} ({job.entry}) waits for work of its own "
                    f"entry, or on its own Spot's quiescence or completion, instead of "
                    f"raising ZLinkReentrancyError (SE-8.2)")
        assert self.app.failures == failed, (
            f"{failed} work(s) failed, the error hook saw {self.app.failures} failure(s)")

    def _no_queue_choice(self) -> None:
        """NoQueueChoice (SE-3.1, SE-2.5): no public attribute of the coordinator is a
        queue."""
        spot = self.spot
        for name in dir(type(spot)):
            if name.startswith("_"):
                continue
            if isinstance(getattr(type(spot), name, None), property):
                value = getattr(spot, name)
                assert not isinstance(value, ZLinkSerialExecutionQueue), (
                    f"NoQueueChoice: {name} hands out a queue (SE-3.1)")
        for name, value in vars(spot).items():
            if not name.startswith("_"):
                assert not isinstance(value, ZLinkSerialExecutionQueue), (
                    f"NoQueueChoice: {name} hands out a queue (SE-3.1)")

    @invariant()
    def every_invariant_holds(self) -> None:
        """Queue invariants per queue, SpotWide invariants, replay, and what the
        application saw."""
        if self.ready:
            self.check_everything()

    def teardown(self) -> None:
        self.driver.close(self._release if self.ready else None)
        stats("coordinator").stopped()


CoordinatorMachine.TestCase.settings = machine_settings("coordinator")
TestCoordinatorMachine = CoordinatorMachine.TestCase
