"""Async works: this checkout's queue against the Task-per-owner peer and, with
``--against REV``, against the queue shell of another git revision, all in one process,
interleaved (the order rotates every repetition).

Shapes (as in ``bench_queue.py``): 1 owner x 1,000 async works that never suspend, that
await once (``asyncio.sleep(0)``), and 1,000 idle owners x 1 async work (each slice
makes its drive task). Sides: ``enqueue`` and ``post`` of this checkout, the same of REV
(``enqueue@REV``, ``post@REV``: REV's ``zlink_reference`` package loaded beside this one,
over this checkout's model), and ``peer``. Printed: peer time / side time, median
(min..max). ``--clock cpu`` times with the thread's CPU clock instead of the wall clock:
on a loaded machine it leaves out the time the process waited for a core.

``--count`` prints, instead of times, the Python calls and bytecodes each side spends
per item (``sys.settrace`` over one burst): deterministic, so a change to the per-item
path can be read off exactly, whatever the machine's load.

    python benchmarks/bench_async.py --repeat 15 --clock cpu --against main
    python benchmarks/bench_async.py --count --against main
    python benchmarks/bench_async.py --quick
"""

from __future__ import annotations

import argparse
import asyncio
import importlib
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from io import BytesIO
from pathlib import Path
from types import FrameType
from typing import Any

from zlink_model.queue import QueueConfig

from bench_queue import BIG, Peer, async_awaits_once, async_never_suspends, burst, sync_item

ROOT = Path(__file__).resolve().parent.parent
Item = Callable[[], Any]


def load_revision(rev: str, into: Path) -> Any:
    """The ``_shell.queue`` module of ``rev``'s ``zlink_reference``, imported as a package
    of its own (``zlink_reference_at``) so it runs beside this checkout's."""
    blob = subprocess.run(["git", "-C", str(ROOT), "archive", rev, "reference/zlink_reference"],
                          check=True, capture_output=True).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    (into / "reference" / "zlink_reference").rename(into / "zlink_reference_at")
    sys.path.insert(0, str(into))
    return importlib.import_module("zlink_reference_at._shell.queue")


def side(module: Any, how: str) -> Callable[[], Any]:
    """Owners of ``module``'s queue sharing one runtime and config (as a coordinator's
    queues do), submitting with ``enqueue`` or ``post``."""
    shared: dict[asyncio.AbstractEventLoop, tuple[Any, QueueConfig]] = {}

    class Side:
        __slots__ = ("queue",)

        def __init__(self) -> None:
            loop = asyncio.get_running_loop()
            if loop not in shared:
                rt = module.QueueRuntime()
                shared[loop] = (rt, QueueConfig(BIG, units_per_ms=rt.clock.units_per_ms))
            rt, config = shared[loop]
            self.queue = module.ZLinkSerialExecutionQueue(runtime=rt, config=config)

        def submitter(self) -> Callable[[Item], None]:
            return getattr(self.queue, how)  # type: ignore[no-any-return]

        def stop(self) -> None:
            self.queue.close()

    return Side


def shapes(quick: bool, sync: bool = False) -> list[tuple[str, int, int, int, Item]]:
    rounds = 3 if quick else 20
    # --sync: bench_queue's synchronous bursts too, for an A/B of the drain's sync path.
    extra: list[tuple[str, int, int, int, Item]] = [
        ("sync burst, 1 x 1,000", 1, 1000, rounds, sync_item),
        ("sync burst, 100 x 100", 100, 100, max(1, rounds // 4), sync_item),
    ] if sync else []
    return [*extra,
        ("async never suspends, 1 x 1,000", 1, 1000, rounds, async_never_suspends),
        ("async awaits once, 1 x 1,000", 1, 1000, rounds, async_awaits_once),
        ("async into empty queue, 1,000 x 1", 1000, 2, max(1, rounds // 4),
         async_never_suspends),
    ]


def counted(make: Callable[[], Any], owners: int, per_owner: int,
            item: Item) -> tuple[float, float]:
    """Python calls (frame starts and resumptions) and bytecodes per item of one burst."""
    calls = ops = 0

    def tracer(frame: FrameType, event: str, _arg: Any) -> Any:
        nonlocal calls, ops
        if event == "call":
            calls += 1
            frame.f_trace_opcodes = True
        elif event == "opcode":
            ops += 1
        return tracer

    async def run() -> None:
        await burst(make, owners, per_owner, 1, item, time.perf_counter)  # warm up
        sys.settrace(tracer)
        try:
            await burst(make, owners, per_owner, 1, item, time.perf_counter)
        finally:
            sys.settrace(None)

    asyncio.run(run())
    n = owners * per_owner
    return calls / n, ops / n


async def timed(args: argparse.Namespace, sides: dict[str, Callable[[], Any]]) -> None:
    clock = time.thread_time if args.clock == "cpu" else time.perf_counter
    reps = 3 if args.quick else args.repeat
    names = list(sides)
    print(f"python {sys.version.split()[0]}, {reps} interleaved repetitions, {args.clock} "
          f"clock; ratios = peer time / side time, median (min..max)", flush=True)
    for title, owners, per_owner, rounds, item in shapes(args.quick, args.sync):
        times: dict[str, list[float]] = {s: [] for s in names}
        for rep in range(reps):
            for s in names[rep % len(names):] + names[:rep % len(names)]:
                times[s].append(await burst(sides[s], owners, per_owner, rounds, item, clock))
        parts = []
        for s in names:
            if s != "peer":
                r = [p / t for p, t in zip(times["peer"], times[s], strict=True)]
                parts.append(f"{s} {statistics.median(r):.2f}x ({min(r):.2f}..{max(r):.2f})")
        print(f"{title:36s} peer {statistics.median(times['peer']) * 1e3:7.1f} ms  "
              + "  ".join(parts), flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small sizes, 3 repetitions")
    ap.add_argument("--repeat", type=int, default=11, help="interleaved repetitions")
    ap.add_argument("--clock", choices=("wall", "cpu"), default="wall")
    ap.add_argument("--against", metavar="REV", help="also time REV's queue shell")
    ap.add_argument("--sync", action="store_true",
                    help="also the synchronous bursts of bench_queue (1 and 100 owners)")
    ap.add_argument("--count", action="store_true",
                    help="print Python calls and bytecodes per item instead of times")
    args = ap.parse_args()
    here = importlib.import_module("zlink_reference._shell.queue")
    sides: dict[str, Callable[[], Any]] = {
        "peer": Peer, "enqueue": side(here, "enqueue"), "post": side(here, "post")}
    with tempfile.TemporaryDirectory() as tmp:
        if args.against:
            there = load_revision(args.against, Path(tmp))
            sides[f"enqueue@{args.against}"] = side(there, "enqueue")
            sides[f"post@{args.against}"] = side(there, "post")
        if args.count:
            for title, owners, per_owner, _rounds, item in shapes(True, args.sync):
                print(title)
                for name, make in sides.items():
                    calls, ops = counted(make, owners, per_owner, item)
                    print(f"    {name:16s} {calls:5.1f} Python calls  "
                          f"{ops:6.1f} bytecodes per item")
            return 0
        asyncio.run(timed(args, sides))
    return 0


if __name__ == "__main__":
    sys.exit(main())
