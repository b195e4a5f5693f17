"""The HTML report: one self-contained page whose every piece of adapter text is escaped."""

from __future__ import annotations

from html.parser import HTMLParser

from zlink_conformance.catalog import Catalogue
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.protocol.wire import Event
from zlink_conformance.report.html import html_report, timeline_svg
from zlink_conformance.runner import CaseResult, SuiteReport
from zlink_conformance.runner.process import Handshake

HOSTILE = '</style><script>alert(1)</script><img src=x onerror="alert(2)">&amp;'


class Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.links += [v or "" for k, v in attrs if k in ("src", "href") and v]


def test_hostile_adapter_text_is_escaped_and_nothing_is_loaded(catalogue: Catalogue) -> None:
    case = catalogue.cases[0]
    log = CaseLog()
    log.sent({"cmd": "reset"})
    log.event(Event("accepted", {"work": "a", "owner": "q"}))
    log.event(Event("started", {"work": "a", "owner": "q"}))
    log.event(Event("snapshot", {"work": "a", "owner": "q", "values": {"k": HOSTILE}}))
    log.event(Event("failed", {"work": "a", "owner": "q", "message": HOSTILE}))
    result = CaseResult(case, "failed", 0.01, [f"a failed with {HOSTILE}"], [HOSTILE], log)
    hs = Handshake(1, {"name": HOSTILE, "version": HOSTILE}, (), (), {})
    page = html_report(SuiteReport([HOSTILE], hs, [result], 0.1), {case.id: log})
    parser = Tags()
    parser.feed(page)
    assert "script" not in parser.tags and "img" not in parser.tags
    assert parser.links and all(link.startswith("#") for link in parser.links)  # in-page
    assert HOSTILE not in page and "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert page.count("<style>") == 1 and "<svg" in page


def test_a_timeline_draws_a_lane_per_owner_and_marks_the_divergence() -> None:
    log = CaseLog()
    log.event(Event("accepted", {"work": "a", "owner": "S/actor:A"}))
    log.event(Event("rejected", {"work": "b", "owner": "S", "reason": "closed"}))
    log.event(Event("started", {"work": "a", "owner": "S"}))
    log.event(Event("yielded", {"work": "a", "owner": "S", "call": "c"}))
    svg = timeline_svg(log, "observed")
    assert ">S<" in svg and ">S/actor:A<" in svg and 'fill="url(#hatch)"' in svg
    assert "<title>rejected b</title>" in svg
