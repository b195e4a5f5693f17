"""``ZLinkStateLane``: one component's mutable state, touched one turn at a time (SE-2.4,
SE-7, SE-8.1).

A coordinator's queue maps and its registry of Actor registrations belong to its lane,
not to a lock: closing a coordinator empties the maps and closes every queue in them in
one lane turn, so no submission can slip a queue into a map that is being emptied
(chapter 06 class C2). In this single-threaded runtime a lane turn is a synchronous call
on the event-loop thread; a call from another thread is handed to the loop thread. Every
change of lane-owned state goes through ``run``; a single read of one lane-owned value on
the loop thread (a map lookup, a prebuilt snapshot) is already a whole turn, since
nothing else runs between its start and its end.
"""

from __future__ import annotations

from collections.abc import Callable
from threading import get_ident
from typing import TypeVar

from zlink_model.errors import ZLinkNotOnLaneError, ZLinkReentrancyError

from .._shell import QueueRuntime

__all__ = ["ZLinkStateLane"]

T = TypeVar("T")


class ZLinkStateLane:
    """Runs state operations of one component one at a time."""

    __slots__ = ("_depth", "_rt", "name")

    def __init__(self, name: str, runtime: QueueRuntime) -> None:
        self.name = name
        self._rt = runtime
        self._depth = 0

    def is_on_lane(self) -> bool:
        """True while the caller runs inside a turn of this lane (SE-8.1)."""
        return self._depth > 0 and self._rt.on_loop_thread()

    def throw_if_reentrant(self) -> None:
        """Raise ``ZLinkReentrancyError`` when called from inside a turn of this lane:
        a lane turn that waits for another turn of the same lane never ends (SE-8.1)."""
        if self.is_on_lane():
            raise ZLinkReentrancyError(f"re-entered state lane {self.name} (SE-8.1)")

    def require(self, where: str) -> None:
        """SE-8.1 ``isOnLane`` as a check: raise ``ZLinkNotOnLaneError`` unless the
        caller runs inside a turn of this lane. Called where lane-owned state changes;
        the Spot maps and closing call it whatever the switch says (D-25)."""
        if not self.is_on_lane():
            raise ZLinkNotOnLaneError(
                f"{where} changes state owned by lane {self.name} outside a turn of it "
                "(SE-8.1, SE-2.4)"
            )

    def run(self, fn: Callable[[], T]) -> T:
        """Run ``fn`` as one turn of this lane and return its result."""
        if get_ident() != self._rt.thread_id and self._rt.foreign():
            return self._rt.call_on_loop(lambda: self.run(fn))
        self.throw_if_reentrant()  # always on: a re-entered turn never ends (SE-8.1)
        self._depth += 1
        try:
            return fn()
        finally:
            self._depth -= 1

    def __repr__(self) -> str:
        return f"<ZLinkStateLane {self.name!r}{' (in a turn)' if self._depth else ''}>"
