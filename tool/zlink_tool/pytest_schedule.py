"""A pytest plugin that places a pytest step of ``zlink verify`` on its cores: the
longest work first, and each core handed back to verify as soon as its pytest-xdist
worker has nothing left to run.

``zlink verify`` loads it (``-p zlink_tool.pytest_schedule``) when it runs a pytest step
on more than one core. Nothing it does changes which tests run or what they check: it
changes their order, and it tells verify when a core is free.

- The order. pytest-xdist's ``loadgroup`` hands out work units (a test, or every test
  of an ``xdist_group``) in the order of the collection, each to the first worker free.
  A long unit handed out last runs alone while the other workers have ended: the step's
  tail, one core idle. So the collection is sorted longest unit first (the classic
  longest-processing-time rule), by each test's seconds in the step's last run
  (``ZLINK_TEST_SECONDS``, a JSON file of node id -> seconds that this plugin rewrites
  at the end of the run) or, for a test never timed, by its file's typical cost
  (``TYPICAL_FILE_SECONDS``, taken from a cold run) shared among the file's tests.
  Every worker sorts the same collection the same way, so they still agree on it.
- The cores. When a worker ends (``pytest_testnodedown``: no work unit was left for
  it), a line is appended to the file ``ZLINK_CORES_FREED`` names; verify reads it and
  starts another step on that core while this one finishes its last units.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from .steprun import CORES_FREED_VARIABLE, TEST_SECONDS_VARIABLE

__all__ = ["TYPICAL_FILE_SECONDS", "longest_first", "pytest_collection_modifyitems",
           "pytest_configure", "pytest_runtest_logreport", "pytest_sessionfinish",
           "pytest_testnodedown"]

# Seconds a test file's tests took in all (their workers' wall time, setup of the
# session fixtures they use first included) in a cold `zlink verify` of the tests step
# on the 2-core reference machine at load 6-8 (docs/performance.md, "The verify loop",
# fifth pass): the order while no run has timed a test. Files not listed count a
# fraction of a second a test; only the order they give matters, not the figures.
TYPICAL_FILE_SECONDS: Mapping[str, float] = {
    "tests/packaging/test_compiled_wheels.py": 82.0,
    "tests/packaging/test_wheels.py": 74.0,
    "tests/conformance/test_explore.py": 73.0,
    "tests/packaging/test_ci_recipes.py": 64.0,
    "tests/conformance/test_explore_graph.py": 62.0,
    "tests/conformance/test_case_isolation.py": 59.0,
    "tests/conformance/test_java_adapter.py": 56.0,
    "tests/models/test_two_judges.py": 53.0,
    "tests/conformance/test_runner_bounds.py": 30.0,
    "tests/packaging/test_pyz.py": 27.0,
    "tests/coordinators/test_threads.py": 27.0,
    "tests/models/test_counterexamples.py": 26.0,
    "tests/test_default_run.py": 24.0,
    "tests/conformance/test_protocol_schemas.py": 22.0,
    "tests/conformance/test_node_adapter.py": 22.0,
    "tests/conformance/test_minimal_runtime_cases.py": 20.0,
    "tests/conformance/test_fake_adapters.py": 20.0,
    "tests/models/test_distributed.py": 16.0,
    "tests/test_rules_index.py": 15.0,
    "tests/reliability/test_reliability_bar.py": 12.0,
}
_UNKNOWN_TEST_SECONDS = 0.2
_GROUP = "@"


class _State:
    """The seconds this run measured, per node id (without xdist's group suffix)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}


_state = _State()


def _plain_id(item_or_id: pytest.Item | str) -> str:
    """A node id without the ``@group`` suffix pytest-xdist adds under ``loadgroup``."""
    nodeid = item_or_id if isinstance(item_or_id, str) else item_or_id.nodeid
    at = nodeid.rfind(_GROUP)
    return nodeid[:at] if at > nodeid.rfind("]") and at > nodeid.rfind("::") else nodeid


def _unit(item: pytest.Item) -> str:
    """The work unit pytest-xdist's ``loadgroup`` hands out whole: the group, or the
    test alone."""
    names = sorted({str(m.args[0] if m.args else m.kwargs.get("name", "default"))
                    for m in item.iter_markers("xdist_group")})
    return "group:" + "_".join(names) if names else "test:" + _plain_id(item)


def _known_seconds() -> dict[str, float]:
    path = os.environ.get(TEST_SECONDS_VARIABLE)
    if not path:
        return {}
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError, TypeError):
        return {}


def longest_first(items: list[pytest.Item], known: Mapping[str, float],
                  typical: Mapping[str, float] = TYPICAL_FILE_SECONDS) -> list[pytest.Item]:
    """The items with their work units longest first (ties: as collected), each unit's
    tests in their collected order."""
    per_file: dict[str, int] = {}
    for item in items:
        per_file[item.location[0]] = per_file.get(item.location[0], 0) + 1

    def seconds(item: pytest.Item) -> float:
        plain = _plain_id(item)
        if plain in known:
            return known[plain]
        file = item.location[0]
        return typical[file] / per_file[file] if file in typical else _UNKNOWN_TEST_SECONDS

    cost: dict[str, float] = {}
    first: dict[str, int] = {}
    for index, item in enumerate(items):
        unit = _unit(item)
        cost[unit] = cost.get(unit, 0.0) + seconds(item)
        first.setdefault(unit, index)
    order = {unit: rank for rank, unit in enumerate(
        sorted(cost, key=lambda u: (-cost[u], first[u])))}
    return sorted(items, key=lambda item: order[_unit(item)])  # stable within a unit


def pytest_configure(config: pytest.Config) -> None:
    """Keep the order this plugin gives: pytest-xdist would otherwise sort the units by
    their number of tests."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session: pytest.Session, config: pytest.Config,
                                  items: list[pytest.Item]) -> None:
    """Sort the collection longest work unit first."""
    del session, config
    items[:] = longest_first(items, _known_seconds())


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """Add up each test's setup, call and teardown (in the controller, every worker's)."""
    plain = _plain_id(report.nodeid)
    _state.seconds[plain] = _state.seconds.get(plain, 0.0) + report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Keep this run's seconds for the next run's order (the controller, or a run
    without workers, writes them; a worker does not)."""
    del exitstatus
    path = os.environ.get(TEST_SECONDS_VARIABLE)
    if not path or hasattr(session.config, "workerinput") or not _state.seconds:
        return
    kept = _known_seconds()
    kept.update(_state.seconds)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    scratch = target.with_name(f".{target.name}.{os.getpid()}")
    scratch.write_text(json.dumps(kept, indent=0, sort_keys=True), encoding="utf-8")
    scratch.replace(target)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    """A worker ended: tell verify a core is free."""
    del node, error
    path = os.environ.get(CORES_FREED_VARIABLE)
    if path:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("1\n")
