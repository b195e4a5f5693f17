"""The traceability index: every rule of ``specs/`` and the checks that hold it.

``specs/rules.toml`` maps each rule ID to its TLA+ invariants or properties (``tla``), its
Python invariants (``python``), its tests (``tests``) and its conformance cases
(``cases``), or gives the reason it cannot be checked (``untestable``). This module reads
the rules from the spec documents, reads the index, finds what actually exists (TLA+
operators by parsing ``models/*.tla``, tests by parsing the test files, cases by loading
the conformance corpus, Python invariants by importing ``zlink_model.invariants``) and
reports every gap: a rule with neither a check nor a reason, a name in the index that does
not exist, a rule ID used by a test or case that no spec defines, a rule missing from the
index.
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
import tomllib
from collections.abc import Iterable
from pathlib import Path

__all__ = [
    "CHECK_KINDS",
    "Finding",
    "Index",
    "RuleEntry",
    "SpecRule",
    "build_index",
    "rule_ids_in_test_name",
    "rule_ids_of",
    "rules_mentioned",
]

CHECK_KINDS = ("tla", "python", "tests", "cases")

_HEADING = re.compile(r"^#{2,3} ((?:SE|SD)-\d+(?:\.\d+)?) (.+?) \((MUST|SHOULD)\)\s*$")
_BULLET = re.compile(r"^- \*\*((?:SE|SD)-\d+(?:\.\d+)?)\*\* \((MUST|SHOULD)\) (.+)$")
_DECISION = re.compile(r"^(?:##|-) \*{0,2}(D-\d+)\b")
_TLA_DEF = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(?:\([^)]*\))?\s*==", re.M)
_TEST_RULE = re.compile(r"^test_(SE|SD|D)((?:_\d+){1,2})(?:_|$)")


@dataclasses.dataclass(frozen=True)
class SpecRule:
    """A rule as a spec document states it."""

    rule_id: str
    title: str
    strength: str
    source: str  # the spec file it is defined in


@dataclasses.dataclass
class RuleEntry:
    """A rule's row of the index."""

    rule_id: str
    checks: dict[str, list[str]]
    untestable: str | None = None

    def has_check(self) -> bool:
        return any(self.checks.get(kind) for kind in CHECK_KINDS)


@dataclasses.dataclass(frozen=True)
class Finding:
    """One gap: what is wrong, and with which rule or name."""

    rule_id: str
    problem: str


@dataclasses.dataclass
class Index:
    """Rules, their index rows, what exists, and the gaps between them."""

    rules: dict[str, SpecRule]
    decisions: set[str]
    entries: dict[str, RuleEntry]
    existing: dict[str, set[str]]
    findings: list[Finding]

    def rules_checked_by(self, name: str) -> list[tuple[str, str]]:
        """(rule, kind) for every rule whose index row lists the check ``name`` (an
        invariant, test or case): from a failing check's name back to its rules."""
        return [(rule_id, kind) for rule_id, entry in sorted(
                    self.entries.items(), key=lambda kv: _rule_sort_key(kv[0]))
                for kind in CHECK_KINDS if name in entry.checks.get(kind, [])]

    def matrix(self) -> list[tuple[str, str, dict[str, int], str]]:
        """(rule, strength, number of checks per kind, status) for every rule."""
        rows = []
        for rule_id in sorted(self.rules, key=_rule_sort_key):
            rule = self.rules[rule_id]
            entry = self.entries.get(rule_id)
            counts = {k: len(entry.checks.get(k, [])) if entry else 0 for k in CHECK_KINDS}
            if entry is None:
                status = "MISSING"
            elif entry.has_check():
                status = "checked"
            elif entry.untestable:
                status = "untestable"
            else:
                status = "GAP"
            rows.append((rule_id, rule.strength, counts, status))
        return rows


def _rule_sort_key(rule_id: str) -> tuple[str, tuple[int, ...]]:
    prefix, _, rest = rule_id.partition("-")
    return prefix, tuple(int(p) for p in rest.split("."))


def normalise(rule_id: str) -> str:
    """``SE-10.02`` -> ``SE-10.2``."""
    prefix, _, rest = rule_id.partition("-")
    return prefix + "-" + ".".join(str(int(p)) for p in rest.split("."))


def rule_ids_in_test_name(name: str) -> list[str]:
    """The rule a test's name carries: ``test_SE_10_02_x`` -> ``SE-10.2``,
    ``test_SD_1_x`` -> ``SD-1``, ``test_D_11_x`` -> ``D-11``."""
    m = _TEST_RULE.match(name)
    if not m:
        return []
    numbers = [p for p in m.group(2).split("_") if p]
    return [normalise(m.group(1) + "-" + ".".join(numbers))]


# A rule ID as it appears in a test or case name (SE_10_04), or as written (SE-6.3).
_MENTION = re.compile(r"(?<![A-Za-z0-9])(SE|SD|D)[-_](\d+)(?:[._](\d+))?(?![0-9A-Za-z])(?![._]\d)")


def rules_mentioned(text: str, invariants: dict[str, str] | None = None) -> list[str]:
    """The rule IDs a failure report speaks of, sorted: IDs written out or carried by
    test and case names (``test_SE_6_3_x``, ``required_SE_10_04_x``), and the rules of
    each invariant named in it (``invariants``: name -> "SE-6.5, D-10"; by default the
    registry of ``zlink_model.invariants``). Lets ``zlink verify`` say which rules a
    failing step is about, whatever layer it came from."""
    found: set[str] = set()
    for m in _MENTION.finditer(text):
        found.add(normalise(m.group(1) + "-" + m.group(2)
                            + (f".{m.group(3)}" if m.group(3) else "")))
    if invariants is None:
        try:
            module = importlib.import_module("zlink_model.invariants")
            invariants = {n: i.rules for n, i in module.INVARIANTS.items()}
        except ImportError:
            invariants = {}
    for name, rules in invariants.items():
        if re.search(rf"\b{re.escape(name)}\b", text):
            found.update(rule_ids_of(rules))
    return sorted(found, key=_rule_sort_key)


def rule_ids_of(rules: str) -> list[str]:
    """The rule and decision IDs of an invariant's ``rules`` text (``"SE-6.1, SE-10 item
    9, D-5"`` -> ``["SE-6.1", "SE-10.9", "D-5"]``); other references are dropped."""
    out = []
    for raw in rules.split(","):
        item = re.fullmatch(r"SE-10 item (\d+)", raw.strip())
        part = f"SE-10.{item.group(1)}" if item else raw.strip()
        if _MENTION.fullmatch(part):
            out.append(normalise(part))
    return out


def read_spec_rules(specs: Path) -> tuple[dict[str, SpecRule], set[str]]:
    """Rules (SE, SD) and decision IDs (D) defined by the spec documents."""
    rules: dict[str, SpecRule] = {}
    decisions: set[str] = set()
    for path in sorted(specs.glob("*.md")):
        for line in path.read_text(encoding="utf-8").splitlines():
            if m := _HEADING.match(line):
                rules[m.group(1)] = SpecRule(m.group(1), m.group(2), m.group(3), path.name)
            elif m := _BULLET.match(line):
                rules[m.group(1)] = SpecRule(m.group(1), m.group(3), m.group(2), path.name)
            elif m := _DECISION.match(line):
                decisions.add(m.group(1))
    return rules, decisions


def read_entries(index_file: Path) -> dict[str, RuleEntry]:
    """The rows of ``rules.toml``."""
    data = tomllib.loads(index_file.read_text(encoding="utf-8"))
    out: dict[str, RuleEntry] = {}
    for rule_id, row in data.get("rules", {}).items():
        if not isinstance(row, dict):
            raise ValueError(f"{index_file}: [rules.\"{rule_id}\"] must be a table")
        unknown = set(row) - {*CHECK_KINDS, "untestable"}
        if unknown:
            raise ValueError(f"{index_file}: rule {rule_id}: unknown key(s) {sorted(unknown)}")
        checks = {k: [str(v) for v in row.get(k, [])] for k in CHECK_KINDS}
        untestable = row.get("untestable")
        out[rule_id] = RuleEntry(rule_id, checks, str(untestable) if untestable else None)
    return out


def tla_operators(models: Path) -> set[str]:
    """Names defined (``Name ==``) in the TLA+ modules."""
    names: set[str] = set()
    for path in models.glob("*.tla"):
        names.update(_TLA_DEF.findall(path.read_text(encoding="utf-8")))
    return names


def test_functions(tests: Path) -> dict[str, str]:
    """Test function name -> ``file::name`` for every test under ``tests``."""
    found: dict[str, str] = {}
    for path in sorted(tests.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and \
                    node.name.startswith("test"):
                found[node.name] = f"{path.relative_to(tests.parent)}::{node.name}"
    return found


def python_invariants() -> set[str]:
    """Predicates exported by ``zlink_model.invariants`` (empty if absent)."""
    try:
        module = importlib.import_module("zlink_model.invariants")
    except ImportError:
        return set()
    return {n for n in dir(module) if n[:1].isupper() and callable(getattr(module, n))}


def conformance_cases() -> dict[str, list[str]]:
    """Case ID -> rule IDs of every shipped conformance case (empty if no kit)."""
    try:
        catalog = importlib.import_module("zlink_conformance.catalog")
    except ImportError:
        return {}
    return {case.id: list(case.rules) for case in catalog.load_catalogue().cases}


def build_index(root: Path, tests: dict[str, str] | None = None) -> Index:
    """Read the specs and models under ``root`` and find the gaps.

    ``tests`` is the test-function index when ``root`` has no ``tests/`` to parse (the
    copy shipped in the wheel carries one, written when the wheel was built)."""
    rules, decisions = read_spec_rules(root / "specs")
    entries = read_entries(root / "specs" / "rules.toml")
    if tests is None:
        tests = test_functions(root / "tests")
    cases = conformance_cases()
    # A case names its rules in its own file; the index need not repeat them.
    for case_id, case_rules in sorted(cases.items()):
        for rule_id in case_rules:
            entry = entries.get(rule_id)
            if entry is not None and case_id not in entry.checks["cases"]:
                entry.checks["cases"].append(case_id)
    existing = {
        "tla": tla_operators(root / "models"),
        "python": python_invariants(),
        "tests": set(tests) | set(tests.values()),
        "cases": set(cases),
    }
    findings: list[Finding] = []
    known_ids = set(rules) | decisions
    for rule_id in sorted(rules, key=_rule_sort_key):
        entry = entries.get(rule_id)
        if entry is None:
            findings.append(Finding(rule_id, "not in specs/rules.toml"))
        elif not entry.has_check() and not entry.untestable:
            findings.append(Finding(rule_id, "has neither a check nor an untestable reason"))
    for rule_id, entry in entries.items():
        if rule_id not in rules:
            findings.append(Finding(rule_id, "is in rules.toml but no spec defines it"))
        for kind in CHECK_KINDS:
            for name in entry.checks.get(kind, []):
                if name not in existing[kind]:
                    findings.append(Finding(rule_id, f"{kind}: {name} does not exist"))
    findings += _stray_ids(tests, cases, known_ids)
    return Index(rules, decisions, entries, existing, findings)


def _stray_ids(tests: dict[str, str], cases: dict[str, list[str]],
               known: set[str]) -> Iterable[Finding]:
    for name, where in sorted(tests.items()):
        for rule_id in rule_ids_in_test_name(name):
            if rule_id not in known:
                yield Finding(rule_id, f"used by test {where} but defined in no spec")
    for case_id, rule_ids in sorted(cases.items()):
        for raw in rule_ids:
            rule_id = normalise(raw) if re.match(r"^(SE|SD|D)-[\d.]+$", raw) else raw
            if rule_id not in known:
                yield Finding(rule_id, f"used by case {case_id} but defined in no spec")
