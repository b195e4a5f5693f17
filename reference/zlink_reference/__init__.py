"""ZLink serial executors: the reference runtime.

The public surface: the policy, the queue primitive and its handle, ``yield_framework_call``
and the errors. Coordinators, disposal and the testing helpers live in subpackages.
"""

from zlink_model.errors import (
    RejectReason,
    ZLinkClosedError,
    ZLinkError,
    ZLinkNotOnTurnError,
    ZLinkProtocolError,
    ZLinkReentrancyError,
    ZLinkRejectedError,
    ZLinkUsageError,
    ZLinkYieldNotSupportedError,
)
from zlink_model.policy import ZLinkExecutionLanePolicy

from ._shell.clock import MonotonicClock, ZLinkClock
from ._shell.queue import (
    QueueRuntime,
    QueueStatistics,
    ZLinkSerialExecutionQueue,
    ZLinkWorkHandle,
    current_work,
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
    "yield_framework_call",
]

__version__ = "0.2.0"
