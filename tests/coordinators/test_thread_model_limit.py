"""D-24, its limit: an owner made on one thread while its loop runs, or will run, on
another. Calls from the making thread are foreign once the loop runs, so they are
carried to the loop; before the loop runs, the making thread sets the owner up directly.

Before the fix the making thread kept the entry points' fast path ("this thread made
the owner, so it is the loop's") after the loop had started on another thread: its
``execute_timer`` changed the Spot's maps off the loop, and the SE-8.1 lane check
raised ``ZLinkNotOnLaneError`` (with the checks off it would have raced the loop).
"""

from __future__ import annotations

import asyncio
import threading

from zlink_reference import (
    ZLinkClosedError,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
)

JOIN_S = 30.0


def test_D_24_an_owner_made_before_its_loop_runs_on_another_thread() -> None:
    loop = asyncio.new_event_loop()
    loop.set_debug(True)
    errors: list[object] = []
    loop.set_exception_handler(lambda _l, ctx: errors.append(ctx))
    spot = ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR, loop=loop)
    ran: list[tuple[str, int]] = []
    # Setup before the loop runs anywhere: the making thread changes the owner directly.
    early = spot.execute_actor("a", lambda: ran.append(("early", threading.get_ident())))
    runner = threading.Thread(target=loop.run_forever)
    runner.start()
    try:
        # Now the loop runs on another thread: the same calls are foreign, carried to it,
        # and still answered here with their verdict.
        late = spot.execute_timer("t", lambda: ran.append(("late", threading.get_ident())))
        stats = spot.statistics()  # one view, taken on the loop
        assert len(stats) >= 2, stats  # at least the Actor's and the timer's queue
        asyncio.run_coroutine_threadsafe(spot.await_quiescence(), loop).result(JOIN_S)
        assert early.outcome() == "completed" and late.outcome() == "completed"
        assert {who for who, _ in ran} == {"early", "late"}
        assert {tid for _, tid in ran} == {runner.ident}  # works ran on the loop's thread
        spot.close()
        try:
            spot.execute_spot(lambda: None)
        except ZLinkClosedError:
            pass
        else:
            raise AssertionError("a closed Spot accepted work")
        assert spot.timer_names() == [] and spot.actor_ids() == []
    finally:
        loop.call_soon_threadsafe(loop.stop)
        runner.join(JOIN_S)
        loop.close()
    assert not errors, errors
