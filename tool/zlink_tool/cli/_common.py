"""Helpers shared by the subcommands: where the models are, optional dependencies,
and a progress printer."""

from __future__ import annotations

import importlib
import sys
import time
from types import ModuleType
from typing import TextIO

from .. import DISTRIBUTION
from ..paths import DataError, Layout, locate
from ..tla.runner import ToolMissingError, find_jar, find_java

__all__ = ["Progress", "layout", "require", "tlc_missing"]


def layout() -> Layout:
    """Where the models and specs are (see ``zlink_tool.paths``); a missing home is a
    usage error (exit 2) that names the path and how to point at another one."""
    try:
        return locate()
    except DataError as exc:
        print(f"zlink: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def tlc_missing(prefix: str) -> int | None:
    """Before a subcommand that needs TLC starts any work: None if Java and
    ``tla2tools.jar`` are there, else the exit status to return, after one line on
    stderr, led by ``prefix``, saying how to get what is missing."""
    try:
        find_jar()
        find_java()
    except ToolMissingError as exc:
        print(f"{prefix}: {exc}", file=sys.stderr)
        return exc.exit_code
    return None


def require(module: str, extra: str) -> ModuleType:
    """Import an optional dependency, or exit 2 with one line naming the package and
    the install command (a subcommand that needs z3 says so, rather than every command
    failing at start-up; the TLA+ jar is found by ``tla.runner.find_jar``, which says
    the same)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        package = _PACKAGES.get(module, module)
        print(f"zlink: this subcommand needs {package}: pip install '{DISTRIBUTION}[{extra}]'",
              file=sys.stderr)
        raise SystemExit(2) from None


_PACKAGES = {"z3": "z3-solver"}  # import name -> distribution name


class Progress:
    """One line per step: ``[i/n] name ... ok (1.2 s)``, flushed as it goes."""

    def __init__(self, total: int, stream: TextIO | None = None) -> None:
        self.total = total
        self.index = 0
        self.stream = stream or sys.stdout
        self._t0 = 0.0

    def start(self, name: str) -> None:
        self.index += 1
        self._t0 = time.monotonic()
        self.stream.write(f"[{self.index}/{self.total}] {name} ... ")
        self.stream.flush()

    def done(self, status: str) -> float:
        elapsed = time.monotonic() - self._t0
        self.stream.write(f"{status} ({elapsed:.1f} s)\n")
        self.stream.flush()
        return elapsed
