"""D-11 at the very end: a work suspended on an external call that never answers, whose
loop is dropped without cancelling it (as a runtime end abandons what is left, SD-5).
Python then closes the work's coroutine with ``GeneratorExit``; the yield must let that
through untouched. It did not: the yield caught it as the external call's failure,
queued a resume, awaited again inside the closing coroutine, and the drain then tried
to finish a work that did not hold the turn (``ZLinkProtocolError`` reported as an
unraisable exception); the reliability bar's teardown showed it."""

from __future__ import annotations

import asyncio
import gc
import sys
from typing import Any

from zlink_reference import ZLinkSerialExecutionQueue, yield_framework_call


def test_D_11_an_abandoned_suspended_work_is_closed_quietly() -> None:
    unraisable: list[Any] = []
    old_hook = sys.unraisablehook
    sys.unraisablehook = unraisable.append
    try:
        loop = asyncio.new_event_loop()

        async def setup() -> None:
            q = ZLinkSerialExecutionQueue(name="q")

            async def work() -> None:
                await yield_framework_call(asyncio.get_running_loop().create_future())

            q.enqueue(work)
            for _ in range(20):
                await asyncio.sleep(0)
            assert q.statistics().suspended == 1

        loop.run_until_complete(setup())
        loop.close()  # the suspended work's task is left pending, as at an abandoned end
        del loop
        for _ in range(3):
            gc.collect()
    finally:
        sys.unraisablehook = old_hook
    assert [u for u in unraisable if u.exc_type is not None] == []
