"""Owners on several threads (decision D-24): what the current work is, is a fact of the
thread and the turn it runs, never of the process. Two owners whose loops run on two
threads at once each ask ``current_work()`` and ``is_current()`` from inside long
synchronous and async works; every answer must name the asking work and its own queue.

The two owners run in lockstep: before each check both threads meet at a barrier, so at
every check both are inside a work of their own at the same moment (whatever the
interpreter's thread switching does), and a process-wide slot holds only one of them."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

from zlink_reference import ZLinkSerialExecutionQueue, current_work

ROUNDS = 60  # checks per synchronous work (both owners make the same number of checks)


def _owner(name: str, start: threading.Barrier, wrong: list[str], checked: list[int]) -> None:
    """One owner on its own loop: synchronous and async works that check, again and
    again, that they are the current work and hold their queue's turn."""

    async def main() -> None:
        queue = ZLinkSerialExecutionQueue(name=name)
        other = ZLinkSerialExecutionQueue(name=f"{name}-other")
        handles: dict[int, Any] = {}

        def check(key: int) -> None:
            start.wait(5)  # both owners are inside a work of theirs now
            me = handles[key]
            seen = current_work()
            problems = []
            if seen is not me:
                problems.append(f"current_work() is {seen!r}, not {me!r}")
            if not queue.is_current():
                problems.append(f"is_current() False inside its own work {me!r}")
            if other.is_current():
                problems.append("is_current() True for a queue whose turn it lacks")
            if problems:
                wrong.append(f"{name}: " + "; ".join(problems))
            checked[0] += 1

        def sync_work(key: int) -> Any:
            def work() -> None:
                for _ in range(ROUNDS):
                    check(key)
            return work

        def async_work(key: int) -> Any:
            async def work() -> None:
                for _ in range(ROUNDS // 20):
                    check(key)
                    await asyncio.sleep(0)
                    check(key)
            return work

        start.wait()
        for key in range(12):
            make = sync_work if key % 3 else async_work
            handles[key] = queue.enqueue(make(key))
        await asyncio.gather(*handles.values())

    asyncio.run(main())


def test_SE_6_2_current_work_and_is_current_per_thread_for_owners_on_two_threads() -> None:
    """D-24 promises owners on any thread: an owner's answers never depend on what
    another thread's owner runs at the same moment (SE-6.2 ``is_current``; the current
    work is what SE-8.2's reentrancy check reads)."""
    start = threading.Barrier(2)
    wrong: list[list[str]] = [[], []]
    checked = [[0], [0]]
    # Daemon threads: a broken queue that never ends a work must fail this test, not
    # keep the process alive.
    threads = [threading.Thread(target=_owner, args=(f"owner{i}", start, wrong[i], checked[i]),
                                daemon=True) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    assert not any(t.is_alive() for t in threads), "an owner's loop did not finish"
    assert checked[0][0] > 0 and checked[1][0] > 0
    for i in range(2):
        assert not wrong[i], (
            f"SE-6.2/D-24: owner{i} saw the wrong current work in {len(wrong[i])} of "
            f"{checked[i][0]} checks; first: {wrong[i][0]}")
