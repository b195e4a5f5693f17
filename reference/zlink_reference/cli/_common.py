"""Helpers shared by the subcommands: where the checkout is, and a progress printer."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import TextIO

__all__ = ["Progress", "repo_root"]


def repo_root() -> Path:
    """The checkout this package runs from (models/, tests/, specs/ live there).

    ``ZLINK_ROOT`` overrides; otherwise the directory holding pyproject.toml above this
    file (an editable install), else the current directory."""
    env = os.environ.get("ZLINK_ROOT")
    if env:
        return Path(env).resolve()
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "pyproject.toml").is_file() and (parent / "reference").is_dir():
            return parent
    return Path.cwd()


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
