"""Throughput and memory of ZLinkSerialExecutionQueue against a Task-per-owner peer and
a bare lower bound, all measured in one process, interleaved.

Sides (each runs every shape; the order rotates every repetition):

* ``enqueue``: ours, ``queue.enqueue(work)``; the handle it returns is dropped at once,
  as a caller that does not wait for the work drops it.
* ``post``: ours, ``queue.post(work)``, the handle-less lane (nothing is returned).
* ``peer``: the usual asyncio shape, one Task per owner reading its own
  ``asyncio.Queue`` (``put_nowait`` / ``await get()``; no ``task_done``/``join``).
* ``bound``: a bare deque and a draining flag, the drain posted with ``call_soon``: no
  capacity, no time budget, no lanes. Nothing that keeps a queue's rules can do less per
  item in Python, so ``bound / peer`` is how far from the limit we are.

Every side learns that its owners are done the same way: the last item of each owner
counts down a shared latch, and the run ends when the latch reaches zero. No side
registers a waiter before its drain runs, and none pays for a ``join``.

Printed per shape: each side's median time, and ``x / peer`` = peer time / that side's
time (above 1: faster than the peer), with the spread (min..max) of the per-repetition
ratios. Absolute times drift on a shared machine; the ratios taken in one run do not.

    python benchmarks/bench_queue.py              # full sizes, 11 repetitions
    python benchmarks/bench_queue.py --quick      # small sizes, 3 repetitions
    python benchmarks/bench_queue.py --repeat 15
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import statistics
import sys
import time
import tracemalloc
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

from zlink_model.queue import QueueConfig
from zlink_reference import QueueRuntime, ZLinkExecutionLanePolicy, ZLinkSerialExecutionQueue

BIG = ZLinkExecutionLanePolicy(
    application_message_capacity=10_000_000, application_byte_capacity=1 << 60
)

Item = Callable[[], Any]


def sync_item() -> None:
    return None


async def async_never_suspends() -> None:
    return None


async def async_awaits_once() -> None:
    await asyncio.sleep(0)


class Latch:
    """Counts owners down; the future is done when the last one finished."""

    __slots__ = ("fut", "left")

    def __init__(self, n: int) -> None:
        self.left = n
        self.fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def down(self) -> None:
        self.left -= 1
        if self.left == 0:
            self.fut.set_result(None)


# --------------------------------------------------------------------------- sides
class Peer:
    """One asyncio Task per owner, reading an asyncio.Queue."""

    __slots__ = ("queue", "task")

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Item] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        get = self.queue.get
        while True:
            r = (await get())()
            if r is not None:
                await r

    def submitter(self) -> Callable[[Item], None]:
        return self.queue.put_nowait

    def stop(self) -> None:
        self.task.cancel()


class Bound:
    """The lower bound: a deque, a draining flag, the drain posted with call_soon; an
    awaitable result moves the drain into a task that awaits it and drains on."""

    __slots__ = ("draining", "items", "loop")

    def __init__(self) -> None:
        self.items: deque[Item] = deque()
        self.draining = False
        self.loop = asyncio.get_running_loop()

    def submit(self, item: Item) -> None:
        self.items.append(item)
        if not self.draining:
            self.draining = True
            self.loop.call_soon(self._drain)

    def submitter(self) -> Callable[[Item], None]:
        return self.submit

    def _drain(self) -> None:
        items = self.items
        while items:
            r = items.popleft()()
            if r is not None:
                self.loop.create_task(self._drive(r))
                return
        self.draining = False

    async def _drive(self, aw: Awaitable[Any]) -> None:
        await aw
        items = self.items
        while items:
            r = items.popleft()()
            if r is not None:
                await r
        self.draining = False

    def stop(self) -> None:
        pass


_shared: dict[asyncio.AbstractEventLoop, tuple[QueueRuntime, QueueConfig]] = {}


def _runtime_and_config() -> tuple[QueueRuntime, QueueConfig]:
    loop = asyncio.get_running_loop()
    if loop not in _shared:
        rt = QueueRuntime()
        _shared[loop] = (rt, QueueConfig(BIG, units_per_ms=rt.clock.units_per_ms))
    return _shared[loop]


class Enqueue:
    """Ours through ``enqueue``; owners share one runtime and config, as a coordinator's
    queues do. The handle is dropped."""

    __slots__ = ("queue",)

    def __init__(self) -> None:
        rt, config = _runtime_and_config()
        self.queue = ZLinkSerialExecutionQueue(runtime=rt, config=config)

    def submitter(self) -> Callable[[Item], None]:
        return self.queue.enqueue

    def stop(self) -> None:
        self.queue.close()


class Post(Enqueue):
    """Ours through the handle-less ``post``."""

    __slots__ = ()

    def submitter(self) -> Callable[[Item], None]:
        return self.queue.post


SIDES: dict[str, Callable[[], Any]] = {
    "enqueue": Enqueue, "post": Post, "peer": Peer, "bound": Bound}


# --------------------------------------------------------------------------- shapes
async def burst(make: Callable[[], Any], owners: int, items: int, rounds: int,
                item: Item, clock: Callable[[], float] = time.perf_counter) -> float:
    """``rounds`` times: ``items`` works to each of ``owners`` owners, back to back;
    wait until every owner ran its last. Returns the summed time read from ``clock``
    (wall time by default; ``bench_async.py --clock cpu`` passes the thread's CPU
    clock)."""
    qs = [make() for _ in range(owners)]
    subs = [q.submitter() for q in qs]
    await asyncio.sleep(0)
    total = 0.0
    for _ in range(rounds):
        latch = Latch(owners)
        down = latch.down
        t0 = clock()
        for submit in subs:
            for _ in range(items - 1):
                submit(item)
            submit(down)
        await latch.fut
        total += clock() - t0
    for q in qs:
        q.stop()
    await asyncio.sleep(0)
    return total


async def idle_memory(side: str, owners: int, *, shared: bool) -> float:
    """Bytes per idle owner: owners that each ran one work and are idle again, only each
    side's own structures counted. Ours either shares one runtime and config (as a
    coordinator's queues do) or is built by the default constructor (what a user
    writes); the peer keeps an asyncio.Queue and the Task reading it."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    latch = Latch(owners)
    keep: list[Any]
    if side == "ours":
        if shared:
            rt, config = _runtime_and_config()
            queues = [ZLinkSerialExecutionQueue(runtime=rt, config=config)
                      for _ in range(owners)]
        else:
            queues = [ZLinkSerialExecutionQueue() for _ in range(owners)]
        for q in queues:
            q.enqueue(latch.down)
        keep = queues
    else:
        peers = [Peer() for _ in range(owners)]
        for p in peers:
            p.queue.put_nowait(latch.down)
        keep = [(p.queue, p.task) for p in peers]
        del peers
    await latch.fut
    await asyncio.sleep(0)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    if side != "ours":
        for _, task in keep:
            task.cancel()
    else:
        for q in keep:
            q.close()
    del keep
    await asyncio.sleep(0)
    return used / owners


Shape = tuple[str, Callable[[Callable[[], Any]], Awaitable[float]]]


def shapes(quick: bool, clock: Callable[[], float] = time.perf_counter) -> list[Shape]:
    rounds = 3 if quick else 40
    many = 2 if quick else 4
    return [
        (f"sync burst, 1 owner x 1,000 (x{rounds})",
         lambda m: burst(m, 1, 1000, rounds, sync_item, clock)),
        (f"sync burst, 100 owners x 1,000 (x{many})",
         lambda m: burst(m, 100, 1000, many, sync_item, clock)),
        (f"async never suspends, 1 x 1,000 (x{rounds})",
         lambda m: burst(m, 1, 1000, rounds, async_never_suspends, clock)),
        (f"async awaits once, 1 x 1,000 (x{rounds})",
         lambda m: burst(m, 1, 1000, rounds, async_awaits_once, clock)),
        # One async work per idle owner (then its latch item): each slice of ours and of
        # the bound makes a task for it, the peer's owner task only wakes.
        (f"async into empty queue, 1,000 x 1 (x{rounds})",
         lambda m: burst(m, 1000, 2, rounds, async_never_suspends, clock)),
        (f"into empty queue, 1,000 owners x 1 (x{rounds})",
         lambda m: burst(m, 1000, 1, rounds, sync_item, clock)),
    ]


def _spread(ratios: list[float]) -> str:
    return f"{statistics.median(ratios):5.2f}x ({min(ratios):.2f}..{max(ratios):.2f})"


async def run(args: argparse.Namespace) -> int:
    reps = 3 if args.quick else args.repeat
    sides = [s for s in args.sides.split(",") if s]
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    wanted = [w for w in args.shapes.split(",") if w]
    print(f"python {sys.version.split()[0]}, {reps} interleaved repetitions, "
          f"sides {', '.join(sides)}, {args.clock} clock{', collector off' if args.no_gc else ''}, "
          f"load average "
          f"{os.getloadavg()[0]:.1f} at the start; ratios = peer time / side time, "
          f"median (min..max)", flush=True)
    gc.collect()
    if args.no_gc:
        gc.disable()
    for name, fn in shapes(args.quick, clock):
        if wanted and not any(w in name for w in wanted):
            continue
        times: dict[str, list[float]] = {s: [] for s in sides}
        for rep in range(reps):
            order = sides[rep % len(sides):] + sides[:rep % len(sides)]
            for side in order:
                times[side].append(await fn(SIDES[side]))
        parts = []
        for side in sides:
            if side == "peer":
                continue
            ratios = [p / t for p, t in zip(times["peer"], times[side], strict=True)]
            parts.append(f"{side}/peer {_spread(ratios)}")
        peer_ms = statistics.median(times["peer"]) * 1e3
        print(f"{name:44s} peer {peer_ms:8.1f} ms  " + "  ".join(parts), flush=True)
    gc.enable()
    n_mem = 5_000 if args.quick else 100_000
    peer_mem = await idle_memory("peer", n_mem, shared=True)
    shared_mem = await idle_memory("ours", n_mem, shared=True)
    alone_mem = await idle_memory("ours", n_mem, shared=False)
    print(f"idle owner x {n_mem:,}: shared runtime {shared_mem:.0f} B, default constructor "
          f"{alone_mem:.0f} B, peer {peer_mem:.0f} B", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeat", type=int, default=11,
                    help="interleaved repetitions (default 11)")
    ap.add_argument("--sides", default="enqueue,post,peer,bound",
                    help="comma-separated sides to run (peer is always needed)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="time with the wall clock (default) or the thread's CPU clock, "
                         "which leaves out the time the process waited for a core on a "
                         "loaded machine")
    ap.add_argument("--no-gc", action="store_true",
                    help="turn the cyclic garbage collector off for the timed runs (a "
                         "diagnosis: how much of a side's time the collector's passes take)")
    ap.add_argument("--shapes", default="",
                    help="run only the shapes whose title contains one of these "
                         "comma-separated words (default: every shape)")
    args = ap.parse_args()
    if "peer" not in args.sides.split(","):
        ap.error("--sides must include peer: every ratio is taken against it")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
