"""Which of ``zlink verify``'s checks a change can reach, and why (``--since``, ``impact``).

A check is left out only when it is known not to read any changed file: its last
passing run was recorded (``resultcache``: each pytest test file, each other step, each
TLC run, with every file it opened and its digest), none of the changed files is among
those, and every other file it read is as it was then. Then it reads what it read
before and passes as it did. Everything else runs, with the reason:

- it read a changed file, or a folder whose names changed;
- a file it read has changed since it was recorded (the record is out of date);
- there is no record of it (never run with the cache here): it could read anything;
- a build file changed (``pyproject.toml``, ``requirements-dev.txt``, ``./dev``, ``.ci``,
  ``tool/setup.py``): every check could depend on it;
- a changed file is read by no recorded check and touches no rule: it maps to nothing,
  so everything runs (a new folder, a helper no check was seen to open);
- ``rules``, ``types`` and ``lint`` always run.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from ..checkinputs import file_digest
from ..impact import Impact
from ..resultcache import listing_digest
from ..specindex import CHECK_KINDS, read_entries
from ..steprun import StepRunner, expand_test_files, step_env
from ..tla.runcache import module_files
from ..tla.runner import ManifestError, load_manifest

if TYPE_CHECKING:
    from .verify import Step

__all__ = ["ALWAYS", "BUILD_FILES", "Selection", "print_impact", "select", "tlc_run_inputs"]

ALWAYS = ("rules", "types", "lint")
BUILD_FILES = ("pyproject.toml", "requirements-dev.txt", "dev", "tool/setup.py",
               "model/pyproject.toml", "reference/pyproject.toml",
               "conformance/pyproject.toml", "conformance/examples/python/pyproject.toml",
               "tool/pyproject.toml")


@dataclasses.dataclass
class Selection:
    """Steps to run (with reasons), the test files of the pytest ones, steps left out."""

    run: dict[str, list[str]] = dataclasses.field(default_factory=dict)
    files: dict[str, set[str]] = dataclasses.field(default_factory=dict)
    skipped: dict[str, str] = dataclasses.field(default_factory=dict)
    read: set[str] = dataclasses.field(default_factory=set)  # changed files some check read

    def to_json(self) -> dict[str, object]:
        return {"run": self.run, "files": {k: sorted(v) for k, v in self.files.items()},
                "skipped": self.skipped}


def _verdict(root: Path, entry: dict[str, object] | None, changed: set[str],
             read: set[str]) -> str | None:
    """Why a recorded check must run (None: it reads none of the changes)."""
    if entry is None:
        return "no record of what it reads (not run with the cache here yet)"
    inputs = entry.get("inputs", {})
    folders = entry.get("folders", {})
    assert isinstance(inputs, dict) and isinstance(folders, dict)
    hit = sorted(f for f in inputs if f in changed)
    if hit:
        read.update(hit)
        more = f" and {len(hit) - 2} more" if len(hit) > 2 else ""
        return f"reads {', '.join(hit[:2])}{more}"
    for d, digest in folders.items():
        if listing_digest(root / d) != digest:
            inside = sorted(c for c in changed if os.path.dirname(c) == d)
            read.update(inside)
            return f"lists {d}/, whose files changed"
    for f, digest in inputs.items():
        if file_digest(root / f) != digest:
            return f"its record is out of date ({f} changed since)"
    return None


def select(all_steps: list[Step], impact: Impact, runner: StepRunner,
           argv_of: dict[str, list[str]]) -> Selection:
    """The steps and test files the changes of ``impact`` can reach. ``argv_of``: each
    step's command as it will run (``--fast`` applied)."""
    root = runner.root
    changed = set(impact.changed)
    sel = Selection()
    build = sorted(c for c in changed if c in BUILD_FILES or c.startswith(".ci/"))
    for step in all_steps:
        argv = argv_of.get(step.name, step.argv)
        env = step_env(step.env)
        if step.name in ALWAYS:
            # Always run; its record still says which changed files a check reads.
            if step.inputs == "traced":
                _verdict(root, runner.cache.raw("steps", runner.plain_key(
                    step.name, argv, env)), changed, sel.read)
            sel.run[step.name] = ["always run"]
            continue
        if build:
            sel.run[step.name] = [f"build file {build[0]} changed: every check may read it"]
            continue
        if step.inputs == "none":
            sel.run[step.name] = ["not cached (a random search)"]
            continue
        if step.inputs == "tlc":
            tool_code = sorted(c for c in changed if c.startswith("tool/zlink_tool/")
                               or c == "models/manifest.json")
            if impact.runs:
                sel.run[step.name] = [f"TLC run {n} reads {', '.join(fs)}"
                                      for n, fs in sorted(impact.runs.items())]
                sel.read.update(f for fs in impact.runs.values() for f in fs)
            if tool_code:
                sel.run.setdefault(step.name, []).append(
                    f"{tool_code[0]} changed: the runs are judged again")
                sel.read.update(tool_code)
            if step.name not in sel.run:
                sel.skipped[step.name] = "no TLC run reads a changed file"
            continue
        if step.paths:
            base, paths = argv[:6], list(step.paths)
            options = argv[6:len(argv) - len(paths)]
            chosen: set[str] = set()
            reasons: list[str] = []
            for f in expand_test_files(root, paths, options):
                entry = runner.cache.raw("tests", runner.test_key(step.name, options, env, f))
                why = _verdict(root, entry, changed, sel.read)
                if why is not None:
                    chosen.add(f)
                    reasons.append(f"{f}: {why}")
            del base
            if chosen:
                sel.run[step.name] = reasons
                sel.files[step.name] = chosen
            else:
                sel.skipped[step.name] = "none of its test files reads a changed file"
            continue
        entry = runner.cache.raw("steps", runner.plain_key(step.name, argv, env))
        why = _verdict(root, entry, changed, sel.read)
        if why is None:
            sel.skipped[step.name] = "reads none of the changed files"
        else:
            sel.run[step.name] = [why]
    ruled = {t.file for t in impact.touches if t.rules}
    orphans = sorted(c for c in changed if c not in sel.read and c not in ruled
                     and c not in build)
    if orphans and sel.skipped:
        for name in list(sel.skipped):
            sel.run[name] = [f"{orphans[0]} maps to no check and no rule: everything runs"]
            sel.files.pop(name, None)
        sel.skipped.clear()
        for name in list(sel.files):
            sel.files.pop(name)  # every test file of the step
    return sel


def tlc_run_inputs(root: Path) -> dict[str, set[str]]:
    """TLC run of the manifest (ci profile) -> the checkout-relative files it reads."""
    try:
        manifest = load_manifest(root / "models" / "manifest.json")
    except ManifestError:
        return {}
    base = root.resolve()
    out: dict[str, set[str]] = {}
    for e in manifest.entries:
        files = module_files(manifest.models_dir, e.module) | {manifest.models_dir / e.config}
        out[e.name] = {p.resolve().relative_to(base).as_posix() for p in files}
    return out


def _holders(root: Path, rules: list[str]) -> list[str]:
    """For each rule, the checks ``specs/rules.toml`` lists for it, by kind."""
    try:
        entries = read_entries(root / "specs" / "rules.toml")
    except (OSError, ValueError):
        return []
    lines = []
    for rule in rules:
        entry = entries.get(rule)
        if entry is None:
            lines.append(f"  {rule}: no row in specs/rules.toml")
            continue
        parts = []
        for kind in CHECK_KINDS:
            names = entry.checks.get(kind, [])
            if names:
                shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more"
                                                if len(names) > 3 else "")
                parts.append(f"{kind}: {shown}")
        lines.append(f"  {rule}: " + ("; ".join(parts) if parts else
                                      f"untestable ({entry.untestable})"))
    return lines


def print_impact(impact: Impact, sel: Selection, out: TextIO) -> None:
    """The changes, the rules they touch and why, the checks holding those rules, and
    what runs and what does not."""
    root = Path.cwd()
    out.write(f"changes since {impact.rev}: {len(impact.changed)} file(s)\n")
    for f in impact.changed:
        out.write(f"  {f}\n")
    out.write(f"\nrules touched: {', '.join(impact.rules) if impact.rules else 'none'}\n")
    for t in impact.touches:
        rules = f" [{', '.join(t.rules)}]" if t.rules else ""
        out.write(f"  {t.file}: {t.why}{rules}\n")
    if impact.rules:
        out.write("\nchecks that hold them (specs/rules.toml):\n")
        for line in _holders(root, impact.rules):
            out.write(line + "\n")
    out.write("\nsteps to run:\n")
    for name, reasons in sel.run.items():
        files = sel.files.get(name)
        count = f" ({len(files)} test file(s))" if files is not None else ""
        out.write(f"  {name}{count}: {reasons[0]}\n")
        for reason in reasons[1:4]:
            out.write(f"  {'':{len(name)}s}  {reason}\n")
        if len(reasons) > 4:
            out.write(f"  {'':{len(name)}s}  ... and {len(reasons) - 4} more\n")
    if sel.skipped:
        out.write("not run:\n")
        for name, why in sel.skipped.items():
            out.write(f"  {name}: {why}\n")
    out.write("\n")
    out.flush()
