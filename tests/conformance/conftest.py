"""Shared fixtures of the conformance kit's tests: the case catalogue, and one full run
of the suite against the reference adapter, with every raw line it exchanged, shared by
the tests that only read it (helpers live in kit_helpers.py)."""

from __future__ import annotations

import pytest

from zlink_conformance.catalog import Catalogue, load_catalogue
from zlink_conformance.runner import Runner
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import FullRun, child_env


@pytest.fixture(scope="session")
def catalogue() -> Catalogue:
    return load_catalogue()


@pytest.fixture(scope="session")
def full_run(catalogue: Catalogue) -> FullRun:
    wire: list[tuple[str, bytes]] = []
    with Runner(reference_adapter_command(), env=child_env(),
                wire_tap=lambda d, line: wire.append((d, line))) as runner:
        report = runner.run(catalogue.cases)
    return FullRun(report, wire)
