"""The result cache of ``zlink verify``: a passing check whose inputs did not change is
not run again.

Where: ``.zlink-cache/`` in the checkout (git ignores it; ``--no-cache`` bypasses it;
deleting the folder is always safe). One JSON file per entry, written to a temporary
name and renamed, so steps running at the same time never see half an entry.

What an entry holds: the check's result (only passing results are kept: a failure is
always shown by running it again) and the inputs it depends on, each with a digest of
its content. An entry is used only when every one of those digests is what the files
hold now. The inputs are found two ways:

- Declared: a check whose inputs are known exactly from its own definition. A TLC run
  reads its modules (the ``.tla`` files it extends or instantiates), its configuration,
  the jar and Java; mypy and ruff read the Python files they are given and
  ``pyproject.toml``.
- Recorded: any other step is run under ``strace`` (when it is installed), which logs
  every file and folder the step and each process it starts opens (``tracelog``); the
  entry keeps those inside the checkout (a module's compiled ``__pycache__`` file
  stands for its source; a folder stands for the names in it, so a new case file in a
  listed folder counts). A file opened and not found is kept as missing: creating it
  later counts. A pytest step is kept test file by test file (``steprun``). Without
  strace, a recorded result depends on every file of the checkout.

Either way the key also holds the step's command, its environment and
``checkinputs.environment_digest`` (interpreter, installed distributions, Java, Node,
``pyproject.toml``).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from .checkinputs import CheckoutFiles, file_digest
from .tracelog import SKIPPED

__all__ = ["CACHE_DIR", "ResultCache", "listing_digest", "strace_available"]

CACHE_DIR = ".zlink-cache"


def strace_available() -> bool:
    """True when ``strace`` is on PATH (recorded inputs need it) and this process is not
    traced already (a process has one tracer: a verify run inside a traced step, as in
    the project's own tests, falls back to digests of every file)."""
    if shutil.which("strace") is None:
        return False
    try:
        status = Path("/proc/self/status").read_text(encoding="utf-8")
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("TracerPid:"):
            return line.split(":", 1)[1].strip() == "0"
    return False


def listing_digest(folder: Path) -> str:
    """A digest of the names in a folder (the skipped folders and ``__pycache__`` left
    out): adding or removing a file changes it, editing one does not."""
    try:
        names = sorted(n for n in os.listdir(folder)
                       if n not in SKIPPED and n != "__pycache__")
    except (FileNotFoundError, NotADirectoryError):
        return "missing"
    return hashlib.sha256("\n".join(names).encode()).hexdigest()


@dataclasses.dataclass
class ResultCache:
    """Entries under ``root/.zlink-cache``; a disabled cache finds nothing and keeps
    nothing."""

    root: Path
    enabled: bool = True
    location: Path | None = None  # default: root/.zlink-cache

    @property
    def folder(self) -> Path:
        return self.location if self.location is not None else self.root / CACHE_DIR

    def _path(self, kind: str, key: str) -> Path:
        return self.folder / kind / f"{key}.json"

    def key(self, *parts: str) -> str:
        """A key from strings (a step's name, command, environment digest)."""
        return hashlib.sha256("\0".join(parts).encode()).hexdigest()

    def load(self, kind: str, key: str) -> dict[str, Any] | None:
        """The entry stored under ``kind/key`` whose inputs are all unchanged, or None."""
        if not self.enabled:
            return None
        try:
            entry: dict[str, Any] = json.loads(self._path(kind, key).read_text("utf-8"))
        except (OSError, ValueError):
            return None
        if not self.unchanged(entry.get("inputs", {}), entry.get("folders", {})):
            return None
        return entry

    def raw(self, kind: str, key: str) -> dict[str, Any] | None:
        """The entry stored under ``kind/key`` as it is, checked or not (what a check
        was last seen to read), or None; read even when the cache is not used."""
        try:
            entry: dict[str, Any] = json.loads(self._path(kind, key).read_text("utf-8"))
        except (OSError, ValueError):
            return None
        return entry

    def unchanged(self, inputs: Mapping[str, str], folders: Mapping[str, str]) -> bool:
        """Every file's digest and every folder's listing as recorded."""
        for rel, digest in inputs.items():
            if file_digest(self.root / rel) != digest:
                return False
        return all(listing_digest(self.root / rel) == digest for rel, digest in folders.items())

    def store(self, kind: str, key: str, result: Mapping[str, Any],
              files: Iterable[str], folders: Iterable[str] = ()) -> None:
        """Keep a passing result with the digests of the inputs it depends on."""
        if not self.enabled:
            return
        entry = {"result": dict(result),
                 "inputs": {rel: file_digest(self.root / rel) for rel in sorted(set(files))},
                 "folders": {rel: listing_digest(self.root / rel)
                             for rel in sorted(set(folders))}}
        target = self._path(kind, key)
        target.parent.mkdir(parents=True, exist_ok=True)
        (self.folder / ".gitignore").write_text("*\n", encoding="utf-8")
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            json.dump(entry, out)
        os.replace(tmp, target)

    def every_file(self) -> list[str]:
        """Every file of the checkout (git's view): what a step depends on when its
        reads could not be recorded."""
        checkout = CheckoutFiles(self.root)
        return [p.relative_to(self.root.resolve()).as_posix() for p in checkout.files]
