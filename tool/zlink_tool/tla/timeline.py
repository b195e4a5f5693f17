"""Counterexamples drawn as per-queue timelines, with the conformance report's drawing.

A counterexample's steps are core transitions; the conformance kit's timeline
(``zlink_conformance.report.html.timeline_svg``) draws the wire events that report them.
The vocabulary table says which is which (``admit`` is ``accepted``, ``take_next`` is
``started``, or ``resumed`` for a resume permit, ``finish`` is ``finished`` or the
work's outcome), so a counterexample becomes a ``CaseLog`` of wire events, one lane per
queue, and is drawn by the same code as a failing conformance case: no second drawing.
The step that breaks the invariant is marked where the kit marks a divergence.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.oracle.model import Divergence
from zlink_conformance.protocol.wire import Event
from zlink_conformance.report.html import CSS, timeline_svg
from zlink_model.vocabulary import (
    ADMIT,
    CANCEL,
    CLOSE,
    DISPOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    END_SLICE,
    ENTER_DRAIN,
    EXIT_DRAIN,
    EXPIRE_TIMEOUT,
    FINISH,
    OUTCOMES,
    REJECT,
    REQUEUE,
    SURVIVE_CANCEL,
    TAKE_NEXT,
    TRANSFER,
    YIELD_TURN,
    dispatch_table,
    transition,
)

from .counterexample import Counterexample, InvariantInfo, render, snake

__all__ = ["case_log", "counterexamples_html", "write_counterexamples_html"]

_WIRE_OUTCOME = {o.core: o.wire for o in OUTCOMES}
_SPOT_VARS = ("sLine", "gate", "sCount", "sBytes")
_ACTOR_VARS = ("aLine", "claim", "aCount", "aBytes")


def _queue_of(cex: Counterexample, index: int, default: str) -> str:
    """The queue a step happens on: an Actor queue whose per-Actor entries changed,
    the Spot queue when its variables changed, else ``default``."""
    for name, before, after in cex.changes(index):
        if name in _ACTOR_VARS and isinstance(before, dict) and isinstance(after, dict):
            for key, value in after.items():
                if before.get(key) != value:
                    return str(key)
    if any(name in _SPOT_VARS for name, _, _ in cex.changes(index)):
        return "spot"
    return default


def case_log(cex: Counterexample) -> tuple[CaseLog, int | None]:
    """The counterexample as wire events in a ``CaseLog`` (one owner per queue), and the
    log position of the last step's event (where the invariant breaks), if it has one."""
    module = next((s.module for s in cex.steps if s.module), "SerialQueue")
    default = {"SerialQueue": "queue", "Disposal": "scope"}.get(module, "queue")
    noun = "item" if module == "SpotWide" else "work"
    log = CaseLog()
    owner_of: dict[str, str] = {}
    yielded: set[str] = set()
    last: int | None = None
    for i in range(1, len(cex.steps)):
        step = cex.steps[i]
        keys = cex.about(i)
        for key in keys or [None]:
            work = f"{noun} {key}" if key is not None else ""
            queue = _queue_of(cex, i, owner_of.get(work, default))
            names = _wire_events(cex, i, step.event, key, work in yielded)
            for name in names:
                if name in ("started", "accepted"):
                    owner_of[work] = queue
                if name == "yielded":
                    yielded.add(work)
                fields: dict[str, Any] = {"owner": owner_of.get(work, queue)}
                if work:
                    fields["work"] = work
                last = log.event(Event(name, fields))
    return log, last


def _wire_events(cex: Counterexample, index: int, event: str, key: object,
                 resumed: bool) -> list[str]:
    draw = _DRAWN.get(event)
    return [] if draw is None else draw(cex, index, key, resumed)


def _ended(cex: Counterexample, index: int, key: object, resumed: bool) -> list[str]:
    """``finish``: the wire event of the work's outcome when the step names it."""
    outcome = cex.steps[index].values.get("outcome")
    if isinstance(outcome, tuple) and isinstance(key, int) and 0 < key <= len(outcome):
        return [_WIRE_OUTCOME.get(str(outcome[key - 1]), _FINISHED)]
    return [_FINISHED]


def _reported_as(wire: str) -> Callable[[Counterexample, int, object, bool], list[str]]:
    return lambda cex, index, key, resumed: [wire]


_STARTED, _RESUMED = transition(TAKE_NEXT).wire
_FINISHED = transition(FINISH).wire[0]
# The wire events that report each core step in the drawing; the steps the wire never
# shows (and the disposals, drawn by their works' own events) are skipped. A transition
# added to the vocabulary without a place here stops this module loading.
_DRAWN: Final[dict[str, Callable[[Counterexample, int, object, bool], list[str]]]] = \
    dispatch_table("zlink_tool.tla.timeline", {
        ADMIT: _reported_as(*transition(ADMIT).wire),
        REJECT: _reported_as(*transition(REJECT).wire),
        TAKE_NEXT: lambda cex, index, key, resumed: [_RESUMED if resumed else _STARTED],
        YIELD_TURN: _reported_as(*transition(YIELD_TURN).wire),
        CANCEL: _reported_as(*transition(CANCEL).wire),
        FINISH: _ended,
    }, skip=(TRANSFER, ENTER_DRAIN, REQUEUE, END_SLICE, EXIT_DRAIN, CLOSE, DISPOSE,
             DISPOSE_SAFELY, DISPOSE_AFTER_TIMEOUT, EXPIRE_TIMEOUT, SURVIVE_CANCEL))


def counterexamples_html(shown: Sequence[tuple[str, Counterexample, InvariantInfo | None]]
                         ) -> str:
    """One self-contained page: for every run, the timeline and the readable steps."""
    sections: list[str] = []
    for name, cex, info in shown:
        log, last = case_log(cex)
        divergence = None
        if last is not None and cex.kind == "invariant" and cex.violated:
            ev: Mapping[str, Any] = log.entries[last][1]
            divergence = Divergence(last, ev, info.rules[0][0] if info and info.rules else "",
                                    cex.violated, f"{cex.violated} breaks here", ())
        svg = timeline_svg(log, f"{name}: {snake(cex.violated or cex.kind)}", divergence)
        text = html.escape(render(cex, info))
        sections.append(
            f'<section class="case"><h2>{html.escape(name)}</h2>'
            f'<p class="meta">{html.escape(cex.kind)} {html.escape(cex.violated or "")}'
            f" after {len(cex.steps) - 1} step(s)</p>"
            f'<div class="timeline">{svg}</div>'
            f"<details open><summary>steps</summary><pre>{text}</pre></details></section>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>ZLink models: counterexamples</title><style>{CSS}</style></head><body>"
        "<header><h1>ZLink models: counterexamples</h1>"
        f"<p>{len(shown)} run(s)</p></header><main>"
        + ("".join(sections) or "<p>No run has a counterexample.</p>")
        + "</main></body></html>\n")


def write_counterexamples_html(shown: Sequence[tuple[str, Counterexample,
                                                     InvariantInfo | None]],
                               path: Path) -> None:
    """Write ``counterexamples_html`` to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(counterexamples_html(shown), encoding="utf-8")
