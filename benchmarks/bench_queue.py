"""Throughput and memory of ZLinkSerialExecutionQueue against a Task-per-owner peer.

The peer is the usual asyncio shape: one Task per owner reading its own
``asyncio.Queue`` and running each item. Both sides run the same scenarios in the same
process, interleaved (ours, peer, ours, peer, ...), and the script prints medians and
the ratio peer_time / our_time (above 1 means the serial queue is faster). Absolute
numbers drift between runs on a shared machine; the ratios are what the targets are
about.

    python benchmarks/bench_queue.py            # full sizes
    python benchmarks/bench_queue.py --quick    # small sizes, a smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from typing import Any

from zlink_model.queue import QueueConfig
from zlink_reference import QueueRuntime, ZLinkExecutionLanePolicy, ZLinkSerialExecutionQueue

BIG = ZLinkExecutionLanePolicy(
    application_message_capacity=10_000_000, application_byte_capacity=1 << 60
)


def sync_item() -> None:
    return None


async def async_item() -> None:
    return None


# --------------------------------------------------------------------------- peer
class TaskPerOwner:
    """One asyncio Task per owner, reading an asyncio.Queue (the peer)."""

    __slots__ = ("queue", "task")

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Callable[[], Any]] = asyncio.Queue()
        self.task = asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        q = self.queue
        while True:
            item = await q.get()
            r = item()
            if r is not None:
                await r
            q.task_done()

    def submit(self, item: Callable[[], Any]) -> None:
        self.queue.put_nowait(item)

    async def quiesce(self) -> None:
        await self.queue.join()

    def stop(self) -> None:
        self.task.cancel()


_shared: dict[asyncio.AbstractEventLoop, tuple[QueueRuntime, QueueConfig]] = {}


def _runtime_and_config() -> tuple[QueueRuntime, QueueConfig]:
    loop = asyncio.get_running_loop()
    if loop not in _shared:
        rt = QueueRuntime()
        _shared[loop] = (rt, QueueConfig(BIG, units_per_ms=rt.clock.units_per_ms))
    return _shared[loop]


class Ours:
    """ZLinkSerialExecutionQueue; owners share one runtime and one config, as the queues
    of a coordinator do."""

    __slots__ = ("queue",)

    def __init__(self) -> None:
        rt, config = _runtime_and_config()
        self.queue = ZLinkSerialExecutionQueue(runtime=rt, config=config)

    def submit(self, item: Callable[[], Any]) -> None:
        self.queue.enqueue(item)

    async def quiesce(self) -> None:
        await self.queue.await_quiescence()

    def stop(self) -> None:
        self.queue.close()


Owner = Any


async def burst(
    make: Callable[[], Owner], owners: int, items: int, item: Callable[[], Any]
) -> float:
    qs = [make() for _ in range(owners)]
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    for q in qs:
        submit = q.submit
        for _ in range(items):
            submit(item)
    for q in qs:
        await q.quiesce()
    dt = time.perf_counter() - t0
    for q in qs:
        q.stop()
    await asyncio.sleep(0)
    return dt


async def empty_each_time(make: Callable[[], Owner], owners: int, rounds: int) -> float:
    """Every item lands in an empty queue: submit one per owner, let them all run."""
    qs = [make() for _ in range(owners)]
    await asyncio.sleep(0)
    t0 = time.perf_counter()
    for _ in range(rounds):
        for q in qs:
            q.submit(sync_item)
        for q in qs:
            await q.quiesce()
    dt = time.perf_counter() - t0
    for q in qs:
        q.stop()
    await asyncio.sleep(0)
    return dt


async def idle_memory(side: str, owners: int) -> float:
    """Bytes per idle owner: owners that each ran one work and are idle again. Only
    each side's own structures are counted (no benchmark wrapper objects): ours, a
    ZLinkSerialExecutionQueue sharing its runtime and config with the others, as a
    coordinator's queues do; the peer, an asyncio.Queue and the Task reading it."""
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    if side == "ours":
        rt, config = _runtime_and_config()
        queues = [ZLinkSerialExecutionQueue(runtime=rt, config=config) for _ in range(owners)]
        for q in queues:
            q.enqueue(sync_item)
        for q in queues:
            await q.await_quiescence()
        keep: list[Any] = queues
    else:
        peers = [TaskPerOwner() for _ in range(owners)]
        for p in peers:
            p.submit(sync_item)
        for p in peers:
            await p.quiesce()
        keep = [(p.queue, p.task) for p in peers]
        del peers
    await asyncio.sleep(0)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    if side != "ours":
        for _, task in keep:
            task.cancel()
    del keep
    await asyncio.sleep(0)
    return used / owners


Scenario = tuple[str, Callable[[Callable[[], Owner]], Awaitable[float]], str]


def scenarios(scale: float) -> list[Scenario]:
    n1 = int(200_000 * scale)
    n2 = max(1, int(200 * scale))
    owners = 1000
    return [
        (f"sync burst 1 x {n1:,}", lambda m: burst(m, 1, n1, sync_item), "time"),
        (f"sync burst {owners:,} x {n2:,}", lambda m: burst(m, owners, n2, sync_item), "time"),
        (f"async burst 1 x {n1:,}", lambda m: burst(m, 1, n1, async_item), "time"),
        (f"async burst {owners:,} x {n2:,}", lambda m: burst(m, owners, n2, async_item), "time"),
        (f"into empty queue {owners:,} x {n2:,}",
         lambda m: empty_each_time(m, owners, n2), "time"),
    ]


async def run(args: argparse.Namespace) -> int:
    scale = 0.05 if args.quick else 1.0
    reps = 3 if args.quick else args.repeat
    rows = []
    for name, fn, _ in scenarios(scale):
        ours: list[float] = []
        peer: list[float] = []
        for _ in range(reps):
            ours.append(await fn(Ours))
            peer.append(await fn(TaskPerOwner))
        mo, mp = statistics.median(ours), statistics.median(peer)
        rows.append((name, mo, mp, mp / mo))
        print(f"{name:32s} ours {mo*1e3:9.1f} ms   peer {mp*1e3:9.1f} ms   ratio {mp/mo:5.2f}x",
              flush=True)
    n_mem = 5_000 if args.quick else 100_000
    mem_ours = await idle_memory("ours", n_mem)
    mem_peer = await idle_memory("peer", n_mem)
    print(f"{'idle owner memory x ' + format(n_mem, ','):32s} ours {mem_ours:9.0f} B    "
          f"peer {mem_peer:9.0f} B    ratio {mem_peer/mem_ours:5.2f}x", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeat", type=int, default=5, help="interleaved repetitions (default 5)")
    args = ap.parse_args()
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
