"""D-24, the thread model: every entry point called from real OS threads, racing other
threads and the owner's loop, with asyncio debug on (which raises on any non-thread-safe
call off the loop thread).

Each race repeats ``REPEATS`` times: at that count the old entries (a timer queue made in
a Spot closed meanwhile, a session's final work placed from the calling thread) failed
every run of these tests.
"""

from __future__ import annotations

import asyncio
import random
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import pytest

from zlink_reference import (
    ZLinkActorSerialExecutor,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUsageError,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
)
from zlink_reference.testing import run_until_idle

from coordinator_errors import unexpected_errors

REPEATS = 16
THREADS = 4
PER_THREAD = 12
JOIN_S = 30.0


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


Submit = Callable[[Any, Callable[[], Any], int], ZLinkWorkHandle[Any]]


def _spot(mode: ZLinkUserSpotExecutionMode) -> Callable[[], ZLinkSpotSerialExecutor]:
    return lambda: ZLinkSpotSerialExecutor("S", mode=mode, error_hook=hook)


PER_ACTOR = _spot(ZLinkUserSpotExecutionMode.PER_ACTOR)
SPOT_WIDE = _spot(ZLinkUserSpotExecutionMode.SPOT_WIDE)


def _queue() -> ZLinkSerialExecutionQueue:
    return ZLinkSerialExecutionQueue(name="q", error_hook=hook)


def _actor() -> ZLinkActorSerialExecutor:
    return ZLinkActorSerialExecutor("A", error_hook=hook)


def _session() -> ZLinkSessionSerialExecutor:
    return ZLinkSessionSerialExecutor("s", error_hook=hook)


# (id, factory, submit(owner, work, n)): n tells submissions apart (names, payloads).
ENTRIES: list[tuple[str, Callable[[], Any], Submit]] = [
    ("queue.enqueue", _queue, lambda o, w, n: o.enqueue(w)),
    ("queue.enqueue_with_payload_bytes", _queue,
     lambda o, w, n: o.enqueue_with_payload_bytes(w, n % 7)),
    ("queue.enqueue_lifecycle", _queue, lambda o, w, n: o.enqueue_lifecycle(w)),
    ("queue.enqueue_barrier_next", _queue, lambda o, w, n: o.enqueue_barrier_next(w)),
    ("per_actor.execute_spot", PER_ACTOR, lambda o, w, n: o.execute_spot(w)),
    ("per_actor.execute_lifecycle", PER_ACTOR, lambda o, w, n: o.execute_lifecycle(w)),
    ("per_actor.execute_actor", PER_ACTOR,
     lambda o, w, n: o.execute_actor(f"a{n % 5}", w, n % 3)),
    ("per_actor.execute_timer", PER_ACTOR, lambda o, w, n: o.execute_timer(f"t{n}", w)),
    ("spot_wide.execute_spot", SPOT_WIDE, lambda o, w, n: o.execute_spot(w)),
    ("spot_wide.execute_actor", SPOT_WIDE,
     lambda o, w, n: o.execute_actor(f"a{n % 5}", w, n % 3)),
    ("spot_wide.execute_timer", SPOT_WIDE, lambda o, w, n: o.execute_timer(f"t{n}", w)),
    ("actor.execute_actor", _actor, lambda o, w, n: o.execute_actor(w, n % 3)),
    ("actor.execute_lifecycle", _actor, lambda o, w, n: o.execute_lifecycle(w)),
    ("session.execute_application", _session,
     lambda o, w, n: o.execute_application(w, n % 3)),
    ("session.execute_control", _session, lambda o, w, n: o.execute_control(w)),
    ("session.execute_infrastructure", _session,
     lambda o, w, n: o.execute_infrastructure(w)),
    ("session.execute_final", _session, lambda o, w, n: o.execute_final(w)),
]

ENDINGS: list[tuple[str, Callable[[Any], None]]] = [
    ("close", lambda o: o.close()),
    ("dispose", lambda o: o.dispose()),
    ("dispose_safely", lambda o: o.dispose_safely()),
    ("dispose_after_timeout", lambda o: o.dispose_after_timeout(0)),
]


class Race:
    """Threads and the loop submitting to one owner; the loop or a thread ends it."""

    def __init__(self, owner: Any, submit: Submit) -> None:
        self.owner = owner
        self.submit = submit
        self.ran: Counter[int] = Counter()
        self.accepted: dict[int, ZLinkWorkHandle[Any]] = {}
        self.surprises: list[BaseException] = []
        self.lock = threading.Lock()
        self.loop_errors: list[dict[str, Any]] = []

    def work(self, n: int) -> Callable[[], None]:
        def run() -> None:
            self.ran[n] += 1

        return run

    def one(self, n: int) -> None:
        try:
            h = self.submit(self.owner, self.work(n), n)
        except ZLinkRejectedError:
            return
        except BaseException as exc:
            with self.lock:
                self.surprises.append(exc)
            return
        with self.lock:
            self.accepted[n] = h

    def thread_body(self, tid: int, start: threading.Barrier) -> None:
        start.wait()
        for i in range(PER_THREAD):
            self.one(1000 * (tid + 1) + i)

    async def run(self, end: Callable[[Any], None], end_on_thread: bool, rnd: random.Random
                  ) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(lambda _loop, ctx: self.loop_errors.append(ctx))
        start = threading.Barrier(THREADS + (1 if end_on_thread else 0))
        threads = [threading.Thread(target=self.thread_body, args=(t, start))
                   for t in range(THREADS)]
        if end_on_thread:
            def ender() -> None:
                start.wait()
                for _ in range(rnd.randrange(THREADS * PER_THREAD // 2)):
                    pass
                try:
                    end(self.owner)
                except BaseException as exc:
                    with self.lock:
                        self.surprises.append(exc)

            threads.append(threading.Thread(target=ender))
        for t in threads:
            t.start()
        end_at = rnd.randrange(1, THREADS * PER_THREAD)
        step = 0
        while any(t.is_alive() for t in threads):
            step += 1
            self.one(step)  # the loop submits too
            if step == end_at and not end_on_thread:
                end(self.owner)
            await asyncio.sleep(0)
        for t in threads:
            t.join(JOIN_S)
        if not end_on_thread and step < end_at:
            end(self.owner)
        for _ in range(50):
            await run_until_idle()
            if all(h.done() for h in self.accepted.values()):
                break
            await asyncio.sleep(0.001)

    def check(self, label: str) -> None:
        assert not self.surprises, f"{label}: entries raised {self.surprises!r}"
        assert not self.loop_errors, f"{label}: the loop reported {self.loop_errors!r}"
        assert all(n <= 1 for n in self.ran.values()), f"{label}: a work ran twice"
        assert set(self.ran) <= set(self.accepted), f"{label}: a rejected work ran"
        for n, h in self.accepted.items():
            assert h.done(), f"{label}: accepted work {n} never ended ({h!r})"
            assert (h.outcome() == "completed") == (self.ran[n] == 1), (label, n, h)
        queues = self.owner._scope_queues()
        assert all(q.closed for q in queues), (
            f"{label}: a queue of the ended owner is open: "
            f"{[q.name for q in queues if not q.closed]}")
        for q in queues:
            st = q.statistics()
            assert (st.application_count, st.application_bytes, st.lifecycle_count,
                    st.lifecycle_bytes) == (0, 0, 0, 0), f"{label}: {st!r}"
        if isinstance(self.owner, ZLinkSpotSerialExecutor):
            assert self.owner.timer_names() == [] and self.owner.actor_ids() == [], (
                f"{label}: a queue entered the maps of a closed Spot")


@pytest.mark.parametrize(("entry", "make", "submit"), ENTRIES, ids=[e[0] for e in ENTRIES])
async def test_D_24_execute_from_threads_racing_each_other_and_the_ending_loop(
        entry: str, make: Callable[[], Any], submit: Submit) -> None:
    asyncio.get_running_loop().set_debug(True)
    rnd = random.Random(entry)
    for rep in range(REPEATS):
        name, end = ENDINGS[rep % len(ENDINGS)]
        on_thread = rep % 8 >= 4
        race = Race(make(), submit)
        await race.run(end, on_thread, rnd)
        race.check(f"{entry} / {name} on {'a thread' if on_thread else 'the loop'} #{rep}")


def _in_thread(fn: Callable[[], Any]) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []

    def body() -> None:
        try:
            box.append(("ok", fn()))
        except BaseException as exc:
            box.append(("error", exc))

    t = threading.Thread(target=body)
    t.start()
    return t, box


async def _wait_threads(threads: list[threading.Thread]) -> None:
    for _ in range(int(JOIN_S * 1000)):
        if not any(t.is_alive() for t in threads):
            return
        await asyncio.sleep(0.001)
    raise AssertionError("a thread did not finish")


AWAITS: list[tuple[str, Callable[[Any, ZLinkWorkHandle[Any]], Any]]] = [
    ("handle", lambda o, h: h),
    ("await_completion", lambda o, h: o.await_completion()),
    ("await_quiescence", lambda o, h: o.await_quiescence()),
]


@pytest.mark.parametrize(("what", "wait"), AWAITS, ids=[a[0] for a in AWAITS])
@pytest.mark.parametrize(("entry", "make", "submit"),
                         [e for e in ENTRIES if e[0].endswith(("enqueue", "execute_actor",
                                                               "execute_application"))],
                         ids=lambda e: e if isinstance(e, str) else "")
async def test_D_24_await_from_another_threads_loop_racing_the_owner(
        what: str, wait: Callable[[Any, ZLinkWorkHandle[Any]], Any], entry: str,
        make: Callable[[], Any], submit: Submit) -> None:
    """``await_*`` and awaiting a handle on another thread's loop: the wait is carried
    out on the owner's loop and its outcome delivered to the waiting loop."""
    asyncio.get_running_loop().set_debug(True)
    for rep in range(REPEATS // 4):
        owner = make()
        gate = asyncio.Event()

        async def work(rep: int = rep, gate: asyncio.Event = gate) -> int:
            await gate.wait()
            return rep

        h = submit(owner, work, rep)

        async def waiter(h: ZLinkWorkHandle[Any] = h, owner: Any = owner) -> Any:
            loop = asyncio.get_running_loop()
            loop.set_debug(True)
            return await wait(owner, h)

        threads = [_in_thread(lambda: asyncio.run(waiter())) for _ in range(3)]
        await asyncio.sleep(0.002 * (rep % 3))
        gate.set()
        await _wait_threads([t for t, _ in threads])
        expect = rep if what == "handle" else None
        assert [box for _, box in threads] == [[("ok", expect)]] * 3
        owner.close()
        await run_until_idle()


async def test_D_24_await_after_cancellation_from_another_threads_loop() -> None:
    asyncio.get_running_loop().set_debug(True)
    for rep in range(REPEATS // 4):
        spot = PER_ACTOR()
        gate = asyncio.Event()
        spot.execute_actor("a", gate.wait)
        spot.execute_timer("t", gate.wait)
        spot.dispose_safely()
        threads = [_in_thread(lambda s=spot: asyncio.run(s.await_after_cancellation()))
                   for _ in range(3)]
        await asyncio.sleep(0.002 * (rep % 3))
        assert spot.zombie_count() == 2
        gate.set()
        await _wait_threads([t for t, _ in threads])
        assert [box for _, box in threads] == [[("ok", None)]] * 3
        assert spot.zombie_count() == 0


async def test_D_24_handle_callbacks_from_threads_run_on_the_owners_loop() -> None:
    asyncio.get_running_loop().set_debug(True)
    owner_thread = threading.get_ident()
    q = _queue()
    gate = asyncio.Event()
    h = q.enqueue(gate.wait)
    seen: list[int] = []
    threads = [_in_thread(lambda: h.add_done_callback(
        lambda _h: seen.append(threading.get_ident()))) for _ in range(4)]
    await _wait_threads([t for t, _ in threads])
    gate.set()
    await run_until_idle()
    assert seen == [owner_thread] * 4


async def test_D_24_an_entry_on_a_closed_owner_loop_raises_a_typed_error_at_once() -> None:
    """A call from another thread when the owner's loop is closed cannot be carried out:
    a typed error at once, never a hang."""
    loop = asyncio.new_event_loop()
    try:
        spot = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR,
                                       loop=loop, error_hook=hook)
    finally:
        loop.close()
    for call in (lambda: spot.execute_spot(lambda: None),
                 lambda: spot.execute_timer("t", lambda: None),
                 spot.close, spot.dispose):
        t, box = _in_thread(call)
        t.join(JOIN_S)
        assert box and box[0][0] == "error", box
        assert isinstance(box[0][1], ZLinkUsageError), box


def test_D_24_entries_keep_one_verdict_per_call_from_threads_alone() -> None:
    """No loop thread at all in the caller's hands: a loop runs on its own thread, every
    call comes from other threads, the owner made on the loop thread."""
    loop = asyncio.new_event_loop()
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    try:
        async def make() -> ZLinkSpotSerialExecutor:
            loop.set_debug(True)
            return PER_ACTOR()

        spot = asyncio.run_coroutine_threadsafe(make(), loop).result(JOIN_S)
        race = Race(spot, ENTRIES[7][2])  # execute_timer
        barrier = threading.Barrier(THREADS)
        threads = [threading.Thread(target=race.thread_body, args=(t, barrier))
                   for t in range(THREADS)]
        for t in threads:
            t.start()
        spot.close()
        for t in threads:
            t.join(JOIN_S)
        asyncio.run_coroutine_threadsafe(spot.await_quiescence(), loop).result(JOIN_S)
        assert all(h.done() for h in race.accepted.values())
        assert sum(race.ran.values()) == len(race.accepted)
        assert spot.timer_names() == []
        assert all(q.closed for q in spot._scope_queues())
        assert not race.surprises
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(JOIN_S)
        loop.close()

