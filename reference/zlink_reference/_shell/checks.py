"""SE-8.1: the ownership checks and their debug switch (decision D-25).

Every place that assumes it already runs serialized calls one of two checks: on the
owner's loop thread (the queue's single mutator, D-7) or inside a turn of the
coordinator's state lane (SE-2.4). A broken premise then raises
``ZLinkNotOnLaneError`` at its cause instead of corrupting a queue or hanging later.

The seed makes the general ``isOnLane`` assertion mandatory in debug builds and optional
in release. Python has no separate debug build, so the switch is explicit:
``set_ownership_checks(True)``, or the environment variable ``ZLINK_OWNERSHIP_CHECKS=1``,
or Python's development mode (``python -X dev``) at import time. Off by default. The
checks that keep components with a history of breaking the premise correct stay on
whatever the switch says: the foreign-call test of every entry point (D-24) and the
state lane's reentrancy refusal (``ZLinkStateLane.run``).
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from zlink_model.errors import ZLinkNotOnLaneError

if TYPE_CHECKING:
    from .loop import QueueRuntime

__all__ = ["ON", "ownership_checks", "require_loop", "set_ownership_checks"]

ENV = "ZLINK_OWNERSHIP_CHECKS"

ON: bool = os.environ.get(ENV, "").strip().lower() in {"1", "true", "on", "yes"} or bool(
    sys.flags.dev_mode
)
"""Whether the SE-8.1 checks run. Read as ``checks.ON`` at each check site."""


def set_ownership_checks(on: bool) -> bool:
    """Switch the SE-8.1 ownership checks on or off; returns the previous setting."""
    global ON
    previous, ON = ON, bool(on)
    return previous


def ownership_checks() -> bool:
    """Whether the SE-8.1 ownership checks are on."""
    return ON


def require_loop(rt: QueueRuntime, where: str) -> None:
    """SE-8.1 ``isOnLane`` for the queue shell: ``where`` assumes it runs on the owner's
    loop thread (the only mutator, D-7)."""
    if not rt.on_loop_thread():
        raise ZLinkNotOnLaneError(
            f"{where} assumes the owner's loop thread and was called from elsewhere "
            "(SE-8.1, D-7)"
        )
