"""What the shell's rooms hold and see of each other (docs/implementers.md, "Reading the
reference"): a work handle holds its owner's runtime and its queue's place, never the
queue (D-23: no handle hands a queue out, and none keeps one); a scope is an object its
queue or coordinator holds, and it sees that holder and each queue only through two
small named views (``ScopeHost``, ``ScopeQueue``). Both fail on the code before the
rooms were split this way: the handle held its queue, and the scope was a mixin that
read its host's members directly."""

from __future__ import annotations

import ast
import asyncio
import gc
from pathlib import Path
from typing import Any

from zlink_reference import (
    ZLinkSerialExecutionQueue,
    ZLinkSessionSerialExecutor,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
)
from zlink_reference._shell import Scope, ScopeQueue, current_work
from zlink_reference._shell.scope import ScopeHost
from zlink_reference.testing import run_until_idle

from helpers import Gate


def _holds_a_queue(obj: object) -> list[object]:
    """The queues among what ``obj`` refers to directly (its fields)."""
    return [r for r in gc.get_referents(obj) if isinstance(r, ZLinkSerialExecutionQueue)]


async def test_D_23_a_handle_holds_its_runtime_and_place_never_its_queue() -> None:
    """Every kind of handle (a queue's, a SpotWide Actor record and the execution turn it
    places, a session's final work held back) refers to no queue: only to the owner's
    runtime and the queue's place, through which it reads the queue's name."""
    gate = Gate()
    queue = ZLinkSerialExecutionQueue(name="bare")
    spot = ZLinkSpotSerialExecutor("s", mode=ZLinkUserSpotExecutionMode.SPOT_WIDE)
    session = ZLinkSessionSerialExecutor("x")
    turns: list[Any] = []

    async def actor_work() -> None:
        turns.append(current_work())  # the execution turn on the Spot queue
        await gate.wait()

    handles = [queue.enqueue(lambda: None), spot.execute_actor("a", actor_work),
               session.execute_application(gate.wait), session.execute_final(lambda: None)]
    for _ in range(20):  # a few loop turns: Actor queue, then Spot queue, then its task
        if turns:
            break
        await asyncio.sleep(0)
    assert len(turns) == 1, "the SpotWide work did not start"
    handles.append(turns[0])
    names = [h.queue_name for h in handles]
    assert names == ["bare", "spot:s/actor:a", "session:x", "session:x", "spot:s"]
    for handle in handles:
        assert not _holds_a_queue(handle), (
            f"D-23: {handle!r} refers to its queue itself; a handle holds the owner's "
            "runtime and the queue's place only")
    gate.open()
    await run_until_idle()
    assert all(h.done() for h in handles)


class _Through:
    """An object seen through a view: only the members the view names reach ``target``;
    any other member raises, naming itself."""

    def __init__(self, target: object, members: frozenset[str],
                 override: dict[str, Any] | None = None) -> None:
        object.__setattr__(self, "_target", target)
        object.__setattr__(self, "_members", members)
        object.__setattr__(self, "_override", override or {})

    def __getattr__(self, name: str) -> Any:
        if name in self._override:
            return self._override[name]
        if name not in self._members:
            raise AttributeError(f"{name} is not in the view")
        return getattr(self._target, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._members:
            raise AttributeError(f"{name} is not in the view")
        setattr(self._target, name, value)


SCOPE_SOURCE = Path(__file__).resolve().parents[2] / "reference" / "zlink_reference" \
    / "_shell" / "scope.py"


def _view(protocol: type) -> frozenset[str]:
    """The members the Protocol class ``protocol`` of scope.py names (its fields and
    methods), read from the source: a compiled build keeps no annotations to read."""
    tree = ast.parse(SCOPE_SOURCE.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == protocol.__name__:
            return frozenset(
                item.target.id if isinstance(item, ast.AnnAssign)
                and isinstance(item.target, ast.Name) else getattr(item, "name", "")
                for item in node.body
                if isinstance(item, ast.AnnAssign | ast.FunctionDef | ast.AsyncFunctionDef)
            ) - {""}
    raise AssertionError(f"{protocol.__name__} is not in {SCOPE_SOURCE}")


async def test_SD_1_a_scope_sees_its_holder_and_queues_only_through_their_views() -> None:
    """A ``Scope`` given a queue seen only through ``ScopeHost``, whose queues it sees only
    through ``ScopeQueue``, counts, disposes safely, lists zombies, bounds them with a
    timeout and waits for them: it reaches no member the two views do not name."""
    queue = ZLinkSerialExecutionQueue(name="q")
    gate = Gate()
    queue.enqueue(gate.wait)
    queue.enqueue(lambda: None)
    await asyncio.sleep(0)

    through_queue = _Through(queue, _view(ScopeQueue))
    host = _Through(queue, _view(ScopeHost),
                    {"_scope_queues": lambda: [through_queue],
                     "_held": lambda: [],
                     "_counts": lambda q, rec: True,
                     "_running_as": lambda q, rec: rec})
    scope = Scope(host)  # type: ignore[arg-type]
    assert len(list(scope.counted())) == 2
    scope.dispose_safely()
    assert sorted(z.state for z in scope.zombies()) == ["queued", "running"]
    scope.dispose_after_timeout(0)
    await scope.await_completion()
    await scope.await_after_cancellation(None, host)
    assert list(scope.counted()) == []
    assert queue._core.live() == 0


def test_SD_1_a_queue_and_a_coordinator_hold_their_scope_and_are_no_scope_class() -> None:
    """The scope is an object its holder keeps (the same one every time it is asked),
    made for that holder, not a base class the holder inherits its logic from."""
    loop = asyncio.new_event_loop()
    try:
        for holder in (ZLinkSerialExecutionQueue(loop=loop),
                       ZLinkSpotSerialExecutor("s", mode=ZLinkUserSpotExecutionMode.PER_ACTOR,
                                               loop=loop)):
            scope = holder._scope()
            assert isinstance(scope, Scope) and scope is holder._scope()
            assert scope.host is holder
            assert not isinstance(holder, Scope)
    finally:
        loop.close()


async def test_SD_1_awaiting_quiescence_makes_no_scope_object_of_an_idle_queue() -> None:
    """A queue is made a scope only when it is used as one (a disposal, a scope wait of
    its own): awaiting its quiescence, as a coordinator does for each of its busy
    queues, reads it and leaves it as small as before, so an idle Actor queue of a Spot
    keeps no scope object (issue 16's memory bound per idle Actor queue)."""
    spot = ZLinkSpotSerialExecutor("s", mode=ZLinkUserSpotExecutionMode.PER_ACTOR)
    for actor in ("a", "b"):
        spot.execute_actor(actor, lambda: None)
    await spot.await_quiescence()
    queues = list(spot._made)
    assert queues
    assert [q._aux is None or q._aux.scope is None for q in queues] == [True] * len(queues)
    queue = ZLinkSerialExecutionQueue()
    queue.enqueue(lambda: None)
    await queue.await_quiescence()
    assert queue._aux is None or queue._aux.scope is None
    spot.close()
