"""PerActor vs SpotWide throughput, and memory per idle Actor queue, next to the
Task-per-owner peer measured in the same run.

    python benchmarks/bench_coordinators.py            # 100 actors x 200, 100,000 actors
    python benchmarks/bench_coordinators.py --quick    # small sizes

Throughput: every actor of one Spot gets ``items`` synchronous works through
``execute_actor``; the time runs until the Spot is quiescent. The peer runs the same
number of owners and items as one Task per owner reading an ``asyncio.Queue``, and
learns the end the same way as the queue benchmark (the last item of each owner counts
down a latch). Runs are interleaved; ratios are peer_time / our_time (above 1: the Spot
is faster), median and (min..max) over the repetitions. Memory: ``actors`` Actors each run
one work in one PerActor Spot and are idle again; bytes per Actor queue, map entries
included, actor ids excluded (they exist before the Spot).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import tracemalloc

from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
)

from bench_queue import Latch, Peer, sync_item

BIG = ZLinkExecutionLanePolicy(
    application_message_capacity=10_000_000, application_byte_capacity=1 << 60
)


async def spot_run(mode: ZLinkUserSpotExecutionMode, actors: list[str], items: int) -> float:
    spot = ZLinkSpotSerialExecutor("bench", mode=mode, policy=BIG, actor_policy=BIG)
    latch = Latch(len(actors))
    t0 = time.perf_counter()
    execute = spot.execute_actor
    for actor in actors:
        for _ in range(items - 1):
            execute(actor, sync_item)
        execute(actor, latch.down)
    await latch.fut
    dt = time.perf_counter() - t0
    await spot.await_quiescence()
    spot.close()
    return dt


async def peer_run(owners: int, items: int) -> float:
    peers = [Peer() for _ in range(owners)]
    await asyncio.sleep(0)
    latch = Latch(owners)
    t0 = time.perf_counter()
    for p in peers:
        submit = p.submitter()
        for _ in range(items - 1):
            submit(sync_item)
        submit(latch.down)
    await latch.fut
    dt = time.perf_counter() - t0
    for p in peers:
        p.stop()
    await asyncio.sleep(0)
    return dt


async def actor_queue_memory(n: int) -> float:
    actors = [f"actor-{i}" for i in range(n)]
    spot = ZLinkSpotSerialExecutor("mem", mode=ZLinkUserSpotExecutionMode.PER_ACTOR)
    gc.collect()
    tracemalloc.start()
    base = tracemalloc.get_traced_memory()[0]
    for actor in actors:
        spot.execute_actor(actor, sync_item)
    await spot.await_quiescence()
    await asyncio.sleep(0)
    gc.collect()
    used = tracemalloc.get_traced_memory()[0] - base
    tracemalloc.stop()
    spot.close()
    return used / n


async def run(args: argparse.Namespace) -> int:
    owners, items = (100, 20) if args.quick else (100, 200)
    reps = 3 if args.quick else args.repeat
    actors = [f"a{i}" for i in range(owners)]
    per, wide, peer = [], [], []
    for _ in range(reps):
        per.append(await spot_run(ZLinkUserSpotExecutionMode.PER_ACTOR, actors, items))
        wide.append(await spot_run(ZLinkUserSpotExecutionMode.SPOT_WIDE, actors, items))
        peer.append(await peer_run(owners, items))
    mp, mw, mk = statistics.median(per), statistics.median(wide), statistics.median(peer)
    label = f"{owners:,} actors x {items:,}"
    n = owners * items
    for name, times, med in (("PerActor", per, mp), ("SpotWide", wide, mw)):
        ratios = [k / t for k, t in zip(peer, times, strict=True)]
        print(f"{name + ' ' + label:34s} {med * 1e3:9.1f} ms ({med / n * 1e6:5.1f} us/item)"
              f"   peer/ours {statistics.median(ratios):5.2f}x "
              f"({min(ratios):.2f}..{max(ratios):.2f})", flush=True)
    print(f"{'Task-per-owner peer ' + label:34s} {mk * 1e3:9.1f} ms", flush=True)
    n_mem = 5_000 if args.quick else 100_000
    mem = await actor_queue_memory(n_mem)
    print(f"{'idle Actor queue x ' + format(n_mem, ','):34s} {mem:9.0f} B    (target <= 512 B)",
          flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeat", type=int, default=7, help="interleaved repetitions (default 7)")
    return asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
