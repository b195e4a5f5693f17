"""Errors, named by who is at fault.

* ``ZLinkRejectedError``: backpressure or a closed owner. The caller did nothing wrong;
  the submission was not accepted and nothing was inserted (SE-6.3).
* ``ZLinkUsageError`` and its subclasses: the caller broke a rule of the surface (waiting
  on its own coordinator, yielding where no Yield exists, yielding off a turn).
* ``ZLinkProtocolError``: a transition was attempted while its guard does not hold. In a
  correct runtime this never happens; it names the rule whose guard failed, so a broken
  shell or mutant is caught at the step that broke it.
"""

from __future__ import annotations

import enum

__all__ = [
    "RejectReason",
    "ZLinkClosedError",
    "ZLinkError",
    "ZLinkNotOnLaneError",
    "ZLinkNotOnTurnError",
    "ZLinkProtocolError",
    "ZLinkReentrancyError",
    "ZLinkRejectedError",
    "ZLinkUsageError",
    "ZLinkYieldNotSupportedError",
]


class RejectReason(enum.StrEnum):
    """Why a submission was refused. Values are the wire names used in traces and in
    the conformance protocol."""

    APPLICATION_COUNT = "application_count"
    APPLICATION_BYTES = "application_bytes"
    LIFECYCLE_COUNT = "lifecycle_count"
    LIFECYCLE_BYTES = "lifecycle_bytes"
    CLOSED = "closed"


class ZLinkError(Exception):
    """Base of every error this package raises on purpose."""


class ZLinkRejectedError(ZLinkError):
    """A submission was refused; nothing was inserted and nothing was reserved."""

    def __init__(self, reason: RejectReason, queue: str = "") -> None:
        self.reason = reason
        self.queue = queue
        where = f" by {queue}" if queue else ""
        super().__init__(f"submission rejected{where}: {reason.value}")


class ZLinkClosedError(ZLinkRejectedError):
    """The owner is closed (or disposed, or removed): it accepts no new work."""

    def __init__(self, queue: str = "") -> None:
        super().__init__(RejectReason.CLOSED, queue)


class ZLinkUsageError(ZLinkError):
    """The caller broke a rule of the public surface."""


class ZLinkReentrancyError(ZLinkUsageError):
    """Work waited synchronously for work that can only run after it (SE-8.2): raised at
    the waiting call instead of a deadlock."""


class ZLinkYieldNotSupportedError(ZLinkUsageError):
    """``yield_framework_call`` inside work of an owner that offers no Yield (an Entry
    Spot, SE-4.1)."""


class ZLinkNotOnTurnError(ZLinkUsageError):
    """``yield_framework_call`` was called outside a work that holds a turn."""


class ZLinkNotOnLaneError(ZLinkUsageError):
    """Code that assumes it runs serialized (on the owner's loop thread, or inside a
    turn of a coordinator's state lane) was reached from elsewhere (SE-8.1). Raised by
    the ownership checks: on in Python's debug mode, and always at the sites with a
    history of breaking the premise (decision D-25)."""


class ZLinkProtocolError(ZLinkError):
    """A core transition was attempted while its guard does not hold."""

    def __init__(self, transition: str, rule: str, detail: str) -> None:
        self.transition = transition
        self.rule = rule
        super().__init__(f"{transition}: {detail} ({rule})")
