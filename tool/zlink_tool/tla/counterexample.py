"""Counterexamples a person can read: TLC's error trace as states, steps and changes.

When a run breaks an invariant or a property, TLC prints the behaviour that leads there
as a list of states (``-tool`` message 2217 per state, 2218 for a final stuttering step,
2122 for a loop back to an earlier state). This module reads them into ``Step``s (the
action that led to the state, and every variable's value) and prints each step as what a
spec author needs: the transition by its name in the vocabulary table
(``zlink_model.vocabulary``: ``Admit`` is ``admit``), the work or item it is about, and only
the variables that changed, by the core's names (``drainScheduled`` is
``drain_scheduled``). The violated invariant is named with its rule IDs and the text the
model states it with. ``to_json`` gives the same trace as data.

TLC 2.15 prints an action's name and place but not its parameters, so the work a step is
about is read from the state change: the works whose per-work entries (``phase[w]``,
``yields[w]``, ...) changed. A step of a broken variant (an operator named
``<Op>Bug<Name>``, replaced in by the run's configuration) is shown as ``<Op>`` with the
variant's name.

``check_state_with_tlc`` gives the TLA+ side's own verdict on one state: a module that
starts in exactly that state, checked for the one invariant, must violate it at once.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from zlink_model.invariants import INVARIANTS
from zlink_model.vocabulary import TRANSITIONS, Transition

from ..specindex import read_entries, read_spec_rules
from .runner import jvm_options

__all__ = [
    "Counterexample",
    "InvariantInfo",
    "Step",
    "check_state_with_tlc",
    "describe_invariant",
    "format_value",
    "from_run",
    "overrides_of",
    "parse_counterexample",
    "parse_value",
    "render",
    "snake",
    "to_json",
    "variant_overrides",
]

MSG_STATE: Final = 2217
MSG_STUTTER: Final = 2218
MSG_BACK_TO: Final = 2122

_MESSAGE = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\r?\n(.*?)@!@!@ENDMSG \1 @!@!@", re.S)
_HEADER = re.compile(r"^(\d+): (?:<(.*?)>|(Stuttering)|Back to state:? ?(\d+))\s*$", re.M)
_ACTION = re.compile(r"^(\w+) line \d+, col \d+ to line \d+, col \d+ of module (\w+)$")
_BUG = re.compile(r"^(\w+?)Bug(\w+)$")

# The vocabulary's names of the TLA+ actions (the core event each one is).
_BY_ACTION: Final[Mapping[str, Transition]] = {t.action: t for t in TRANSITIONS}

# Model variables whose core name is not their snake_case form, or that need a word.
_GLOSS: Final[Mapping[str, str]] = {
    "app": "application line",
    "life": "lifecycle line",
    "barrier": "barrier line",
    "line": "line",
    "current": "turn holder",
    "wid": "admission number",
    "seq": "line position",
    "budgetUsed": "slice budget used",
    "returned": "external call returned",
    "sLine": "Spot queue line",
    "sCount": "Spot queue count",
    "sBytes": "Spot queue bytes",
    "aLine": "Actor queue line",
    "aCount": "Actor queue count",
    "aBytes": "Actor queue bytes",
    "claim": "Actor queue turn holder",
    "gate": "Spot gate holder",
    "cancelReq": "cancellation requested",
    "acceptedAtClose": "accepted at close",
    "waitC": "await_completion",
    "waitZ": "await_after_cancellation",
    "checked": "room seen, not yet used",
}


def snake(name: str) -> str:
    """``drainScheduled`` -> ``drain_scheduled``: the core's spelling of a model name."""
    return re.sub(r"(?<=[a-z0-9])([A-Z])", r"_\1", name).lower()


# ------------------------------------------------------------------------ values
class _Parser:
    """TLC's printed values: integers, strings, TRUE/FALSE, model values, sequences
    ``<<...>>`` (tuples), sets ``{...}`` (frozensets), records ``[a |-> 1]`` and
    functions ``(k :> v @@ ...)`` (dicts)."""

    _TOKEN = re.compile(r'\s*(<<|>>|\|->|:>|@@|[{}\[\](),]|"(?:[^"\\]|\\.)*"|-?\d+|\w+)')

    def __init__(self, text: str) -> None:
        self.tokens = [m.group(1) for m in self._TOKEN.finditer(text)]
        rest = self._TOKEN.sub("", text).strip()
        if rest:
            raise ValueError(f"cannot read TLC value {text!r}")
        self.pos = 0

    def peek(self) -> str | None:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        tok = self.peek()
        if tok is None or (expected is not None and tok != expected):
            raise ValueError(f"expected {expected or 'a value'}, got {tok!r}")
        self.pos += 1
        return tok

    def items(self, close: str) -> list[Any]:
        out: list[Any] = []
        while self.peek() != close:
            out.append(self.value())
            if self.peek() == ",":
                self.take(",")
        self.take(close)
        return out

    def value(self) -> Any:
        tok = self.take()
        if tok == "<<":
            return tuple(self.items(">>"))
        if tok == "{":
            return frozenset(self.items("}"))
        if tok == "[":
            rec: dict[Any, Any] = {}
            while self.peek() != "]":
                key = self.take()
                self.take("|->")
                rec[key] = self.value()
                if self.peek() == ",":
                    self.take(",")
            self.take("]")
            return rec
        if tok == "(":
            fun: dict[Any, Any] = {}
            while self.peek() != ")":
                key = self.value()
                self.take(":>")
                fun[key] = self.value()
                if self.peek() == "@@":
                    self.take("@@")
            self.take(")")
            return fun
        if tok.startswith('"'):
            return tok[1:-1].replace('\\"', '"').replace("\\\\", "\\")
        if tok in ("TRUE", "FALSE"):
            return tok == "TRUE"
        if re.fullmatch(r"-?\d+", tok):
            return int(tok)
        return tok  # a model value (a1, s1, ...)


def parse_value(text: str) -> Any:
    """One value as TLC prints it (see ``_Parser``)."""
    parser = _Parser(text)
    value = parser.value()
    if parser.peek() is not None:
        raise ValueError(f"trailing text in TLC value {text!r}")
    return value


def format_value(value: Any) -> str:
    """A value for a reader who does not know TLA+: ``[1, 3]`` for a sequence,
    ``{1, 3}`` for a set, ``{a1: 1, a2: 0}`` for a record or function, ``true``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return "[" + ", ".join(format_value(v) for v in value) + "]"
    if isinstance(value, frozenset):
        return "{" + ", ".join(format_value(v) for v in sorted(value, key=_order)) + "}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{format_value(k)}: {format_value(v)}"
                               for k, v in value.items()) + "}"
    return str(value)


def _order(value: Any) -> tuple[int, str]:
    return (0, f"{value:012d}") if isinstance(value, int) else (1, str(value))


def to_data(value: Any) -> Any:
    """A value as JSON data: sequences and sets as lists, functions as objects."""
    if isinstance(value, tuple):
        return [to_data(v) for v in value]
    if isinstance(value, frozenset):
        return [to_data(v) for v in sorted(value, key=_order)]
    if isinstance(value, dict):
        return {str(k): to_data(v) for k, v in value.items()}
    return value


def _entries(value: Any) -> Mapping[Any, Any] | None:
    """A per-work (or per-item, per-Actor) function as key -> value, else None. TLC
    prints a function over 1..n as a sequence, so a tuple is read as one too."""
    if isinstance(value, dict):
        return value
    if isinstance(value, tuple):
        return {i + 1: v for i, v in enumerate(value)}
    return None


# ------------------------------------------------------------------------- steps
@dataclasses.dataclass(frozen=True, slots=True)
class Step:
    """One state of the trace and the action that led to it (``Init`` for the first).

    ``action`` is the spec's action (a broken variant's ``<Op>Bug<Name>`` is shown as
    ``<Op>``, its name in ``variant``); ``values`` are the variables as Python values and
    ``raw`` as TLC printed them (TLA+ text, for ``check_state_with_tlc``)."""

    number: int
    action: str
    module: str | None
    variant: str | None
    values: Mapping[str, Any]
    raw: Mapping[str, str]

    @property
    def transition(self) -> Transition | None:
        """The vocabulary row of the action (None for the environment's own steps)."""
        return _BY_ACTION.get(self.action)

    @property
    def event(self) -> str:
        """The core's name of the step (``admit``), or the action's in snake_case."""
        found = self.transition
        return found.event if found is not None else snake(self.action)


@dataclasses.dataclass(frozen=True, slots=True)
class Counterexample:
    """The behaviour TLC found: its steps, and how it ends. ``loop_to`` is the number of
    the state a liveness counterexample loops back to; ``stuttering`` says it ends by
    standing still for ever."""

    violated: str | None
    kind: str  # "invariant", "property" or "deadlock"
    steps: tuple[Step, ...]
    loop_to: int | None = None
    stuttering: bool = False

    @property
    def final(self) -> Step:
        """The last state: for an invariant, the one that breaks it."""
        return self.steps[-1]

    def changes(self, index: int) -> list[tuple[str, Any, Any]]:
        """(variable, before, after) for what step ``index`` changed (index >= 1)."""
        before, after = self.steps[index - 1].values, self.steps[index].values
        return [(k, before.get(k), after[k]) for k in sorted(after, key=snake)
                if before.get(k) != after[k]]

    def per_entity(self) -> set[str]:
        """Variables that are functions over one fixed domain (works, items, Actors)
        in every state: their entries are shown one by one."""
        names: set[str] = set()
        first = self.steps[0].values
        for name in first:
            domains = set()
            for step in self.steps:
                entries = _entries(step.values.get(name))
                if entries is None:
                    break
                domains.add(frozenset(entries))
            else:
                if len(domains) == 1:
                    names.add(name)
        return names

    def about(self, index: int) -> list[Any]:
        """The keys (works, items) whose per-work entries step ``index`` changed."""
        keys: list[Any] = []
        per = self.per_entity()
        for name, before, after in self.changes(index):
            if name not in per or name in ("aLine", "aCount", "aBytes", "claim"):
                continue
            old, new = _entries(before) or {}, _entries(after) or {}
            for k in new:
                if old.get(k) != new[k] and k not in keys:
                    keys.append(k)
        return keys


def parse_counterexample(text: str, violated: str | None = None,
                         kind: str = "invariant") -> Counterexample | None:
    """The error trace in TLC's ``-tool`` output, or None when there is none."""
    steps: list[Step] = []
    loop_to: int | None = None
    stuttering = False
    for m in _MESSAGE.finditer(text):
        code, body = int(m.group(1)), m.group(3)
        if code not in (MSG_STATE, MSG_STUTTER, MSG_BACK_TO):
            continue
        header = _HEADER.search(body)
        if header is None:
            continue
        if header.group(3):
            stuttering = True
            continue
        if header.group(4):
            loop_to = int(header.group(4))
            continue
        label = header.group(2) or ""
        action, module, variant = "Init", None, None
        if found := _ACTION.match(label):
            action, module = found.group(1), found.group(2)
            if bug := _BUG.match(action):
                action, variant = bug.group(1), bug.group(2)
        raw = _variables(body[header.end():])
        values = {k: parse_value(v) for k, v in raw.items()}
        step = Step(int(header.group(1)), action, module, variant, values, raw)
        steps = [s for s in steps if s.number != step.number] + [step]
    if not steps:
        return None
    steps.sort(key=lambda s: s.number)
    return Counterexample(violated, kind, tuple(steps), loop_to, stuttering)


def _variables(body: str) -> dict[str, str]:
    """``/\\ name = value`` lines (a value may span lines) as name -> text."""
    out: dict[str, str] = {}
    parts = re.split(r"^/\\ ", body.strip(), flags=re.M)
    for piece in parts:
        name, sep, value = piece.strip().partition(" = ")
        if sep and re.fullmatch(r"\w+", name):
            out[name] = " ".join(value.split())
    return out


# ----------------------------------------------------------------- invariants
@dataclasses.dataclass(frozen=True, slots=True)
class InvariantInfo:
    """What a violated invariant or property means: its rule IDs, the rules' titles
    (as ``zlink rules --rule NAME`` lists them) and the model's own statement."""

    name: str
    rules: tuple[tuple[str, str], ...]  # (rule ID, "(MUST) title")
    statement: str

    def to_json(self) -> dict[str, Any]:
        """As data."""
        return {"name": self.name, "statement": self.statement,
                "rules": [{"id": r, "title": t} for r, t in self.rules]}


def _tla_comment(models: Path, name: str) -> str:
    """The block comment right above ``name ==`` in a module of ``models``."""
    for path in sorted(models.glob("*.tla")):
        lines = path.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            if re.match(rf"^{re.escape(name)}\s*==", line):
                text: list[str] = []
                j = i - 1
                while j >= 0 and lines[j].strip().startswith(("(*", "\\*")):
                    text.insert(0, lines[j])
                    j -= 1
                joined = " ".join(t.strip().removeprefix("\\*").strip("(*) ").strip()
                                  for t in text)
                return " ".join(joined.split())
    return ""


def describe_invariant(name: str, root: Path) -> InvariantInfo:
    """The rules of ``name`` from specs/rules.toml (the rows that list it as a TLA+ or
    Python check) with their titles from the specs, and its statement: the Python
    registry's text when it has one, else the comment above its TLA+ definition."""
    rules: list[tuple[str, str]] = []
    try:
        spec_rules, _ = read_spec_rules(root / "specs")
        entries = read_entries(root / "specs" / "rules.toml")
    except (OSError, ValueError):
        spec_rules, entries = {}, {}
    for rule_id, entry in entries.items():
        if name in entry.checks.get("tla", []) or name in entry.checks.get("python", []):
            rule = spec_rules.get(rule_id)
            title = f"({rule.strength}) {rule.title}" if rule is not None else ""
            rules.append((rule_id, title))
    comment = _tla_comment(root / "models", name)
    known = INVARIANTS.get(name)
    statement = known.holds_when if known is not None else comment
    if known is not None:
        # Decisions (D-n) are named by the registry, not by the rules index.
        for rid in (r.strip() for r in known.rules.split(",")):
            if rid.startswith("D-") and rid not in (r for r, _ in rules):
                rules.append((rid, "(decision)"))
    return InvariantInfo(name, tuple(rules), statement)


def variant_overrides(cfg_text: str) -> list[tuple[str, str]]:
    """The broken-variant substitutions of a configuration: ``(Op, OpBugName)``, and
    ``("INIT"|"NEXT", XBugName)`` for a variant that brings its own Init or Next."""
    return [(m.group(1) or m.group(3), m.group(2) or m.group(4))
            for m in re.finditer(r"^\s*(?:(\w+)\s*<-\s*(\w+Bug\w+)|(INIT|NEXT)\s+(\w+Bug\w+))"
                                 r"\s*$", cfg_text, re.M)]


# -------------------------------------------------------------------- rendering
def _noun(module: str | None) -> str:
    return "item" if module == "SpotWide" else "work"


def render(cex: Counterexample, info: InvariantInfo | None = None,
           overrides: Sequence[tuple[str, str]] = ()) -> str:
    """The counterexample as text: the verdict with its rules, then every step as its
    transition, the work it is about and the variables that changed."""
    module = next((s.module for s in cex.steps if s.module in ("SerialQueue", "SpotWide",
                                                                "Disposal")), None)
    noun = _noun(module)
    out: list[str] = []
    what = {"invariant": "invariant", "property": "property", "deadlock": "deadlock"}
    head = f"{what.get(cex.kind, cex.kind)} {cex.violated}" if cex.violated else \
        what.get(cex.kind, cex.kind)
    out.append(f"counterexample: {head} is violated after {len(cex.steps) - 1} step(s)")
    if info is not None:
        if info.statement:
            out.append(f"  it says: {info.statement}")
        for rule_id, title in info.rules:
            out.append(f"  rule {rule_id} {title}".rstrip())
    for op, bug in overrides:
        out.append(f"  broken variant: {op} is replaced by {bug}")
    per = cex.per_entity()
    first = cex.steps[0]
    out.append("  initial state:")
    for name in sorted(first.values, key=snake):
        out.append(f"      {_label(name):34s} {_show(name, first.values[name])}")
    for i in range(1, len(cex.steps)):
        step = cex.steps[i]
        keys = cex.about(i)
        about = f" {noun} {', '.join(map(str, keys))}" if keys else ""
        found = step.transition
        rules = f"  [{found.rule_text}]" if found is not None and found.rules else ""
        variant = f"  (broken variant {snake(step.variant)})" if step.variant else ""
        last = i == len(cex.steps) - 1 and cex.kind == "invariant"
        mark = f"   <- {cex.violated} breaks here" if last and cex.violated else ""
        out.append(f"  step {i:>2d}: {step.event}{about}{rules}{variant}{mark}")
        for name, before, after in cex.changes(i):
            if name in per:
                old, new = _entries(before) or {}, _entries(after) or {}
                for k in new:
                    if old.get(k) != new[k]:
                        label = f"{_label(name)}[{k}]"
                        out.append(f"      {label:34s} {_show(name, old.get(k))} -> "
                                   f"{_show(name, new[k])}")
            else:
                out.append(f"      {_label(name):34s} {_show(name, before)} -> "
                           f"{_show(name, after)}")
    if cex.stuttering:
        out.append("  then nothing happens any more (the behaviour stops here for ever)")
    if cex.loop_to is not None:
        out.append(f"  then it loops back to the state after step {cex.loop_to - 1}, "
                   "for ever")
    return "\n".join(out)


# Variables holding a work (or item) or NoWork = 0: 0 reads "none".
_HOLDERS: Final = frozenset({"current", "gate", "claim"})


def _show(name: str, value: Any) -> str:
    if name in _HOLDERS:
        if value == 0:
            return "none"
        if isinstance(value, dict):
            return format_value({k: "none" if v == 0 else v for k, v in value.items()})
    return format_value(value)


def _label(name: str) -> str:
    gloss = _GLOSS.get(name)
    core = snake(name)
    return f"{core} ({gloss})" if gloss and gloss != core else core


def to_json(cex: Counterexample, info: InvariantInfo | None = None,
            overrides: Sequence[tuple[str, str]] = ()) -> dict[str, Any]:
    """The counterexample as data: the same steps, values and changes as ``render``."""
    steps: list[dict[str, Any]] = []
    for i, step in enumerate(cex.steps):
        found = step.transition
        steps.append({
            "number": step.number,
            "action": step.action,
            "event": step.event if i else "init",
            "rules": list(found.rules) if found is not None else [],
            "variant": step.variant,
            "about": [to_data(k) for k in cex.about(i)] if i else [],
            "state": {snake(k): to_data(v) for k, v in step.values.items()},
            "changed": {snake(name): {"before": to_data(b), "after": to_data(a)}
                        for name, b, a in cex.changes(i)} if i else {},
        })
    return {
        "violated": cex.violated,
        "kind": cex.kind,
        "invariant": info.to_json() if info is not None else None,
        "broken_variant": [{"operator": o, "replaced_by": b} for o, b in overrides],
        "steps": steps,
        "loop_to": cex.loop_to,
        "stuttering": cex.stuttering,
    }


# --------------------------------------------------------- the TLA+ side's verdict
_CFG_KEYWORDS: Final = frozenset({
    "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT", "INVARIANTS",
    "PROPERTY", "PROPERTIES", "CONSTRAINT", "CONSTRAINTS", "ACTION_CONSTRAINT",
    "ACTION_CONSTRAINTS", "SYMMETRY", "VIEW",
})


def _constants_only(cfg_text: str) -> str:
    """The CONSTANT(S) sections of a configuration, everything else left out."""
    keep: list[str] = []
    current: str | None = None
    for line in cfg_text.splitlines():
        words = line.split()
        if words and words[0] in _CFG_KEYWORDS:
            current = words[0]
        if current in ("CONSTANT", "CONSTANTS"):
            keep.append(line)
    return "\n".join(keep) + "\n"


def check_state_with_tlc(step: Step, invariant: str, models_dir: Path, module: str,
                         config: str, java: str, jar: Path, timeout: float = 120.0
                         ) -> bool:
    """True when TLC finds ``invariant`` violated in the state of ``step``: a module
    extending the run's ``module`` starts in exactly that state (every variable set to
    the value TLC printed) and stands still, checked for that invariant alone."""
    scratch = Path(tempfile.mkdtemp(prefix="zlink-cex-"))
    try:
        for path in models_dir.glob("*.tla"):
            shutil.copy(path, scratch / path.name)
        base = Path(module).stem
        init = "\n".join(f"    /\\ {name} = {text}" for name, text in step.raw.items())
        names = ", ".join(step.raw)
        (scratch / "ZLinkStateCheck.tla").write_text(
            f"---- MODULE ZLinkStateCheck ----\nEXTENDS {base}, TLC\n"
            f"StateCheckInit ==\n{init}\n"
            f"StateCheckNext == UNCHANGED <<{names}>>\n====\n", encoding="utf-8")
        cfg_text = (models_dir / config).read_text(encoding="utf-8")
        (scratch / "ZLinkStateCheck.cfg").write_text(
            _constants_only(cfg_text) + "INIT StateCheckInit\nNEXT StateCheckNext\n"
            f"INVARIANT {invariant}\n", encoding="utf-8")
        (scratch / "tmp").mkdir()
        proc = subprocess.run(
            # One state to check: a short run.
            [java, *jvm_options(short=True), f"-Djava.io.tmpdir={scratch / 'tmp'}", "-cp",
             str(jar), "tlc2.TLC", "-workers", "1", "-cleanup", "-metadir",
             str(scratch / "meta"), "-config", "ZLinkStateCheck.cfg", "ZLinkStateCheck.tla"],
            cwd=scratch, capture_output=True, text=True, timeout=timeout)
        said = proc.stdout + proc.stderr
        return proc.returncode == 12 and f"Invariant {invariant} is violated" in said
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def overrides_of(models_dir: Path, config: str) -> list[tuple[str, str]]:
    """``variant_overrides`` of a run's configuration file (empty if unreadable)."""
    try:
        return variant_overrides((models_dir / config).read_text(encoding="utf-8"))
    except OSError:
        return []


def states(cex: Counterexample) -> Iterable[Mapping[str, Any]]:
    """The variables of every state, in order."""
    return (s.values for s in cex.steps)


_KINDS: Final = {"safety": "invariant", "liveness": "property", "deadlock": "deadlock"}


def from_run(output: str, result: str, violated: str | None) -> Counterexample | None:
    """The counterexample of one run from its TLC output and verdict (``safety``,
    ``liveness``, ``deadlock``); None for a success, an error or no trace."""
    kind = _KINDS.get(result)
    if kind is None:
        return None
    return parse_counterexample(output, violated, kind)
