"""The core moves only along its own transition tables (DRAIN_TRANSITIONS,
WORK_TRANSITIONS), the tables the design document's diagrams are drawn from. Labels are
read from the events the core itself reports."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from zlink_model.queue import (
    DRAIN_TRANSITIONS,
    PHASE_NAMES,
    QUEUED,
    REQUEUED,
    SUSPENDED,
    WORK_TRANSITIONS,
    QueueConfig,
    QueueCore,
    WorkRecord,
    drain_state,
)
from zlink_reference import ZLinkExecutionLanePolicy, ZLinkRejectedError

OPS = ["admit", "transfer", "enter", "step", "yield", "requeue", "cancel", "tick"]


def label(event: str, fields: dict[str, Any]) -> str:
    if event in ("admit", "transfer", "requeue") and fields.get("wake"):
        return f"{event} [wake]"
    if event == "end_slice":
        return "end_slice [work left]" if fields["reschedule"] else "end_slice [nothing left]"
    if event == "take_next" and fields["resume"]:
        return "take_next [resume]"
    return event


def run_ops(ops: list[tuple[str, int]]) -> tuple[set[tuple[str, ...]], set[tuple[str, ...]]]:
    events: list[tuple[str, dict[str, Any]]] = []
    core = QueueCore(QueueConfig(
        ZLinkExecutionLanePolicy(application_message_capacity=4, owner_time_budget_ms=5),
        observer=lambda q, e, f: events.append((e, f))), "q")
    now = 0
    records: dict[int, WorkRecord] = {}
    seen_drain: set[tuple[str, ...]] = set()
    seen_work: set[tuple[str, ...]] = set()

    def phase(rec: WorkRecord) -> str:
        return PHASE_NAMES[rec.phase]

    for op, pick in ops:
        before = drain_state(core)
        phases = {wid: phase(r) for wid, r in records.items()}
        events.clear()
        live = [r for r in records.values() if r.phase in (QUEUED, SUSPENDED, REQUEUED)]
        try:
            if op in ("admit", "transfer"):
                rec = WorkRecord()
                core.admit(rec) if op == "admit" else core.transfer(rec)
                records[rec.wid] = rec
            elif op == "enter" and core.drain_scheduled and not core.draining:
                core.enter_drain(now)
            elif op == "step" and core.draining:
                if core.current is not None:
                    core.finish(core.current)
                else:
                    core.next_step(now)
            elif op == "yield" and core.current is not None:
                core.yield_turn(core.current)
            elif op == "requeue" and core.suspended_records():
                waiting = core.suspended_records()
                core.requeue(waiting[pick % len(waiting)])
            elif op == "cancel" and live:
                core.cancel(live[pick % len(live)])
            elif op == "tick":
                now += 3
        except ZLinkRejectedError:
            continue
        after = drain_state(core)
        for event, fields in events:
            name = label(event, fields)
            if before != after and event not in ("reject",):
                row = (before, name.replace(" [resume]", ""), after)
                assert row in DRAIN_TRANSITIONS, f"drain moved {row}"
                seen_drain.add(row)
            if "work" in fields:
                wid = int(fields["work"])  # type: ignore[arg-type]
                row = (phases.get(wid, "new"), name.replace(" [wake]", ""),
                       phase(records[wid]))
                assert row in WORK_TRANSITIONS, f"work moved {row}"
                seen_work.add(row)
    return seen_drain, seen_work


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(OPS), st.integers(0, 7)), max_size=60))
def test_SE_6_6_the_core_moves_only_along_its_transition_tables(
    ops: list[tuple[str, int]],
) -> None:
    run_ops(ops)


def test_SE_6_6_every_table_row_is_reachable() -> None:
    script = [
        ("admit", 0), ("admit", 0), ("enter", 0), ("step", 0), ("yield", 0),   # yield
        ("step", 0), ("step", 0), ("step", 0),                                  # finish, exit
        ("requeue", 0), ("enter", 0), ("step", 0), ("step", 0), ("step", 0),   # resume
        ("transfer", 0), ("enter", 0), ("step", 0), ("yield", 0),             # transfer
        ("admit", 0), ("requeue", 0), ("cancel", 0), ("cancel", 0),           # cancels
        ("step", 0), ("admit", 0), ("admit", 0), ("tick", 0), ("tick", 0),
        ("step", 0), ("enter", 0), ("tick", 0), ("tick", 0), ("step", 0),     # slice ends
        ("step", 0), ("yield", 0), ("cancel", 0), ("tick", 0), ("tick", 0), ("step", 0),
        ("enter", 0), ("step", 0), ("yield", 0), ("tick", 0), ("tick", 0), ("step", 0),
        ("cancel", 0), ("cancel", 0), ("cancel", 0), ("cancel", 0),           # all that is left
    ]
    drain, work = run_ops(script)
    assert drain == set(DRAIN_TRANSITIONS), set(DRAIN_TRANSITIONS) - drain
    assert work == set(WORK_TRANSITIONS), set(WORK_TRANSITIONS) - work
