"""The state machines' summary: for each machine that ran, its examples, checked steps,
the wall time of its test and examples per second, printed after the session
(performance figures live here, never in assertions)."""

from __future__ import annotations

import re

import pytest

from machinery import MUTANT, PROFILE, STATS

_WALL: dict[str, float] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    found = re.search(r"test_(\w+)_machine\.py", report.nodeid)
    if found and report.when == "call":
        _WALL[found.group(1)] = _WALL.get(found.group(1), 0.0) + report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not STATS:
        return
    tr = terminalreporter
    mutant = f", mutant {MUTANT}" if MUTANT else ""
    tr.write_sep("-", f"state machines (profile {PROFILE}{mutant})")
    tr.write_line(f"{'machine':12s} {'examples':>9s} {'steps':>8s} {'seconds':>8s} "
                  f"{'examples/s':>11s} {'steps/s':>9s}")
    for name, s in sorted(STATS.items()):
        secs = max(_WALL.get(name, s.seconds), 1e-9)
        tr.write_line(f"{name:12s} {s.examples:9d} {s.steps:8d} {secs:8.2f} "
                      f"{s.examples / secs:11.1f} {s.steps / secs:9.0f}")
