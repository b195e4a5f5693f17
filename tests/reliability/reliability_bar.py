"""The reliability bar: every accepted work ends exactly once, and every reservation
returns to zero, under faults (issue 15; D-11, SE-5.2, SE-6.3, SD-1).

Each scenario drives the public surface of the reference runtime (queues and
coordinators, their ``execute*``/``enqueue*`` entries, ``close`` and the three disposal
modes) and keeps its own books, independently of the runtime's:

- every submission is counted: accepted (a handle came back) or rejected, and a
  rejection must be typed (``ZLinkRejectedError`` with its reason, or
  ``ZLinkClosedError``); any other exception from an entry is a violation;
- every handle is watched with a done callback: it must fire exactly once, and the
  handle's outcome (completed, failed, cancelled) is counted;
- every core transition is watched through the observer: each ``admit``/``transfer``
  of a work in a queue must be followed by exactly one ``finish`` or ``cancel`` of
  that work in that queue (a second end, or an end of a work never admitted, is a
  violation; an admission never ended is a lost work);
- at the end, every queue's reserved counts and bytes must be zero.

Why books of its own: the runtime's counters are what a bug would corrupt, so the bar
must not read its verdict from them (only the final reservations, which must be zero
whatever the books say).

Run it as a script to see the counts (``--deep`` for the large sizes, ``--mutant NAME``
to run it against a mutant of the catalogue, which must make it fail)::

    .venv/bin/python tests/reliability/reliability_bar.py [--deep] [--mutant NAME]

``tests/reliability/test_reliability_bar.py`` runs the CI sizes and prints the same
table in pytest's terminal summary.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import itertools
import random
import sys
import threading
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any

from zlink_reference import (
    QueueStatistics,
    ZLinkClosedError,
    ZLinkExecutionLanePolicy,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
    yield_framework_call,
)
from zlink_reference.testing import VirtualClock, run_until_idle

PER_ACTOR = ZLinkUserSpotExecutionMode.PER_ACTOR
SPOT_WIDE = ZLinkUserSpotExecutionMode.SPOT_WIDE
END_EVENTS = frozenset({"finish", "cancel"})
START_EVENTS = frozenset({"admit", "transfer"})


@dataclasses.dataclass(frozen=True)
class Size:
    """How big each scenario runs. ``CI`` stays within a few seconds on 2 shared
    cores; ``DEEP`` is for a manual run."""

    rounds: int  # repetitions of the randomised scenarios
    works: int  # works per owner in a round
    flood: int  # submissions of the flood scenario
    threads: int  # OS threads of the thread race
    per_thread: int  # submissions per thread and round
    settle_s: float = 5.0  # how long a round waits for its works to end before it
    # books the rest as lost (a healthy round ends in milliseconds)


CI = Size(rounds=6, works=40, flood=100_000, threads=8, per_thread=40)
DEEP = Size(rounds=60, works=200, flood=1_000_000, threads=8, per_thread=200)


@dataclasses.dataclass
class Counts:
    """One scenario's books, summed over its rounds."""

    scenario: str
    submitted: int = 0
    accepted: int = 0
    rejected: Counter[str] = dataclasses.field(default_factory=Counter)
    outcomes: Counter[str] = dataclasses.field(default_factory=Counter)
    lost: int = 0  # accepted (or admitted in a queue) and never ended
    twice: int = 0  # ended more than once (handle callback or core end event)
    reserved_left: int = 0  # count + bytes still reserved at the end, all queues
    violations: list[str] = dataclasses.field(default_factory=list)

    def add(self, other: Counts) -> None:
        self.submitted += other.submitted
        self.accepted += other.accepted
        self.rejected.update(other.rejected)
        self.outcomes.update(other.outcomes)
        self.lost += other.lost
        self.twice += other.twice
        self.reserved_left += other.reserved_left
        self.violations += other.violations

    @property
    def ok(self) -> bool:
        return not self.violations

    def row(self) -> str:
        rej = ",".join(f"{k}={v}" for k, v in sorted(self.rejected.items())) or "-"
        out = self.outcomes
        return (f"{self.scenario:<34} {self.submitted:>8} {self.accepted:>7} "
                f"{out['completed']:>7} {out['failed']:>6} {out['cancelled']:>7} "
                f"{self.lost:>4} {self.twice:>5} {self.reserved_left:>5}  {rej}")


RESULTS: list[Counts] = []
SETTLE_S = 5.0  # set from the Size by run_scenario  # what the pytest run measured, for its summary

HEADER = (f"{'scenario':<34} {'submit':>8} {'accept':>7} {'complet':>7} {'failed':>6} "
          f"{'cancel':>7} {'lost':>4} {'twice':>5} {'resv':>5}  rejections")


class Ledger:
    """The books of one round: submissions, handles, core events."""

    def __init__(self, scenario: str) -> None:
        self.counts = Counts(scenario)
        self.lock = threading.Lock()
        self.handles: list[ZLinkWorkHandle[Any]] = []
        self.ended: Counter[int] = Counter()  # id(handle) -> done callbacks seen
        # (queue name, work id) -> 1 while admitted and not ended. A queue made again
        # under the same name starts its ids again, so a key may live several times.
        self.open: dict[tuple[str, object], int] = {}
        self.failures_reported = 0

    # The observer runs on the owner's loop thread (D-7), so it needs no lock.
    def observer(self, queue: str, event: str, fields: dict[str, object]) -> None:
        if event in START_EVENTS:
            key = (queue, fields["work"])
            if self.open.get(key):
                self.counts.violations.append(f"{key} admitted again while live")
            self.open[key] = 1
        elif event in END_EVENTS:
            key = (queue, fields["work"])
            if self.open.get(key) != 1:
                self.counts.twice += 1
                self.counts.violations.append(f"{key} ended ({event}) while not live")
            self.open[key] = 0

    def error_hook(self, exc: BaseException, handle: object) -> None:
        self.failures_reported += 1

    def submit(self, call: Callable[[], ZLinkWorkHandle[Any]]) -> ZLinkWorkHandle[Any] | None:
        """Make one submission and book its verdict. Safe from any thread."""
        with self.lock:
            self.counts.submitted += 1
        try:
            h = call()
        except ZLinkClosedError:
            with self.lock:
                self.counts.rejected["closed"] += 1
            return None
        except ZLinkRejectedError as exc:
            with self.lock:
                self.counts.rejected[str(exc.reason.value)] += 1
            return None
        except BaseException as exc:  # an untyped answer breaks the bar
            with self.lock:
                self.counts.violations.append(f"untyped rejection {exc!r}")
            return None
        with self.lock:
            self.counts.accepted += 1
            self.handles.append(h)
        h.add_done_callback(self._ended)
        return h

    def _ended(self, h: ZLinkWorkHandle[Any]) -> None:
        self.ended[id(h)] += 1

    async def settle(self, owners: Iterable[Any], *, budget_s: float | None = None,
                     pump: Callable[[], None] | None = None) -> Counts:
        """Let the loop run until every accepted work ended (or ``budget_s`` passed,
        then the rest count as lost), then close the books. ``pump`` is called between
        loop turns: it answers external calls that works made meanwhile."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + (SETTLE_S if budget_s is None else budget_s)
        while not all(h.done() for h in self.handles) and loop.time() < deadline:
            if pump is not None:
                pump()
            await run_until_idle()
            await asyncio.sleep(0.001)
        await run_until_idle()  # the done callbacks are posted with call_soon
        c = self.counts
        for h in self.handles:
            seen = self.ended[id(h)]
            if not h.done():
                c.lost += 1
                c.violations.append(f"accepted work never ended: {h!r}")
                continue
            c.outcomes[str(h.outcome())] += 1
            if seen != 1:
                c.twice += seen > 1
                c.violations.append(f"{h!r}: {seen} done callbacks, expected 1")
        core_lost = sorted(str(k) for k, live in self.open.items() if live)
        if core_lost:
            c.lost += len(core_lost) if not c.lost else 0
            c.violations.append(f"admitted in a queue and never ended there: {core_lost[:5]}")
        if sum(c.outcomes.values()) != c.accepted - c.lost:
            c.violations.append(f"outcomes {dict(c.outcomes)} do not add up to accepted "
                                f"{c.accepted}")
        for owner in owners:
            for st in statistics_of(owner):
                left = (st.application_count + st.application_bytes + st.lifecycle_count
                        + st.lifecycle_bytes)
                if left:
                    c.reserved_left += left
                    c.violations.append(f"reservation left: {st!r}")
        return c


def statistics_of(owner: Any) -> list[QueueStatistics]:
    """Every queue's statistics of a queue or coordinator (public calls only)."""
    st = owner.statistics()
    if isinstance(st, QueueStatistics):
        return [st]
    return list(st.values())


def small_policy(capacity: int = 8) -> ZLinkExecutionLanePolicy:
    return ZLinkExecutionLanePolicy(application_message_capacity=capacity,
                                    lifecycle_message_capacity=capacity)


# --------------------------------------------------------------------------- scenarios
Scenario = Callable[[Size, random.Random], Awaitable[Counts]]


def _owner(kind: str, ledger: Ledger, **kw: Any) -> Any:
    if kind == "queue":
        return ZLinkSerialExecutionQueue(name="q", observer=ledger.observer,
                                         error_hook=ledger.error_hook, **kw)
    mode = PER_ACTOR if kind == "per_actor" else SPOT_WIDE
    return ZLinkSpotSerialExecutor("S", mode=mode, observer=ledger.observer,
                                   error_hook=ledger.error_hook, **kw)


def _entry(owner: Any, n: int, work: Callable[[], Any]) -> Callable[[], ZLinkWorkHandle[Any]]:
    """The n-th submission's call: every entry of the owner in turn."""
    if isinstance(owner, ZLinkSerialExecutionQueue):
        calls: list[Callable[[], ZLinkWorkHandle[Any]]] = [
            lambda: owner.enqueue(work),
            lambda: owner.enqueue_with_payload_bytes(work, n % 5),
            lambda: owner.enqueue_lifecycle(work),
            lambda: owner.enqueue_barrier_next(work),
        ]
    else:
        calls = [
            lambda: owner.execute_spot(work),
            lambda: owner.execute_actor(f"a{n % 3}", work, n % 5),
            lambda: owner.execute_timer(f"t{n % 2}", work),
            lambda: owner.execute_lifecycle(work),
        ]
    return calls[n % len(calls)]


KINDS = ("queue", "per_actor", "spot_wide")


def _rounds(total: Counts, reps: int, *axes: Sequence[str]) -> Iterator[tuple[Any, ...]]:
    """Every round of a scenario: (repetition, one value of each axis, owner kind), in
    order, stopping at the scenario's first violation (the bar failed already, and a
    broken runtime may hang in the rounds after it)."""
    for rep in range(reps):
        for combo in itertools.product(*axes, KINDS):
            if total.violations:
                return
            yield (rep, *combo)


async def handler_exceptions(size: Size, rnd: random.Random) -> Counts:
    """Works that raise: synchronously, after an await, after a yielded external
    call, and ``CancelledError`` raised by the work itself. Only that work fails."""
    total = Counts("handler exceptions")

    def make(n: int) -> Callable[[], Any]:
        kind = n % 5
        if kind == 0:
            def boom() -> None:
                raise ValueError(n)
            return boom

        async def work() -> int:
            if kind == 1:
                await asyncio.sleep(0)
                raise RuntimeError(n)
            if kind == 2:
                await yield_framework_call(asyncio.sleep(0))
                raise KeyError(n)
            if kind == 3:
                raise asyncio.CancelledError
            return n
        return work

    for rep, kind in _rounds(total, size.rounds):
        ledger = Ledger(total.scenario)
        owner = _owner(kind, ledger)
        for n in range(size.works):
            ledger.submit(_entry(owner, n + rep, make(n)))
            if rnd.random() < 0.2:
                await asyncio.sleep(0)
        total.add(await ledger.settle([owner]))
    return total


async def cancelled_submitters(size: Size, rnd: random.Random) -> Counts:
    """Submitters that await their handle and are cancelled while they wait (a
    ``Task.cancel``, an ``asyncio.wait_for`` that times out): the work still ends once,
    and no other awaiter is disturbed."""
    total = Counts("cancelled waiting submitter")
    for _rep, kind in _rounds(total, size.rounds):
        ledger = Ledger(total.scenario)
        owner = _owner(kind, ledger)
        gate = asyncio.Event()

        async def work(gate: asyncio.Event = gate) -> str:
            await yield_framework_call(gate.wait())
            return "done"

        async def submitter(n: int, owner: Any = owner, ledger: Ledger = ledger,
                            work: Callable[[], Any] = work) -> None:
            h = ledger.submit(_entry(owner, n, work))
            if h is not None:
                if n % 3 == 0:
                    with contextlib.suppress(TimeoutError):
                        await asyncio.wait_for(h, 0.0005)
                else:
                    await h

        tasks = [asyncio.create_task(submitter(n)) for n in range(size.works)]
        await run_until_idle()
        for t in tasks:
            if rnd.random() < 0.5:
                t.cancel()
        await asyncio.sleep(0.002)
        gate.set()
        _done, stuck = await asyncio.wait(tasks, timeout=2.0)
        for t in stuck:  # a submitter whose work never ended: settle books it
            t.cancel()
        total.add(await ledger.settle([owner]))
    return total


async def close_during_drain(size: Size, rnd: random.Random) -> Counts:
    """``close()`` called from inside a work in the middle of a drain (and by the loop
    between turns): what was accepted still runs, later submissions are refused
    typed (``ZLinkClosedError``)."""
    total = Counts("close() during a drain")
    for _rep, kind in _rounds(total, size.rounds):
        ledger = Ledger(total.scenario)
        owner = _owner(kind, ledger)
        close_at = rnd.randrange(size.works)

        def make(n: int, owner: Any = owner, ledger: Ledger = ledger,
                 close_at: int = close_at) -> Callable[[], Any]:
            async def work() -> None:
                if n == close_at:
                    owner.close()
                if n % 2:
                    await yield_framework_call(asyncio.sleep(0))
                # Submissions from inside a work, before and after the close.
                ledger.submit(_entry(owner, n + 1, lambda: None))
            return work

        for n in range(size.works):
            ledger.submit(_entry(owner, n, make(n)))
            if rnd.random() < 0.1:
                await asyncio.sleep(0)
        total.add(await ledger.settle([owner]))
        if not owner.closed:
            total.violations.append("close() from inside a work did not close")
    return total


def _marked(started: set[int], n: int, work: Callable[[], Any]) -> Callable[[], Any]:
    """``work`` that notes in ``started`` that it began."""
    if asyncio.iscoroutinefunction(work):
        async def async_work() -> Any:
            started.add(n)
            return await work()
        return async_work

    def sync_work() -> Any:
        started.add(n)
        return work()
    return sync_work


async def disposal_modes(size: Size, rnd: random.Random) -> Counts:
    """Each disposal mode (dispose, dispose_safely, dispose_after_timeout expiring and
    not expiring) with works queued, running (holding the turn) and yielded, and one
    work that survives its cancellation (SD-3a)."""
    total = Counts("disposal modes x queued/running/yielded")
    modes = ("dispose", "dispose_safely", "timeout_expires", "timeout_in_time")
    for rep, mode, kind in _rounds(total, max(1, size.rounds // 2), modes):
        ledger = Ledger(f"{total.scenario}")
        clock = VirtualClock()
        owner = _owner(kind, ledger, clock=clock)
        gate = asyncio.Event()
        external: list[asyncio.Future[None]] = []
        loop = asyncio.get_running_loop()

        async def yielded(loop: asyncio.AbstractEventLoop = loop,
                          external: list[asyncio.Future[None]] = external) -> str:
            fut: asyncio.Future[None] = loop.create_future()
            external.append(fut)
            await yield_framework_call(fut)
            return "yielded"

        async def running(gate: asyncio.Event = gate) -> str:
            await gate.wait()  # holds the turn
            return "running"

        async def survivor(gate: asyncio.Event = gate) -> str:
            try:
                await gate.wait()
            except asyncio.CancelledError:
                await gate.wait()  # ignores its cancellation (SD-3a)
            return "survived"

        plan: list[Callable[[], Any]] = [yielded, yielded, running, survivor, yielded]
        plan += [lambda: None] * (size.works // 4)
        started: set[int] = set()
        for n, work in enumerate(plan):
            ledger.submit(_entry(owner, n + rep, _marked(started, n, work)))
        await run_until_idle()
        if mode == "dispose":
            owner.dispose()
        elif mode == "dispose_safely":
            owner.dispose_safely()
        else:
            owner.dispose_after_timeout(5)
            if mode == "timeout_expires":
                await run_until_idle()
                clock.advance(10)
        await run_until_idle()
        # A cancelling disposal (dispose, an expired timeout) ends every work
        # that has not started: none of them may start later (SD-1).
        cancelling = mode in ("dispose", "timeout_expires")
        before = set(started)
        # New work is refused after any disposal, typed.
        ledger.submit(_entry(owner, 0, lambda: None))

        def answer(external: list[asyncio.Future[None]] = external,
                   gate: asyncio.Event = gate) -> None:
            """Answer every external call made so far (works that start after
            the disposal make theirs later) and open the gate."""
            for fut in external:
                if not fut.done():
                    fut.set_result(None)
            gate.set()

        total.add(await ledger.settle([owner], pump=answer))
        if cancelling and started - before:
            total.violations.append(
                f"{mode} on {kind}: works {sorted(started - before)} never started "
                "before the cancelling disposal and ran after it")
    return total


async def flood(size: Size, rnd: random.Random) -> Counts:
    """``size.flood`` submissions into a capacity of 16, without giving the loop a turn:
    exactly 16 are accepted, every other one is refused with a typed reason."""
    total = Counts(f"{size.flood:,} submissions into capacity 16")
    capacity = 16
    ledger = Ledger(total.scenario)
    owner = ZLinkSerialExecutionQueue(small_policy(capacity), name="flood",
                                      observer=ledger.observer, error_hook=ledger.error_hook)

    def work() -> None:
        return None

    submit = ledger.submit
    enqueue = owner.enqueue
    for _ in range(size.flood):
        submit(lambda: enqueue(work))
    counts = await ledger.settle([owner])
    if counts.accepted != capacity:
        counts.violations.append(f"accepted {counts.accepted}, expected exactly {capacity}")
    if counts.rejected != Counter({"application_count": size.flood - capacity}):
        counts.violations.append(f"rejections {dict(counts.rejected)}: expected "
                                 f"{size.flood - capacity}, all for application_count")
    total.add(counts)
    return total


CORE_FIELDS = ("lane", "nbytes", "phase", "zombie", "seq", "wid", "barrier", "resumes")


async def handle_writes(size: Size, rnd: random.Random) -> Counts:
    """Every handle, queued, running or yielded, is written to through each of the
    core's field names: each write must be refused with ``AttributeError`` and change
    nothing, so the books still balance and quiescence is still reached on the loop
    (SE-6.3, D-23)."""
    total = Counts("writes to handles' core fields")
    for _rep, kind in _rounds(total, size.rounds):
        ledger = Ledger(total.scenario)
        owner = _owner(kind, ledger)

        def make(n: int) -> Callable[[], Any]:
            async def work() -> int:
                if n % 3:
                    await yield_framework_call(asyncio.sleep(0))
                return n
            return work

        for n in range(size.works):
            ledger.submit(_entry(owner, n, make(n)))
            if rnd.random() < 0.2:
                await asyncio.sleep(0)
            for i, h in enumerate(ledger.handles):
                field = rnd.choice(CORE_FIELDS)
                seen = getattr(h, field)
                where = f"{kind} handle {i}: {field}"
                try:
                    setattr(h, field, rnd.choice((True, 1, 10**6, -1)))
                except AttributeError:
                    continue
                except BaseException as exc:
                    total.violations.append(f"{where}: a write raised untyped {exc!r}")
                else:
                    total.violations.append(f"{where}: a write was accepted")
                # Put the value back, so a broken runtime is reported instead of
                # left with counts that would hold its waits for ever.
                with contextlib.suppress(AttributeError):
                    setattr(h, field, seen)
        total.add(await ledger.settle([owner]))
        try:
            await asyncio.wait_for(owner.await_quiescence(), size.settle_s)
        except TimeoutError:
            total.violations.append("await_quiescence did not end after every work ended")
    return total


FINAL_MODES = ("none", "dispose", "dispose_safely", "timeout_in_time", "timeout_expires")


async def session_finals(size: Size, rnd: random.Random) -> Counts:
    """A session's final work, submitted by its last packet or from outside, completing
    or hanging, under each disposal mode taken at a random moment (often while the
    final work is still held back behind the packets): it is a work from its
    acceptance (D-22). The books say how many accepted works have not ended; the
    session's ``active_count() + zombie_count()`` must say the same at every look, an
    ``await_completion`` begun before the final work was accepted must not return
    while a work that is no zombie is live, and after an expired disposal timeout
    nothing may be live, the final work included (SD-1)."""
    total = Counts("session final works under disposal")
    for _rep in range(size.rounds):
        for mode, by_packet, hangs in itertools.product(FINAL_MODES, (True, False),
                                                        (True, False)):
            if total.violations:
                return total
            await _final_round(total, size, rnd, mode, by_packet, hangs)
    return total


async def _final_round(total: Counts, size: Size, rnd: random.Random, mode: str,
                       by_packet: bool, hangs: bool) -> None:
    ledger = Ledger(total.scenario)
    clock = VirtualClock()
    owner = ZLinkSessionSerialExecutor("s", clock=clock, observer=ledger.observer,
                                       error_hook=ledger.error_hook)
    where = f"{mode}, final by {'packet' if by_packet else 'caller'}, " \
            f"{'hanging' if hangs else 'returning'}"
    gate, final_gate = asyncio.Event(), asyncio.Event()
    external: list[asyncio.Future[None]] = []
    safely = [False]  # the bar made every live work a zombie (dispose_safely)

    def look(moment: str) -> None:
        live = sum(1 for h in ledger.handles if not h.done())
        counted = owner.active_count() + owner.zombie_count()
        if counted != live:
            total.violations.append(
                f"{where}, {moment}: the session counts {counted} live works, the books "
                f"{live} (D-22: the final work counts from its acceptance)")

    async def final_work() -> None:
        if hangs:
            await final_gate.wait()  # holds the turn until the bar opens it

    def submit_final() -> None:
        ledger.submit(lambda: owner.execute_final(final_work))
        look("just after execute_final")

    def packet(n: int, last: bool) -> Callable[[], Any]:
        async def work() -> None:
            if n % 3 == 1:
                ext: asyncio.Future[None] = asyncio.get_running_loop().create_future()
                external.append(ext)
                await yield_framework_call(ext)
            elif n % 3 == 2:
                await gate.wait()
            if last:
                submit_final()
        return work

    async def waiter() -> None:
        await owner.await_completion()
        if not safely[0]:
            active = [i for i, h in enumerate(ledger.handles) if not h.done()]
            if active:
                total.violations.append(
                    f"{where}: await_completion returned while accepted works {active} "
                    "were active (SD-3, D-22)")

    entries = (owner.execute_application, owner.execute_control,
               owner.execute_infrastructure)
    count = max(3, size.works // 4)
    waiting = asyncio.ensure_future(waiter())
    for n in range(count):
        last = by_packet and n == count - 1
        ledger.submit(lambda n=n, last=last: entries[n % 3](packet(n, last)))
    await asyncio.sleep(0)
    if not by_packet:
        submit_final()

    def answer() -> None:
        for fut in external:
            if not fut.done():
                fut.set_result(None)
        gate.set()

    for _ in range(rnd.randrange(3)):
        await asyncio.sleep(0)
        look("while the packets run")
    if mode == "dispose":
        owner.dispose()
    elif mode == "dispose_safely":
        safely[0] = True
        owner.dispose_safely()
    elif mode.startswith("timeout"):
        owner.dispose_after_timeout(5)
    look("after the disposal call")
    if mode == "timeout_expires":
        # The packets end within the bound; a final work that hangs then must be
        # cancelled when the time is up, held or placed (SD-1, D-22).
        for _ in range(3):
            answer()
            await run_until_idle()
            look("before the bound")
        clock.advance(10)
        await run_until_idle()
        late = [i for i, h in enumerate(ledger.handles) if not h.done()]
        if late:
            total.violations.append(f"{where}: accepted works {late} still live after the "
                                    "disposal timeout expired (SD-1, D-22)")

    def pump() -> None:
        answer()
        final_gate.set()

    counts = await ledger.settle([owner], pump=pump)
    look("after every work ended")
    try:
        await asyncio.wait_for(waiting, size.settle_s)
    except TimeoutError:
        total.violations.append(f"{where}: await_completion did not return after every "
                                "work ended")
    total.add(counts)


async def threads_racing_close_and_dispose(size: Size, rnd: random.Random) -> Counts:
    """``size.threads`` OS threads submitting through every entry while two more threads
    call ``close()`` and ``dispose()`` and the loop runs the works (some of which
    yield), with asyncio debug on (D-24)."""
    total = Counts(f"{size.threads} OS threads racing close+dispose")
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop_errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, ctx: loop_errors.append(ctx))
    try:
        for _rep, kind in _rounds(total, size.rounds):
            ledger = Ledger(total.scenario)
            owner = _owner(kind, ledger, policy=small_policy(64))

            async def work() -> None:
                await yield_framework_call(asyncio.sleep(0))

            def body(tid: int, start: threading.Barrier, owner: Any = owner,
                     ledger: Ledger = ledger) -> None:
                start.wait()
                for i in range(size.per_thread):
                    n = tid * size.per_thread + i
                    ledger.submit(_entry(owner, n, work if n % 2 else (lambda: None)))

            def ender(call: Callable[[], None], start: threading.Barrier,
                      after: int, ledger: Ledger = ledger) -> None:
                """End the owner once ``after`` submissions were made (or all)."""
                start.wait()
                while (ledger.counts.submitted < after
                       and ledger.counts.submitted < size.threads * size.per_thread):
                    threading.Event().wait(0.0001)
                try:
                    call()
                except BaseException as exc:
                    with ledger.lock:
                        ledger.counts.violations.append(f"ending raised {exc!r}")

            start = threading.Barrier(size.threads + 2)
            threads = [threading.Thread(target=body, args=(t, start))
                       for t in range(size.threads)]
            last = size.threads * size.per_thread
            threads += [threading.Thread(target=ender, args=(
                call, start, rnd.randrange(last))) for call in (owner.close,
                                                                owner.dispose)]
            for t in threads:
                t.start()
            while any(t.is_alive() for t in threads):
                await asyncio.sleep(0)
            for t in threads:
                t.join()
            total.add(await ledger.settle([owner]))
        if loop_errors:
            total.violations.append(f"the loop reported {loop_errors[:3]!r}")
    finally:
        loop.set_debug(False)
        loop.set_exception_handler(None)
    return total


SCENARIOS: tuple[tuple[str, Scenario], ...] = (
    ("handler_exceptions", handler_exceptions),
    ("cancelled_submitters", cancelled_submitters),
    ("close_during_drain", close_during_drain),
    ("disposal_modes", disposal_modes),
    ("flood", flood),
    ("threads", threads_racing_close_and_dispose),
    ("handle_writes", handle_writes),
    ("session_finals", session_finals),
)


def run_scenario(name: str, size: Size = CI, seed: int = 15) -> Counts:
    """Run one scenario on a fresh event loop."""
    global SETTLE_S
    fn = dict(SCENARIOS)[name]
    SETTLE_S = size.settle_s
    loop = asyncio.new_event_loop()
    try:
        return loop.run_until_complete(fn(size, random.Random(f"{seed}/{name}")))
    finally:
        # Unlike asyncio.run, wait a bounded time for the tasks left over: on a broken
        # runtime a cancelled work may never end, and the bar must still report.
        left = asyncio.all_tasks(loop)
        for task in left:
            task.cancel()
        if left:
            loop.run_until_complete(asyncio.wait(left, timeout=1.0))
        loop.run_until_complete(loop.shutdown_asyncgens())
        loop.close()


def table(rows: Iterable[Counts]) -> str:
    return "\n".join([HEADER, *(c.row() for c in rows)])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--deep", action="store_true", help="the large sizes")
    ap.add_argument("--mutant", help="apply a mutant of the catalogue first (must fail)")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--settle", type=float, default=5.0,
                    help="seconds a round waits for its works before booking them lost")
    ap.add_argument("scenario", nargs="*", help="scenario names (default: all)")
    args = ap.parse_args(argv)
    if args.mutant:
        from zlink_reference_adapter import mutants
        mutants.apply(args.mutant)
    from zlink_reference import set_ownership_checks
    set_ownership_checks(True)
    size = dataclasses.replace(DEEP if args.deep else CI, settle_s=args.settle)
    names = args.scenario or [n for n, _ in SCENARIOS]
    results = [run_scenario(n, size, args.seed) for n in names]
    print(table(results))
    failed = [c for c in results if not c.ok]
    for c in failed:
        print(f"VIOLATED in {c.scenario}: {len(c.violations)} violation(s), first: "
              f"{c.violations[:3]}")
    print("reliability bar:", "FAILED" if failed else "held")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
