"""SE-8.1 (decision D-25): every place that assumes it runs serialized checks it.

Each check site is called from the wrong place and must raise ``ZLinkNotOnLaneError``:
the shell's loop-thread sites from another OS thread (and from another thread's loop),
the coordinators' lane-owned sites on the loop but outside a turn of the state lane.
The checks are on in every test (tests/conftest.py); one test shows the switch.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from zlink_reference import (
    ZLinkNotOnLaneError,
    ZLinkReentrancyError,
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
    ZLinkWorkHandle,
    ownership_checks,
    set_ownership_checks,
)
from zlink_reference.testing import run_until_idle

from coordinator_errors import unexpected_errors


def hook(exc: BaseException, handle: Any) -> None:
    unexpected_errors.append(exc)


def _queue() -> ZLinkSerialExecutionQueue:
    return ZLinkSerialExecutionQueue(name="q", error_hook=hook)


def _spot() -> ZLinkSpotSerialExecutor:
    return ZLinkSpotSerialExecutor("S", mode=ZLinkUserSpotExecutionMode.PER_ACTOR,
                                   error_hook=hook)


def _session() -> ZLinkSessionSerialExecutor:
    return ZLinkSessionSerialExecutor("s", error_hook=hook)


def _none() -> None:
    return None


def _handle(queue: Any) -> ZLinkWorkHandle[Any]:
    """A handle for a work accepted by ``queue`` (not placed anywhere)."""
    return ZLinkWorkHandle(queue._rt, queue._core, _none)


# Sites that assume the owner's loop thread (the single mutator, D-7): (id, make the
# owner on the loop, call the site).
LOOP_SITES: list[tuple[str, Callable[[], Any], Callable[[Any], Any]]] = [
    ("queue.drain", _queue, lambda q: q._drain()),
    ("queue.continue", _queue, lambda q: q._continue()),
    ("queue.transfer", _queue, lambda q: q._transfer(_handle(q))),
    ("queue.transfer_record", _queue, lambda q: q._transfer_record(_handle(q))),
    ("queue.take_queued", _queue, lambda q: q._take_queued()),
    ("queue.when", _queue, lambda q: q._when(True, _none)),
    ("queue.wait_until", _queue, lambda q: asyncio.run(q._wait_until(True))),
    ("queue.scope_cancel", _queue, lambda q: q._scope_cancel(expire=False)),
    ("queue.held_done", _queue, lambda q: q._held_done(_handle(q),
                                                        _handle(q))),
    ("scope.expire", _spot, lambda s: s._scope().expire()),
    ("scope.warn_zombies", _spot, lambda s: s._scope().warn_zombies()),
    ("session.place_final", _session,
     lambda s: s._place_final(_handle(s._queue))),
    ("session.cancel_final", _session, lambda s: s._scope_cancelling()),
]

# Sites that change state owned by a coordinator's state lane (SE-2.4).
LANE_SITES: list[tuple[str, Callable[[], Any], Callable[[Any], Any]]] = [
    ("spot.actor_queue_map", _spot, lambda s: s._actor_queue("a")),
    ("spot.timer_queue_map", _spot, lambda s: s._timer_queue("t")),
    ("spot.drop_maps", _spot, lambda s: s._drop_maps()),
    ("coordinator.close_queues", _spot, lambda s: s._close_queues()),
    ("session.close_queues", _session, lambda s: s._close_queues()),
]


def _from_thread(fn: Callable[[], Any]) -> BaseException | None:
    box: list[BaseException | None] = []

    def body() -> None:
        try:
            fn()
        except BaseException as exc:
            box.append(exc)
        else:
            box.append(None)

    t = threading.Thread(target=body)
    t.start()
    t.join(30)
    assert box, "the call did not return"
    return box[0]


@pytest.mark.parametrize(("site", "make", "call"), LOOP_SITES, ids=[s[0] for s in LOOP_SITES])
async def test_SE_8_1_loop_thread_site_called_from_another_thread_raises(
        site: str, make: Callable[[], Any], call: Callable[[Any], Any]) -> None:
    owner = make()
    err = _from_thread(lambda: call(owner))
    assert isinstance(err, ZLinkNotOnLaneError), f"{site}: {err!r}"
    assert "SE-8.1" in str(err)
    await run_until_idle()


@pytest.mark.parametrize(("site", "make", "call"), LANE_SITES, ids=[s[0] for s in LANE_SITES])
async def test_SE_8_1_lane_site_called_outside_a_lane_turn_raises(
        site: str, make: Callable[[], Any], call: Callable[[Any], Any]) -> None:
    owner = make()
    with pytest.raises(ZLinkNotOnLaneError, match=r"SE-8\.1"):
        call(owner)
    err = _from_thread(lambda: call(owner))  # another thread is outside every turn too
    assert isinstance(err, ZLinkNotOnLaneError), f"{site}: {err!r}"
    owner.close()  # the sites work in the turns their callers give them
    await run_until_idle()
    assert owner.closed


async def test_SE_8_1_lane_turn_refuses_reentry_whatever_the_switch_says() -> None:
    """The lane's throw_if_reentrant stays on in release: a re-entered turn never ends."""
    spot = _spot()
    previous = set_ownership_checks(False)
    try:
        with pytest.raises(ZLinkReentrancyError):
            spot._lane.run(spot.close)
    finally:
        set_ownership_checks(previous)
    assert not spot.closed


@pytest.fixture
def checks_off() -> Iterator[None]:
    previous = set_ownership_checks(False)
    yield
    set_ownership_checks(previous)


@pytest.mark.usefixtures("checks_off")
async def test_SE_8_1_switched_off_the_loop_checks_raise_nothing() -> None:
    """Off (an optimized run), the loop-thread checks are skipped: a site called from
    another thread is not refused by the check (it still must not be called there)."""
    assert not ownership_checks()
    q = ZLinkSerialExecutionQueue(name="q")
    assert _from_thread(q._take_queued) is None
    await run_until_idle()


@pytest.mark.usefixtures("checks_off")
@pytest.mark.parametrize(("site", "make", "call"), LANE_SITES, ids=[s[0] for s in LANE_SITES])
async def test_SE_8_1_lane_map_checks_stay_on_whatever_the_switch_says(
        site: str, make: Callable[[], Any], call: Callable[[Any], Any]) -> None:
    """D-25: the Spot maps and the closing of a coordinator's queues have a history of
    being changed off their lane (D-24: ``execute_timer`` from an OS thread made a timer
    queue after ``close()`` had emptied the maps). The seed keeps the check in release
    for such components, so the switch does not reach these sites."""
    assert not ownership_checks()
    owner = make()
    with pytest.raises(ZLinkNotOnLaneError, match=r"SE-8\.1"):
        call(owner)
    owner.close()
    await run_until_idle()


@pytest.mark.parametrize(("env", "flags", "expected"), [
    ({}, [], True),
    ({}, ["-O"], False),
    ({"ZLINK_OWNERSHIP_CHECKS": "1"}, ["-O"], True),
    ({"ZLINK_OWNERSHIP_CHECKS": "0"}, [], False),
    ({}, ["-O", "-X", "dev"], True),
], ids=["debug-default-on", "optimized-off", "environment-on", "environment-off", "dev-mode"])
def test_SE_8_1_the_switch_follows_pythons_debug_mode(
        env: dict[str, str], flags: list[str], expected: bool) -> None:
    """D-25: the seed's "debug build" is Python's ``__debug__`` (on unless ``-O``): the
    checks are on there and optional in an optimized run; the environment variable
    overrides both ways and development mode turns them on."""
    environ = {k: v for k, v in os.environ.items()
               if k not in {"ZLINK_OWNERSHIP_CHECKS", "PYTHONDEVMODE", "PYTHONOPTIMIZE"}}
    out = subprocess.run(
        [sys.executable, *flags, "-c",
         "import zlink_reference as z; print(z.ownership_checks())"],
        env={**environ, **env}, capture_output=True, text=True, check=True, timeout=60,
    )
    assert out.stdout.strip() == str(expected)
