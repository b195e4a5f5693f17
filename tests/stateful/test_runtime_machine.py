"""The runtime machine: Hypothesis drives the asyncio ``ZLinkSerialExecutionQueue``.

Rules submit works of every kind (synchronous, async, yielding on an external call,
raising, long-running on the virtual clock, holding the turn behind a gate, submitting
more work from inside their turn), from the loop thread and from other threads; answer
or fail external calls; open gates; move the virtual clock; close; and settle (answer
everything and let it finish). Each rule ends with the loop turning until idle.

After every rule:

* the trace recorded so far satisfies every queue invariant (over the trace, with the
  policy's limits and time budget) and the queue's core satisfies them too, in
  agreement with the trace (``zlink_model.invariants``);
* the trace replays through a fresh pure core, event by event (model agreement: the
  running code did only what the model allows, ``zlink_model.replay``);
* what the application sees agrees: one work runs at a time, a resumed work runs on its
  own turn, every handle settles once with the outcome the trace reports, every failure
  reaches the error hook once, the loop logged no error;
* ``statistics()`` (D-24: one view of one state) reports what the trace gives: the items
  waiting in every line (barrier-next, lifecycle, application), the turn, the suspended
  works, each lane's reservations, the drain flags and the closed flag; each field is
  computed from the events, never read from the queue.

The ``post`` rule submits handle-less works. On the traced queue they take ``enqueue``'s
path (the trace checks them like any work); the same works also go to an untraced twin
queue on the same loop and clock, where they take the plain lane (``admit_plain``,
``finish_plain``). The twin is checked against the rules directly: each answer is the
one ``admission_verdict`` gives, works run once each, one at a time on their turn, in
FIFO order, each failure reaches the error hook once, and the lane's counts are exactly
the works not yet ended.
"""

from __future__ import annotations

import asyncio
import dataclasses
import threading
import time
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from zlink_model.invariants import QueueChecker, Violation
from zlink_model.replay import QueueReplayer
from zlink_model.rules import admission_verdict
from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    current_work,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock

from machinery import (
    LoopDriver,
    OutsideWorld,
    WorkFailedError,
    fail_on,
    machine_settings,
    small_policies,
    stats,
)

KINDS = ("sync", "raise", "long", "spawn", "async", "gated", "yield", "yield_ready")
HOW = ("enqueue", "payload", "lifecycle", "barrier")


BATCHES = st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from(HOW),
                             st.sampled_from([0, 0, 1, 3]), st.integers(1, 5),
                             st.integers(1, 2), st.sampled_from(HOW)), min_size=1, max_size=4)


POSTS = st.lists(st.sampled_from(["sync", "raise", "async", "gated"]), min_size=1,
                 max_size=4)


@dataclasses.dataclass(eq=False)
class TwinJob:
    """One work posted to the untraced twin queue."""

    index: int
    kind: str
    gate: asyncio.Future[None] | None = None
    started: int = 0
    ended: bool = False
    reported: int = 0


@dataclasses.dataclass(eq=False)
class Job:
    """One submission, as the application sees it."""

    index: int
    kind: str
    handle: ZLinkWorkHandle[Any] | None = None
    gate: asyncio.Future[None] | None = None
    started: bool = False
    settled: int = 0  # done-callback calls
    reported: int = 0  # error-hook calls


class Application:
    """The works the machine submits, and what they observe while they run."""

    def __init__(self, queue: ZLinkSerialExecutionQueue, clock: VirtualClock,
                 loop: asyncio.AbstractEventLoop) -> None:
        self.queue = queue
        self.clock = clock
        self.loop = loop
        self.jobs: list[Job] = []
        self.externals: list[asyncio.Future[int]] = []
        self.broken: list[str] = []  # what the application saw go wrong
        self.running: Job | None = None  # the job whose code runs now
        self.loop_thread = threading.get_ident()  # the machine drives its loop here

    # what a work sees
    def _enter(self, job: Job, where: str) -> None:
        if self.running is not None and self.running is not job:
            self.broken.append(f"work {job.index} runs ({where}) while work "
                               f"{self.running.index} runs: two at once")
        holder = current_work()
        # (a submission from another thread learns its handle a moment after the loop
        # may have started the work)
        if holder is None or (job.handle is not None and holder is not job.handle):
            self.broken.append(f"work {job.index} runs ({where}) without holding its turn")
        self.running = job

    def _leave(self, job: Job) -> None:
        if self.running is job:
            self.running = None

    def work(self, job: Job, ms: int, yields: int, child: str) -> Any:
        kind = job.kind
        if kind in ("sync", "raise", "long", "spawn"):
            def run() -> int:
                job.started = True
                self._enter(job, "start")
                try:
                    if kind == "raise":
                        raise WorkFailedError(job.index)
                    if kind == "long":
                        self.clock.advance(ms)
                    if kind == "spawn":
                        self.submit(self.new_job("sync"), child, 0, 0, 0, "")
                    return job.index
                finally:
                    self._leave(job)
            return run

        async def run_async() -> int:
            job.started = True
            self._enter(job, "start")
            try:
                if kind == "async":
                    await asyncio.sleep(0)
                elif kind == "gated":
                    assert job.gate is not None
                    await job.gate
                elif kind == "yield_ready":
                    done: asyncio.Future[int] = self.loop.create_future()
                    done.set_result(1)
                    await yield_framework_call(done)  # done already: no yield
                else:
                    for _ in range(yields):
                        ext: asyncio.Future[int] = self.loop.create_future()
                        self.externals.append(ext)
                        self._leave(job)
                        try:
                            await yield_framework_call(ext)
                        finally:
                            self._enter(job, "resume")
                self._enter(job, "end")
                return job.index
            finally:
                self._leave(job)
        return run_async

    def new_job(self, kind: str) -> Job:
        job = Job(len(self.jobs), kind)
        if kind == "gated":
            job.gate = self.loop.create_future()
        self.jobs.append(job)
        return job

    def submit(self, job: Job, how: str, payload: int, ms: int, yields: int, child: str
               ) -> ZLinkRejectedError | None:
        """Submit one job the way ``how`` says; return the rejection, if any."""
        q = self.queue
        work = self.work(job, ms, yields, child)
        try:
            return self._submit(q, job, work, how, payload)
        finally:
            # SE-6.5 (OffSubmitterStack): the drain is posted, never run inside the call
            # that filled the queue. On the loop's own thread nothing else can start the
            # work before the call returns; another thread's submission may see the loop
            # start it meanwhile, which is allowed.
            if job.started and threading.get_ident() == self.loop_thread:
                self.broken.append(f"OffSubmitterStack (SE-6.5): work {job.index} started "
                                   f"inside the {how} call that submitted it")

    def _submit(self, q: ZLinkSerialExecutionQueue, job: Job, work: Any, how: str,
                payload: int) -> ZLinkRejectedError | None:
        try:
            if how == "payload":
                handle = q.enqueue_with_payload_bytes(work, payload)
            elif how == "lifecycle":
                handle = q.enqueue_lifecycle(work)
            elif how == "barrier":
                handle = q.enqueue_barrier_next(work)
            elif how == "post":
                q.post(work)  # a traced queue: enqueue's path, the handle dropped
                return None
            else:
                handle = q.enqueue(work)
        except ZLinkRejectedError as exc:
            return exc
        job.handle = handle

        def settled(h: ZLinkWorkHandle[Any]) -> None:
            job.settled += 1

        handle.add_done_callback(settled)
        return None

    def report(self, exc: BaseException, handle: ZLinkWorkHandle[Any]) -> None:
        for job in self.jobs:
            if job.handle is handle:
                job.reported += 1
                return
        if isinstance(exc, WorkFailedError) and handle.done() and exc.args \
                and isinstance(exc.args[0], int) and exc.args[0] < len(self.jobs) \
                and self.jobs[exc.args[0]].handle is None:
            self.jobs[exc.args[0]].reported += 1  # a posted work: its handle was dropped
            return
        self.broken.append(f"the error hook got {exc!r} for an unknown handle")


class RuntimeMachine(OutsideWorld, RuleBasedStateMachine):
    """One queue of the asyncio runtime, on a virtual clock, checked against the model."""

    def __init__(self) -> None:
        super().__init__()
        stats("runtime").started()
        self.driver = LoopDriver()
        self.ready = False

    @initialize(policy=small_policies(max_cap=4), first=BATCHES)
    def setup(self, policy: ZLinkExecutionLanePolicy,
              first: list[tuple[str, str, int, int, int, str]]) -> None:
        """The queue, and the first works submitted to it."""
        self.policy = policy
        self.clock = VirtualClock()
        self.trace = TraceRecorder()
        self.app: Application
        queue = ZLinkSerialExecutionQueue(
            policy, name="q", clock=self.clock, loop=self.driver.loop, observer=self.trace,
            error_hook=self._report)
        self.app = Application(queue, self.clock, self.driver.loop)
        self.queue = queue
        self.checker = QueueChecker("q", policy)
        self.replayer = QueueReplayer("q", policy)
        self.fed = 0
        # The untraced twin: posts take the plain lane there.
        self.twin = ZLinkSerialExecutionQueue(
            policy, name="p", clock=self.clock, loop=self.driver.loop,
            error_hook=self._twin_report)
        self.twin_jobs: list[TwinJob] = []
        self.twin_accepted: list[TwinJob] = []
        self.twin_order: list[int] = []
        self.twin_running: TwinJob | None = None
        self.twin_broken: list[str] = []
        self.ready = True
        self.submit(first)

    def _report(self, exc: BaseException, handle: ZLinkWorkHandle[Any]) -> None:
        self.app.report(exc, handle)

    @property
    def core(self) -> Any:
        return self.queue._core

    # ------------------------------------------------------------- the twin
    def _twin_report(self, exc: BaseException, handle: ZLinkWorkHandle[Any]) -> None:
        if not (isinstance(exc, WorkFailedError) and handle.outcome() == "failed"):
            self.twin_broken.append(f"the twin's hook got {exc!r} for {handle!r}")
            return
        self.twin_jobs[exc.args[0]].reported += 1

    def _twin_enter(self, job: TwinJob) -> None:
        if self.twin_running is not None:
            self.twin_broken.append(f"posted work {job.index} runs while "
                                    f"{self.twin_running.index} runs")
        if not self.twin.is_current():
            self.twin_broken.append(f"posted work {job.index} runs without its turn")
        job.started += 1
        self.twin_order.append(job.index)
        self.twin_running = job

    def _twin_leave(self, job: TwinJob) -> None:
        job.ended = True
        if self.twin_running is job:
            self.twin_running = None

    def _twin_work(self, job: TwinJob) -> Any:
        if job.kind in ("sync", "raise"):
            def run() -> None:
                self._twin_enter(job)
                self._twin_leave(job)
                if job.kind == "raise":
                    raise WorkFailedError(job.index)
            return run

        async def run_async() -> None:
            self._twin_enter(job)
            if job.gate is not None:
                self.twin_running = None  # it waits; nothing else may run meanwhile
                await job.gate
                self.twin_running = job
            else:
                await asyncio.sleep(0)
            self._twin_leave(job)
        return run_async

    def _release(self) -> bool:
        gates = [j.gate for j in self.twin_jobs
                 if j.gate is not None and not j.gate.done()]
        for gate in gates:
            gate.set_result(None)
        return super()._release() or bool(gates)

    def check_twin(self) -> None:
        assert not self.twin_broken, "; ".join(self.twin_broken)
        accepted = [j.index for j in self.twin_accepted]
        assert self.twin_order == accepted[:len(self.twin_order)], (
            f"FifoWithinLane: posted works ran as {self.twin_order}, accepted {accepted}")
        for job in self.twin_jobs:
            assert job.started <= 1, f"posted work {job.index} ran {job.started} times"
            want = 1 if job.kind == "raise" and job.started else 0
            assert job.reported == want, (
                f"posted work {job.index} ({job.kind}) reached the hook {job.reported} times")
        core = self.twin._core
        live = sum(1 for j in self.twin_accepted if not j.ended)
        assert (core.app_count, core.app_bytes, core.life_count) == (
            live, live * core.config.fixed_reservation, 0), (
            f"ReservationsBalanced: the twin counts {core.app_count} works, "
            f"{core.app_bytes} bytes; {live} posted works have not ended")

    def _verdict(self, how: str, payload: int) -> Any:
        core = self.core
        policy = self.policy
        life = how == "lifecycle"
        count, used = core.reserved_of(1 if life else 0)
        nbytes = (payload if how == "payload" else 0) + policy.fixed_work_byte_cost
        return admission_verdict(
            core.closed, life, count, used, nbytes,
            policy.lifecycle_message_capacity if life else policy.application_message_capacity,
            policy.lifecycle_byte_capacity if life else policy.application_byte_capacity)

    # ---------------------------------------------------------------- rules
    @precondition(lambda self: self.ready and len(self.app.jobs) < 60)
    @rule(batch=BATCHES)
    def submit(self, batch: list[tuple[str, str, int, int, int, str]]) -> None:
        """Admit or Reject one to four works, back to back (they arrive together, before
        the posted drain runs), each of its kind, through its entry."""
        for kind, how, payload, ms, yields, child in batch:
            expected = self._verdict(how, payload)
            job = self.app.new_job(kind)
            rejected = self.app.submit(job, how, payload, ms, yields, child)
            if expected is None:
                assert rejected is None, f"{how}: rejected ({rejected}) although the rule " \
                    "admits"
            else:
                assert rejected is not None and rejected.reason is expected, (
                    f"{how}: {'admitted' if rejected is None else rejected.reason} although "
                    f"the rule says {expected}")
        self.driver.idle()

    @precondition(lambda self: self.ready and not self.queue.closed and len(self.app.jobs) > 2)
    @rule()
    def close(self) -> None:
        """Close: no new work; accepted work still finishes (SE-6.2)."""
        self.queue.close()
        self.driver.idle()

    @precondition(lambda self: self.ready and len(self.twin_jobs) < 40)
    @rule(kinds=POSTS)
    def post(self, kinds: list[str]) -> None:
        """Post one to four works without handles: to the traced queue (enqueue's path,
        checked by the trace) and to the untraced twin (the plain lane, checked here:
        each answer is the rule's, admit_plain agrees with admission_verdict)."""
        if self.queue.closed and not self.twin.closed:
            self.twin.close()
        policy = self.policy
        for kind in kinds:
            expected = self._verdict("enqueue", 0)
            job = self.app.new_job("async" if kind == "gated" else kind)
            rejected = self.app.submit(job, "post", 0, 0, 0, "")
            assert (rejected is None) == (expected is None), (
                f"post: {rejected} on the traced queue, the rule says {expected}")
            twin = TwinJob(len(self.twin_jobs), kind)
            if kind == "gated":
                twin.gate = self.driver.loop.create_future()
            self.twin_jobs.append(twin)
            core = self.twin._core
            count, used = core.reserved_of(0)
            want = admission_verdict(
                core.closed, False, count, used, core.config.fixed_reservation,
                policy.application_message_capacity, policy.application_byte_capacity)
            try:
                self.twin.post(self._twin_work(twin))
            except ZLinkRejectedError as exc:
                assert want is not None and exc.reason is want, (
                    f"post to the twin: rejected ({exc.reason}), the rule says {want}")
            else:
                assert want is None, f"post to the twin: admitted, the rule says {want}"
                self.twin_accepted.append(twin)
        self.driver.idle()

    @precondition(lambda self: self.ready)
    @rule(n=st.integers(2, 3), lifecycle=st.booleans())
    def submit_from_threads(self, n: int, lifecycle: bool) -> None:
        """Several threads submit at once while the loop is busy elsewhere; each waits
        for the loop thread's verdict, which must be atomic (SE-6.3, D-7)."""
        app = self.app
        jobs = [app.new_job("sync") for _ in range(n)]
        loop = self.driver.loop
        ready_before = len(getattr(loop, "_ready", ()))
        results: list[Any] = [None] * n

        def submit(i: int) -> None:
            results[i] = app.submit(jobs[i], "lifecycle" if lifecycle else "enqueue", 0, 0,
                                    0, "")

        threads = [threading.Thread(target=submit, args=(i,)) for i in range(n)]
        for t in threads:
            t.start()
        # Wait until every thread has handed its submission to the loop (it then waits
        # for the verdict): the loop has not run, so they all judged the same state
        # if they judged anything off the loop.
        deadline = time.monotonic() + 10
        while len(getattr(loop, "_ready", ())) < ready_before + n:
            assert time.monotonic() < deadline, "submissions from threads never arrived"
            time.sleep(0.0002)
        self.driver.idle()
        for t in threads:
            t.join(10)
            assert not t.is_alive(), "a submitting thread never got its verdict"

    @precondition(lambda self: self.ready)
    @rule()
    def settle(self) -> None:
        """Answer every external call and open every gate until nothing waits; then every
        accepted work has ended and the queue is quiescent (the models'
        AcceptedWorkCompletes, bounded)."""
        for _ in range(50):
            if not self._release():
                break
            self.driver.idle()
        self.check_everything()
        unfinished = [j.index for j in self.app.jobs if j.handle and not j.handle.done()]
        assert not unfinished, f"AcceptedWorkCompletes: works {unfinished} never ended"
        core = self.core
        assert core.is_idle() and not core.has_ready(), "the queue is not quiescent"
        assert not core.draining and not core.drain_scheduled, "a drain outlived the work"
        twin = self.twin._core
        assert all(j.ended for j in self.twin_accepted), "AcceptedWorkCompletes: a post"
        assert twin.is_idle() and not twin.has_ready() and not twin.draining \
            and not twin.drain_scheduled, "the twin is not quiescent"

    # ---------------------------------------------------------------- checks
    def check_everything(self) -> None:
        stats("runtime").steps += 1
        found: list[Violation] = []
        disagreements = []
        for ev in self.trace.events[self.fed:]:
            found += self.checker.feed(ev)
            d = self.replayer.feed(ev)
            if d is not None and d not in disagreements:
                disagreements.append(d)
        self.fed = len(self.trace.events)
        found += self.checker.check(self.core)
        fail_on(found, disagreements, "runtime")
        assert not self.driver.errors, f"the loop logged errors: {self.driver.errors}"
        assert not self.app.broken, "; ".join(self.app.broken)
        self.check_twin()
        self.check_statistics()
        image = self.checker.image
        for job in self.app.jobs:
            h = job.handle
            if h is None:
                continue
            assert job.settled <= 1, f"work {job.index} settled {job.settled} times (D-11)"
            w = image.works.get(h.wid)
            assert w is not None, f"work {job.index} was accepted without an admit event"
            ended = w.phase == "done"
            if h.done() != ended:
                raise AssertionError(
                    f"EveryAcceptedWorkEndsOnce: work {job.index} (id {h.wid}) "
                    f"{'settled' if h.done() else 'is pending'} but the trace has it {w.phase}")
            if ended:
                assert h.outcome() == w.outcome, (
                    f"work {job.index} settled {h.outcome()}, the trace says {w.outcome}")
                want = 1 if w.outcome == "failed" else 0
                assert job.reported == want, (
                    f"work {job.index} ({w.outcome}) reached the error hook {job.reported} "
                    f"time(s)")

    def check_statistics(self) -> None:
        """D-24: ``statistics()`` is one view of the queue's state. Each field is held to
        the figure the trace image gives after the same events (the lines, the turn, the
        suspended works, each lane's count and bytes, the drain flags, closed), so a view
        that leaves a line out or counts a lane wrong is caught instead of believed."""
        image = self.checker.image
        view = self.queue.statistics()
        derived: dict[str, object] = {
            "ready": sum(len(line) for line in image.lines.values()),
            "running": image.current is not None,
            "suspended": sum(1 for w in image.live() if w.phase == "suspended"),
            "application_count": image.count["application"],
            "application_bytes": image.bytes["application"],
            "lifecycle_count": image.count["lifecycle"],
            "lifecycle_bytes": image.bytes["lifecycle"],
            "draining": image.draining,
            "drain_scheduled": image.scheduled,
            "closed": image.closed,
        }
        wrong = [f"{field} is {getattr(view, field)!r}, the trace gives {want!r}"
                 for field, want in derived.items() if getattr(view, field) != want]
        if wrong:
            raise AssertionError(
                "D-24: statistics() is not the queue's state as the trace has it "
                f"(lines {image.lines}): " + "; ".join(wrong))

    @invariant()
    def every_invariant_holds(self) -> None:
        """Trace invariants, core invariants, agreement, model replay, what the
        application saw, and the statistics view."""
        if self.ready:
            self.check_everything()

    def teardown(self) -> None:
        self.driver.close(self._release if self.ready else None)
        stats("runtime").stopped()


RuntimeMachine.TestCase.settings = machine_settings("runtime")
TestRuntimeMachine = RuntimeMachine.TestCase
