"""The checkout's files and the digests the result cache keys on.

A check's result may be reused only while everything it reads is byte for byte the
same: the files of the checkout it reads (``resultcache`` says how those are known) and
the environment it runs in (the Python version, every installed distribution and its
version, the ``java`` and ``node`` found on PATH, ``pyproject.toml``, where pytest, mypy
and ruff read their settings, and the variables that choose profiles or tools).
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from collections.abc import Iterable
from functools import cached_property
from pathlib import Path

from .importgraph import ImportGraph

__all__ = ["CheckoutFiles", "digest_files", "environment_digest", "file_digest"]

def file_digest(path: Path) -> str:
    """sha256 of a file's bytes ("missing" for a file that is not there)."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except (FileNotFoundError, IsADirectoryError):
        return "missing"


def digest_files(root: Path, files: Iterable[Path], extra: Iterable[str] = ()) -> str:
    """One digest over the paths (relative to ``root``) and contents of ``files`` and
    the ``extra`` strings (the command, the environment)."""
    h = hashlib.sha256()
    for item in extra:
        h.update(item.encode() + b"\0")
    for path in sorted({Path(p).resolve() for p in files}):
        try:
            rel = path.relative_to(root).as_posix()
        except ValueError:
            rel = path.as_posix()
        h.update(rel.encode() + b"\0" + file_digest(path).encode() + b"\0")
    return h.hexdigest()


def environment_digest(root: Path) -> str:
    """The interpreter, the installed distributions, the external tools: any of them
    changing invalidates every cached result."""
    h = hashlib.sha256()
    h.update(f"{sys.version}|{platform.platform()}|{sys.executable}".encode())
    dists = sorted(f"{d.metadata['Name']}=={d.version}"
                   for d in importlib.metadata.distributions())
    h.update("\n".join(dists).encode())
    for tool in ("java", "node"):
        found = shutil.which(tool)
        if found:
            real = Path(found).resolve()
            stat = real.stat()
            h.update(f"{tool}={real}:{stat.st_size}:{stat.st_mtime_ns}".encode())
    h.update(file_digest(root / "pyproject.toml").encode())
    for name in ("ZLINK_TLA2TOOLS", "JAVA_HOME", "ZLINK_HYPOTHESIS_PROFILE", "PYTEST_ADDOPTS"):
        h.update(f"{name}={os.environ.get(name, '')}".encode())
    return h.hexdigest()


@dataclasses.dataclass
class CheckoutFiles:
    """The files of a checkout that git does not ignore, and its import graph."""

    root: Path

    @cached_property
    def graph(self) -> ImportGraph:
        return ImportGraph(self.root)

    @cached_property
    def files(self) -> tuple[Path, ...]:
        """Tracked and untracked files, without the ignored ones (``.venv``, caches)."""
        try:
            out = subprocess.run(
                ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                cwd=self.root, capture_output=True, check=True).stdout
            names = [n for n in out.decode().split("\0") if n]
        except (OSError, subprocess.CalledProcessError):
            names = [p.relative_to(self.root).as_posix() for p in self.root.rglob("*")
                     if p.is_file() and ".git" not in p.parts and ".venv" not in p.parts]
        return tuple(sorted({(self.root / n).resolve() for n in names
                             if (self.root / n).is_file()}))
