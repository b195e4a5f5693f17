"""The HTML report (``--html FILE``): one self-contained page, inline CSS and SVG only.

Its first screen answers what a reader opens it for: the runtime and its declared
capabilities, the run's verdict with its counts (``Verdict``, the one definition every
report prints), the cases that did not pass and the required cases that did not run,
each with the capability it needs and the reason it was skipped. Below come the table
by rule, whose rows link to the cases they count, then for every case that did not pass
its reasons, the model oracle's divergent event with the log leading there, and two
timelines drawn as SVG with one lane per owner: *expected* (the same case run against
the reference runtime, when the caller supplies that log) and *observed* (the runtime
under test); last, every other case, so that each case of the run has an anchor.

Everything that came from the adapter is data: names are checked by the protocol, but
messages, snapshot values, runtime names, capability names and stderr lines are free
strings, so every piece of text goes through ``text.display`` (control characters and
lone surrogates made visible, huge values cut) and ``html.escape`` on its way into the
page. Element ids are unique: a case's anchor is its ID, and each timeline's pattern id
carries the case and the side it draws.
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
from ..protocol.wire import CAPABILITIES, CLOSE_COMMAND, DISPOSE_COMMAND
from ..runner.suite import OUTCOMES, CaseResult, SuiteReport, Verdict
from .junit import error_kind, failure_rule
from .text import NAME_LIMIT, TEXT_LIMIT, display, display_items

__all__ = ["html_report", "timeline_svg", "write_html"]

LANE_H = 30
LABEL_W = 150
TOP = 34
# Commands worth a mark on the timeline's runner lane (submits show as accepted ticks).
MARKED_COMMANDS = ("open", "complete", "fail", "advance", CLOSE_COMMAND, DISPOSE_COMMAND,
                   "as_not_safely", "await", "runtime_end", "update_registration", "register",
                   "submit_concurrent")
COLORS = {"finished": "#3f9a5a", "failed": "#c8453b", "cancelled": "#8d8d8d",
          "running": "#3d74c4"}

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:0;color:#1d232b;
background:#f4f5f7}
header{display:flex;gap:24px;align-items:stretch;justify-content:space-between;
background:#1f2933;color:#fff;padding:16px 28px;border-bottom:6px solid #c8453b}
header.passed{border-bottom-color:#3f9a5a}
header h1{margin:0 0 4px;font-size:20px}
header p{margin:2px 0;color:#cfd6de;overflow-wrap:anywhere}
header p.runtime{font-size:17px;color:#fff}
header code{color:#e8ecf0}
.who{min-width:0;flex:1}
.outcome{flex:0 0 340px;border-radius:6px;padding:10px 16px;background:#8c251c;color:#fff}
.outcome.passed{background:#1f6b36}
.outcome .big{font-size:30px;font-weight:800;letter-spacing:1px}
nav{background:#2b3743;padding:6px 28px}
nav a{color:#dfe6ee;margin-right:18px;text-decoration:none;font-size:13px}
nav a:hover{text-decoration:underline}
main{padding:14px 28px;max-width:1500px}
h2{font-size:17px;margin:18px 0 6px}
.verdict-line{font-weight:700;margin:4px 0 8px;padding:6px 10px;border-radius:4px;
background:#f8d9d6;color:#8c251c;overflow-wrap:anywhere}
.verdict-line.passed{background:#d7efdd;color:#1f6b36}
.badge{display:inline-block;margin:0 6px 4px 0;padding:1px 9px;border-radius:11px;
font-weight:600;font-size:12.5px;background:#e3e7ec;color:#48535f;white-space:nowrap}
.badge.passed{background:#d7efdd;color:#1f6b36}
.badge.failed,.badge.xpass{background:#f8d9d6;color:#8c251c}
.badge.error{background:#fde7c8;color:#7a4a06}
.cards{display:grid;grid-template-columns:350px 370px minmax(420px,1fr);
gap:14px;margin:8px 0;align-items:start}
.scroll{max-height:460px;overflow-y:auto}
table.plain{margin:0;width:100%}
table.plain td{border:0;border-bottom:1px solid #eceff2;padding:2px 4px;text-align:left}
table.plain td.why,table.plain .chip{white-space:nowrap}
.card{background:#fff;border:1px solid #d5dae0;border-radius:6px;padding:4px 14px 10px;
min-width:0}
.card h2{margin:8px 0 6px}
.card h3{margin:10px 0 4px;font-size:13px;color:#48535f}
.note{color:#5b6670;font-size:12.5px}
.chip{display:inline-block;margin:2px 4px 2px 0;padding:0 7px;border-radius:4px;
font:12px/1.7 ui-monospace,Menlo,Consolas,monospace;overflow-wrap:anywhere}
.chip.on{background:#d7efdd;color:#1f6b36}
.chip.off{background:#eceff2;color:#6b7681;text-decoration:line-through}
.chip.unknown{background:#fdf1dc;color:#7a4a06}
.more{color:#5b6670;font-size:12.5px;margin-left:4px}
.why{color:#5b6670;font-size:12.5px;margin-left:6px}
a.case-link{font:12.5px ui-monospace,Menlo,Consolas,monospace;color:#2458a6;
text-decoration:none}
a.case-link:hover{text-decoration:underline}
a.case-link.failed,a.case-link.xpass{color:#a2281e}
a.case-link.error{color:#8a5200}
a.case-link.skipped,a.case-link.xfail{color:#5b6670}
table{border-collapse:collapse;background:#fff;margin:6px 0 14px}
th,td{border:1px solid #d5dae0;padding:2px 8px;text-align:right;vertical-align:top}
th:first-child,td:first-child{text-align:left}
table.counts{font-size:13.5px}
table.counts td,table.counts th{padding:3px 6px;white-space:nowrap}
table.unrun td,table.unrun th{text-align:left}
table.rules{font-size:13px}
table.rules td.links,table.rules th:last-child{text-align:left;max-width:780px}
table.rules td.links a{margin-right:10px}
td.bad{background:#f8d9d6;color:#8c251c;font-weight:600}
td.warn{background:#fdf1dc;color:#7a4a06;font-weight:600}
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
ul.others{columns:2;column-gap:28px;list-style:none;padding:0;font-size:13px}
ul.others li{break-inside:avoid;margin:2px 0;overflow-wrap:anywhere}
:target{outline:3px solid #f0b429;outline-offset:2px}
"""


@dataclasses.dataclass(slots=True)
class _Bar:
    work: str
    lane: str
    start: int
    end: int | None = None
    outcome: str = "running"
    yields: list[tuple[int, int | None]] = dataclasses.field(default_factory=list)


def _e(value: Any, limit: int | None = TEXT_LIMIT) -> str:
    """Text for the page: made safe to show (``display``), then HTML-escaped."""
    return html.escape(display(value, limit), quote=True)


def timeline_svg(log: CaseLog, title: str, divergence: Divergence | None = None, *,
                 key: str = "") -> str:
    """One SVG: a lane per owner, a bar per work from ``started`` to its end (hatched
    while yielded), ticks for admissions, crosses for rejections and for works cancelled
    before they started, marks for the runner's commands, a red line at the divergence.

    ``key`` makes the id of its hatch pattern unique in a page (``hatch-KEY``): ids are
    global to an HTML document, so two SVGs defining the same id would be invalid and a
    browser free to fill one's bars with the other's pattern."""
    hatch = f"hatch-{key}" if key else "hatch"
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
           f'<defs><pattern id="{_e(hatch)}" width="6" height="6" '
           'patternUnits="userSpaceOnUse" patternTransform="rotate(45)">'
           '<rect width="6" height="6" fill="#fff"/>'
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
                       f'height="{LANE_H - 14}" fill="url(#{_e(hatch)})" opacity="0.9"/>')
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


def _outcome_badge(outcome: str) -> str:
    return f'<span class="badge {_e(outcome)}">{_e(_LABEL.get(outcome, outcome))}</span>'


_LABEL = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "not run",
          "xfail": "known failure", "xpass": "UNEXPECTED PASS"}
# The outcomes a case section is written for; every other case is a line of its own
# at the end of the page. Both carry the case ID as their id, the rule table's anchors.
_SHOWN = ("failed", "error", "xpass", "xfail")


def _broke(result: CaseResult) -> str:
    """``; broke SE-10.3`` for a failed case (the rule JUnit puts in ``failure@type``),
    ``; adapter fault AP-5`` for an errored one."""
    if result.status == "failed":
        return f"; broke <b>{_e(failure_rule(result))}</b>"
    if result.status == "error":
        kind = error_kind(result)
        return f"; {'adapter error' if kind == 'adapter' else 'adapter fault ' + _e(kind)}"
    return ""


def _case_link(result: CaseResult) -> str:
    # a line may break after each underscore of the ID, never inside a word
    label = _e(result.case.id).replace("_", "_<wbr>")
    return (f'<a class="case-link {_e(result.outcome)}" href="#{_e(result.case.id)}">'
            f"{label}</a>")


def _rule_table(report: SuiteReport) -> str:
    """Counts by rule; each row links to its cases that did not pass (or did not run)."""
    by_rule = report.by_rule()
    outcomes = [o for o in OUTCOMES
                if o not in ("xfail", "xpass") or any(c[o] for c in by_rule.values())]
    head = "".join(f"<th>{_e(o)}</th>" for o in outcomes)
    cases: dict[str, list[CaseResult]] = {}
    for r in report.results:
        if r.outcome != "passed":
            for rule in r.case.rules:
                cases.setdefault(rule, []).append(r)
    rows = []
    for rule, counts in by_rule.items():
        cells = []
        for o in outcomes:
            value = counts.get(o, 0)
            cls = "bad" if value and o in ("failed", "error", "xpass") else (
                "zero" if not value else "")
            cells.append(f'<td class="{cls}">{value}</td>')
        links = " ".join(_case_link(r) for r in cases.get(rule, []))
        rows.append(f"<tr><td>{_e(rule)}</td><td>{sum(counts.values())}</td>{''.join(cells)}"
                    f'<td class="links">{links}</td></tr>')
    return (f'<table class="rules"><tr><th>rule</th><th>cases</th>{head}'
            f"<th>cases that did not pass or did not run</th></tr>{''.join(rows)}</table>")


def _entry_line(pos: int, direction: str, message: Mapping[str, Any]) -> str:
    arrow = "&gt;" if direction == "sent" else "&lt;"
    return f"{pos:>4} {arrow} {_e(json.dumps(dict(message), separators=(',', ':')))}"


def _case_section(result: CaseResult, expected: CaseLog | None) -> str:
    case = result.case
    parts = [f'<section class="case out-{_e(result.outcome)}" id="{_e(case.id)}">',
             f"<h2>{_e(case.id)}</h2>",
             f'<p class="meta">{_outcome_badge(result.outcome)} {_e(case.strength)}; rules '
             f"{_e(', '.join(case.rules))}{_broke(result)}; "
             f"{result.seconds * 1000:.0f} ms</p>",
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
                         f'<div class="timeline">'
                         f'{timeline_svg(expected, "expected", key=f"{case.id}-expected")}'
                         "</div>")
        parts.append("<h3>Observed</h3>"
                     f'<div class="timeline">'
                     f'{timeline_svg(result.log, "observed", div, key=f"{case.id}-observed")}'
                     "</div>")
        parts.append('<p class="legend">Lanes are owners; a bar runs from a work\'s start to '
                     'its end (green finished, red failed, grey cancelled, blue still '
                     'running), hatched while yielded; dots are admissions, crosses '
                     'rejections or cancellations before start; diamonds mark the runner\'s '
                     'commands, dashed lines its settles.</p>')
    if result.stderr_tail:
        tail = "\n".join(_e(line) for line in result.stderr_tail)
        parts.append(f"<h3>Adapter stderr (last lines)</h3><pre>{tail}</pre>")
    parts.append("</section>")
    return "".join(parts)


def _counts_card(judged: Verdict) -> str:
    """The verdict's counts, as ``Verdict`` defines them (failed includes errors)."""
    def row(name: str, total: int, passed: int, not_run: int, failed: int) -> str:
        return (f"<tr><th>{name}</th><td>{total}</td><td>{passed}</td>"
                f'<td class="{"warn" if not_run else "zero"}">{not_run}</td>'
                f'<td class="{"bad" if failed else "zero"}">{failed}</td></tr>')
    return ('<section class="card" id="counts"><h2>Verdict counts</h2>'
            '<table class="counts"><tr><th></th><th>cases</th><th>passed</th>'
            "<th>not run</th><th>failed</th></tr>"
            + row("required", judged.required, judged.required_passed,
                  judged.required_not_run, judged.required_failed)
            + row("optional", judged.optional, judged.optional_passed,
                  judged.optional_not_run, judged.optional_failed)
            + "</table>"
            f"<p>expected failures (known failures that failed): "
            f"{judged.expected_failures}<br>unexpected passes (known failures that passed): "
            f"{judged.unexpected_passes}</p>"
            f"<p class=\"note\">Failed counts errors too. Required cases that did not run "
            f"{'are allowed (--allow-skips)' if judged.allow_skips else 'fail the run'}; "
            f"optional cases that ran and failed fail it.</p></section>")


def _chips(values: Sequence[str], cls: str, titles: Mapping[str, str] | None = None,
           limit: int = 40) -> str:
    shown, left = display_items(values, limit)
    chips = "".join(
        f'<span class="chip {cls}" title="{html.escape((titles or {}).get(v, ""))}">'
        f"{html.escape(v)}</span>" for v in shown)
    return chips + (f'<span class="more">and {left:,} more left out</span>' if left else "")


def _capabilities_card(report: SuiteReport) -> str:
    """Declared capabilities, the known ones not declared, and (cut short) names this
    kit does not know."""
    hs = report.handshake
    declared = tuple(hs.capabilities) if hs is not None else ()
    absent = [c for c in CAPABILITIES if c not in declared]
    parts = [f'<section class="card" id="capabilities"><h2>Capabilities: {len(declared)} of '
             f"{len(CAPABILITIES)} declared</h2>",
             f"<div>{_chips(declared, 'on', CAPABILITIES) or 'none'}</div>"]
    if absent:
        unrun = [r.case for r in report.results if r.outcome == "skipped"]
        rows = []
        for cap in absent:
            req = sum(1 for c in unrun if c.required and cap in c.capabilities)
            opt = sum(1 for c in unrun if not c.required and cap in c.capabilities)
            rows.append(f'<tr><td><span class="chip off" title="{_e(CAPABILITIES[cap])}">'
                        f"{_e(cap)}</span></td><td>{req} required, {opt} optional case(s) "
                        f"not run</td></tr>")
        parts.append(f"<h3>Not declared ({len(absent)})</h3>"
                     f'<table class="plain">{"".join(rows)}</table>')
    if hs is not None and hs.unknown_capabilities:
        parts.append(f"<h3>Unknown to this kit, ignored ({len(hs.unknown_capabilities):,})"
                     f"</h3><div>{_chips(hs.unknown_capabilities, 'unknown')}</div>")
    parts.append("</section>")
    return "".join(parts)


def _not_passed_card(results: Sequence[CaseResult]) -> str:
    """Every case that did not pass (known failures too), linked to its section, with
    the rule it broke or the adapter fault it was."""
    bad = [r for r in results if r.outcome in _SHOWN]
    rows = "".join(f"<tr><td>{_outcome_badge(r.outcome)}</td><td>{_case_link(r)}</td>"
                   f'<td class="why">{_broke(r)[2:]}</td></tr>' for r in bad)
    body = f'<table class="plain">{rows}</table>' if rows else "<p>None.</p>"
    return (f'<section class="card" id="not-passed"><h2>Did not pass ({len(bad)})</h2>'
            f'<div class="scroll">{body}</div></section>')


def _not_run_section(report: SuiteReport, judged: Verdict) -> str:
    """The required cases that did not run: each with the capability it needs and the
    reason it was skipped."""
    hs = report.handshake
    declared = hs.capabilities if hs is not None else ()
    unrun = [r for r in report.results if r.case.required and r.outcome == "skipped"]
    if not unrun:
        return ('<section id="not-run"><h2>Required cases that did not run (0)</h2>'
                "<p>Every required case ran.</p></section>")
    rows = "".join(
        f"<tr><td>{_case_link(r)}</td>"
        f"<td>{_e(', '.join(r.case.missing(declared)) or ', '.join(r.case.capabilities))}"
        f"</td><td>{'; '.join(_e(m) for m in r.messages)}</td></tr>" for r in unrun)
    effect = ("allowed by --allow-skips: they do not fail the run, but the runtime is not "
              "shown to conform on them" if judged.allow_skips
              else "each counts as not passed and fails the run")
    return (f'<section id="not-run"><h2>Required cases that did not run ({len(unrun)})</h2>'
            f"<p>The adapter did not declare a capability these cases need; {effect}.</p>"
            '<table class="unrun"><tr><th>case</th><th>needs capability</th><th>skip reason'
            f"</th></tr>{rows}</table></section>")


def _others_section(results: Sequence[CaseResult]) -> str:
    """Every case without a section of its own: one line each, with its anchor."""
    others = [r for r in results if r.outcome not in _SHOWN]
    items = []
    for r in others:
        why = "; ".join(_e(m) for m in r.messages) if r.outcome == "skipped" else ""
        items.append(f'<li id="{_e(r.case.id)}">{_outcome_badge(r.outcome)} {_e(r.case.id)}'
                     f"{f' <span class=why>{why}</span>' if why else ''}</li>")
    return (f'<section id="others"><h2>Other cases ({len(others)})</h2>'
            f'<ul class="others">{"".join(items)}</ul></section>')


def html_report(report: SuiteReport, expected: Mapping[str, CaseLog] | None = None,
                *, allow_skips: bool | None = None) -> str:
    """The whole page. ``expected`` maps case IDs to the reference runtime's log of the
    same case (the expected timeline); cases without one show only what was observed."""
    hs = report.handshake
    runtime = _e(hs.name, NAME_LIMIT) if hs is not None else "unknown runtime"
    judged = report.verdict(allow_skips=allow_skips)
    state = "passed" if judged.ok else "failed"
    badges = "".join(
        f'<span class="badge {_e(o) if report.count_outcome(o) else "none"}">'
        f"{report.count_outcome(o)} {_e(o)}</span>"
        for o in OUTCOMES if report.count_outcome(o) or o in ("passed", "failed"))
    shown = [r for r in report.results if r.outcome in ("failed", "error", "xpass")]
    known = [r for r in report.results if r.outcome == "xfail"]
    sections = "".join(_case_section(r, (expected or {}).get(r.case.id))
                       for r in [*shown, *known])
    unrun = judged.required_not_run
    restarts = f"; adapter restarted {report.restarts} time(s)" if report.restarts else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>ZLink conformance: {runtime}</title><style>{CSS}</style></head><body>"
        f'<header class="{state}"><div class="who"><h1>ZLink conformance report</h1>'
        f'<p class="runtime">runtime <b>{runtime}</b></p>'
        f"<p>adapter: <code>{_e(' '.join(report.adapter))}</code></p>"
        f"<p>{len(report.results)} cases in {report.seconds:.2f} s{restarts}</p>"
        f"{_suite_line(report)}</div>"
        f'<div class="outcome {state}"><div class="big">{"PASS" if judged.ok else "FAIL"}'
        f'</div><div>conformance: {_e(judged.conformance())}</div></div></header>'
        '<nav><a href="#counts">verdict</a><a href="#capabilities">capabilities</a>'
        f'<a href="#not-passed">did not pass ({len(shown) + len(known)})</a>'
        f'<a href="#not-run">required not run ({unrun})</a><a href="#rules">by rule</a>'
        '<a href="#failing">failing cases</a><a href="#others">other cases</a></nav><main>'
        f'<p class="verdict-line {state}">{_e(judged.line())}</p>\n'
        f'<div class="badges">{badges}</div>'
        f'<div class="cards">{_counts_card(judged)}{_capabilities_card(report)}'
        f"{_not_passed_card(report.results)}</div>"
        f"{_not_run_section(report, judged)}"
        f'<section id="rules"><h2>By rule</h2>{_rule_table(report)}</section>'
        f'<h2 id="failing">Cases that did not pass ({len(shown) + len(known)})</h2>'
        f"{sections or '<p>None.</p>'}"
        f"{_others_section(report.results)}"
        "</main></body></html>\n")


def _suite_line(report: SuiteReport) -> str:
    """Which suite ran: kit and protocol versions, the case set's whole digest."""
    suite = report.suite
    if suite is None:
        return ""
    return (f'<p class="suite">suite: zlink-conformance {_e(suite.kit)}; protocol '
            f"{suite.protocol}; case set <code>{_e(suite.digest)}</code> ({suite.count} "
            f"cases)</p>")


def write_html(report: SuiteReport, path: str | Path,
               expected: Mapping[str, CaseLog] | None = None, *,
               allow_skips: bool | None = None) -> None:
    """Write the page to ``path``."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(html_report(report, expected, allow_skips=allow_skips), encoding="utf-8",
                      errors="backslashreplace")


def failing(results: Sequence[CaseResult]) -> list[CaseResult]:
    """The cases whose timelines the page draws."""
    return [r for r in results if r.outcome in ("failed", "error", "xpass", "xfail")]
