"""Prints the reliability bar's counts at the end of every pytest run that ran it, so CI
logs show them (``./dev test`` runs pytest; passed tests' output is not shown)."""

from __future__ import annotations

import pytest
import reliability_bar


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not reliability_bar.RESULTS:
        return
    terminalreporter.section("reliability bar: counts per scenario, CI size")
    for line in reliability_bar.table(reliability_bar.RESULTS).splitlines():
        terminalreporter.write_line(line)
