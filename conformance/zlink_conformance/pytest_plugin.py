"""pytest plugin: the conformance cases as pytest items.

    pytest --zlink-adapter "CMD" [--zlink-only ID] [--zlink-timeout S] [-k PATTERN]

Each selected case becomes one item named by its case ID (so ``-k SE_10_02`` works and
reports show the rule in the name), under the node ``zlink-conformance``. All items
share one adapter process, started at the first item and shut down at the end of the
session; a case that needs a capability the adapter did not declare is skipped with the
reason. The plugin is registered through the ``pytest11`` entry point and does nothing at
all unless ``--zlink-adapter`` is given, so installing the kit changes no other test run.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

import pytest

from .catalog import Case, CaseError, SelectionError, load_catalogue, select
from .runner import DEFAULT_TIMEOUT, CaseResult, Runner, SuiteAbortedError

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
    group.addoption("--zlink-timeout", type=float, default=DEFAULT_TIMEOUT, metavar="SECONDS",
                    help="wall-clock bound of one case (default %(default)s)")


def pytest_configure(config: pytest.Config) -> None:
    """Register the marker, only when the plugin is switched on."""
    if config.getoption("zlink_adapter", None):
        config.addinivalue_line("markers", "zlink_conformance: a ZLink conformance case")


class SharedRunner:
    """One adapter for every item of the session, started on first use."""

    def __init__(self, command: str, timeout: float) -> None:
        self.argv = shlex.split(command)
        self.runner = Runner(self.argv, timeout=timeout)
        self.started = False
        self.abort: str | None = None

    def run(self, case: Case) -> CaseResult:
        if self.abort is not None:
            pytest.fail(self.abort, pytrace=False)
        if not self.started:
            try:
                self.runner.start()
            except SuiteAbortedError as exc:
                tail = "\n".join(f"  | {line}" for line in exc.stderr_tail)
                self.abort = f"the adapter did not start: {exc.message}\n{tail}".rstrip()
                pytest.fail(self.abort, pytrace=False)
            self.started = True
        return self.runner.run_case(case)

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

    def runtest(self) -> None:
        shared = self.config.stash[_RUNNER_KEY]
        result = shared.run(self.case)
        if result.status == "skipped":
            pytest.skip("; ".join(result.messages))
        if result.status != "passed":
            raise ConformanceFailedError(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException],
                     style: Any = None) -> str:
        if isinstance(excinfo.value, ConformanceFailedError):
            r = excinfo.value.result
            lines = [f"{r.case.id} ({r.case.strength}; rules {', '.join(r.case.rules)}): "
                     f"{r.status}", f"intent: {r.case.intent}"]
            lines += [f"  {m}" for m in r.messages]
            if r.stderr_tail:
                lines.append("adapter stderr (last lines):")
                lines += [f"  | {t}" for t in r.stderr_tail]
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
    config.stash[_RUNNER_KEY] = SharedRunner(command, config.getoption("zlink_timeout"))
    suite = ConformanceSuite.from_parent(session, name="zlink-conformance",
                                         nodeid="zlink-conformance", cases=cases)
    collected: list[pytest.Item | pytest.Collector] = list(suite.collect())
    # Tell the reporters, so "collected N items" counts the cases.
    config.hook.pytest_collectreport(
        report=pytest.CollectReport(suite.nodeid, "passed", None, [*collected]))
    items.extend(item for item in collected if isinstance(item, pytest.Item))


def pytest_unconfigure(config: pytest.Config) -> None:
    """Shut the shared adapter down."""
    shared = config.stash.get(_RUNNER_KEY, None)
    if shared is not None:
        shared.stop()
