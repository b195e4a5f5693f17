"""One shape of work through one default queue, for ``bench_ab.py`` to time in two
checkouts: whichever ``zlink_reference`` is first on the path runs it.

    python benchmarks/bench_ab.py --base ../other -- python $PWD/benchmarks/ab_shape.py post 500000

(an absolute path, so the other checkout, which may not have this file, runs this one
over its own packages). ``N`` works are submitted 1,000 at a time, each batch awaited
with ``await_quiescence``; the shapes are ``post`` and ``enqueue`` (a synchronous work
that counts) and ``async`` (``enqueue`` of a coroutine that awaits ``asyncio.sleep(0)``
once). Prints the CPU seconds the run took (``time.process_time``), which a loaded
machine distorts far less than the wall time ``bench_ab.py`` reads.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time

from zlink_reference import ZLinkSerialExecutionQueue

SHAPES = ("post", "enqueue", "async")


async def run(shape: str, n: int) -> int:
    """Push ``n`` works of ``shape`` through one default queue; how many ran."""
    queue = ZLinkSerialExecutionQueue()
    count = [0]

    def work() -> None:
        count[0] += 1

    async def async_work() -> None:
        await asyncio.sleep(0)
        count[0] += 1

    for _ in range(n // 1000):
        if shape == "post":
            for _ in range(1000):
                queue.post(work)
        elif shape == "enqueue":
            for _ in range(1000):
                queue.enqueue(work)
        else:
            for _ in range(1000):
                queue.enqueue(async_work)
        await queue.await_quiescence()
    return count[0]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("shape", choices=SHAPES, help="what each work is and how it is submitted")
    ap.add_argument("n", type=int, help="how many works (a multiple of 1,000)")
    args = ap.parse_args()
    if args.n < 1000 or args.n % 1000:
        ap.error(f"n must be a positive multiple of 1,000, got {args.n}")
    started = time.process_time()
    ran = asyncio.run(run(args.shape, args.n))
    if ran != args.n:
        print(f"ab_shape: {ran} of {args.n} works ran", file=sys.stderr)
        return 1
    print(f"{time.process_time() - started:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
