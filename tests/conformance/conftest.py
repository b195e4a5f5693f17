"""Shared fixtures of the conformance kit's tests: how to start the reference adapter and
the fake ones as child processes (with this checkout's packages importable), and one
full run of the suite against the reference adapter, with every raw line it exchanged,
shared by the tests that only read it."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

import zlink_conformance
import zlink_reference
from zlink_conformance.adapters import reference_adapter_command
from zlink_conformance.catalog import Catalogue, load_catalogue
from zlink_conformance.runner import Runner, SuiteReport

FAKES = Path(__file__).parent / "fakes"


def child_env(**extra: str) -> dict[str, str]:
    """Environment for child processes: this checkout's packages first on the path."""
    roots = [str(Path(zlink_conformance.__file__).parents[1]),
             str(Path(zlink_reference.__file__).parents[1])]
    path = os.pathsep.join([*roots, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {"PYTHONPATH": path, **extra}


def fake(name: str) -> list[str]:
    """The command line of a fake adapter script in fakes/."""
    return [sys.executable, str(FAKES / f"{name}.py")]


class FullRun:
    """One run of every shipped case against the reference adapter."""

    def __init__(self, report: SuiteReport, wire: list[tuple[str, bytes]]) -> None:
        self.report = report
        self.wire = wire


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
