"""The expectations a case states, and how each is judged against the log.

A check is ``{"check": KIND, ...fields, "why": "optional explanation"}``. A check inside
a case's ``steps`` is judged on the log up to that point (right after a ``settle``, that
is a state nothing can change without more input); the checks in ``expect`` are judged
once the steps are done and a last ``settle`` answered.

Every check looks only at positions in the log, never at clocks. The table ``CHECKS``
is the whole vocabulary; ``specs/adapter-protocol.md`` and ``docs/conformance.md``
describe each kind and ``case.schema.json`` mirrors ``CHECK_FIELDS``.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Final

from zlink_model.vocabulary import OUTCOMES as WORK_OUTCOMES
from zlink_model.vocabulary import wire_status

from ..protocol.wire import (
    ENTRY_PARAMETERS,
    ERROR_KINDS,
    EVENT_FIELDS,
    ID_PATTERN,
    OUTCOMES,
    REJECT_REASONS,
)
from .log import CaseLog

__all__ = ["CHECK_FIELDS", "ENTRY_SET_RULE", "KIND_REASONS", "KIND_RULES", "STATUSES",
           "Check", "CheckContext", "explain", "match_reply", "parse_check"]

# What a ``status`` check may expect of a work: never seen, rejected, a live work's wire
# status, or the event that ended it.
STATUSES: Final = ("unknown", "rejected", *dict.fromkeys(wire_status().values()),
                   *(o.wire for o in WORK_OUTCOMES))

# Field kinds as in protocol.commands, plus: "works" (non-empty list of work names),
# "work_list" (possibly empty), "status_map",
# "event_refs" ("event:work" strings), "event_names", "kinds", "values_list",
# "string_list", "count" (an integer >= 0). "!" marks a required field.
CHECK_FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "status": {"works": "!status_map"},
    "order": {"events": "!event_refs"},
    "start_order": {"works": "!works"},
    "overlap": {"works": "!works"},
    "no_overlap": {"works": "!works"},
    "rejected": {"work": "!id", "reason": "!enum:" + "|".join(REJECT_REASONS)},
    "errors": {"work": "!id", "kinds": "!kinds"},
    "waited": {"work": "!id", "target": "!id", "outcome": "!enum:" + "|".join(OUTCOMES)},
    "snapshots": {"work": "!id", "values": "!values_list"},
    "events": {"work": "!id", "events": "!event_names"},
    "failed": {"work": "!id", "message": "!string"},
    "waiter": {"waiter": "!id", "returned": "!bool", "error": "enum:" + "|".join(ERROR_KINDS),
               "errors": "string_list", "cancelled": "work_list", "abandoned": "work_list"},
    "zombies": {"works": "!works"},
    "surface": {},
    "members": {},
    "admitted": {"works": "!works", "accepted": "!count",
                 "reason": "!enum:" + "|".join(REJECT_REASONS)},
    "off_submitter_stack": {"works": "!works"},
    "is_current": {"work": "!id", "queue": "!id", "current": "!bool"},
}


# What each kind of check demands, in one sentence: the reason a failing check gives
# when its case states no ``why`` of its own.
KIND_REASONS: Final[Mapping[str, str]] = {
    "status": "each named work must have reached exactly this status by this point of the log",
    "order": "these events must appear in the log in exactly this order",
    "start_order": "these works must start in exactly this order, which the rule fixes",
    "overlap": "every pair of these works must be in progress at the same time at some "
               "point, which the rule allows and the case's gates force",
    "no_overlap": "no two of these works may ever be in progress at the same time",
    "rejected": "this submission must be refused for exactly this reason, with nothing "
                "inserted",
    "errors": "the work's script ops must raise exactly these errors, in this order",
    "waited": "the work's synchronous wait must return with exactly this outcome",
    "snapshots": "the work must see exactly these state snapshots, in this order",
    "events": "the work must report exactly this sequence of events",
    "failed": "the work must end failed, with exactly this message",
    "waiter": "the waiter must be in exactly this state, reporting exactly these results",
    "zombies": "exactly these works must have been made zombies",
    "surface": "the entry points must be exactly the spec's, none taking anything that "
               "could pick a queue",
    "members": "no public member of a coordinator may hand out one of its queues",
    "admitted": "exactly this many of the racing submissions must be admitted, the others "
                "refused for this reason",
    "off_submitter_stack": "each of these works must start only after the submit call "
                           "that admitted it returned, never inside it on the submitter's "
                           "stack",
    "is_current": "every time the work asks whether it holds the queue's turn, the answer must "
               "be exactly this",
    "reply": "the command's reply must report exactly these values",
}


# The rule a kind of check observes by its nature, whatever case it is in: the check's
# own rule when its case lists that rule (a check may still name another one itself).
KIND_RULES: Final[Mapping[str, str]] = {
    "off_submitter_stack": "SE-6.5",
    "admitted": "SE-6.3",
    "members": "SE-2.5",
    "is_current": "SE-6.2",
    "surface": "SE-10.1",
}
# A ``surface`` problem about which entry points exist (not what they take) is SE-3.1's.
ENTRY_SET_RULE: Final = "SE-3.1"


def explain(rule: str, rule_text: str, why: str, problem: str, *, where: str = "",
            context: Sequence[str] = (), evidence: str = "",
            alternatives: Sequence[str] = ()) -> str:
    """One failure line, leading with the rule it is about: ``[SE-6.5] expect[0] kind:
    seen...; rule SE-6.5: ...; why: ...; case rules: ...``. ``where`` names the step;
    ``context`` is the case's rules, shown after the reason when there are several;
    ``evidence`` says what else in the log points at ``rule`` (the model's divergence),
    when the check itself names no rule; ``alternatives``, the case rules the check's
    kind observes alike, narrow a line with no single rule."""
    if not rule:
        # No single rule: the line leads with the rules it may be about.
        rule = " or ".join(alternatives or context)
    head = f"{where}: {problem}" if where else problem
    text = f"[{rule}] {head}" if rule else head
    if evidence:
        text += f"; the log breaks {rule}: {evidence.rstrip('.')}"
    if rule_text:
        text += f"; rule {rule}: {rule_text.rstrip('.')}"
    if why:
        text += f"; why: {why.rstrip('.')}"
    if len(context) > 1:
        text += f"; case rules: {', '.join(context)}"
    return text


@dataclasses.dataclass(frozen=True, slots=True)
class CheckContext:
    """What a check may consult besides the log: the adapter's handshake."""

    handshake: Mapping[str, Any]


@dataclasses.dataclass(frozen=True, slots=True)
class Check:
    """One parsed expectation."""

    kind: str
    fields: Mapping[str, Any]
    why: str = ""
    # The rule the check observes by itself: the one it names, or the one its kind
    # implies (``KIND_RULES``) when its case lists it; "" otherwise.
    rule: str = ""
    rule_text: str = ""  # what that rule demands, in one sentence (from the catalogue)
    case_rules: tuple[str, ...] = ()  # the case's rules: context for every line
    rule_texts: Mapping[str, str] = dataclasses.field(default_factory=dict)
    # Without a rule of its own: the case rules its kind observes alike (two or more,
    # ``oracle.attribution``), which a failure leads with instead of all the case's.
    alternatives: tuple[str, ...] = ()

    def rule_for(self, evidence: tuple[str, str] | None) -> tuple[str, str, str]:
        """(rule, its sentence, what in the log points at it) a failure line leads with:
        the check's own rule; else the rule the rest of the log shows broken (the
        model's divergence, an invariant); else the case's only rule; else none."""
        if self.rule:
            return self.rule, self.rule_text, ""
        if evidence is not None:
            return evidence[0], self.rule_texts.get(evidence[0], ""), evidence[1]
        if len(self.case_rules) == 1:
            only = self.case_rules[0]
            return only, self.rule_texts.get(only, ""), ""
        return "", "", ""

    def works(self) -> list[str]:
        """Every work name the check mentions (the loader checks they exist)."""
        f = self.fields
        names: list[str] = []
        for key in ("work", "target"):
            if isinstance(f.get(key), str):
                names.append(f[key])
        for key in ("works", "cancelled", "abandoned"):
            value = f.get(key)
            if isinstance(value, list):
                names += value
            elif isinstance(value, dict):
                names += list(value)
        for ref in f.get("events", []) if self.kind == "order" else []:
            names.append(ref.split(":", 1)[1])
        return names

    def evaluate(self, log: CaseLog, ctx: CheckContext, *, where: str = "",
                 evidence: tuple[str, str] | None = None) -> list[str]:
        """Failure lines (empty when the expectation holds), each leading with its rule.

        A problem its evaluator ties to a rule of its own (``(rule, problem)``) leads with
        that rule; else the check's rule. A check without one (several case rules, none
        named) leads with ``evidence``, ``(rule, what)`` from the rest of the log (the
        model's divergence, a broken invariant) when there is some, else with no single
        rule: the case's rules follow as context on every line."""
        out = []
        for found in _EVALUATORS[self.kind](self.fields, log, ctx):
            rule, text, seen = self.rule_for(evidence)
            if isinstance(found, tuple):
                own, problem = found
                if own in self.case_rules or not rule:
                    rule, text, seen = own, self.rule_texts.get(own, ""), ""
            else:
                problem = found
            out.append(explain(rule, text, self.why, problem, where=where,
                               context=self.case_rules, evidence=seen,
                               alternatives=self.alternatives))
        return out

    def describe(self) -> str:
        """A short text of the check for reports."""
        body = ", ".join(f"{k}={v!r}" for k, v in self.fields.items())
        return f"{self.kind}({body})"


# ------------------------------------------------------------------------ parsing
def _kind_problem(name: str, kind: str, value: Any) -> str | None:
    def names_ok(v: Any) -> bool:
        return isinstance(v, list) and all(
            isinstance(x, str) and ID_PATTERN.fullmatch(x) for x in v)

    if kind == "id":
        ok = isinstance(value, str) and bool(ID_PATTERN.fullmatch(value))
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "string":
        ok = isinstance(value, str)
    elif kind.startswith("enum:"):
        ok = value in kind[5:].split("|")
    elif kind == "works":
        ok = names_ok(value) and len(value) > 0
    elif kind == "work_list":
        ok = names_ok(value)
    elif kind == "status_map":
        ok = isinstance(value, dict) and bool(value) and names_ok(list(value)) and all(
            v in STATUSES for v in value.values())
    elif kind == "event_refs":
        ok = isinstance(value, list) and len(value) >= 2 and all(
            isinstance(r, str) and r.count(":") == 1 and r.split(":")[0] in EVENT_FIELDS
            and ID_PATTERN.fullmatch(r.split(":")[1]) for r in value)
    elif kind == "event_names":
        ok = isinstance(value, list) and all(v in EVENT_FIELDS for v in value)
    elif kind == "kinds":
        ok = isinstance(value, list) and all(v in ERROR_KINDS for v in value)
    elif kind == "values_list":
        ok = isinstance(value, list) and all(isinstance(v, dict) for v in value)
    elif kind == "string_list":
        ok = isinstance(value, list) and all(isinstance(v, str) for v in value)
    elif kind == "count":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    else:  # pragma: no cover - the table above names only these kinds
        ok = False
    if ok:
        return None
    hints = {
        "status_map": f"an object mapping work names to one of {', '.join(STATUSES)}",
        "event_refs": "a list of at least two 'event:work' strings",
        "event_names": "a list of event names",
        "kinds": f"a list of error kinds ({', '.join(ERROR_KINDS)})",
        "works": "a non-empty list of work names",
    }
    return f"{name!r} must be {hints.get(kind, kind)}"


def parse_check(obj: Any, where: str) -> tuple[Check | None, list[str]]:
    """Parse one check object; returns the check, or None with the problems."""
    if not isinstance(obj, dict):
        return None, [f"{where}: a check must be an object"]
    kind = obj.get("check")
    table = CHECK_FIELDS.get(kind) if isinstance(kind, str) else None
    if table is None or not isinstance(kind, str):
        return None, [f"{where}: unknown check {kind!r} (checks: {', '.join(CHECK_FIELDS)})"]
    problems = []
    for key in obj:
        if key not in table and key not in ("check", "why", "rule"):
            problems.append(f"{where}: check {kind!r} has no field {key!r}")
    for key in ("why", "rule"):
        if key in obj and not isinstance(obj[key], str):
            problems.append(f"{where}: {key!r} must be a string")
    for key, spec in table.items():
        if key not in obj:
            if spec.startswith("!"):
                problems.append(f"{where}: check {kind!r} needs {key!r}")
            continue
        problem = _kind_problem(key, spec.lstrip("!"), obj[key])
        if problem:
            problems.append(f"{where}: {problem}")
    if problems:
        return None, problems
    fields = {k: v for k, v in obj.items() if k not in ("check", "why", "rule")}
    return Check(kind, fields, obj.get("why", ""), obj.get("rule", "")), []


# --------------------------------------------------------------------- evaluators
# An evaluator's problems: text (about the check's rule), or (rule, text) for a problem
# that is about a rule of its own (``surface``: which entries exist is SE-3.1's).
Problem = str | tuple[str, str]
Evaluator = Callable[[Mapping[str, Any], CaseLog, CheckContext], Sequence[Problem]]


def _status(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    out = []
    for work, want in f["works"].items():
        got = log.status(work)
        if got != want:
            out.append(f"{work}: expected status {want}, got {got} ({log.describe(work)})")
    return out


def _order(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    positions = []
    for ref in f["events"]:
        name, work = ref.split(":")
        pos = log.first(name, work)
        if pos is None:
            return [f"{ref} never happened ({work}: {log.describe(work)})"]
        positions.append((pos, ref))
    out = []
    for (p1, r1), (p2, r2) in itertools.pairwise(positions):
        if not p1 < p2:
            out.append(f"expected {r1} before {r2}, but {r2}@{p2} came before {r1}@{p1}")
    return out


def _start_order(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    starts = []
    for work in f["works"]:
        pos = log.first("started", work)
        if pos is None:
            return [f"{work} never started ({log.describe(work)})"]
        starts.append((pos, work))
    actual = [w for _, w in sorted(starts)]
    if actual != list(f["works"]):
        seen = " ".join(f"{w}@{p}" for p, w in sorted(starts))
        return [f"expected start order {' '.join(f['works'])}, got {' '.join(actual)} "
                f"(started at log positions {seen})"]
    return []


def _lifetimes(works: list[str], log: CaseLog) -> tuple[dict[str, Any], list[str]]:
    spans = {}
    missing = []
    for work in works:
        span = log.lifetime(work)
        if span is None:
            missing.append(f"{work} never started ({log.describe(work)})")
        spans[work] = span
    return spans, missing


def _pairs_overlapping(f: Mapping[str, Any], log: CaseLog, want: bool) -> list[str]:
    """Every pair of the check's works must (``want``) or must not have been in progress
    at the same time; one message per pair that breaks it."""
    spans, missing = _lifetimes(f["works"], log)
    if missing:
        return missing
    works = list(f["works"])
    broke = "never were" if want else "were"
    out = []
    for i, a in enumerate(works):
        for b in works[i + 1:]:
            if spans[a].overlaps(spans[b]) != want:
                out.append(f"{a} and {b} {broke} in progress at the same time "
                           f"({a}: {log.describe(a)}; {b}: {log.describe(b)})")
    return out


def _overlap(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    return _pairs_overlapping(f, log, want=True)


def _no_overlap(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    return _pairs_overlapping(f, log, want=False)


def _rejected(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    work = f["work"]
    reasons = [e.fields["reason"] for _, e in log.of(work) if e.name == "rejected"]
    if not reasons:
        return [f"{work}: expected a rejection ({f['reason']}), got {log.describe(work)}"]
    if reasons[0] != f["reason"]:
        return [f"{work}: expected rejection reason {f['reason']}, got {reasons[0]}"]
    return []


def _errors(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    work = f["work"]
    kinds = [e.fields["kind"] for _, e in log.of(work) if e.name == "error"]
    if kinds != list(f["kinds"]):
        return [f"{work}: expected errors {f['kinds']}, got {kinds} ({log.describe(work)})"]
    return []


def _waited(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    work = f["work"]
    seen = [(e.fields["target"], e.fields["outcome"]) for _, e in log.of(work)
            if e.name == "waited"]
    want = (f["target"], f["outcome"])
    if want not in seen:
        return [f"{work}: expected to wait for {want[0]} until it {want[1]}, "
                f"got {seen or 'no wait'} ({log.describe(work)})"]
    return []


def _snapshots(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    work = f["work"]
    found = [(pos, dict(e.fields["values"])) for pos, e in log.of(work) if e.name == "snapshot"]
    seen = [values for _, values in found]
    if seen != list(f["values"]):
        where = " ".join(f"snapshot@{pos}" for pos, _ in found) or "no snapshot event"
        return [f"{work}: expected snapshots {f['values']}, got {seen} ({where})"]
    return []


def _events(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    work = f["work"]
    got = log.names(work)
    if got != list(f["events"]):
        seen = " ".join(f"{e.name}@{pos}" for pos, e in log.of(work))
        return [f"{work}: expected events {' '.join(f['events'])}, got {seen or 'none'}"]
    return []


def _failed(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    work = f["work"]
    messages = [e.fields["message"] for _, e in log.of(work) if e.name == "failed"]
    if messages != [f["message"]]:
        return [f"{work}: expected to fail with {f['message']!r}, got {log.describe(work)}"
                + (f" with {messages}" if messages else "")]
    return []


def _waiter(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    waiter = f["waiter"]
    found = [(pos, e) for pos, e in log.named("returned") if e.fields.get("waiter") == waiter]
    if not f["returned"]:
        return [f"waiter {waiter} returned@{found[0][0]}, expected it still waiting"] \
            if found else []
    if not found:
        return [f"waiter {waiter} has not returned (no returned event in the {len(log)} "
                f"entries of the log)"]
    got = found[0][1].fields
    out = []
    if got.get("error") != f.get("error"):
        out.append(f"waiter {waiter}: expected error {f.get('error')}, got {got.get('error')}")
    if "errors" in f and list(got.get("errors", [])) != list(f["errors"]):
        out.append(f"waiter {waiter}: expected reported errors {f['errors']}, "
                   f"got {got.get('errors', [])}")
    for key in ("cancelled", "abandoned"):
        if key in f and sorted(got.get(key, [])) != sorted(f[key]):
            out.append(f"waiter {waiter}: expected {key} {sorted(f[key])}, "
                       f"got {sorted(got.get(key, []))}")
    return out


def _zombies(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    firsts: dict[str, int] = {}
    for pos, e in log.named("zombie"):
        firsts.setdefault(e.fields["work"], pos)
    got = sorted(firsts)
    if got != sorted(f["works"]):
        seen = " ".join(f"zombie:{w}@{firsts[w]}" for w in got) or "no zombie event"
        return [f"expected zombies {sorted(f['works'])}, got {got} ({seen})"]
    return []


def _surface(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[Problem]:
    """SE-3.1 / SE-10.1 through the process boundary: the entry points the adapter says
    its runtime offers are exactly the spec's, and none takes anything that could pick a
    queue."""
    surface = ctx.handshake.get("surface")
    if not isinstance(surface, dict):
        return ["the handshake reports no 'surface' (entry points and their parameters)"]
    caps = set(ctx.handshake.get("capabilities", []))
    present = {"spot": any(c.startswith("spot.") for c in caps), "actor": "actor" in caps,
               "session": "session" in caps}
    out: list[Problem] = []
    for type_, entries in ENTRY_PARAMETERS.items():
        if not present[type_]:
            continue
        got = surface.get(type_)
        if not isinstance(got, dict):
            out.append((ENTRY_SET_RULE, f"the surface lists no {type_} coordinator although "
                                        f"a capability says it exists"))
            continue
        if sorted(got) != sorted(entries):
            out.append((ENTRY_SET_RULE, _entry_difference(type_, sorted(got), sorted(entries))))
        for entry, params in entries.items():
            actual = got.get(entry)
            if actual is None:
                continue  # reported above as a missing entry point
            if not isinstance(actual, list) or not all(isinstance(p, str) for p in actual):
                out.append(f"{type_}.{entry}: the parameters must be a list of names")
                continue
            extra = [p for p in actual if p not in params]
            if extra:
                out.append(f"{type_}.{entry} takes {extra}, beyond {list(params)}: a caller "
                           f"could steer the queue")
            missing = [p for p in params if p not in actual]
            if missing:
                out.append((ENTRY_SET_RULE, f"{type_}.{entry} lacks {missing}"))
    return out


def _entry_difference(type_: str, got: list[str], want: list[str]) -> str:
    """Which entry points a coordinator lacks or has beyond the spec's, by name."""
    parts = []
    missing = [e for e in want if e not in got]
    extra = [e for e in got if e not in want]
    if missing:
        parts.append(f"lacks {', '.join(missing)}")
    if extra:
        parts.append(f"offers {', '.join(extra)} beyond the spec's")
    return (f"the {type_} coordinator {' and '.join(parts)} (entry points {got}, "
            f"expected {want})")


def _members(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    """SE-2.5, SE-3.1: no public member of a coordinator hands out one of its queues."""
    members = ctx.handshake.get("members")
    if not isinstance(members, dict):
        return ["the handshake has no 'members' (capability member_listing)"]
    out = []
    for type_ in sorted(ENTRY_PARAMETERS):
        listed = members.get(type_)
        if not isinstance(listed, dict):
            out.append(f"the handshake's members list nothing for {type_}")
            continue
        for name, gives in sorted(listed.items()):
            if gives == "queue":
                out.append(f"{type_}.{name} hands out a queue: code outside the coordinator "
                           f"could keep it or submit to it directly")
    return out


def _admitted(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    """Exactly ``accepted`` of the works were accepted; every other one was rejected for
    ``reason`` (which ones is up to the runtime: they raced)."""
    accepted: list[str] = []
    rejected: list[str] = []
    other: list[str] = []
    for work in f["works"]:
        status = log.status(work)
        reasons = [e.fields["reason"] for _, e in log.of(work) if e.name == "rejected"]
        if status == "unknown":
            other.append(f"{work}: no verdict")
        elif reasons:
            (rejected if reasons[0] == f["reason"] else other).append(
                work if reasons[0] == f["reason"] else f"{work}: rejected for {reasons[0]}")
        else:
            accepted.append(work)
    out = []
    if len(accepted) != f["accepted"]:
        out.append(f"expected {f['accepted']} of {len(f['works'])} accepted, got "
                   f"{len(accepted)} ({' '.join(accepted) or 'none'})")
    out += [f"{o}, expected accepted or rejected for {f['reason']}" for o in other]
    return out


def _off_submitter_stack(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    """SE-6.5: each work started, and its ``started`` says it did not begin inside the
    submit call that admitted it (the adapter marks it, capability submitter_stack)."""
    out = []
    for work in f["works"]:
        starts = [(pos, e) for pos, e in log.of(work) if e.name == "started"]
        if not starts:
            out.append(f"{work} never started ({log.describe(work)})")
            continue
        pos, event = starts[0]
        marker = event.fields.get("on_submitter_stack")
        if marker is None:
            out.append(f"{work}: started@{pos} does not say whether it ran on the "
                       f"submitter's stack (field on_submitter_stack, capability "
                       f"submitter_stack)")
        elif marker:
            out.append(f"{work}: started@{pos} inside the submit call, on the submitter's "
                       f"stack ({log.describe(work)})")
    return out


def _is_current(f: Mapping[str, Any], log: CaseLog, ctx: CheckContext) -> list[str]:
    """SE-6.2 ``is_current``: every answer the work got about ``queue`` is ``current``."""
    work, queue, want = f["work"], f["queue"], f["current"]
    answers = [(pos, e.fields["current"]) for pos, e in log.of(work)
               if e.name == "current" and e.fields.get("target") == queue]
    if not answers:
        return [f"{work}: never reported whether it holds {queue}'s turn "
                f"({log.describe(work)})"]
    wrong = [f"current@{pos}={str(got).lower()}" for pos, got in answers if got != want]
    if wrong:
        return [f"{work}: expected is_current of {queue} to be {str(want).lower()}, got "
                f"{' '.join(wrong)} ({log.describe(work)})"]
    return []


_EVALUATORS: Final[Mapping[str, Evaluator]] = {
    "status": _status, "order": _order, "start_order": _start_order, "overlap": _overlap,
    "no_overlap": _no_overlap, "rejected": _rejected, "errors": _errors, "waited": _waited,
    "snapshots": _snapshots, "events": _events, "failed": _failed, "waiter": _waiter,
    "zombies": _zombies, "surface": _surface, "members": _members, "admitted": _admitted,
    "off_submitter_stack": _off_submitter_stack, "is_current": _is_current,
}
assert set(_EVALUATORS) == set(CHECK_FIELDS)
assert set(KIND_REASONS) == {*CHECK_FIELDS, "reply"}


def match_reply(expected: Any, actual: Any, path: str = "reply") -> list[str]:
    """A reply expectation: objects match as subsets (keys not named are not checked),
    lists of objects with a ``work`` key match in any order, anything else exactly."""
    if isinstance(expected, dict):
        if not isinstance(actual, dict):
            return [f"{path}: expected an object, got {actual!r}"]
        out = []
        for key, value in expected.items():
            if key not in actual:
                out.append(f"{path}.{key}: missing (expected {value!r})")
            else:
                out += match_reply(value, actual[key], f"{path}.{key}")
        return out
    if isinstance(expected, list):
        if not isinstance(actual, list) or len(actual) != len(expected):
            return [f"{path}: expected {expected!r}, got {actual!r}"]
        if all(isinstance(x, dict) and "work" in x for x in expected) and all(
                isinstance(x, dict) and "work" in x for x in actual):
            expected = sorted(expected, key=lambda x: str(x["work"]))
            actual = sorted(actual, key=lambda x: str(x["work"]))
        out = []
        for i, (e, a) in enumerate(zip(expected, actual, strict=True)):
            out += match_reply(e, a, f"{path}[{i}]")
        return out
    if expected != actual or type(expected) is not type(actual):
        return [f"{path}: expected {expected!r}, got {actual!r}"]
    return []
