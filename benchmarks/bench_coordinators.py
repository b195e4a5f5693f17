"""PerActor vs SpotWide throughput, and memory per idle Actor queue, next to the
Task-per-owner peer measured in the same run.

    python benchmarks/bench_coordinators.py            # 100 actors x 200, 100,000 actors
    python benchmarks/bench_coordinators.py --quick    # small sizes
    python benchmarks/bench_coordinators.py --against main   # and main's coordinators

Throughput: every actor of one Spot gets ``items`` synchronous works through
``execute_actor``, until the last work of every actor ran. Beside the two Spot modes:
one ``ZLinkActorSerialExecutor`` per actor (``execute_actor`` on each), and the bare
queue (``enqueue`` on one queue per actor, sharing one runtime as a Spot's queues do),
which is the ceiling for an entry that hands out a handle: what a coordinator adds per
message is the difference. The peer runs the same number of owners and items as one
Task per owner reading an ``asyncio.Queue``; every side learns the end the same way as
the queue benchmark (the last item of each owner counts down a latch). ``--against REF``
adds the three coordinator sides once more with the coordinators of git revision REF
(its ``coordinators/`` package loaded beside this one, over this tree's shell and model),
so a change to the coordinators is measured against what it replaces in the same run;
each such pair also prints REF time / this tree's time. Sides are
interleaved, the order rotating every repetition; ratios are peer_time / side_time
(above 1: the side is faster), median and (min..max) over the repetitions. Memory:
``actors`` Actors each run one work in one Spot (of each mode) and are idle again; bytes
per Actor, queue, route and map entry included, actor ids excluded (they exist before
the Spot).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import importlib.util
import os
import statistics
import subprocess
import sys
import tempfile
import time
import tracemalloc
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import ModuleType

from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkUserSpotExecutionMode,
)
from zlink_reference import coordinators as this_tree

from bench_queue import Enqueue, Latch, Peer, burst, sync_item

BIG = ZLinkExecutionLanePolicy(
    application_message_capacity=10_000_000, application_byte_capacity=1 << 60
)


COORDINATORS = "reference/zlink_reference/coordinators"


def coordinators_at(ref: str) -> ModuleType:
    """The coordinators package of git revision ``ref``, loaded from a copy of its files
    as ``zlink_reference.coordinators_at_ref``: its relative imports reach this tree's
    shell and model."""
    root = Path(__file__).resolve().parent.parent
    git = ["git", "-C", str(root)]
    names = subprocess.run([*git, "ls-tree", "--name-only", f"{ref}:{COORDINATORS}"],
                           check=True, capture_output=True, text=True).stdout.split()
    with tempfile.TemporaryDirectory(prefix="bench-coordinators-") as tmp:
        folder = Path(tmp)
        for name in names:
            if name.endswith(".py"):
                text = subprocess.run([*git, "show", f"{ref}:{COORDINATORS}/{name}"],
                                      check=True, capture_output=True, text=True).stdout
                (folder / name).write_text(text)
        spec = importlib.util.spec_from_file_location(
            "zlink_reference.coordinators_at_ref", folder / "__init__.py",
            submodule_search_locations=[str(folder)])
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module
        spec.loader.exec_module(module)  # imports every module of the package
    return module


Clock = Callable[[], float]


async def spot_run(mode: ZLinkUserSpotExecutionMode, actors: list[str], items: int,
                   pkg: ModuleType = this_tree, clock: Clock = time.perf_counter) -> float:
    spot = pkg.ZLinkSpotSerialExecutor("bench", mode=pkg.ZLinkUserSpotExecutionMode(mode.value),
                                       policy=BIG, actor_policy=BIG)
    latch = Latch(len(actors))
    t0 = clock()
    execute = spot.execute_actor
    for actor in actors:
        for _ in range(items - 1):
            execute(actor, sync_item)
        execute(actor, latch.down)
    await latch.fut
    dt = clock() - t0
    await spot.await_quiescence()
    spot.close()
    return dt


async def actor_run(actors: list[str], items: int, pkg: ModuleType = this_tree,
                    clock: Clock = time.perf_counter) -> float:
    executors = [pkg.ZLinkActorSerialExecutor(a, policy=BIG) for a in actors]
    latch = Latch(len(actors))
    t0 = clock()
    for ex in executors:
        execute = ex.execute_actor
        for _ in range(items - 1):
            execute(sync_item)
        execute(latch.down)
    await latch.fut
    dt = clock() - t0
    for ex in executors:
        ex.close()
    return dt


async def actor_queue_memory(n: int, mode: ZLinkUserSpotExecutionMode) -> float:
    actors = [f"actor-{i}" for i in range(n)]
    spot = this_tree.ZLinkSpotSerialExecutor("mem", mode=mode)
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


def _spread(num: list[float], den: list[float]) -> str:
    """Median and (min..max) of the per-repetition ratios num / den."""
    ratios = [a / b for a, b in zip(num, den, strict=True)]
    return f"{statistics.median(ratios):5.2f}x ({min(ratios):.2f}..{max(ratios):.2f})"


Side = Callable[[list[str], int], Awaitable[float]]


def sides(against: str | None, clock: Clock = time.perf_counter) -> dict[str, Side]:
    per, wide = ZLinkUserSpotExecutionMode.PER_ACTOR, ZLinkUserSpotExecutionMode.SPOT_WIDE
    table: dict[str, Side] = {
        "Spot PerActor": lambda a, n: spot_run(per, a, n, this_tree, clock),
        "Spot SpotWide": lambda a, n: spot_run(wide, a, n, this_tree, clock),
        "Actor executors": lambda a, n: actor_run(a, n, this_tree, clock),
        # bench_queue's burst, one round: the bare queues share one runtime and config
        # (Enqueue), as a Spot's queues do; the peer is one Task per owner.
        "bare queue (enqueue)": lambda a, n: burst(Enqueue, len(a), n, 1, sync_item, clock),
        "peer": lambda a, n: burst(Peer, len(a), n, 1, sync_item, clock),
    }
    if against is not None:
        ref = coordinators_at(against)
        table[f"Spot PerActor @{against}"] = lambda a, n: spot_run(per, a, n, ref, clock)
        table[f"Spot SpotWide @{against}"] = lambda a, n: spot_run(wide, a, n, ref, clock)
        table[f"Actor executors @{against}"] = lambda a, n: actor_run(a, n, ref, clock)
    return table


async def run(args: argparse.Namespace) -> int:
    owners, items = (100, 20) if args.quick else (100, 200)
    reps = 3 if args.quick else args.repeat
    actors = [f"a{i}" for i in range(owners)]
    table = sides(args.against, time.thread_time if args.clock == "cpu" else time.perf_counter)
    names = list(table)
    times: dict[str, list[float]] = {name: [] for name in names}
    load = os.getloadavg()
    for rep in range(reps):
        for name in names[rep % len(names):] + names[:rep % len(names)]:
            times[name].append(await table[name](actors, items))
    label = f"{owners:,} actors x {items:,}"
    n = owners * items
    print(f"python {sys.version.split()[0]}, {reps} interleaved repetitions, {args.clock} "
          f"clock, load average {load[0]:.2f} at the start; ratios = peer time / side time, "
          "median (min..max)",
          flush=True)
    for name in names:
        med = statistics.median(times[name])
        line = f"{name + ' ' + label:48s} {med * 1e3:9.1f} ms ({med / n * 1e6:5.1f} us/item)"
        if name != "peer":
            line += f"   peer/side {_spread(times['peer'], times[name])}"
        base = f"{name} @{args.against}"
        if base in times:
            line += f"   @{args.against}/this {_spread(times[base], times[name])}"
        print(line, flush=True)
    n_mem = 5_000 if args.quick else 100_000
    for mode in ZLinkUserSpotExecutionMode:
        mem = await actor_queue_memory(n_mem, mode)
        print(f"{'idle Actor queue x ' + format(n_mem, ',') + ', ' + mode.value:48s} "
              f"{mem:9.0f} B    (target <= 512 B)", flush=True)
    return 0


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--quick", action="store_true", help="small sizes (a smoke run)")
    ap.add_argument("--repeat", type=int, default=7, help="interleaved repetitions (default 7)")
    ap.add_argument("--against", metavar="REF", default=None,
                    help="also run the coordinators of this git revision (e.g. main)")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall",
                    help="cpu: time with the thread's CPU clock, which leaves out the time "
                         "the process waited for a core (a loaded machine)")
    return asyncio.run(run(ap.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
