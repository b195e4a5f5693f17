"""The decision rules of one serial queue, as small pure functions.

Each function decides one thing and nothing else, so that CrossHair can check its
contract (the PEP 316 ``pre:``/``post:`` lines below are checked by
``crosshair check --analysis_kind=PEP316``) and the z3 policy checker can restate it.
The queue core (``queue.py``) calls these and owns the state; nothing else decides
admission, lane selection, the lifecycle burst or the time slice.
"""

from __future__ import annotations

import enum
from typing import Final

from .errors import RejectReason

__all__ = [
    "APPLICATION_LANE",
    "LIFECYCLE_LANE",
    "METADATA_BYTES",
    "Source",
    "admission_verdict",
    "reservation_bytes",
    "select_next",
    "slice_expired",
]

APPLICATION_LANE: Final = 0
LIFECYCLE_LANE: Final = 1

# Decision D-3 (specs/decisions.md): the reference counts no metadata beyond
# fixed_work_byte_cost, so a boundary is the same number on every runtime.
METADATA_BYTES: Final = 0


class Source(enum.IntEnum):
    """Where ``take_next`` takes its item from, in priority order."""

    BARRIER = 0
    LIFECYCLE = 1
    APPLICATION = 2


def reservation_bytes(payload_bytes: int, fixed_work_byte_cost: int) -> int:
    """Bytes one work reserves in its lane (SE-6.1): payload + metadata + fixed cost.

    pre: payload_bytes >= 0
    pre: fixed_work_byte_cost >= 0
    post: __return__ == payload_bytes + METADATA_BYTES + fixed_work_byte_cost
    post: __return__ >= payload_bytes
    """
    return payload_bytes + METADATA_BYTES + fixed_work_byte_cost


def admission_verdict(
    closed: bool,
    lifecycle: bool,
    reserved_count: int,
    reserved_bytes: int,
    item_bytes: int,
    count_capacity: int,
    byte_capacity: int,
) -> RejectReason | None:
    """Accept (``None``) or the reason to reject one submission to one lane (SE-6.3).

    Closed wins over capacity; count is checked before bytes, so a lane that is full on
    both axes reports its count.

    pre: reserved_count >= 0 and reserved_bytes >= 0 and item_bytes >= 0
    pre: count_capacity > 0 and byte_capacity > 0
    post: closed == (__return__ == RejectReason.CLOSED)
    post: __return__ is not None or reserved_count + 1 <= count_capacity
    post: __return__ is not None or reserved_bytes + item_bytes <= byte_capacity
    post: __return__ is None or closed or reserved_count + 1 > count_capacity or reserved_bytes + item_bytes > byte_capacity
    post: __return__ not in (RejectReason.LIFECYCLE_COUNT, RejectReason.LIFECYCLE_BYTES) or lifecycle
    post: __return__ not in (RejectReason.APPLICATION_COUNT, RejectReason.APPLICATION_BYTES) or not lifecycle
    post: __return__ not in (RejectReason.APPLICATION_BYTES, RejectReason.LIFECYCLE_BYTES) or reserved_count + 1 <= count_capacity
    """  # noqa: E501
    if closed:
        return RejectReason.CLOSED
    if reserved_count + 1 > count_capacity:
        return RejectReason.LIFECYCLE_COUNT if lifecycle else RejectReason.APPLICATION_COUNT
    if reserved_bytes + item_bytes > byte_capacity:
        return RejectReason.LIFECYCLE_BYTES if lifecycle else RejectReason.APPLICATION_BYTES
    return None


def select_next(
    barrier_ready: int,
    lifecycle_ready: int,
    application_ready: int,
    streak: int,
    burst_limit: int,
) -> tuple[Source | None, int]:
    """Which lane ``take_next`` serves, and the lifecycle streak after it (SE-6.6).

    Barrier-next items come first (SE-6.2). Lifecycle overtakes application work, but
    after ``burst_limit`` lifecycle items in a row taken while application work waited,
    one application item runs (SE-6.1, SE-10 item 9). ``streak`` counts only lifecycle
    items taken while application work waited; any application item resets it.

    pre: barrier_ready >= 0 and lifecycle_ready >= 0 and application_ready >= 0
    pre: burst_limit > 0 and 0 <= streak <= burst_limit
    post: 0 <= __return__[1] <= burst_limit
    post: (__return__[0] is None) == (barrier_ready + lifecycle_ready + application_ready == 0)
    post: barrier_ready == 0 or __return__[0] == Source.BARRIER
    post: __return__[0] != Source.APPLICATION or lifecycle_ready == 0 or streak == burst_limit
    post: __return__[0] != Source.LIFECYCLE or application_ready == 0 or streak < burst_limit
    post: __return__[0] != Source.LIFECYCLE or __return__[1] == (streak + 1 if application_ready else 0)
    post: __return__[0] not in (Source.APPLICATION, Source.BARRIER) or __return__[1] == 0
    post: barrier_ready or not application_ready or streak < burst_limit or __return__[0] == Source.APPLICATION
    """  # noqa: E501
    if barrier_ready:
        return Source.BARRIER, 0
    if lifecycle_ready and (not application_ready or streak < burst_limit):
        return Source.LIFECYCLE, (streak + 1 if application_ready else 0)
    if application_ready:
        return Source.APPLICATION, 0
    return None, streak


def slice_expired(now: float, slice_started_at: float, budget: float) -> bool:
    """The owner used its time budget (SE-6.4); checked only between works.

    pre: budget > 0
    post: __return__ == (now - slice_started_at >= budget)
    """
    return now - slice_started_at >= budget
