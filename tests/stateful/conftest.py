"""The state machines' summary: examples, checked steps and examples per second of each
machine that ran, printed after the test session (performance figures live here, not
in assertions)."""

from __future__ import annotations

import pytest

from machinery import MUTANT, PROFILE, STATS


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not STATS:
        return
    tr = terminalreporter
    mutant = f", mutant {MUTANT}" if MUTANT else ""
    tr.write_sep("-", f"state machines (profile {PROFILE}{mutant})")
    tr.write_line(f"{'machine':12s} {'examples':>9s} {'steps':>8s} {'seconds':>8s} "
                  f"{'examples/s':>11s} {'steps/s':>9s}")
    for name, s in sorted(STATS.items()):
        secs = max(s.seconds, 1e-9)
        tr.write_line(f"{name:12s} {s.examples:9d} {s.steps:8d} {s.seconds:8.2f} "
                      f"{s.examples / secs:11.1f} {s.steps / secs:9.0f}")
