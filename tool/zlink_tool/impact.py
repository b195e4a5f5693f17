"""What a change touched: the files changed since a revision, the rules they touch and
why.

A spec author who edits one line should not have to guess which rules it reaches. The
reasons, by kind of file:

- a TLA+ module: the operators whose definitions hold the changed lines; each one's
  rules from ``specs/rules.toml`` (an invariant or property), from the transition
  vocabulary (an action, ``zlink_model.vocabulary``), or, for a helper, from the
  actions and invariants of the same modules that use it; rule IDs written in the
  changed lines; and the TLC runs of the manifest whose modules include the file;
- a TLC configuration: the runs that use it, and the invariants and properties it names;
- ``specs/rules.toml``: the rules whose rows hold the changed lines; a spec document:
  the rules whose sections hold them;
- a Python module of a package: rule IDs in the changed lines and in the names and
  docstrings of the functions holding them, the invariants among them, and how many
  test files reach the module through imports (``importgraph``);
- a test file: the tests holding the changed lines, with the rules their names carry
  and the rules whose rows list them;
- a conformance case: the rules the case names;
- anything else: no rule; which checks could read it is for the selection to say
  (``zlink verify --since``), from what each check was seen to read.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
import subprocess
from collections.abc import Iterable
from pathlib import Path

from .importgraph import PACKAGE_HOMES, ImportGraph
from .specindex import (
    normalise,
    read_entries,
    rule_ids_in_test_name,
    rules_mentioned,
)

__all__ = ["ChangeError", "Impact", "Touch", "analyse", "changed_files", "changed_lines"]

_TLA_DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==")
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_TOML_ROW = re.compile(r'^\[rules\."([^"]+)"\]')
_SPEC_HEADING = re.compile(r"^#{2,4} .*?\b((?:SE|SD)-\d+(?:\.\d+)?|D-\d+)\b")
_SPEC_BULLET = re.compile(r"^- \*{0,2}((?:SE|SD)-\d+(?:\.\d+)?|D-\d+)\b")


class ChangeError(Exception):
    """The revision cannot be read (not a commit, or not a git checkout)."""


@dataclasses.dataclass(frozen=True)
class Touch:
    """One reason a change touches rules: the file, the rules, and why."""

    file: str
    rules: tuple[str, ...]
    why: str


@dataclasses.dataclass
class Impact:
    """The changed files since ``rev`` and every reason they touch rules."""

    rev: str
    changed: list[str]
    touches: list[Touch]
    runs: dict[str, list[str]]  # TLC run -> the changed files among its inputs

    @property
    def rules(self) -> list[str]:
        found = {r for t in self.touches for r in t.rules}
        return sorted(found, key=_rule_key)

    def to_json(self) -> dict[str, object]:
        return {"rev": self.rev, "changed": self.changed, "rules": self.rules,
                "touches": [dataclasses.asdict(t) for t in self.touches],
                "runs": self.runs}


def _rule_key(rule: str) -> tuple[str, tuple[int, ...]]:
    prefix, _, rest = rule.partition("-")
    try:
        return prefix, tuple(int(p) for p in rest.split("."))
    except ValueError:
        return prefix, ()


def _git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    except OSError as exc:
        raise ChangeError(f"git is not available: {exc}") from None
    if proc.returncode != 0:
        raise ChangeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def changed_files(root: Path, rev: str = "HEAD") -> list[str]:
    """Files that differ between ``rev`` and the working tree (committed since, staged
    or not), and files git does not know yet; deleted files too."""
    _git(root, "rev-parse", "--verify", "--quiet", f"{rev}^{{commit}}")
    names = set(_git(root, "diff", "--name-only", "--no-renames", rev, "--").split("\n"))
    names |= set(_git(root, "ls-files", "--others", "--exclude-standard").split("\n"))
    return sorted(n for n in names if n)


def changed_lines(root: Path, rev: str, rel: str) -> list[int]:
    """Line numbers (1-based, in the file as it is now) of the lines added or changed,
    and of the line after each removal; every line of a file git does not know."""
    path = root / rel
    if path.is_file() and _git(root, "ls-files", "--others", "--exclude-standard", "--",
                               rel).strip():
        text = path.read_text(encoding="utf-8", errors="replace")
        return list(range(1, text.count("\n") + 2))
    lines: list[int] = []
    for line in _git(root, "diff", "-U0", "--no-renames", rev, "--", rel).splitlines():
        m = _HUNK.match(line)
        if m:
            start, count = int(m.group(1)), int(m.group(2) or "1")
            lines.extend(range(start, start + count) if count else [max(start, 1)])
    return lines


def _enclosing_tla(text: str, lines: Iterable[int]) -> set[str]:
    """The operators whose definitions hold the given lines."""
    starts = [(i + 1, m.group(1)) for i, line in enumerate(text.splitlines())
              if (m := _TLA_DEF.match(line))]
    found: set[str] = set()
    for n in lines:
        before = [name for start, name in starts if start <= n]
        if before:
            found.add(before[-1])
    return found


def _tla_bodies(models: Path) -> dict[str, str]:
    """Operator -> its definition's text, over every module of the folder."""
    bodies: dict[str, str] = {}
    for path in sorted(models.glob("*.tla")):
        current: str | None = None
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            if m := _TLA_DEF.match(line):
                current = m.group(1)
                bodies.setdefault(current, "")
            if current is not None:
                bodies[current] += line + "\n"
    return bodies


@dataclasses.dataclass
class _Knowledge:
    """What the analysis reads once: the index, the vocabulary, the models' operators."""

    root: Path

    def __post_init__(self) -> None:
        try:
            self.entries = read_entries(self.root / "specs" / "rules.toml")
        except (OSError, ValueError):
            self.entries = {}
        self.bodies = _tla_bodies(self.root / "models")
        self.actions: dict[str, list[str]] = {}
        try:
            from zlink_model.vocabulary import TRANSITIONS  # noqa: PLC0415 (optional)
            for t in TRANSITIONS:
                self.actions[t.action] = list(t.rules)
        except ImportError:
            pass
        self.graph = ImportGraph(self.root)

    def rules_listing(self, kind: str, name: str) -> list[str]:
        return [rid for rid, e in self.entries.items() if name in e.checks.get(kind, [])]

    def operator_rules(self, op: str, depth: int = 0) -> list[tuple[str, list[str]]]:
        """(how, rules) for an operator: its own rows and action, else those of the
        operators that use it (up to three levels)."""
        own = self.rules_listing("tla", op) + self.rules_listing("python", op)
        out: list[tuple[str, list[str]]] = []
        if own:
            out.append((f"{op} is a checked invariant or property", own))
        if op in self.actions:
            out.append((f"{op} is the transition of {', '.join(self.actions[op])}",
                        self.actions[op]))
        if out or depth >= 3:
            return out
        word = re.compile(rf"\b{re.escape(op)}\b")
        for user, body in sorted(self.bodies.items()):
            if user != op and word.search(body.split("==", 1)[-1]):
                for how, rules in self.operator_rules(user, depth + 1):
                    out.append((f"{op} is used by {user}; {how}", rules))
        return out


def analyse(root: Path, rev: str = "HEAD", runs: dict[str, set[str]] | None = None
            ) -> Impact:
    """The changes since ``rev`` and the rules they touch. ``runs``: TLC run -> the
    checkout-relative files it reads (modules and configuration)."""
    root = root.resolve()
    changed = changed_files(root, rev)
    know = _Knowledge(root)
    touches: list[Touch] = []
    affected_runs: dict[str, list[str]] = {}
    for rel in changed:
        for name, files in (runs or {}).items():
            if rel in files:
                affected_runs.setdefault(name, []).append(rel)
        touches.extend(_touches(root, rev, rel, know, runs or {}))
    return Impact(rev, changed, touches, affected_runs)


def _touches(root: Path, rev: str, rel: str, know: _Knowledge,
             runs: dict[str, set[str]]) -> list[Touch]:
    path = root / rel
    if not path.is_file():
        return [Touch(rel, (), "deleted")]
    lines = changed_lines(root, rev, rel)
    text = path.read_text(encoding="utf-8", errors="replace")
    all_lines = text.splitlines()
    written = rules_mentioned("\n".join(all_lines[n - 1] for n in lines
                                        if 0 < n <= len(all_lines)), invariants={})
    out: list[Touch] = []
    if written:
        out.append(Touch(rel, tuple(written), "rule IDs in the changed lines"))
    suffix = path.suffix
    parts = Path(rel).parts
    if suffix == ".tla":
        for op in sorted(_enclosing_tla(text, lines)):
            for how, rules in know.operator_rules(op):
                out.append(Touch(rel, tuple(rules), f"changed {op}: {how}"))
        users = sorted(n for n, files in runs.items() if rel in files)
        if users:
            out.append(Touch(rel, (), f"read by TLC runs {', '.join(users)}"))
    elif suffix == ".cfg":
        names = re.findall(r"^\s*(?:INVARIANTS?|PROPERTY|PROPERTIES)\s+(.*)$", text, re.M)
        for name in sorted({n for line in names for n in line.split()}):
            rules = know.rules_listing("tla", name)
            if rules:
                out.append(Touch(rel, tuple(rules), f"the configuration checks {name}"))
    elif rel == "specs/rules.toml":
        rows = _enclosing(all_lines, lines, _TOML_ROW)
        if rows:
            out.append(Touch(rel, tuple(sorted(rows, key=_rule_key)),
                             "their rows in the traceability index changed"))
    elif parts[0] == "specs" and suffix == ".md":
        sections = _enclosing(all_lines, lines, _SPEC_HEADING) | \
            {m.group(1) for n in lines if 0 < n <= len(all_lines)
             and (m := _SPEC_BULLET.match(all_lines[n - 1]))}
        if sections:
            out.append(Touch(rel, tuple(sorted({normalise(s) for s in sections},
                                               key=_rule_key)), "their text changed"))
    elif suffix == ".json" and "cases" in parts:
        try:
            case = json.loads(text)
            rules = [normalise(r) for r in case.get("rules", [])]
            out.append(Touch(rel, tuple(rules), f"conformance case {case.get('id', rel)}"))
        except (ValueError, AttributeError):
            out.append(Touch(rel, (), "a case file that does not parse"))
    elif suffix == ".py":
        out.extend(_python_touches(root, rel, text, lines, know))
    return out


def _enclosing(lines_text: list[str], lines: list[int], heading: re.Pattern[str]) -> set[str]:
    found: set[str] = set()
    for n in lines:
        for i in range(min(n, len(lines_text)) - 1, -1, -1):
            if m := heading.match(lines_text[i]):
                found.add(m.group(1))
                break
    return found


def _python_touches(root: Path, rel: str, text: str, lines: list[int],
                    know: _Knowledge) -> list[Touch]:
    out: list[Touch] = []
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return [Touch(rel, (), "a Python file that does not parse")]
    holders = [n for n in ast.walk(tree)
               if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
               and any(n.lineno <= x <= (n.end_lineno or n.lineno) for x in lines)]
    is_test = Path(rel).name.startswith("test_")
    for node in holders:
        if is_test and node.name.startswith("test"):
            rules = rule_ids_in_test_name(node.name) + know.rules_listing("tests", node.name)
            out.append(Touch(rel, tuple(dict.fromkeys(rules)), f"changed test {node.name}"))
            continue
        doc = ast.get_docstring(node) or ""
        rules = rules_mentioned(f"{node.name}\n{doc}", invariants={})
        rules += know.rules_listing("python", node.name)
        if rules:
            out.append(Touch(rel, tuple(dict.fromkeys(rules)),
                             f"changed {node.name}, whose name or docstring names them"))
    package = Path(rel).parts[0] in {h.split("/")[0] for h in PACKAGE_HOMES.values()}
    if package and not is_test:
        users = know.graph.importers_of([root / rel])
        tests = sorted(p for p in users if p.name.startswith("test_"))
        if tests:
            out.append(Touch(rel, (), f"reached through imports by {len(tests)} test "
                                      "files"))
    return out
