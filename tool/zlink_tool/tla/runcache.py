"""TLC's outcomes kept between runs: a run whose inputs did not change is not run again.

What a TLC run reads, and so its key: the run's module and every module it extends or
instantiates (found in the models folder; TLC's standard modules come from the jar),
its configuration file, the TLC command line (workers, deadlock and simulation options,
with the scratch folder left out), the jar's bytes and the Java found. The manifest's
pinned counts are not in the key: TLC's outcome does not depend on them, and every
outcome, fresh or cached, is compared with the manifest as it is now, so a re-pinned
count is judged without re-running TLC. Outcomes that say TLC did not finish (an error,
a time-out) are never kept.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
from functools import cache
from pathlib import Path
from typing import Any

from ..checkinputs import file_digest
from ..resultcache import ResultCache
from .runner import ManifestEntry, RunResult, TlcOutcome, compare, tlc_command

__all__ = ["RunCache", "module_files"]

_USES = re.compile(r"^\s*(?:EXTENDS\s+([\w\s,]+?)\s*$|.*?\bINSTANCE\s+(\w+))", re.M)


def module_files(models_dir: Path, module: str) -> set[Path]:
    """The ``.tla`` files of ``module`` (a name, or a file name as the manifest gives it)
    and of every module it uses, in ``models_dir``."""
    found: set[Path] = set()
    todo = [module.removesuffix(".tla")]
    while todo:
        name = todo.pop()
        path = models_dir / f"{name}.tla"
        if path in found or not path.is_file():
            continue
        found.add(path)
        text = path.read_text(encoding="utf-8", errors="replace")
        for extends, instance in _USES.findall(text):
            names = [n.strip() for n in extends.split(",")] if extends else [instance]
            todo.extend(n for n in names if n)
    return found


@cache
def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclasses.dataclass
class RunCache:
    """TLC outcomes under ``.zlink-cache/tlc``, each with the inputs it was made from."""

    store: ResultCache
    models_dir: Path
    java: str
    jar: Path
    tlc_workers: int = 1

    def _key(self, entry: ManifestEntry) -> str:
        # The inputs' digests are in the key too, so the outcomes of a module before and
        # after an edit are both kept: undoing the edit finds the first again.
        argv = tlc_command("java", Path("tla2tools.jar"), entry, Path("SCRATCH"),
                           self.tlc_workers)
        root = self.store.root.resolve()
        digests = [f"{rel}={file_digest(root / rel)}" for rel in self._inputs(entry)]
        return self.store.key("tlc", json.dumps(argv), _digest(self.jar), self.java,
                              *digests)

    def _inputs(self, entry: ManifestEntry) -> list[str]:
        root = self.store.root.resolve()
        files = module_files(self.models_dir, entry.module) | {self.models_dir / entry.config}
        return sorted(p.resolve().relative_to(root).as_posix() for p in files)

    def load(self, entry: ManifestEntry) -> RunResult | None:
        """The kept outcome of this run, judged against the entry as it is now."""
        hit = self.store.load("tlc", self._key(entry))
        if hit is None:
            return None
        data: dict[str, Any] = hit["result"]
        # The inputs themselves must be the ones this entry names (a module that
        # started to extend another is a new input set).
        if sorted(hit.get("inputs", {})) != self._inputs(entry):
            return None
        outcome = TlcOutcome(
            exit_code=int(data["exit_code"]), result=str(data["result"]),
            violated=data.get("violated"), distinct=data.get("distinct"),
            total=data.get("total"), trace=tuple(data.get("trace", ())),
            version=data.get("version"), detail=str(data.get("detail", "")))
        return RunResult(entry, outcome, float(data.get("seconds", 0.0)),
                         compare(entry, outcome), str(data.get("output", "")))

    def keep(self, result: RunResult) -> None:
        """Keep a finished run's outcome (not an error or a time-out)."""
        o = result.outcome
        if o.result == "error":
            return
        data = {"exit_code": o.exit_code, "result": o.result, "violated": o.violated,
                "distinct": o.distinct, "total": o.total, "trace": list(o.trace),
                "version": o.version, "detail": o.detail, "seconds": result.seconds,
                "output": result.output}
        self.store.store("tlc", self._key(result.entry), data, self._inputs(result.entry))
