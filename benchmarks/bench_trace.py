"""How long TLC takes to validate a recorded event log (zlink trace check --tlc).

    python benchmarks/bench_trace.py                 # a 10,000-event log
    python benchmarks/bench_trace.py --events 2000

The log is recorded from the reference runtime under a random workload (sync works,
works that stay busy on the virtual clock, lifecycle and barrier-next work, works that
yield on external calls completed later, rejections at the capacity limits), then
checked by TLC against models/SerialQueue.tla. Prints events, model works, TLC seconds
and the verdict. The target is <= 10 s for 10,000 events on this 2-core machine.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import time
from pathlib import Path
from typing import Any

from zlink_reference import (
    ZLinkExecutionLanePolicy,
    ZLinkRejectedError,
    ZLinkSerialExecutionQueue,
    yield_framework_call,
)
from zlink_reference.testing import TraceRecorder, VirtualClock, run_until_idle
from zlink_tool.tla.trace import build_trace_model, check_with_tlc

ROOT = Path(__file__).resolve().parent.parent
POLICY = ZLinkExecutionLanePolicy(application_message_capacity=6,
                                  lifecycle_message_capacity=3, owner_time_budget_ms=10)


async def record(n: int, seed: int) -> list[dict[str, Any]]:
    """A log of at least ``n`` events of one queue under a random workload."""
    rnd = random.Random(seed)
    rec = TraceRecorder()
    clock = VirtualClock()
    q = ZLinkSerialExecutionQueue(POLICY, name="q", clock=clock, observer=rec,
                                  error_hook=lambda e, h: None)
    loop = asyncio.get_running_loop()
    pending: list[asyncio.Future[None]] = []

    async def yielding(fut: asyncio.Future[None]) -> None:
        await yield_framework_call(fut)

    while len(rec) < n:
        r = rnd.random()
        try:
            if r < 0.4:
                q.enqueue(lambda: clock.advance(rnd.choice([0, 0, 3, 7])))
            elif r < 0.5:
                q.enqueue_lifecycle(lambda: None)
            elif r < 0.55:
                q.enqueue_barrier_next(lambda: None)
            elif r < 0.7:
                fut = loop.create_future()
                pending.append(fut)
                q.enqueue_with_payload_bytes(lambda f=fut: yielding(f), rnd.randint(0, 100))
        except ZLinkRejectedError:
            pass
        if r > 0.8 and pending:
            pending.pop(rnd.randrange(len(pending))).set_result(None)
        if rnd.random() < 0.3:
            await run_until_idle()
    for fut in pending:
        fut.set_result(None)
    await run_until_idle()
    return [e.to_json() for e in rec]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--events", type=int, default=10_000, help="log length (default 10,000)")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    events = asyncio.run(record(args.events, args.seed))
    model = build_trace_model(events, POLICY)
    works = model.works
    t0 = time.monotonic()
    verdict = check_with_tlc(events, POLICY, ROOT / "models")
    total = time.monotonic() - t0
    outcome = ("matched" if verdict.matched
               else f"NOT matched at event {verdict.first_unmatched}")
    print(f"events {len(events):,}  model works {works}  TLC {verdict.seconds:.1f} s "
          f"(with module generation {total:.1f} s)  {outcome}")
    return 0 if verdict.matched else 1


if __name__ == "__main__":
    sys.exit(main())
