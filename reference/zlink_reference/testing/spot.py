"""Views of a running reference Spot for the model's SpotWide invariants.

``zlink_model.invariants.check_spot_wide`` judges a ``SpotWideView``: the Spot queue's
core, each Actor queue's core and which Spot records are execution turns. Only the
runtime knows where those live, so the view is built here, beside the runtime, and the
model stays free of it.
"""

from __future__ import annotations

from collections.abc import Callable

from zlink_model.invariants import SpotWideView
from zlink_model.queue import WorkRecord

from .._shell import queue_core, queue_place, queue_records
from ..coordinators.spot import ZLinkSpotSerialExecutor

__all__ = ["spot_wide_view"]


def spot_wide_view(spot: ZLinkSpotSerialExecutor,
                   reservation: Callable[[str, WorkRecord], int] | None = None
                   ) -> SpotWideView:
    """The view of a running SpotWide (or Instance) Spot: its Spot queue, every Actor
    queue it made (closed ones included) and which Spot records are execution turns.

    A turn is recognised by its gates (the places of the Spot queue and the Actor
    queue), which the coordinator sets when it places the turn (``execute_actor``)."""
    spot_queue = spot._spot
    prefix = f"{spot.name}/actor:"
    actors = {q.name[len(prefix):]: queue_core(q) for q in spot._made if q.name.startswith(prefix)}
    by_queue = {id(queue_place(q)): q.name[len(prefix):]
                for q in spot._made if q.name.startswith(prefix)}
    turn_of: dict[int, str] = {}
    for rec in queue_records(spot_queue).live_records():
        gates: tuple[object, ...] = getattr(rec, "_gates", ())
        if len(gates) > 1 and id(gates[1]) in by_queue:
            turn_of[rec.wid] = by_queue[id(gates[1])]
    return SpotWideView(queue_core(spot_queue), actors, turn_of, reservation)
