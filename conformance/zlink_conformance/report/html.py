"""The HTML report (``--html FILE``): one self-contained page, inline CSS and SVG only.

It shows the run (runtime, adapter, counts), a table by rule, and for every case that did
not pass: its reasons, the model oracle's divergent event with the log leading there, and
two timelines drawn as SVG with one lane per owner: *expected* (the same case run against
the reference runtime, when the caller supplies that log) and *observed* (the runtime under
test). Everything that came from the adapter is text to escape: names are checked by the
protocol, but messages, snapshot values, runtime names and stderr lines are free strings,
so every piece of text goes through ``html.escape`` on its way into the page.
"""

from __future__ import annotations

import dataclasses
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..oracle.log import TERMINAL, CaseLog
from ..oracle.model import Divergence
from ..runner.suite import OUTCOMES, CaseResult, SuiteReport

__all__ = ["html_report", "timeline_svg", "write_html"]

LANE_H = 30
LABEL_W = 150
TOP = 34
# Commands worth a mark on the timeline's runner lane (submits show as accepted ticks).
MARKED_COMMANDS = ("open", "complete", "fail", "advance", "close", "dispose", "as_not_safely",
                   "await", "runtime_end", "update_registration", "register",
                   "submit_concurrent")
COLORS = {"finished": "#3f9a5a", "failed": "#c8453b", "cancelled": "#8d8d8d",
          "running": "#3d74c4"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d232b;
background:#f4f5f7}
header{background:#1f2933;color:#fff;padding:18px 28px}
header h1{margin:0 0 4px;font-size:21px}
header p{margin:2px 0;color:#cfd6de}
main{padding:18px 28px;max-width:1500px}
.badges span{display:inline-block;margin:8px 8px 0 0;padding:3px 10px;border-radius:12px;
font-weight:600;background:#e3e7ec}
.passed{background:#d7efdd!important;color:#1f6b36}
.failed,.xpass{background:#f8d9d6!important;color:#8c251c}
.error{background:#fde7c8!important;color:#7a4a06}
.skipped,.xfail{background:#e3e7ec!important;color:#48535f}
.verdict{font-size:16px;font-weight:700;margin:10px 0}
table{border-collapse:collapse;background:#fff;margin:8px 0 18px}
th,td{border:1px solid #d5dae0;padding:3px 9px;text-align:right}
th:first-child,td:first-child{text-align:left}
td.bad{background:#f8d9d6;color:#8c251c;font-weight:600}
td.zero{color:#b3bac2}
section.case{background:#fff;border:1px solid #d5dae0;border-left:5px solid #c8453b;
border-radius:4px;margin:18px 0;padding:10px 18px 14px}
section.case.out-error{border-left-color:#d98b16}
section.case.out-xpass{border-left-color:#7a52b3}
section.case.out-xfail{border-left-color:#9aa5b1}
section.case h2{font-size:16px;margin:4px 0;word-break:break-all}
.meta{color:#5b6670;margin:2px 0 8px}
ul.reasons{margin:6px 0;padding-left:20px}
ul.reasons li{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12.5px;
margin:3px 0;white-space:pre-wrap;word-break:break-word}
.divergence{border:1px solid #e6b3ae;background:#fdf3f2;padding:8px 12px;border-radius:4px;
margin:10px 0}
.divergence b{color:#8c251c}
pre{background:#f6f7f9;border:1px solid #e0e4e8;padding:6px 9px;overflow-x:auto;
font-size:12px;margin:6px 0}
pre .hit{background:#f8d9d6;font-weight:700}
h3{font-size:14px;margin:14px 0 4px}
.timeline{overflow-x:auto;background:#fff;border:1px solid #e0e4e8;padding:4px}
.legend{color:#5b6670;font-size:12px;margin:4px 0}
details{margin:10px 0}
"""


@dataclasses.dataclass(slots=True)
class _Bar:
    work: str
    lane: str
    start: int
    end: int | None = None
    outcome: str = "running"
    yields: list[tuple[int, int | None]] = dataclasses.field(default_factory=list)


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def timeline_svg(log: CaseLog, title: str, divergence: Divergence | None = None) -> str:
    """One SVG: a lane per owner, a bar per work from ``started`` to its end (hatched
    while yielded), ticks for admissions, crosses for rejections and for works cancelled
    before they started, marks for the runner's commands, a red line at the divergence."""
    # x slots: every event, and the commands worth marking
    slots: dict[int, int] = {}
    marks: list[tuple[int, str]] = []
    settles: list[int] = []
    for pos, (direction, msg) in enumerate(log.entries):
        if direction == "sent":
            cmd = str(msg.get("cmd"))
            if cmd in MARKED_COMMANDS:
                slots[pos] = len(slots)
                arg = msg.get("gate") or msg.get("call") or msg.get("target") or msg.get("ms")
                marks.append((pos, f"{cmd} {arg}" if arg is not None else cmd))
            elif cmd == "settle":
                settles.append(len(slots))
        elif "event" in msg:
            slots[pos] = len(slots)
    lanes: list[str] = []
    bars: dict[str, _Bar] = {}
    points: list[tuple[str, int, str, str]] = []  # (lane, slot, kind, work)

    def lane(owner: Any) -> str:
        name = str(owner)
        if name not in lanes:
            lanes.append(name)
        return name

    for pos, event in log.events:
        work = event.work or ""
        owner = event.owner
        slot = slots[pos]
        if owner is None:
            continue
        if event.name == "accepted":
            points.append((lane(owner), slot, "accepted", work))
        elif event.name == "rejected":
            points.append((lane(owner), slot, "rejected", work))
        elif event.name == "started":
            bars[work] = _Bar(work, lane(owner), slot)
        elif event.name == "yielded" and work in bars:
            bars[work].yields.append((slot, None))
        elif event.name == "resumed" and work in bars and bars[work].yields:
            start, _ = bars[work].yields[-1]
            bars[work].yields[-1] = (start, slot)
        elif event.name in TERMINAL:
            if work in bars and bars[work].end is None:
                bars[work].end = slot
                bars[work].outcome = event.name
            elif work not in bars:
                points.append((lane(owner), slot, event.name, work))
        elif event.name in ("zombie", "snapshot", "error", "waited"):
            lane(owner)
    lanes.sort(key=lambda name: (name.split("/")[0], "/" in name, name))
    n = max(len(slots), 1)
    step = max(16, min(44, 1000 // n))
    width = LABEL_W + n * step + 30
    height = TOP + max(len(lanes), 1) * LANE_H + 24
    y_of = {name: TOP + i * LANE_H for i, name in enumerate(lanes)}

    def x(slot: int) -> float:
        return LABEL_W + slot * step + step / 2

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'role="img" aria-label="{_e(title)}" font-family="system-ui,sans-serif" '
           f'font-size="11">',
           '<defs><pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
           'patternTransform="rotate(45)"><rect width="6" height="6" fill="#fff"/>'
           '<line x1="0" y1="0" x2="0" y2="6" stroke="#9aa5b1" stroke-width="3"/></pattern>'
           '</defs>',
           f'<text x="6" y="15" font-weight="700" font-size="12">{_e(title)}</text>']
    for i, name in enumerate(lanes):
        y = y_of[name]
        fill = "#f7f8fa" if i % 2 == 0 else "#ffffff"
        out.append(f'<rect x="0" y="{y}" width="{width}" height="{LANE_H}" fill="{fill}"/>')
        out.append(f'<text x="6" y="{y + 19}" fill="#36414c">{_e(name)}</text>')
    for slot in settles:
        sx = LABEL_W + slot * step
        out.append(f'<line x1="{sx}" y1="{TOP - 6}" x2="{sx}" y2="{height - 20}" '
                   f'stroke="#c3cad2" stroke-dasharray="3 3"/>')
    for pos, text in marks:
        mx = x(slots[pos])
        out.append(f'<path d="M{mx - 4} {TOP - 12} l4 -5 l4 5 l-4 5 z" fill="#55616d"/>'
                   f'<text x="{mx + 6}" y="{TOP - 8}" fill="#55616d" font-size="10">'
                   f'{_e(text)}</text>')
    for bar in bars.values():
        y = y_of[bar.lane] + 5
        x0 = x(bar.start) - step / 2 + 2
        x1 = (x(bar.end) + step / 2 - 2) if bar.end is not None else width - 10
        color = COLORS[bar.outcome]
        out.append(f'<g><title>{_e(bar.work)}: {_e(bar.outcome)}</title>'
                   f'<rect x="{x0:.1f}" y="{y}" width="{max(x1 - x0, 4):.1f}" '
                   f'height="{LANE_H - 10}" rx="3" fill="{color}" opacity="0.88"/>')
        for ys, ye in bar.yields:
            y0 = x(ys)
            y1 = x(ye) if ye is not None else x1
            out.append(f'<rect x="{y0:.1f}" y="{y + 2}" width="{max(y1 - y0, 3):.1f}" '
                       f'height="{LANE_H - 14}" fill="url(#hatch)" opacity="0.9"/>')
        out.append(f'<text x="{x0 + 4:.1f}" y="{y + 14}" fill="#fff" font-weight="600">'
                   f'{_e(bar.work)}</text></g>')
    for name, slot, kind, work in points:
        px = x(slot)
        py = y_of[name] + LANE_H / 2
        label = f"<title>{_e(kind)} {_e(work)}</title>"
        if kind == "accepted":
            out.append(f'<g>{label}<circle cx="{px}" cy="{py}" r="3.5" fill="#55616d"/></g>')
        else:
            color = "#c8453b" if kind == "rejected" else "#8d8d8d"
            out.append(f'<g>{label}<path d="M{px - 5} {py - 5} l10 10 M{px + 5} {py - 5} '
                       f'l-10 10" stroke="{color}" stroke-width="2.5"/>'
                       f'<text x="{px + 7}" y="{py + 4}" fill="{color}" font-size="10">'
                       f'{_e(work)}</text></g>')
    if divergence is not None and divergence.position in slots:
        dx = x(slots[divergence.position])
        out.append(f'<line x1="{dx}" y1="{TOP - 4}" x2="{dx}" y2="{height - 18}" '
                   f'stroke="#d0021b" stroke-width="2"/>'
                   f'<text x="{dx + 4}" y="{height - 6}" fill="#d0021b" font-weight="700">'
                   f'diverges: {_e(divergence.what())}</text>')
    out.append("</svg>")
    return "".join(out)


def _rule_table(report: SuiteReport) -> str:
    head = "".join(f"<th>{_e(o)}</th>" for o in OUTCOMES)
    rows = []
    for rule, counts in report.by_rule().items():
        cells = []
        for o in OUTCOMES:
            value = counts.get(o, 0)
            cls = "bad" if value and o in ("failed", "error", "xpass") else (
                "zero" if not value else "")
            cells.append(f'<td class="{cls}">{value}</td>')
        rows.append(f"<tr><td>{_e(rule)}</td><td>{sum(counts.values())}</td>{''.join(cells)}"
                    f"</tr>")
    return (f"<table><tr><th>rule</th><th>cases</th>{head}</tr>{''.join(rows)}</table>")


def _entry_line(pos: int, direction: str, message: Mapping[str, Any]) -> str:
    arrow = "&gt;" if direction == "sent" else "&lt;"
    return f"{pos:>4} {arrow} {_e(json.dumps(dict(message), separators=(',', ':')))}"


def _case_section(result: CaseResult, expected: CaseLog | None) -> str:
    case = result.case
    parts = [f'<section class="case out-{_e(result.outcome)}" id="{_e(case.id)}">',
             f"<h2>{_e(case.id)}</h2>",
             f'<p class="meta"><span class="badges"><span class="{_e(result.outcome)}">'
             f"{_e(result.outcome)}</span></span> {_e(case.strength)}; rules "
             f"{_e(', '.join(case.rules))}; {result.seconds * 1000:.0f} ms</p>",
             f"<p>{_e(case.intent)}</p>"]
    if result.expected_failure is not None:
        parts.append(f"<p><b>Known failure:</b> {_e(result.expected_failure)}</p>")
    if result.messages:
        items = "".join(f"<li>{_e(m)}</li>" for m in result.messages)
        parts.append(f'<ul class="reasons">{items}</ul>')
    div = result.divergence
    if div is not None:
        lines = [_entry_line(p, d, m) for p, d, m in div.leading]
        lines.append(f'<span class="hit">{_entry_line(div.position, "received", div.event)}'
                     f"   &lt;-- diverges</span>")
        parts.append(f'<div class="divergence"><b>Model oracle:</b> {_e(div.what())} breaks '
                     f"<b>{_e(div.rule)}</b>"
                     f"{' (' + _e(div.invariant) + ')' if div.invariant else ''}: "
                     f"{_e(div.explanation)}<pre>{chr(10).join(lines)}</pre></div>")
    if result.log is not None and result.log.events:
        if expected is not None:
            parts.append("<h3>Expected (the same case on the reference runtime)</h3>"
                         f'<div class="timeline">{timeline_svg(expected, "expected")}</div>')
        parts.append("<h3>Observed</h3>"
                     f'<div class="timeline">{timeline_svg(result.log, "observed", div)}</div>')
        parts.append('<p class="legend">Lanes are owners; a bar runs from a work\'s start to '
                     'its end (green finished, red failed, grey cancelled, blue still '
                     'running), hatched while yielded; dots are admissions, crosses '
                     'rejections or cancellations before start; diamonds mark the runner\'s '
                     'commands, dashed lines its settles.</p>')
    if result.stderr_tail:
        parts.append(f"<h3>Adapter stderr (last lines)</h3><pre>"
                     f"{_e(chr(10).join(result.stderr_tail))}</pre>")
    parts.append("</section>")
    return "".join(parts)


def html_report(report: SuiteReport, expected: Mapping[str, CaseLog] | None = None,
                *, allow_skips: bool | None = None) -> str:
    """The whole page. ``expected`` maps case IDs to the reference runtime's log of the
    same case (the expected timeline); cases without one show only what was observed."""
    hs = report.handshake
    runtime = hs.name if hs is not None else "unknown runtime"
    judged = report.verdict(allow_skips=allow_skips)
    ok = judged.ok
    badges = "".join(f'<span class="{_e(o)}">{report.count_outcome(o)} {_e(o)}</span>'
                     for o in OUTCOMES if report.count_outcome(o) or o in ("passed", "failed"))
    shown = [r for r in report.results if r.outcome in ("failed", "error", "xpass")]
    known = [r for r in report.results if r.outcome == "xfail"]
    sections = "".join(_case_section(r, (expected or {}).get(r.case.id)) for r in shown)
    sections += "".join(_case_section(r, (expected or {}).get(r.case.id)) for r in known)
    others = "".join(f"<li>{_e(r.case.id)} ({_e(r.outcome)})</li>" for r in report.results
                     if r.outcome in ("passed", "skipped"))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<title>ZLink conformance: {_e(runtime)}</title><style>{CSS}</style></head><body>"
        f"<header><h1>ZLink conformance report</h1><p>runtime: {_e(runtime)}</p>"
        f"<p>adapter: {_e(' '.join(report.adapter))}</p>"
        f"<p>{len(report.results)} cases in {report.seconds:.2f} s</p></header><main>"
        f'<p class="verdict {"passed" if ok else "failed"}">{_e(judged.line())}</p>'
        f'<p class="verdict {"passed" if ok else "failed"}">conformance: '
        f'{_e(judged.conformance())}</p>'
        f'<div class="badges">{badges}</div>'
        f"<h2>By rule</h2>{_rule_table(report)}"
        f"<h2>Cases that did not pass ({len(shown)})</h2>"
        f"{sections or '<p>None.</p>'}"
        f"<details><summary>Other cases ({len(report.results) - len(shown) - len(known)})"
        f"</summary><ul>{others}</ul></details>"
        "</main></body></html>\n")


def write_html(report: SuiteReport, path: str | Path,
               expected: Mapping[str, CaseLog] | None = None, *,
               allow_skips: bool | None = None) -> None:
    """Write the page to ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html_report(report, expected, allow_skips=allow_skips), encoding="utf-8")


def failing(results: Sequence[CaseResult]) -> list[CaseResult]:
    """The cases whose timelines the page draws."""
    return [r for r in results if r.outcome in ("failed", "error", "xpass", "xfail")]
