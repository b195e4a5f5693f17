"""Coordinators: the Spot, Actor and Session serial executors (SE-2, SE-3, SE-4), their
state lanes (SE-2.4, SE-8.1) and per-message snapshots (SE-7)."""

from .actor import ZLinkActorSerialExecutor
from .lane import ZLinkStateLane
from .session import ZLinkSessionSerialExecutor
from .snapshot import ActorStateSnapshot, current_snapshot
from .spot import (
    ZLinkPendingWork,
    ZLinkSpotKind,
    ZLinkSpotSerialExecutor,
    ZLinkUserSpotExecutionMode,
)

__all__ = [
    "ActorStateSnapshot",
    "ZLinkActorSerialExecutor",
    "ZLinkPendingWork",
    "ZLinkSessionSerialExecutor",
    "ZLinkSpotKind",
    "ZLinkSpotSerialExecutor",
    "ZLinkStateLane",
    "ZLinkUserSpotExecutionMode",
    "current_snapshot",
]
