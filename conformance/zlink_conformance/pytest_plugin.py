"""pytest plugin: the conformance cases as pytest items.

    pytest --zlink-adapter "CMD" [--zlink-only ID] [--zlink-timeout S] [-k PATTERN]
           [--zlink-expect-fail FILE] [--zlink-allow-skips] [--zlink-cases DIR]

Each selected case becomes one item named by its case ID (so ``-k SE_10_02`` works and
reports show the rule in the name), under the node ``zlink-conformance``. All items
share one adapter process, started at the first item and shut down at the end of the
session. Items end as the run's verdict counts them (the same as the CLI's exit status
and JUnit): a required case that needs a capability the adapter did not declare fails
(it is skipped with ``--zlink-allow-skips``), an optional one is skipped; a known failure
(``--zlink-expect-fail``, the CLI's ``--expect-fail`` file) that fails is xfailed and one
that passes fails; an optional case that ran and failed fails. An adapter that never
starts is one error, of the first item; the others are skipped with the reason. The
terminal summary ends with the run's ``verdict:`` line. The plugin is registered through
the ``pytest11`` entry point and does nothing at all unless ``--zlink-adapter`` is
given, so installing the kit changes no other test run. Adapter text in its messages
goes through ``report.text.display``, as in every other report: pytest writes them to
the terminal and into its own JUnit XML.
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .catalog import Case, CaseError, SelectionError, load_catalogue, select
from .known import KnownFailuresError, load_known_failures
from .report.text import display
from .runner import DEFAULT_TIMEOUT, CaseResult, Runner, SuiteAbortedError, SuiteReport

__all__ = ["ConformanceFailedError", "ConformanceItem"]

_RUNNER_KEY = pytest.StashKey["SharedRunner"]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """The plugin's options (inert unless --zlink-adapter is given)."""
    group = parser.getgroup("zlink-conformance", "ZLink conformance cases")
    group.addoption("--zlink-adapter", metavar="CMD", default=None,
                    help="run the ZLink conformance cases against this adapter command line")
    group.addoption("--zlink-only", action="append", default=[], metavar="ID",
                    help="only this case or rule ID (repeatable)")
    group.addoption("--zlink-cases", metavar="DIR", default=None,
                    help="read case files from DIR instead of the shipped ones")
    group.addoption("--zlink-expect-fail", metavar="FILE", default=None,
                    help="a TOML file of known failures, as the CLI's --expect-fail")
    group.addoption("--zlink-allow-skips", action="store_true", default=False,
                    help="required cases skipped for a missing capability do not fail")
    group.addoption("--zlink-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                    help="wall-clock bound of one case (default %(default)s)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, only when the plugin is switched on."""
    if config.getoption("zlink_adapter", None):
        config.addinivalue_line("markers", "zlink_conformance: a ZLink conformance case")


class SharedRunner:
    """One adapter for every item of the session, started on first use."""

    def __init__(self, command: str, timeout: float, known: dict[str, str],
                 allow_skips: bool) -> None:
        self.argv = shlex.split(command)
        self.runner = Runner(self.argv, timeout=timeout, known_failures=known)
        self.allow_skips = allow_skips
        self.started = False
        self.abort: str | None = None
        self.aborted_at: str | None = None
        self.results: list[CaseResult] = []
        self.t0 = time.monotonic()
        self.started_at = time.time()

    def start(self, nodeid: str) -> None:
        """Start the adapter (in the first item's setup, so that a failure to start is
        one error); after such a failure every later item is skipped with the reason."""
        if self.abort is not None:
            pytest.skip(f"not run: the adapter did not start (the error of {self.aborted_at})")
        if self.started:
            return
        try:
            self.runner.start()
        except SuiteAbortedError as exc:
            tail = "\n".join(f"  | {display(line)}" for line in exc.stderr_tail)
            self.abort = f"the adapter did not start: {display(exc.message)}\n{tail}".rstrip()
            self.aborted_at = nodeid
            pytest.fail(self.abort, pytrace=False)
        self.started = True

    def run(self, case: Case) -> CaseResult:
        result = self.runner.run_case(case)
        self.results.append(result)
        return result

    def report(self) -> SuiteReport:
        return SuiteReport(self.argv, self.runner.handshake, self.results,
                           time.monotonic() - self.t0, self.runner.restarts, self.allow_skips,
                           self.started_at)

    def stop(self) -> None:
        self.runner.stop()


class ConformanceFailedError(Exception):
    """A case did not pass; carries its result for the report."""

    def __init__(self, result: CaseResult) -> None:
        super().__init__(result.status)
        self.result = result


class ConformanceSuite(pytest.Collector):
    """The parent node of every case item."""

    def __init__(self, *, cases: list[Case], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cases = cases

    def collect(self) -> Iterator[pytest.Item]:
        for case in self.cases:
            yield ConformanceItem.from_parent(self, name=case.id, case=case)


class ConformanceItem(pytest.Item):
    """One conformance case."""

    def __init__(self, *, case: Case, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.case = case
        self.add_marker("zlink_conformance")

    def setup(self) -> None:
        self.config.stash[_RUNNER_KEY].start(self.nodeid)

    def runtest(self) -> None:
        shared = self.config.stash[_RUNNER_KEY]
        result = shared.run(self.case)
        if result.outcome == "xfail":
            pytest.xfail(f"known failure: {display(result.expected_failure)}")
        if result.outcome == "xpass":
            pytest.fail(f"unexpected pass: {self.case.id} is listed as a known failure "
                        f"({display(result.expected_failure)}) but passes now; remove the "
                        f"entry",
                        pytrace=False)
        if result.status == "skipped":
            if self.case.required and not shared.allow_skips:
                pytest.fail(f"required case not run: {'; '.join(map(display, result.messages))}"
                            f" (counts as not passed; --zlink-allow-skips to allow)",
                            pytrace=False)
            pytest.skip("; ".join(map(display, result.messages)))
        if result.status != "passed":
            raise ConformanceFailedError(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailedError):
            r = excinfo.value.result
            lines = [f"{r.case.id} ({r.case.strength}; rules {', '.join(r.case.rules)}): "
                     f"{r.status}", f"intent: {r.case.intent}"]
            lines += [f"  {display(m)}" for m in r.messages]
            if r.stderr_tail:
                lines.append("adapter stderr (last lines):")
                lines += [f"  | {display(t)}" for t in r.stderr_tail]
            return "\n".join(lines)
        return str(super().repr_failure(excinfo))

    def reportinfo(self) -> tuple[str, int | None, str]:
        return self.case.path, None, f"zlink conformance case {self.case.id}"


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Add the selected cases as items (first, so -k and -m apply to them too)."""
    command = config.getoption("zlink_adapter", None)
    if not command:
        return
    try:
        catalogue = load_catalogue(config.getoption("zlink_cases"))
        cases = select(catalogue, config.getoption("zlink_only"))
    except (CaseError, SelectionError) as exc:
        raise pytest.UsageError(f"zlink conformance: {exc}") from None
    if not shlex.split(command):
        raise pytest.UsageError("--zlink-adapter is empty")
    known: dict[str, str] = {}
    path = config.getoption("zlink_expect_fail")
    if path:
        try:
            known = dict(load_known_failures(Path(path), catalogue).reasons)
        except KnownFailuresError as exc:
            raise pytest.UsageError(f"zlink conformance: --zlink-expect-fail {exc}") from None
    config.stash[_RUNNER_KEY] = SharedRunner(command, config.getoption("zlink_timeout"),
                                             known, config.getoption("zlink_allow_skips"))
    suite = ConformanceSuite.from_parent(session, name="zlink-conformance",
                                         nodeid="zlink-conformance", cases=cases)
    collected: list[pytest.Item | pytest.Collector] = list(suite.collect())
    # Tell the reporters, so "collected N items" counts the cases.
    config.hook.pytest_collectreport(
        report=pytest.CollectReport(suite.nodeid, "passed", None, [*collected]))
    items.extend(item for item in collected if isinstance(item, pytest.Item))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    """End with the run's verdict, the same line the CLI prints."""
    shared = config.stash.get(_RUNNER_KEY, None)
    if shared is None:
        return
    if shared.abort is not None:
        terminalreporter.write_line(f"zlink conformance: {shared.abort.splitlines()[0]}")
        return
    verdict = shared.report().verdict()
    terminalreporter.write_line(f"zlink conformance {verdict.line()}")
    terminalreporter.write_line(f"zlink conformance: {verdict.conformance()}")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Shut the shared adapter down."""
    shared = config.stash.get(_RUNNER_KEY, None)
    if shared is not None:
        shared.stop()
