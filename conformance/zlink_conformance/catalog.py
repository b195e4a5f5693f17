"""Case files: loading, validation and selection.

A case is one JSON file in ``zlink_conformance/cases/`` named ``<id>.json``. The loader
turns it into a ``Case`` and refuses anything it cannot run exactly: unknown fields, a
rule ID missing from the catalogue (``cases/rules.json``), an ID listed as retired
(``cases/retired.json``), a target used before it is created, a work name used twice, an
entry the target type lacks, a check naming a work the case never submits, or a command
that needs a capability the case does not declare. Each error names the file and the
step. The format is documented in ``docs/conformance.md``; ``case.schema.json`` is its
JSON Schema.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Final

from zlink_model.vocabulary import DISPOSE_AFTER_TIMEOUT, REQUEUE

from .oracle.attribution import candidates
from .oracle.checks import KIND_REASONS, KIND_RULES, Check, parse_check
from .oracle.invariants import WorkInfo
from .protocol.commands import command_problems
from .protocol.routing import TargetInfo, route
from .protocol.wire import CAPABILITIES, DISPOSE_COMMAND, with_implied

__all__ = [
    "CASE_ID_PATTERN",
    "Case",
    "CaseError",
    "Catalogue",
    "Command",
    "SelectionError",
    "Step",
    "catalogue_dir",
    "content_digest",
    "load_catalogue",
    "needed_capabilities",
    "parse_case",
    "select",
]

CASE_ID_PATTERN: Final = re.compile(r"(required|optional|found)_[A-Za-z0-9]+(_[A-Za-z0-9]+)+")
RULE_PATTERN: Final = re.compile(r"(SE|SD|D)-[0-9]+(\.[0-9]+)?")
_CASE_KEYS: Final = ("id", "strength", "rules", "capabilities", "intent", "notes", "steps",
                     "expect", "found")
# What a ``found`` case (written by ``explore``) says about where it came from.
_FOUND_KEYS: Final = {"seed": int, "strategy": str, "scenario": int, "violation": str,
                      "runtime": str}


class CaseError(Exception):
    """A case file (or the catalogue) is not valid; the message names file and step."""


class SelectionError(Exception):
    """``--only``/``--skip`` named something that is neither a case nor a rule."""


@dataclasses.dataclass(frozen=True, slots=True)
class Command:
    """One command of a case: the wire message (without ``id``) and what its reply must
    hold (``expect``), if anything."""

    name: str
    message: Mapping[str, Any]
    expect: Mapping[str, Any] | None = None
    rule: str = ""  # the rule a reply expectation observes, as for a check
    rule_text: str = ""
    why: str = ""
    case_rules: tuple[str, ...] = ()  # the case's rules, context of a failure line
    rule_texts: Mapping[str, str] = dataclasses.field(default_factory=dict)


Step = Command | Check


@dataclasses.dataclass(frozen=True, slots=True)
class Case:
    """One conformance case, ready to run."""

    id: str
    strength: str  # required | optional | found
    rules: tuple[str, ...]
    capabilities: tuple[str, ...]
    intent: str
    notes: str
    steps: tuple[Step, ...]
    expect: tuple[Check, ...]
    works: Mapping[str, WorkInfo]
    targets: Mapping[str, TargetInfo]
    path: str
    found: Mapping[str, Any] | None = None  # seed, strategy, ... of a found case
    # sha256 of the case file's content as canonical JSON (sorted keys, no spacing): what
    # a case-set digest and ``cases --changes-since`` compare (layout changes do not count).
    digest: str = ""

    @property
    def required(self) -> bool:
        """Must pass for a runtime to conform."""
        return self.strength == "required"

    def missing(self, capabilities: Iterable[str]) -> list[str]:
        """The capabilities this case needs that the adapter did not declare."""
        have = set(with_implied(capabilities))
        return [c for c in self.capabilities if c not in have]

    def covers(self, rule: str) -> bool:
        """The case checks ``rule`` or a rule under it: ``SE-10`` covers ``SE-10.2``,
        ``SD`` covers every SD rule."""
        return any(_under(r, rule) for r in self.rules)


@dataclasses.dataclass(frozen=True, slots=True)
class Catalogue:
    """Every shipped case, the rules they may name and the retired IDs."""

    cases: tuple[Case, ...]
    rules: Mapping[str, str]  # rule ID -> one-line statement
    retired: Mapping[str, str]  # retired case ID -> why, and what replaced it

    def case(self, case_id: str) -> Case:
        """One case by ID (KeyError if unknown)."""
        for c in self.cases:
            if c.id == case_id:
                return c
        raise KeyError(case_id)


def _under(rule: str, family: str) -> bool:
    return rule == family or rule.startswith((family + ".", family + "-"))


# ------------------------------------------------------------------------ loading
def catalogue_dir() -> Path:
    """The directory of the shipped case files."""
    return Path(str(resources.files("zlink_conformance") / "cases"))


_data_dir = catalogue_dir


def load_catalogue(directory: str | Path | None = None) -> Catalogue:
    """Load and validate every case of ``directory`` (default: the shipped cases).

    ``rules.json`` and ``retired.json`` are read from the same directory when present,
    else from the shipped ones. Raises ``CaseError`` listing every problem found.
    """
    shipped = _data_dir()
    base = Path(directory) if directory is not None else shipped
    rules_file = base / "rules.json" if (base / "rules.json").is_file() else shipped / "rules.json"
    retired_file = (base / "retired.json" if (base / "retired.json").is_file()
                    else shipped / "retired.json")
    rules = _read_mapping(rules_file, "rules")
    retired = _read_mapping(retired_file, "retired")
    for rule in rules:
        if not RULE_PATTERN.fullmatch(rule):
            raise CaseError(f"{rules_file}: {rule!r} is not a rule ID like SE-10.2 or SD-1")
    problems: list[str] = []
    cases: list[Case] = []
    files = sorted(p for p in base.glob("*.json")
                   if p.name.startswith(("required_", "optional_", "found_")))
    if not files:
        raise CaseError(f"{base}: no case files (required_*.json, optional_*.json, "
                        f"found_*.json)")
    for path in files:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
            problems.append(f"{path.name}: cannot read: {exc}")
            continue
        case, found = parse_case(raw, path.name, rules, retired)
        problems += found
        if case is not None:
            cases.append(case)
    if problems:
        raise CaseError("invalid case files:\n  " + "\n  ".join(problems))
    return Catalogue(tuple(cases), rules, retired)


def _read_mapping(path: Path, what: str) -> dict[str, str]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise CaseError(f"{path}: cannot read the {what} catalogue: {exc}") from None
    entries = data.get(what) if isinstance(data, dict) else None
    if not isinstance(entries, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in entries.items()
    ):
        raise CaseError(f"{path}: expected {{\"{what}\": {{ID: text, ...}}}}")
    return entries


def parse_case(raw: Any, filename: str, rules: Mapping[str, str],
               retired: Mapping[str, str]) -> tuple[Case | None, list[str]]:
    """Validate one case file's content; returns the case or the problems."""
    where = filename
    if not isinstance(raw, dict):
        return None, [f"{where}: a case file holds one JSON object"]
    problems = [f"{where}: unknown key {k!r} (keys: {', '.join(_CASE_KEYS)})"
                for k in raw if k not in _CASE_KEYS]
    case_id = raw.get("id")
    if not isinstance(case_id, str) or not CASE_ID_PATTERN.fullmatch(case_id):
        problems.append(f"{where}: 'id' must look like required_SE_10_02_what_it_checks")
        return None, problems
    if filename != f"{case_id}.json":
        problems.append(f"{where}: the file must be named {case_id}.json")
    if case_id in retired:
        problems.append(f"{where}: {case_id} is retired ({retired[case_id]}); a changed case "
                        f"gets a new ID")
    strength = raw.get("strength")
    if strength not in ("required", "optional", "found"):
        problems.append(f"{where}: 'strength' must be required, optional or found")
    elif not case_id.startswith(strength + "_"):
        problems.append(f"{where}: the ID must start with its strength {strength!r}")
    case_rules = raw.get("rules")
    if not isinstance(case_rules, list) or not case_rules:
        problems.append(f"{where}: 'rules' must be a non-empty list of rule IDs")
        case_rules = []
    for rule in case_rules:
        if rule not in rules:
            near = difflib.get_close_matches(str(rule), list(rules), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            problems.append(f"{where}: rule {rule!r} is not in the rule catalogue{hint}")
    caps = raw.get("capabilities", [])
    if not isinstance(caps, list) or not all(c in CAPABILITIES for c in caps):
        problems.append(f"{where}: 'capabilities' must list known capabilities "
                        f"({', '.join(CAPABILITIES)})")
        caps = []
    for key in ("intent", "notes"):
        if key in raw and not isinstance(raw[key], str):
            problems.append(f"{where}: {key!r} must be a string")
    if not raw.get("intent"):
        problems.append(f"{where}: 'intent' (one sentence: what the case shows) is missing")
    builder = _Builder(where, [r for r in case_rules if r in rules], rules)
    steps_raw = raw.get("steps")
    if not isinstance(steps_raw, list) or not steps_raw:
        problems.append(f"{where}: 'steps' must be a non-empty list")
        steps_raw = []
    steps: list[Step] = []
    for i, step in enumerate(steps_raw):
        parsed = builder.step(step, f"{where}: steps[{i}]")
        if parsed is not None:
            steps.append(parsed)
    expect: list[Check] = []
    expect_raw = raw.get("expect", [])
    if not isinstance(expect_raw, list):
        problems.append(f"{where}: 'expect' must be a list of checks")
        expect_raw = []
    for i, obj in enumerate(expect_raw):
        check = builder.check(obj, f"{where}: expect[{i}]")
        if check is not None:
            expect.append(check)
    found = raw.get("found")
    problems += _found_problems(where, strength, found)
    # A found case is judged by the invariants and the model oracle, which judge every
    # case: it needs no check of its own (explore derives none it could not justify).
    if strength != "found" and not expect and not any(isinstance(s, Check) for s in steps) \
            and not any(isinstance(s, Command) and s.expect for s in steps):
        problems.append(f"{where}: the case checks nothing (no checks, no reply expectations)")
    builder.finish()
    problems += builder.problems
    undeclared = sorted(builder.needs - set(with_implied(caps)))
    if undeclared:
        problems.append(f"{where}: the steps need capabilities the case does not declare: "
                        f"{', '.join(undeclared)}")
    if problems:
        return None, problems
    return Case(
        id=case_id, strength=str(strength), rules=tuple(case_rules), capabilities=tuple(caps),
        intent=str(raw.get("intent", "")), notes=str(raw.get("notes", "")), steps=tuple(steps),
        expect=tuple(expect), works=dict(builder.works), targets=dict(builder.targets),
        path=filename, found=dict(found) if isinstance(found, dict) else None,
        digest=content_digest(raw),
    ), []


def _found_problems(where: str, strength: Any, found: Any) -> list[str]:
    """A ``found`` case says where it came from (``found``: seed, strategy, ...); no
    other case may."""
    if strength != "found":
        return [f"{where}: 'found' belongs to cases of strength found"] \
            if found is not None else []
    if not isinstance(found, dict):
        return [f"{where}: a found case needs 'found': {{seed, strategy, scenario, "
                f"violation}}"]
    out = [f"{where}: found.{key} is not a field (fields: {', '.join(_FOUND_KEYS)})"
           for key in found if key not in _FOUND_KEYS]
    for key, kind in _FOUND_KEYS.items():
        value = found.get(key)
        if key == "runtime" and value is None:
            continue
        if not isinstance(value, kind) or isinstance(value, bool):
            what = "an integer" if kind is int else "a string"
            out.append(f"{where}: found.{key} must be {what}")
    return out


def needed_capabilities(steps: Sequence[Any]) -> list[str]:
    """The capabilities a list of case steps needs (what a case running them must
    declare), sorted; a step the loader would refuse adds nothing."""
    builder = _Builder("steps")
    for i, step in enumerate(steps):
        builder.step(step, f"steps[{i}]")
    return sorted(builder.needs)


def content_digest(raw: Any) -> str:
    """sha256 (hex) of a case's content as canonical JSON: the same for every layout of
    the same case file, different for any change of what it says."""
    text = json.dumps(raw, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class _Builder:
    """Walks a case's steps in order, tracking targets and works, collecting problems and
    the capabilities the steps need."""

    def __init__(self, where: str, case_rules: Sequence[str] = (),
                 rule_texts: Mapping[str, str] | None = None) -> None:
        self.where = where
        self.case_rules = list(case_rules)
        self.rule_texts = rule_texts or {}
        self.problems: list[str] = []
        self.targets: dict[str, TargetInfo] = {}
        self.works: dict[str, WorkInfo] = {}
        self.waiters: set[str] = set()
        self.held: set[str] = set()  # targets created with held (capability held_steps)
        self.needs: set[str] = set()
        self.mentioned: list[tuple[str, str]] = []  # (work, where) named by checks/ops
        self.command_id = 0

    def step(self, obj: Any, where: str) -> Step | None:
        if isinstance(obj, dict) and "check" in obj:
            return self.check(obj, where)
        found = command_problems(obj, where, extra=("expect",))
        if found:
            self.problems += found
            return None
        name = obj["cmd"]
        expect = obj.get("expect")
        if expect is not None and (not isinstance(expect, dict)
                                   or name not in ("statistics", "zombies")):
            self.problems.append(f"{where}: 'expect' belongs to statistics or zombies "
                                 f"commands and must be an object")
            return None
        self.command_id += 1
        message = {k: v for k, v in obj.items() if k != "expect"}
        self.command(name, message, where)
        if expect is None:
            return Command(name, message)
        rule = ""  # a reply expectation leads with the evidence or the case's only rule
        return Command(name, message, expect, rule, self.rule_texts.get(rule, ""),
                       KIND_REASONS["reply"], tuple(self.case_rules),
                       {r: self.rule_texts.get(r, "") for r in self.case_rules})

    def command(self, name: str, msg: Mapping[str, Any], where: str) -> None:
        target = msg.get("target")
        if name == "create":
            self.create(msg, where)
        elif name == "submit":
            self.submit(msg, where, self.command_id)
        elif name == "submit_concurrent":
            self.needs.add("concurrent_submission")
            for i, sub in enumerate(msg["submissions"]):
                self.submit(sub, f"{where}.submissions[{i}]", self.command_id)
        elif target is not None and target not in self.targets:
            self.problems.append(f"{where}: target {target!r} is not created before this step")
        if name == "await" and msg.get("mode") == "quiescence":
            # await_quiescence is a bare queue's (SE-6.2), not a scope's disposal.
            self.needs.add("queue_observation")
            if target in self.targets and self.targets[str(target)].type != "queue":
                self.problems.append(f"{where}: await mode quiescence needs a bare queue "
                                     f"target")
            name = "await_quiescence"
        needs = {"advance": "virtual_clock", "register": "snapshots",
                 "update_registration": "snapshots", DISPOSE_COMMAND: "disposal",
                 "as_not_safely": "disposal", "await": "disposal",
                 "runtime_end": "runtime_end", "statistics": "statistics",
                 "zombies": "zombie_listing"}
        if name in needs:
            self.needs.add(needs[name])
        if name in ("complete", "fail"):
            self.needs.add("yield")
        if name == "step":
            self.needs.add("held_steps")
            if target in self.targets and target not in self.held:
                self.problems.append(f"{where}: step needs a target created with held")
            if msg.get("step") == REQUEUE and "work" not in msg:
                self.problems.append(f"{where}: step requeue names the work")
        if name in ("await", "await_quiescence", "runtime_end"):
            waiter = str(msg.get("waiter"))
            if waiter in self.waiters:
                self.problems.append(f"{where}: waiter {waiter!r} is used twice")
            self.waiters.add(waiter)
        if name == DISPOSE_COMMAND and msg.get("mode") == DISPOSE_AFTER_TIMEOUT \
                and "timeout_ms" not in msg:
            self.problems.append(f"{where}: dispose_after_timeout needs timeout_ms")

    def create(self, msg: Mapping[str, Any], where: str) -> None:
        name = str(msg["target"])
        if name in self.targets:
            self.problems.append(f"{where}: target {name!r} is created twice")
            return
        type_ = str(msg["type"])
        kind = msg.get("kind")
        mode = msg.get("mode")
        if type_ == "spot":
            kind = kind or "user"
            if kind == "user" and mode is None:
                self.problems.append(f"{where}: a User Spot needs its mode")
            if kind != "user" and mode is not None:
                self.problems.append(f"{where}: only User Spots have a mode")
            self.needs.add(f"spot.user.{mode}" if kind == "user" else f"spot.{kind}")
        else:
            for key in ("kind", "mode", "actor_policy", "timer_policy"):
                if key in msg:
                    self.problems.append(f"{where}: {key!r} is for Spots only")
            self.needs.add(type_)
        if "zombie_warn_after_ms" in msg:
            self.needs.add("zombie_warning")
        if msg.get("held"):
            self.needs.add("held_steps")
            self.held.add(name)
            if type_ != "queue":
                self.problems.append(f"{where}: only a bare queue is held")
        self.targets[name] = TargetInfo(name, type_, kind if type_ == "spot" else None,
                                        mode if type_ == "spot" else None)

    def submit(self, msg: Mapping[str, Any], where: str, command_id: int | None) -> None:
        work = str(msg["work"])
        target = self.targets.get(str(msg["target"]))
        if work in self.works:
            self.problems.append(f"{where}: work name {work!r} is used twice")
            return
        if target is None:
            self.problems.append(f"{where}: target {msg['target']!r} is not created before "
                                 f"this step")
            return
        entry = str(msg["entry"])
        try:
            r = route(target, entry, msg.get("actor_id"), msg.get("timer_name"))
        except ValueError as exc:
            self.problems.append(f"{where}: {exc}")
            return
        if target.type == "queue":
            self.needs.add("queue")
        takes_payload = entry in ("execute_actor", "execute_application",
                                  "enqueue_with_payload_bytes")
        if "payload_bytes" in msg and not takes_payload:
            self.problems.append(f"{where}: {entry} takes no payload_bytes")
        for key in ("actor_id", "timer_name"):
            wanted = (key == "actor_id" and entry == "execute_actor" and target.type == "spot") \
                or (key == "timer_name" and entry == "execute_timer")
            if key in msg and not wanted:
                self.problems.append(f"{where}: {entry} on a {target.type} takes no {key}")
        self.works[work] = WorkInfo(work, target.name, entry, r, command_id)
        for i, op in enumerate(msg.get("script", [])):
            self.op(op, f"{where}.script[{i}]")

    def op(self, op: Mapping[str, Any], where: str) -> None:
        name = op["op"]
        if name == "submit":
            self.submit(op, where, None)
        elif name == "call":
            self.needs.add("yield")
        elif name == "busy":
            self.needs.add("virtual_clock")
        elif name == "snapshot":
            self.needs.add("snapshots")
        elif name == "wait_for":
            self.needs.add("synchronous_wait")
            self.mentioned.append((str(op["work"]), where))
        elif name == "is_current":
            self.needs.add("queue_observation")
            self.queue_named(str(op["target"]), where)
        elif name == "await_scope":
            self.needs.add("scope_wait")

    def check(self, obj: Any, where: str) -> Check | None:
        check, found = parse_check(obj, where)
        self.problems += found
        if check is None:
            return None
        check = self.attribute(check, where)
        for work in check.works():
            self.mentioned.append((work, where))
        if check.kind == "members":
            self.needs.add("member_listing")
        if check.kind == "off_submitter_stack":
            self.needs.add("submitter_stack")
        if check.kind == "is_current":
            self.needs.add("queue_observation")
            self.queue_named(str(check.fields["queue"]), where)
        if check.kind == "waiter" and check.fields["waiter"] not in self.waiters:
            self.problems.append(f"{where}: waiter {check.fields['waiter']!r} is not started "
                                 f"by an earlier await or runtime_end")
        return check

    def queue_named(self, name: str, where: str) -> None:
        """``is_current`` asks a bare queue: the target must be one, created by then."""
        target = self.targets.get(name)
        if target is None or target.type != "queue":
            self.problems.append(f"{where}: {name!r} is not a bare queue created before "
                                 f"this step")

    def attribute(self, check: Check, where: str) -> Check:
        """Give the check its rule, that rule's sentence, a reason (its own ``why``, else
        the sentence of its kind) and the case's rules as context. Its rule is the one it
        names, else the one its kind observes (``KIND_RULES``) when the case lists it,
        else the one case rule its kind and fields tell apart (``oracle.attribution``;
        several it observes alike become its alternatives); a check with none of these
        has no rule of its own: a failure of it leads with the rule
        the log's evidence points at (the model, an invariant), else the case's only
        rule, never the case's first by default (``Check.rule_for``). A named rule must
        be the case's and have a statement, and every check needs a reason."""
        implied = KIND_RULES.get(check.kind, "")
        rule = check.rule or (implied if implied in self.case_rules else "")
        alternatives: tuple[str, ...] = ()
        if not rule and len(self.case_rules) > 1:
            # The case rules the check's kind observes (oracle.attribution): one is its
            # rule; several that it observes alike lead its line together.
            found = candidates(check.kind, check.fields, self.case_rules)
            rule, alternatives = (found[0], ()) if len(found) == 1 else ("", found)
        if check.rule and check.rule not in self.case_rules:
            self.problems.append(f"{where}: the check names rule {check.rule!r}, which the "
                                 f"case's 'rules' do not list")
        why = check.why or KIND_REASONS.get(check.kind, "")
        text = self.rule_texts.get(rule, "")
        if (rule and not text) or not why:
            self.problems.append(f"{where}: the check has no rule with a statement and a "
                                 f"reason (rule {rule!r}, why {why!r})")
        return dataclasses.replace(
            check, rule=rule, rule_text=text, why=why, case_rules=tuple(self.case_rules),
            rule_texts={r: self.rule_texts.get(r, "") for r in self.case_rules},
            alternatives=alternatives)

    def finish(self) -> None:
        """Every work a check or a ``wait_for`` names is submitted somewhere."""
        for work, where in self.mentioned:
            if work not in self.works:
                self.problems.append(f"{where}: names work {work!r}, which the case never "
                                     f"submits")
        self.mentioned.clear()


# ---------------------------------------------------------------------- selection
def select(catalogue: Catalogue, only: Sequence[str] = (), skip: Sequence[str] = ()
           ) -> list[Case]:
    """The cases ``--only``/``--skip`` pick, in catalogue order.

    Each name is a case ID or a rule ID; a rule picks every case that checks it or a rule
    under it (``SE-10`` picks ``SE-10.2``, ``SD`` every SD rule). An unknown name raises
    ``SelectionError`` naming it and the nearest known IDs.
    """
    ids = {c.id for c in catalogue.cases}

    def resolve(name: str, flag: str) -> set[str]:
        if name in ids:
            return {name}
        if name in catalogue.retired:
            raise SelectionError(f"{flag} {name}: case retired ({catalogue.retired[name]})")
        family = [r for r in catalogue.rules if _under(r, name)]
        if family:
            return {c.id for c in catalogue.cases if c.covers(name)}
        near = difflib.get_close_matches(name, sorted(ids | set(catalogue.rules)), n=3)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        raise SelectionError(f"{flag} {name}: no case or rule has this ID{hint}")

    chosen = set(ids)
    if only:
        chosen = set()
        for name in only:
            chosen |= resolve(name, "--only")
    for name in skip:
        chosen -= resolve(name, "--skip")
    return [c for c in catalogue.cases if c.id in chosen]
