"""The reviewer's report of a ``zlink verify`` run (``--report FILE.md``, ``--json FILE``).

What a reviewer of a spec change asks, answered from the run itself: which rules the
change touched and why (``impact``), each layer's verdict with its first failure line,
the pinned state counts that moved (read from the models step's own comparison with
the manifest), the conformance cases added, changed or retired since the revision, and
the time taken. Layers are read from the steps: the models (TLC), the core (the
tests under ``tests/core``), contracts and proofs (``policy``, ``symbolic``), the
machines (``properties``, ``mutants``), the other tests, and the conformance suite on
each example runtime (the reference through ``conformance`` and ``self-test``, Node and
Java through their test files in the ``tests`` step).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from .impact import Impact

__all__ = ["Layer", "StepLike", "build_report", "layers", "moved_counts", "to_markdown"]

_RUN_LINE = re.compile(r"^\s*\[\s*\d+/\d+\]\s+(\S+)\s")
_MOVED = re.compile(r"(distinct|total) states changed: manifest (\d+), now (\d+)")
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+?)(?:::|\s|$)")
CASES_DIR = "conformance/zlink_conformance/cases/"


class StepLike(Protocol):
    """What the report reads of a step's result."""

    name: str
    status: str
    seconds: float
    output: str
    rules: list[str]
    cached: bool
    selected: tuple[str, ...] | None

    @property
    def failed(self) -> bool: ...

    def first_failure(self) -> str: ...


@dataclasses.dataclass(frozen=True)
class Layer:
    """One layer's verdict: "ok", "FAILED", "cached", "not run"; and what failed first."""

    name: str
    verdict: str
    first_failure: str = ""


def _failing_files(output: str) -> list[tuple[str, str]]:
    """(test file, the FAILED line) for each failing test of a pytest output."""
    out = []
    for line in output.splitlines():
        m = _FAILED_TEST.match(line.strip())
        if m:
            out.append((m.group(1), line.strip()))
    return out


def layers(results: Sequence[StepLike], skipped: dict[str, str] | None = None
           ) -> list[Layer]:
    """The layers' verdicts, from the steps that ran (``skipped``: the steps ``--since``
    left out, and why)."""
    by = {r.name: r for r in results}
    left = skipped or {}

    def of(names: Sequence[str]) -> Layer | None:
        present = [by[n] for n in names if n in by]
        if not present:
            why = [f"{n}: {left[n]}" for n in names if n in left]
            return Layer("", "not run (--since)", "; ".join(why)) if why else None
        bad = [r for r in present if r.failed]
        if bad:
            return Layer("", "FAILED", f"{bad[0].name}: {bad[0].first_failure()}")
        if all(r.cached for r in present):
            return Layer("", "ok (cached)")
        if all(r.status.startswith("skipped") for r in present):
            return Layer("", "not run")
        return Layer("", "ok")

    def within(step: str, pattern: str) -> Layer | None:
        r = by.get(step)
        if r is None:
            return of([step])
        if r.selected is not None and not any(re.search(pattern, f) for f in r.selected):
            return Layer("", "not run (--since)", "no test file of it reads a changed file")
        hits = [line for f, line in _failing_files(r.output) if re.search(pattern, f)]
        if hits:
            return Layer("", "FAILED", hits[0])
        return Layer("", "ok (cached)" if r.cached else ("FAILED elsewhere in the step"
                                                         if r.failed else "ok"))

    table: list[tuple[str, Layer | None]] = [
        ("models (TLC)", of(["models"])),
        ("core", within("tests", r"^tests/core/")),
        ("contracts and proofs", of(["policy", "symbolic"])),
        ("machines", of(["properties", "mutants"])),
        ("tests", of(["tests"])),
        ("traceability, types, lint", of(["rules", "types", "lint"])),
        ("conformance: reference runtime", of(["conformance", "self-test"])),
        ("conformance: Node example", within("tests", r"test_node_adapter")),
        ("conformance: Java example", within("tests", r"test_java_adapter")),
    ]
    return [dataclasses.replace(layer, name=name) for name, layer in table if layer]


def moved_counts(models_output: str) -> list[dict[str, Any]]:
    """Pinned state counts that moved, from the models step's output."""
    moved: list[dict[str, Any]] = []
    run = ""
    for line in models_output.splitlines():
        if m := _RUN_LINE.match(line):
            run = m.group(1)
        for kind, pinned, now in _MOVED.findall(line):
            moved.append({"run": run, "count": kind, "pinned": int(pinned), "now": int(now)})
    return moved


def case_changes(root: Path, rev: str) -> dict[str, list[str]]:
    """Conformance case files added, changed and deleted since ``rev``, and the IDs
    the retired list gained."""
    out: dict[str, list[str]] = {"added": [], "changed": [], "deleted": [], "retired": []}
    proc = subprocess.run(["git", "diff", "--name-status", "--no-renames", rev, "--",
                           CASES_DIR], cwd=root, capture_output=True, text=True)
    for line in proc.stdout.splitlines():
        status, _, name = line.partition("\t")
        key = {"A": "added", "M": "changed", "D": "deleted"}.get(status[:1])
        if key and name.endswith(".json") and not name.endswith("retired.json"):
            out[key].append(Path(name).stem)
    new = subprocess.run(["git", "ls-files", "--others", "--exclude-standard", "--",
                          CASES_DIR], cwd=root, capture_output=True, text=True)
    out["added"] += [Path(n).stem for n in new.stdout.split() if n.endswith(".json")]
    retired = root / CASES_DIR / "retired.json"
    before = subprocess.run(["git", "show", f"{rev}:{CASES_DIR}retired.json"], cwd=root,
                            capture_output=True, text=True)
    try:
        now_ids = set(_retired_ids(json.loads(retired.read_text(encoding="utf-8"))))
        old_ids = set(_retired_ids(json.loads(before.stdout))) if before.returncode == 0 \
            else set()
        out["retired"] = sorted(now_ids - old_ids)
    except (OSError, ValueError):
        pass
    return {k: sorted(v) for k, v in out.items()}


def _retired_ids(data: Any) -> list[str]:
    if isinstance(data, dict):
        items = data.get("retired", data)
        if isinstance(items, dict):
            return [str(k) for k in items]
        data = items
    if isinstance(data, list):
        return [str(i.get("id")) if isinstance(i, dict) else str(i) for i in data]
    return []


def build_report(results: Sequence[StepLike], impact: Impact | None, seconds: float,
                 root: Path, skipped: dict[str, str] | None = None) -> dict[str, Any]:
    """The report as data (``--json``)."""
    models = next((r for r in results if r.name == "models"), None)
    return {
        "verdict": "FAILED" if any(r.failed for r in results) else "passed",
        "since": impact.rev if impact else None,
        "changed_files": impact.changed if impact else [],
        "rules_touched": impact.rules if impact else [],
        "why": [dataclasses.asdict(t) for t in impact.touches] if impact else [],
        "layers": [dataclasses.asdict(layer) for layer in layers(results, skipped)],
        "steps": [{"name": r.name, "status": r.status, "cached": r.cached,
                   "seconds": round(r.seconds, 1), "rules": r.rules,
                   "first_failure": r.first_failure() if r.failed else ""}
                  for r in results],
        "skipped": skipped or {},
        "state_counts_moved": moved_counts(models.output) if models else [],
        "cases": case_changes(root, impact.rev) if impact else {},
        "seconds": round(seconds, 1),
    }


def to_markdown(report: dict[str, Any]) -> str:
    """The report as Markdown, ready to paste into a pull request."""
    lines = [f"## zlink verify: {report['verdict']}", ""]
    if report["since"]:
        lines.append(f"Changes since `{report['since']}`: {len(report['changed_files'])} "
                     "file(s).")
        rules = report["rules_touched"]
        lines.append(f"Rules touched: {', '.join(rules) if rules else 'none'}.")
        lines.append("")
        for t in report["why"]:
            if t["rules"]:
                lines.append(f"- `{t['file']}`: {t['why']} ({', '.join(t['rules'])})")
        lines.append("")
    lines += ["| layer | result | first failure |", "|---|---|---|"]
    for layer in report["layers"]:
        first = layer["first_failure"].replace("|", "\\|")
        lines.append(f"| {layer['name']} | {layer['verdict']} | {first} |")
    lines.append("")
    moved = report["state_counts_moved"]
    if moved:
        lines.append("State counts moved (pinned -> now):")
        lines += [f"- {m['run']}: {m['count']} {m['pinned']:,} -> {m['now']:,}" for m in moved]
    else:
        lines.append("State counts moved: none.")
    lines.append("")
    cases = report["cases"]
    if cases:
        parts = [f"{k} {', '.join(v) if v else 'none'}" for k, v in cases.items()]
        lines.append("Conformance cases since the revision: " + "; ".join(parts) + ".")
        lines.append("")
    if report["skipped"]:
        lines.append("Not run (the change cannot reach them): " + "; ".join(
            f"{k}: {v}" for k, v in report["skipped"].items()) + ".")
        lines.append("")
    steps = ", ".join(f"{s['name']} {s['seconds']} s" + (" (cached)" if s["cached"] else "")
                      for s in report["steps"])
    lines.append(f"Time: {report['seconds']} s ({steps}).")
    return "\n".join(lines) + "\n"
