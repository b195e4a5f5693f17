"""ZLink serial executors: the reference runtime.

The public surface: the policy, the queue primitive and its handle, ``yield_framework_call``,
the errors and the SE-8.1 ownership-check switch. Coordinators, disposal and the testing
helpers live in subpackages.
"""

from zlink_model.errors import (
    RejectReason,
    ZLinkClosedError,
    ZLinkError,
    ZLinkNotOnLaneError,
    ZLinkNotOnTurnError,
    ZLinkProtocolError,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkUsageError,
    ZLinkYieldNotSupportedError,
)
from zlink_model.policy import ZLinkExecutionLanePolicy

from ._shell import (
    MonotonicClock,
    QueueRuntime,
    QueueStatistics,
    ZLinkClock,
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    current_work,
    ownership_checks,
    set_ownership_checks,
    yield_framework_call,
)
from .coordinators import (
    ActorStateSnapshot,
    ZLinkActorSerialExecutor,
    ZLinkPendingWork,
    ZLinkSessionSerialExecutor,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkStateLane,
    ZLinkUserSpotExecutionMode,
    current_snapshot,
)

__all__ = [
    "ActorStateSnapshot",
    "MonotonicClock",
    "QueueRuntime",
    "QueueStatistics",
    "RejectReason",
    "ZLinkActorSerialExecutor",
    "ZLinkClock",
    "ZLinkClosedError",
    "ZLinkError",
    "ZLinkExecutionLanePolicy",
    "ZLinkNotOnLaneError",
    "ZLinkNotOnTurnError",
    "ZLinkPendingWork",
    "ZLinkProtocolError",
    "ZLinkReentrancyError",
    "ZLinkRejectedError",
    "ZLinkSerialExecutionQueue",
    "ZLinkSessionSerialExecutor",
    "ZLinkSpotKind",
    "ZLinkSpotSerialExecutor",
    "ZLinkStateLane",
    "ZLinkUsageError",
    "ZLinkUserSpotExecutionMode",
    "ZLinkWorkHandle",
    "ZLinkYieldNotSupportedError",
    "current_snapshot",
    "current_work",
    "ownership_checks",
    "set_ownership_checks",
    "yield_framework_call",
]

__version__ = "0.2.0"
