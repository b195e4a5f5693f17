"""The disposal machine: Hypothesis shuts scopes down at random moments (SD-1 .. SD-3).

The scope is a standalone queue, a PerActor or SpotWide Spot, an Actor executor or a
Session executor. Rules submit works (finishing at once, failing, running long, holding
their turn behind a gate, yielding on an external call; a session's final work), answer
or fail external calls, open gates, move the clock (which may fire a disposal timeout),
call ``dispose``, ``dispose_safely`` or ``dispose_after_timeout`` at any moment, start
``await_completion`` and ``await_after_cancellation`` waiters, and settle everything.

The machine keeps the model's view of the scope (``models/Disposal.tla``): which works
are live, which are zombies (live when the scope was disposed safely), which had their
cancellation made pending and whether they had started, and the scope's mode. Every
one of these it derives from the calls it made and the clock it drives, never from the
runtime's trace: in particular the disposal timer. ``dispose_after_timeout(ms)`` at
clock reading ``t`` must cancel what is left once the clock reaches ``t + ms`` (at once
for ``ms = 0``), unless every work it counts ended first (D-18), and after
``dispose_safely`` it bounds the zombies the same way (D-27); the scope's clock tells
the machine each time it moves, so the machine knows the moment the timer is due
without asking the runtime whether it fired. After every rule:

* every queue of the scope satisfies the queue and disposal invariants over its trace
  and its core, and replays through the model;
* ``AwaitCompletionIgnoresZombies``: ``active_count()`` is the number of live works
  that are not zombies, and a pending ``await_completion`` has returned once that is 0;
* ``ZombiesCounted``: ``zombie_count()`` is the number of live zombies;
* ``AwaitAfterCancellationWaitsForZombies``: the wait is refused on a scope never
  disposed, and returns exactly when nothing (zombies included) is live;
* ``NoWorkAcceptedAfterClose``: after any disposal every submission is refused;
* ``ExpireTimeout`` (SD-1, D-27): every queue of the scope is in the mode the model
  derived (open, safely, timeout, cancelled), on scopes of one queue and of many (a
  PerActor or SpotWide Spot with Actor, timer and Spot queues): a timer that fires
  late, early, not at all, or on only some of the scope's queues is caught;
* ``CancellationOnOwnTurn``: a cancelled work meets its cancellation on its own turn,
  a work that had not started when its cancellation was made pending never starts, and
  a work ends ``cancelled`` only if a disposal (``dispose``, or the timer of
  ``dispose_after_timeout``) made its cancellation pending first (SD-1, D-8);
* ``EveryAcceptedWorkEndsOnce``: every handle settles once, as its trace says; after
  ``settle`` every accepted work has ended and every reservation is back to zero.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import Any

from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from zlink_model.invariants import TraceChecker, Violation
from zlink_model.queue import MODE_NAMES
from zlink_model.replay import TraceReplayer
from zlink_reference import (
    ZLinkActorSerialExecutor,
    ZLinkClosedError,
    ZLinkExecutionLanePolicy,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
    current_work,
    yield_framework_call,
)
from zlink_reference.disposal import ZLinkNotDisposedError
from zlink_reference.testing import TraceRecorder, VirtualClock

from machinery import (
    LoopDriver,
    fail_on,
    machine_settings,
    settled_as_traced,
    small_policies,
    stats,
)

SCOPES = ("queue", "per_actor", "spot_wide", "actor", "session")
KINDS = ("sync", "fail", "long", "gated", "yield", "yield")
ENTRIES: dict[str, tuple[str, ...]] = {
    "queue": ("enqueue", "lifecycle", "payload"),
    "per_actor": ("actor:A", "actor:B", "spot", "timer"),
    "spot_wide": ("actor:A", "actor:B", "spot", "timer"),
    "actor": ("actor", "lifecycle"),
    "session": ("application", "control", "infrastructure", "final"),
}


BATCHES = st.lists(st.tuples(st.sampled_from(KINDS), st.sampled_from([0, 0, 1, 3]),
                             st.integers(1, 5)), min_size=1, max_size=3)


class WorkFailedError(Exception):
    """What a failing work raises."""


class WatchedClock(VirtualClock):
    """The scope's virtual clock, telling the machine each reading it moves to, before
    the runtime's timers that came due are posted: the machine judges from the readings
    and the timeout it gave whether the disposal timer must fire, instead of learning
    it from the runtime's ``expire_timeout`` event (checks derive, never copy)."""

    def __init__(self, moved: Callable[[int], None]) -> None:
        super().__init__()
        self._moved = moved

    def advance(self, ms: int) -> None:
        if isinstance(ms, int) and not isinstance(ms, bool) and ms >= 0:
            self._moved(self.now() + ms)
        super().advance(ms)


@dataclasses.dataclass(eq=False)
class Job:
    index: int
    entry: str
    kind: str
    handle: ZLinkWorkHandle[Any] | None = None
    gate: asyncio.Future[None] | None = None
    started: bool = False
    settled: int = 0
    zombie: bool = False
    cancel_pending: bool = False
    started_at_cancel: bool = False


@dataclasses.dataclass(eq=False)
class Waiter:
    kind: str  # "completion" or "after_cancellation"
    task: asyncio.Task[None]
    mode_at_call: str
    jobs_at_call: int  # the works accepted before the wait began
    seen_done: bool = False


def _placed(handle: ZLinkWorkHandle[Any] | None) -> bool:
    """The handle's work is in a queue (a session's final work is accepted first and
    placed later, D-12); its fields are set from then on."""
    return handle is not None and getattr(handle, "wid", -1) >= 0


class DisposalMachine(RuleBasedStateMachine):
    """One scope, shut down at random moments, against the disposal model."""

    def __init__(self) -> None:
        super().__init__()
        stats("disposal").started()
        self.driver = LoopDriver()
        self.ready = False

    @initialize(scope=st.sampled_from(SCOPES), policy=small_policies(max_cap=6, roomy=True),
                data=st.data(), first=BATCHES)
    def setup(self, scope: str, policy: ZLinkExecutionLanePolicy, data: st.DataObject,
              first: list[tuple[str, int, int]]) -> None:
        """The scope, and the first works submitted to it (a scope being shut down has
        something in it)."""
        self.kind = scope
        self.policy = policy
        self.clock = WatchedClock(self._clock_moved)
        self.trace = TraceRecorder()
        self.jobs: list[Job] = []
        self.externals: list[asyncio.Future[int]] = []
        self.broken: list[str] = []
        self.waiters: list[Waiter] = []
        self.mode = "open"  # the model's scope mode
        # The disposal timer as the model has it: the reading it is due at, the finals
        # not yet placed when it started (D-12: one is placed once everything before it
        # ended, so its placement means the timer was stopped first), and what started it.
        self.timer_due: int | None = None
        self.timer_finals: list[Job] = []
        self.timer_note = ""
        self.failures = 0
        kw: dict[str, Any] = {"clock": self.clock, "loop": self.driver.loop,
                              "observer": self.trace, "error_hook": self._hook}
        if scope == "queue":
            self.scope: Any = ZLinkSerialExecutionQueue(policy, name="q", **kw)
        elif scope in ("per_actor", "spot_wide"):
            self.scope = ZLinkSpotSerialExecutor(
                "S", mode=ZLinkUserSpotExecutionMode(scope), policy=policy,
                actor_policy=policy, timer_policy=policy, **kw)
        elif scope == "actor":
            self.scope = ZLinkActorSerialExecutor("A", policy=policy, **kw)
        else:
            self.scope = ZLinkSessionSerialExecutor("s", policy=policy, **kw)
        self.checker = TraceChecker(policy)
        self.replayer = TraceReplayer(policy)
        self.fed = 0
        self.ready = True
        self.submit(data, first)

    def _hook(self, exc: BaseException, handle: Any) -> None:
        self.failures += 1

    # ------------------------------------------------------------ the works
    def _work(self, job: Job, ms: int) -> Callable[[], Any]:
        kind = job.kind
        if kind in ("sync", "fail", "long"):
            def run() -> None:
                job.started = True
                if kind == "fail":
                    raise WorkFailedError(job.index)
                if kind == "long":
                    self.clock.advance(ms)
            return run

        async def run_async() -> None:
            job.started = True
            try:
                if kind == "gated":
                    assert job.gate is not None
                    await job.gate
                else:
                    ext: asyncio.Future[int] = self.driver.loop.create_future()
                    self.externals.append(ext)
                    await yield_framework_call(ext)
            except asyncio.CancelledError:
                if current_work() is None:
                    self.broken.append(f"CancellationOnOwnTurn: work {job.index} is "
                                       f"cancelled off its turn (D-8)")
                raise
        return run_async

    def _submit(self, entry: str, work: Callable[[], Any], payload: int
                ) -> ZLinkWorkHandle[Any]:
        s = self.scope
        if self.kind == "queue":
            if entry == "lifecycle":
                return s.enqueue_lifecycle(work)  # type: ignore[no-any-return]
            return s.enqueue_with_payload_bytes(  # type: ignore[no-any-return]
                work, payload if entry == "payload" else 0)
        if self.kind in ("per_actor", "spot_wide"):
            if entry.startswith("actor:"):
                return s.execute_actor(entry[6:], work, payload)  # type: ignore[no-any-return]
            if entry == "timer":
                return s.execute_timer("t", work)  # type: ignore[no-any-return]
            return s.execute_spot(work)  # type: ignore[no-any-return]
        if self.kind == "actor":
            if entry == "lifecycle":
                return s.execute_lifecycle(work)  # type: ignore[no-any-return]
            return s.execute_actor(work, payload)  # type: ignore[no-any-return]
        if entry == "control":
            return s.execute_control(work)  # type: ignore[no-any-return]
        if entry == "infrastructure":
            return s.execute_infrastructure(work)  # type: ignore[no-any-return]
        if entry == "final":
            return s.execute_final(work)  # type: ignore[no-any-return]
        return s.execute_application(work, payload)  # type: ignore[no-any-return]

    # ---------------------------------------------------------------- rules
    @precondition(lambda self: self.ready and len(self.jobs) < 40)
    @rule(data=st.data(), batch=BATCHES)
    def submit(self, data: st.DataObject, batch: list[tuple[str, int, int]]) -> None:
        """One to three submissions, each through one of the scope's entries."""
        for kind, payload, ms in batch:
            entry = data.draw(st.sampled_from(ENTRIES[self.kind]), label="entry")
            self._submit_one(entry, kind, payload, ms)
        self.driver.idle()

    def _submit_one(self, entry: str, kind: str, payload: int, ms: int) -> None:
        job = Job(len(self.jobs), entry, kind)
        if kind == "gated":
            job.gate = self.driver.loop.create_future()
        work = self._work(job, ms)
        disposed = self.mode != "open"
        try:
            handle = self._submit(entry, work, payload)
        except ZLinkRejectedError as exc:
            if disposed:
                assert isinstance(exc, ZLinkClosedError), f"refused with {exc!r}"
            return
        assert not disposed, ("NoWorkAcceptedAfterClose: a disposed scope accepted work "
                              "(SD-1)")
        job.handle = handle
        handle.add_done_callback(lambda h: setattr(job, "settled", job.settled + 1))
        self.jobs.append(job)

    def _pending_externals(self) -> list[asyncio.Future[int]]:
        return [f for f in self.externals if not f.done()]

    @precondition(lambda self: self.ready and bool(self._pending_externals()))
    @rule(data=st.data(), fail=st.booleans())
    def complete_external(self, data: st.DataObject, fail: bool) -> None:
        """An external call answers or fails."""
        fut = data.draw(st.sampled_from(self._pending_externals()), label="call")
        if fail:
            fut.set_exception(WorkFailedError("external call failed"))
        else:
            fut.set_result(7)
        self.driver.idle()

    def _closed_gates(self) -> list[Job]:
        return [j for j in self.jobs if j.gate is not None and not j.gate.done()]

    @precondition(lambda self: self.ready and bool(self._closed_gates()))
    @rule(data=st.data())
    def open_gate(self, data: st.DataObject) -> None:
        """A work holding its turn on a plain await goes on."""
        job = data.draw(st.sampled_from(self._closed_gates()), label="gate")
        assert job.gate is not None
        job.gate.set_result(None)
        self.driver.idle()

    @precondition(lambda self: self.ready)
    @rule(ms=st.integers(1, 4))
    def advance_clock(self, ms: int) -> None:
        """Time passes; a disposal timeout may expire (ExpireTimeout)."""
        self.driver.call(lambda: self.clock.advance(ms))

    def _live(self) -> list[Job]:
        return [j for j in self.jobs if j.handle is not None and not j.handle.done()]

    def _cancel_all(self) -> None:
        for job in self._live():
            if not job.cancel_pending:
                job.cancel_pending = True
                job.started_at_cancel = job.started

    @precondition(lambda self: self.ready and len(self.jobs) > 0)
    @rule(data=st.data())
    def shut_down(self, data: st.DataObject) -> None:
        """One disposal call (SD-1) at this moment: dispose, dispose_safely or
        dispose_after_timeout(ms)."""
        how = data.draw(st.sampled_from(["dispose", "dispose_safely", "timeout"]),
                        label="how")
        if data.draw(st.booleans(), label="someone awaits completion first"):
            self.start_waiter(after_cancellation=False)
        s = self.scope
        if how == "dispose":
            self._cancel_all()
            self.timer_due = None  # dispose stops the disposal timer
            self.driver.call(s.dispose)
            self.mode = "cancelled"
        elif how == "dispose_safely":
            if self.mode == "open":
                for job in self._live():
                    job.zombie = True
                self.mode = "safely"
            self.driver.call(s.dispose_safely)
        else:
            ms = data.draw(st.integers(0, 4), label="ms")

            def call() -> None:
                self._start_timeout(ms)
                s.dispose_after_timeout(ms)

            self.driver.call(call)

    # ------------------------------------------------------ the disposal timer
    def _counted(self) -> list[Job]:
        """The live works the runtime counts: those placed in a queue."""
        return [j for j in self._live() if _placed(j.handle)]

    def _timer_stopped(self) -> bool:
        """The runtime stops the disposal timer once every work it counts has ended
        (D-18); ends are final after a disposal, so nothing counted now means the timer
        was stopped, and so does the placement of a final that waited when it started."""
        return not self._counted() or any(
            _placed(j.handle) or (j.handle is not None and j.handle.done())
            for j in self.timer_finals)

    def _start_timeout(self, ms: int) -> None:
        """``dispose_after_timeout(ms)`` in the model, just before the runtime's call: an
        open scope enters the timeout mode; unless a timer already runs, one is due at
        ``now + ms`` when the scope is in the timeout mode or was disposed safely (D-27:
        the bound then applies to the zombies) and has counted work left (SD-1). A
        cancelled scope has nothing left to bound."""
        if self.mode == "open":
            self.mode = "timeout"
        if self.timer_due is not None and self._timer_stopped():
            self.timer_due = None
        if self.timer_due is None and self.mode in ("timeout", "safely") and self._counted():
            now = self.clock.now()
            self.timer_due = now + ms
            self.timer_finals = [j for j in self._live() if not _placed(j.handle)]
            self.timer_note = (f"dispose_after_timeout({ms}) at {now} ms on a scope "
                               f"{self.mode}, due at {self.timer_due} ms")
            self._clock_moved(now)

    def _clock_moved(self, now: int) -> None:
        """The clock moves to ``now``: a timer due by then that was not stopped fires.
        The runtime posts its timer callback to the loop; the model's own step is
        posted just before it, so it sees the works as the runtime's callback will."""
        due = self.timer_due
        if due is None or now < due:
            return
        self.timer_due = None
        if self._timer_stopped():
            return
        note = f"{self.timer_note}; the clock reached {now} ms with work live"
        self.driver.loop.call_soon(self._timer_fires, note)

    def _timer_fires(self, note: str) -> None:
        """The timer is up: as dispose, every live work has its cancellation made
        pending and the scope is cancelled (SD-1; D-27 for a scope disposed safely)."""
        self._cancel_all()
        self.mode = "cancelled"
        self.timer_note = note

    @precondition(lambda self: self.ready and len(self.waiters) < 6)
    @rule(after_cancellation=st.booleans())
    def start_waiter(self, after_cancellation: bool) -> None:
        """Someone starts ``await_completion`` or ``await_after_cancellation``."""
        s = self.scope
        if after_cancellation:
            coro = s.await_after_cancellation(lambda exc, scope: None)
            kind = "after_cancellation"
        else:
            coro = s.await_completion()
            kind = "completion"
        task = self.driver.loop.create_task(coro)
        self.waiters.append(Waiter(kind, task, self.mode, len(self.jobs)))
        self.driver.idle()

    @precondition(lambda self: self.ready)
    @rule()
    def settle(self) -> None:
        """Answer every call and open every gate until nothing waits: every accepted work
        ends once and every reservation is back to zero (D-11)."""
        for _ in range(60):
            if not self._release():
                break
            self.driver.idle()
        self.check_everything()
        unfinished = [(j.index, j.entry, j.kind) for j in self.jobs
                      if j.handle is not None and not j.handle.done()]
        assert not unfinished, f"AcceptedWorkCompletes: works {unfinished} never ended"
        for q in self.scope._scope_queues():
            core = q._core
            assert core.live() == 0 and core.app_bytes == 0 and core.life_bytes == 0, (
                f"{q.name}: reservations left after every work ended")
            assert core.zombies == 0, f"{q.name}: zombies counted after they ended"

    # ---------------------------------------------------------------- checks
    def check_everything(self) -> None:
        stats("disposal").steps += 1
        new = self.trace.events[self.fed:]
        self.fed = len(self.trace.events)
        found: list[Violation] = self.checker.feed(new)
        disagreements = self.replayer.feed(new)
        queues = self.scope._scope_queues()
        found += self.checker.check(q._core for q in queues)
        fail_on(found, disagreements, f"disposal ({self.kind})")
        for q in queues:
            got = MODE_NAMES[q._core.mode]
            if got != self.mode:
                raise AssertionError(
                    f"ExpireTimeout (SD-1, D-27): queue {q.name} of the {self.kind} scope is "
                    f"{got}, the model derives {self.mode} from the disposal calls and the "
                    f"clock ({self.timer_note or 'no disposal timer started'})")
        assert not self.driver.errors, f"the loop logged errors: {self.driver.errors}"
        assert not self.broken, "; ".join(self.broken)
        # A session's final work counts from its acceptance, placed or not (D-22).
        live = self._live()
        active = sum(1 for j in live if not j.zombie)
        zombies = sum(1 for j in live if j.zombie)
        s = self.scope
        assert s.active_count() == active, (
            f"AwaitCompletionIgnoresZombies: active_count() is {s.active_count()}, the "
            f"live works that are not zombies are {active} (SD-2)")
        assert s.zombie_count() == zombies, (
            f"ZombiesCounted: zombie_count() is {s.zombie_count()}, live zombies {zombies}")
        failed = 0
        for job in self.jobs:
            h = job.handle
            assert h is not None
            assert job.settled <= 1, f"work {job.index} settled {job.settled} times (D-11)"
            if job.cancel_pending and not job.started_at_cancel and job.started:
                raise AssertionError(
                    f"CancellationOnOwnTurn: work {job.index} had not started when its "
                    f"scope cancelled it, and started anyway (SD-1)")
            if h.done() and h.outcome() == "cancelled" and not job.cancel_pending:
                raise AssertionError(
                    f"CancellationOnOwnTurn (SD-1, D-8): work {job.index} ({job.entry}, "
                    f"{job.kind}) ended cancelled, but no disposal made its cancellation "
                    f"pending (the scope is {self.mode}: dispose_safely cancels nothing, "
                    f"dispose_after_timeout only once its timer is up)")
            if not _placed(h):
                # A final work that never reached its queue (cancelled while held,
                # D-22) has no trace; it must have ended cancelled, never started.
                if h.done():
                    assert h.cancelled() and not job.started, (
                        f"D-22: the held final work {job.index} ended "
                        f"{h.outcome()} without being placed")
                continue
            failed += settled_as_traced(job.index, h, self.checker)
        assert self.failures == failed, (
            f"{failed} work(s) failed, the error hook saw {self.failures}")
        everything_ended = not self._live()
        for waiter in self.waiters:
            t = waiter.task
            if t.done() and not waiter.seen_done:
                waiter.seen_done = True
                # A work, once not active (ended or a zombie), never is again: a wait
                # that has returned saw every work accepted before it not active.
                if waiter.kind == "completion" and t.exception() is None:
                    early = [j.index for j in self.jobs[:waiter.jobs_at_call]
                             if j.handle is not None and not j.handle.done()
                             and not j.zombie]
                    assert not early, (
                        f"AwaitCompletionIgnoresZombies: await_completion returned while "
                        f"works {early}, accepted before it began, were active (SD-3, D-22)")
            if waiter.kind == "completion":
                if active == 0 and not t.done():
                    raise AssertionError("AwaitCompletionIgnoresZombies: await_completion "
                                         "still waits with no active work left (SD-3)")
                continue
            if waiter.mode_at_call == "open":
                assert t.done() and isinstance(t.exception(), ZLinkNotDisposedError), (
                    "await_after_cancellation on a scope never disposed must raise "
                    "ZLinkNotDisposedError at once (SD-3)")
                continue
            if t.done() and not everything_ended:
                raise AssertionError("AwaitAfterCancellationWaitsForZombies: returned "
                                     "while work is live")
            if everything_ended and not t.done():
                raise AssertionError("AwaitAfterCancellationWaitsForZombies: still waits "
                                     "with nothing live")
            if t.done():
                assert t.exception() is None, f"await_after_cancellation: {t.exception()!r}"

    @invariant()
    def every_invariant_holds(self) -> None:
        """Queue and disposal invariants, the model's counts, the waits."""
        if self.ready:
            self.check_everything()

    def _release(self) -> bool:
        """Answer every pending external call and open every gate; False if none."""
        pending = self._pending_externals()
        gates = self._closed_gates()
        for fut in pending:
            fut.set_result(7)
        for job in gates:
            assert job.gate is not None
            job.gate.set_result(None)
        return bool(pending or gates)

    def teardown(self) -> None:
        self.driver.close(self._release if self.ready else None)
        stats("disposal").stopped()


DisposalMachine.TestCase.settings = machine_settings("disposal")
TestDisposalMachine = DisposalMachine.TestCase
