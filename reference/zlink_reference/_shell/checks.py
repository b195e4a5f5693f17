"""SE-8.1: the ownership checks and their debug switch (decision D-25).

Every place that assumes it already runs serialized calls one of two checks: on the
owner's loop thread (the queue's single mutator, D-7) or inside a turn of the
coordinator's state lane (SE-2.4). A broken premise then raises
``ZLinkNotOnLaneError`` at its cause instead of corrupting a queue or hanging later.

The seed makes the general ``isOnLane`` assertion mandatory in debug builds and optional
in release, and kept in release for components with a history of breaking the premise.
Python's debug mode is ``__debug__`` (true unless the interpreter runs with ``-O``), so
the checks are on by default and off in an optimized run. ``ZLINK_OWNERSHIP_CHECKS``
(``1``/``0``) overrides both ways at import, development mode (``python -X dev``) turns
them on, and ``set_ownership_checks`` switches them at run time. The checks of
components with such a history never read the switch: the foreign-call test of every
entry point (D-24), the state lane's reentrancy refusal (``ZLinkStateLane.run``), and
the lane checks on a coordinator's maps and on the closing of its queues (D-24: a timer
queue was once made off the loop after ``close()`` had emptied the maps).
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

_ENV_ON = {"1", "true", "on", "yes"}
_ENV_OFF = {"0", "false", "off", "no"}


def _initial() -> bool:
    """The switch at import: the environment variable when set, otherwise on in
    Python's debug mode (``__debug__``) or development mode (D-25)."""
    value = os.environ.get(ENV, "").strip().lower()
    if value in _ENV_ON:
        return True
    if value in _ENV_OFF:
        return False
    return __debug__ or bool(sys.flags.dev_mode)


ON: bool = _initial()
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
