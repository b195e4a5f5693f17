"""What the conformance kit's tests share besides fixtures: how to start the reference
adapter and the fake ones as child processes (with this checkout's packages importable),
and the shape of one full run. A module of its own, not conftest.py, so that importing
it never depends on which conftest pytest loaded last."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import zlink_conformance
import zlink_reference
from zlink_conformance.runner import SuiteReport

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
