"""D-24: ``statistics()`` of a queue and of every coordinator read from real OS threads
while the owner's loop runs works, with asyncio debug on.

A statistics object is a point-in-time view (``QueueStatistics``): its fields must
describe one state of the queue. Read field by field from another thread while the loop
changes the queue, they did not: a snapshot could count a work as reserved that it
showed nowhere (neither ready, running nor suspended). The thread model (D-24) therefore
carries a foreign ``statistics()`` call to the owner's loop, like the lane-owned calls,
and returns the view taken there. These tests shrink the interpreter's switch interval
so that a thread switch inside a field-by-field read is likely; with the old read they
failed (see docs/properties.md, issue 15).
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from zlink_reference import (
    QueueStatistics,
    ZLinkActorSerialExecutor,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    yield_framework_call,
)
from zlink_reference.testing import run_until_idle

READERS = 8
ROUNDS = 80  # loop rounds of 8 submissions each while the threads read
FIXED = 256  # the default fixed_work_byte_cost: every work here reserves exactly that


@pytest.fixture(autouse=True)
def _tiny_switch_interval() -> Iterator[None]:
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(old)


def views(st: QueueStatistics | Any) -> list[QueueStatistics]:
    return [st] if isinstance(st, QueueStatistics) else list(st.values())


def consistent(st: QueueStatistics) -> str | None:
    """What a single state of a queue fed only payload-free works always satisfies."""
    live = st.application_count + st.lifecycle_count
    if st.ready + int(st.running) + st.suspended != live:
        return f"live {live} != ready {st.ready} + running {st.running} + suspended " \
               f"{st.suspended}"
    if st.application_bytes != FIXED * st.application_count:
        return "application bytes do not match its count"
    if st.lifecycle_bytes != FIXED * st.lifecycle_count:
        return "lifecycle bytes do not match its count"
    if st.draining and st.drain_scheduled:
        return "draining and drain-scheduled at once"
    return None


def _queue() -> ZLinkSerialExecutionQueue:
    return ZLinkSerialExecutionQueue(name="q")


def _per_actor() -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR)


def _actor() -> ZLinkActorSerialExecutor:
    return ZLinkActorSerialExecutor("A")


def _session() -> ZLinkSessionSerialExecutor:
    return ZLinkSessionSerialExecutor("s")


def _entries(*entries: Callable[[Any, Any, int], Any]) -> Callable[[Any, Any, int], Any]:
    """Submission ``n`` goes through entry ``n`` modulo their number: every entry, and so
    every lane (barrier-next, lifecycle, application) of every queue, is used in turn."""
    return lambda o, w, n: entries[n % len(entries)](o, w, n)


# (id, factory, submit(owner, work, n)); SpotWide is left out: its Spot queue holds
# execution turns whose works are counted on their Actor queues, so the per-queue
# equation above does not apply to it. Every entry of each owner is used, so works wait
# in every line a view counts: barrier-next (the bare queue's only), lifecycle and
# application.
OWNERS: list[tuple[str, Callable[[], Any], Callable[[Any, Any, int], Any]]] = [
    ("queue", _queue, _entries(lambda o, w, n: o.enqueue_lifecycle(w),
                               lambda o, w, n: o.enqueue_barrier_next(w),
                               lambda o, w, n: o.enqueue(w),
                               lambda o, w, n: o.enqueue_with_payload_bytes(w, 0))),
    ("per_actor_spot", _per_actor,
     _entries(lambda o, w, n: o.execute_spot(w),
              lambda o, w, n: o.execute_actor(f"a{n % 4}", w),
              lambda o, w, n: o.execute_timer(f"t{n % 50}", w),
              lambda o, w, n: o.execute_lifecycle(w))),
    ("actor", _actor, _entries(lambda o, w, n: o.execute_lifecycle(w),
                               lambda o, w, n: o.execute_actor(w),
                               lambda o, w, n: o.execute_actor(w))),
    ("session", _session, _entries(lambda o, w, n: o.execute_control(w),
                                   lambda o, w, n: o.execute_application(w),
                                   lambda o, w, n: o.execute_infrastructure(w),
                                   lambda o, w, n: o.execute_application(w))),
]


@pytest.mark.parametrize(("kind", "make", "submit"), OWNERS, ids=[o[0] for o in OWNERS])
async def test_D_24_statistics_from_threads_is_one_consistent_view(
        kind: str, make: Callable[[], Any], submit: Callable[[Any, Any, int], Any]) -> None:
    loop = asyncio.get_running_loop()
    loop.set_debug(True)
    loop.slow_callback_duration = 10.0  # the tiny switch interval makes callbacks slow
    loop_errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _l, ctx: loop_errors.append(ctx))
    owner = make()
    bad: list[str] = []
    reads = [0]
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                for st in views(owner.statistics()):
                    problem = consistent(st)
                    if problem:
                        bad.append(f"{st.name}: {problem}: {st!r}")
                reads[0] += 1
        except BaseException as exc:
            bad.append(f"statistics() raised {exc!r}")

    async def work() -> None:
        await yield_framework_call(asyncio.sleep(0))

    threads = [threading.Thread(target=reader) for _ in range(READERS)]
    for t in threads:
        t.start()
    n = 0
    for _round in range(ROUNDS):
        if bad:
            break
        for _ in range(8):
            n += 1
            try:
                submit(owner, work if n % 2 else (lambda: None), n)
            except ZLinkRejectedError:
                pass
        await asyncio.sleep(0)
    stop.set()
    while any(t.is_alive() for t in threads):  # a read may wait for the loop: keep it
        await asyncio.sleep(0.001)             # turning until every reader is out
    owner.close()
    await run_until_idle()
    assert not bad, f"{kind}: {len(bad)} inconsistent views, first: {bad[:3]}"
    assert not loop_errors, loop_errors[:3]
    assert reads[0] >= READERS  # the threads did read
