"""Adapter text is data, never layout, in every report (issue 14, item 8).

An adapter's free strings (runtime name and version, capability names, error messages
quoted in reasons, stderr lines) may hold, in valid JSON, a lone surrogate, control
characters (an ANSI ``ESC[2J`` clears a terminal; XML 1.0 forbids C0 controls) or sizes
no reader wants. Every reporter (console, JSON, JUnit, HTML, the pytest plugin, the
CLI's own messages) must survive them and show them as visible escapes, cut to size with
a count of what was left out. The end-to-end tests drive the fake adapter
``fakes/hostile_text.py``; the others build results directly, so each reporter is held
to the policy on its own.
"""

from __future__ import annotations

import io
import json
import re
import shlex
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_pytest_plugin import pytest_in

from zlink_conformance.catalog import Catalogue
from zlink_conformance.oracle.log import CaseLog
from zlink_conformance.protocol.wire import Event
from zlink_conformance.report import ConsoleReporter, print_summary, write_json, write_junit
from zlink_conformance.report.html import write_html
from zlink_conformance.runner import CaseResult, SuiteReport
from zlink_conformance.runner.process import Handshake

from kit_helpers import child_env, fake

# What an adapter may write in valid JSON: a lone surrogate of each half, C0 controls
# (ESC[2J clears the screen, BEL, NUL, a newline that would forge a report line), DEL,
# a C1 control (CSI) and a right-to-left override that would reorder what is read.
NASTY = "\ud800 refused \x1b[2J\x1b[31mred\x07\x00\x7f\x9b2J\nFORGED LINE \u202eevil \udc80"
# Characters no report may hold: C0 controls (the reports' own line breaks excepted, and
# tabs nowhere), DEL, C1 controls, surrogates, the bidi override.
FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff\u202e]")
HUGE_NAME = "N" * 900_000
# the name and version, less the 200 characters shown
CUT = re.compile(r"\.\.\. \[899,[89]\d\d more characters left out\]")
MANY = tuple(f"x{i}" for i in range(95_000))


def _report(catalogue: Catalogue, *, name: str = "zlink\udc80ref",
            unknown: tuple[str, ...] = ()) -> SuiteReport:
    """One failed, one errored and one skipped case, every free string hostile."""
    failed_case, error_case = catalogue.cases[0], catalogue.cases[1]
    skipped_case = next(c for c in catalogue.cases if c.required and c.capabilities)
    log = CaseLog()
    log.sent({"cmd": "reset"})
    log.event(Event("accepted", {"work": "a", "owner": "q"}))
    log.event(Event("started", {"work": "a", "owner": "q"}))
    log.event(Event("failed", {"work": "a", "owner": "q", "message": NASTY}))
    results = [
        CaseResult(failed_case, "failed", 0.01, [f"[SE-5.1] a failed: {NASTY}"], [], log),
        CaseResult(error_case, "error", 0.01, [f"steps[4] settle: refused: {NASTY}"],
                   [f"stderr {NASTY}", "\x1b[2J"], None),
        CaseResult(skipped_case, "skipped", 0.0, [f"needs capability {NASTY}"],
                   expected_failure=None),
    ]
    hs = Handshake(1, {"name": name, "version": "1.0\x1b[2J\x00"}, ("actor", "queue"),
                   unknown, {})
    return SuiteReport([sys.executable, "adapter\x1b[2J.py"], hs, results, 0.2)


def _clean(text: str, where: str) -> None:
    found = FORBIDDEN.search(text)
    assert found is None, f"{where}: {found.group()!r} at {found.start()}: " \
                          f"{text[max(found.start() - 60, 0):found.start() + 20]!r}"


def test_console_shows_controls_and_surrogates_escaped(catalogue: Catalogue) -> None:
    report = _report(catalogue)
    out = io.StringIO()
    reporter = ConsoleReporter(out)
    for i, result in enumerate(report.results, 1):
        reporter(i, len(report.results), result)
    print_summary(report, stream=out)
    text = out.getvalue()
    _clean(text, "console")
    assert "\\ud800 refused \\x1b[2J\\x1b[31mred\\x07\\x00\\x7f\\x9b2J\\nFORGED" in text
    assert "zlink\\udc80ref 1.0\\x1b[2J\\x00" in text
    assert "\nFORGED LINE" not in text  # a newline in adapter text makes no line


def test_console_on_an_ascii_stream_writes_escapes_instead_of_failing(
        catalogue: Catalogue) -> None:
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="ascii")
    report = _report(catalogue, name="zlink-r\u00e9f\u00e9rence")
    print_summary(report, stream=stream)
    stream.flush()
    assert b"zlink-r\\xe9f\\xe9rence" in raw.getvalue()


def test_console_abridges_a_huge_name_and_a_huge_capability_list(
        catalogue: Catalogue) -> None:
    out = io.StringIO()
    print_summary(_report(catalogue, name=HUGE_NAME, unknown=MANY), stream=out)
    text = out.getvalue()
    assert len(text) < 20_000, len(text)
    assert CUT.search(text)
    assert "95,000" in text and "and 94,960 more left out" in text


def test_json_report_holds_no_lone_surrogate_and_keeps_data_whole(
        catalogue: Catalogue, tmp_path: Path) -> None:
    write_json(_report(catalogue, name=HUGE_NAME), tmp_path / "r.json")
    raw = (tmp_path / "r.json").read_bytes()
    assert raw.isascii()  # every control character is a JSON escape
    assert b"\\ud800" not in raw.replace(b"\\\\ud800", b"")  # no surrogate escape
    data = json.loads(raw)
    assert not re.search("[\ud800-\udfff]", json.dumps(data, ensure_ascii=False))
    assert data["runtime"]["name"] == HUGE_NAME  # data for programs: not cut
    assert "\\ud800 refused \x1b[2J" in data["cases"][1]["messages"][0]


def test_junit_is_valid_xml_1_0_with_adapter_text_escaped(catalogue: Catalogue,
                                                         tmp_path: Path) -> None:
    write_junit(_report(catalogue, name=HUGE_NAME, unknown=MANY), tmp_path / "r.xml")
    text = (tmp_path / "r.xml").read_text(encoding="utf-8")
    _clean(text, "junit")
    root = ET.parse(tmp_path / "r.xml").getroot()
    props = {p.get("name"): p.get("value") or "" for p in root.iter("property")}
    assert len(props["runtime"]) < 1_000 and CUT.search(props["runtime"])
    assert props["unknown_capabilities"].endswith("and 94,960 more left out")
    failure = root.find("testcase/failure")
    assert failure is not None and "\\ud800 refused \\x1b[2J" in failure.get("message", "")
    assert len(text) < 50_000, len(text)


def test_html_holds_no_control_or_surrogate_and_cuts_huge_text(catalogue: Catalogue,
                                                                tmp_path: Path) -> None:
    write_html(_report(catalogue, name=HUGE_NAME, unknown=MANY), tmp_path / "r.html")
    text = (tmp_path / "r.html").read_text(encoding="utf-8")
    _clean(text, "html")
    assert len(text) < 200_000, len(text)
    assert CUT.search(text) and "94,960 more left out" in text
    write_html(_report(catalogue), tmp_path / "s.html")
    page = (tmp_path / "s.html").read_text(encoding="utf-8")
    _clean(page, "html")
    assert "\\ud800 refused \\x1b[2J" in page and "zlink\\udc80ref" in page


# ---------------------------------------------------------------- end to end


def _run(tmp_path: Path, hostile: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "run", "--only", "SE-5.1",
         "--adapter", shlex.join(fake("hostile_text")),
         "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
         "--html", str(tmp_path / "r.html")],
        capture_output=True, text=True, encoding="utf-8", errors="surrogateescape",
        timeout=120, env=child_env(HOSTILE=hostile), check=False)


def test_a_hostile_adapter_run_writes_every_report(tmp_path: Path) -> None:
    proc = _run(tmp_path, "surrogate_name,control_name,refuse,many_capabilities")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]  # one error
    _clean(proc.stdout + proc.stderr, "terminal")
    assert "unsupported: \\ud800 refused \\x1b[2J" in proc.stdout
    assert "zlink\\udc80reference 1.0\\x1b[2J\\x00" in proc.stdout
    assert "and 94,960 more left out" in proc.stdout and len(proc.stdout) < 30_000
    ET.parse(tmp_path / "r.xml")
    _clean((tmp_path / "r.xml").read_text(encoding="utf-8"), "junit")
    json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))
    _clean((tmp_path / "r.html").read_text(encoding="utf-8"), "html")


def test_a_huge_runtime_name_is_cut_on_the_terminal_and_in_junit_and_html(
        tmp_path: Path) -> None:
    proc = _run(tmp_path, "huge_name")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert len(proc.stdout) < 30_000 and CUT.search(proc.stdout)
    assert (tmp_path / "r.xml").stat().st_size < 50_000
    assert (tmp_path / "r.html").stat().st_size < 100_000


def test_a_handshake_refusal_with_hostile_text_is_escaped_on_stderr(tmp_path: Path) -> None:
    script = tmp_path / "refuses.py"
    error = json.dumps({"kind": "unsupported", "message": NASTY})
    script.write_text(  # answers hello with a refusal, says ESC[2J and BEL on stderr
        "import json, sys\n"
        "ident = json.loads(sys.stdin.readline())['id']\n"
        f"sys.stdout.write('{{\"re\":%d,\"ok\":false,\"error\":%s}}\\n' % (ident, {error!r}))\n"
        "sys.stdout.flush()\n"
        "sys.stderr.write('stderr \\x1b[2J\\x07 done\\n')\n")
    proc = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "run", "--only", "SE-5.1",
         "--adapter", shlex.join([sys.executable, str(script)])],
        capture_output=True, text=True, encoding="utf-8", errors="surrogateescape",
        timeout=120, env=child_env(), check=False)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr[-3000:]
    _clean(proc.stdout + proc.stderr, "terminal")
    assert "\\ud800 refused \\x1b[2J" in proc.stderr


@pytest.mark.slow
def test_the_pytest_plugin_shows_hostile_adapter_text_escaped(tmp_path: Path) -> None:
    proc = pytest_in(tmp_path, "--zlink-adapter", shlex.join(fake("hostile_text")),
                     "--zlink-only", "SE-5.1", "--junitxml", str(tmp_path / "p.xml"),
                     HOSTILE="refuse,surrogate_name,control_name")
    assert "INTERNALERROR" not in proc.stdout + proc.stderr, proc.stdout[-3000:]
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    _clean(proc.stdout + proc.stderr, "pytest terminal")
    assert "\\ud800 refused \\x1b[2J" in proc.stdout
    # the failure reads as lines: pytest did not have to fall back to the repr of a
    # text it could not write (which puts the whole report on one line)
    assert "\nintent: " in proc.stdout, proc.stdout[-3000:]
    ET.parse(tmp_path / "p.xml")
