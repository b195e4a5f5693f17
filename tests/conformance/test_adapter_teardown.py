"""The reference adapter's teardown at a reset: every task the ended case left pending is
cancelled and waited for (AP-6: nothing of a case reaches the next one), and what the
reset walks is that case's own tasks, not every task alive in the process.

The teardown takes the case's tasks from the list its loop's task factory keeps; these
tests hold that list to what ``asyncio.all_tasks`` would give, so the cheaper read loses
no task.
"""

from __future__ import annotations

import asyncio
import io
import typing

from zlink_reference_adapter.adapter import ReferenceAdapter


def _serve(*commands: dict[str, typing.Any]) -> ReferenceAdapter:
    """An adapter, in this process, that carried out ``hello`` and ``commands`` and was
    left where they put it (its case not ended)."""
    adapter = ReferenceAdapter(io.BytesIO(), io.BytesIO(), io.StringIO())
    for ident, command in enumerate([{"cmd": "hello", "protocol": 1}, *commands]):
        adapter._run_command(command["cmd"], {"id": ident, **command})
    return adapter


def test_AP_6_a_reset_cancels_every_task_the_ended_case_left_pending() -> None:
    adapter = _serve({"cmd": "reset"})
    loop = adapter._case.loop
    stuck = loop.create_task(asyncio.Event().wait())  # waits for what never comes
    inner: list[asyncio.Task[None]] = []

    async def starts_another() -> None:
        inner.append(asyncio.get_running_loop().create_task(asyncio.sleep(3600)))
        await asyncio.Event().wait()

    outer = loop.create_task(starts_another())
    loop.run_until_complete(asyncio.sleep(0))
    assert inner and not stuck.done() and not outer.done()
    adapter._run_command("reset", {"id": 9, "cmd": "reset"})
    # the tasks of the case before the reset are all ended, cancelled, none left over
    for task in (stuck, outer, *inner):
        assert task.cancelled(), (
            f"AP-6: {task!r} of the ended case is still pending after the reset that ends "
            "it: it could run, or fail, during the next case")
    assert adapter._case.loop is not loop and loop.is_closed()


def test_AP_6_the_case_s_task_list_holds_every_pending_task_of_its_loop() -> None:
    adapter = _serve(
        {"cmd": "reset"}, {"cmd": "create", "target": "Q", "type": "queue"},
        {"cmd": "submit", "target": "Q", "work": "w1", "entry": "enqueue",
         "script": [{"op": "call", "call": "c1"}]},
        {"cmd": "submit", "target": "Q", "work": "w2", "entry": "enqueue",
         "script": [{"op": "gate", "gate": "g"}]},
        {"cmd": "settle"})
    case = adapter._case
    loop = case.loop
    asyncio.set_event_loop(loop)
    try:
        pending = {t for t in asyncio.all_tasks(loop) if not t.done()}
    finally:
        asyncio.set_event_loop(None)
    assert pending, "the scenario should leave a work waiting for its call"
    assert pending <= set(case.tasks), (
        "AP-6: a pending task of the case's loop is missing from the list its task factory "
        "keeps, so the reset would not cancel it")
