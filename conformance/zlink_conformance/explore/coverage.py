"""Coverage of an explore run: the wire events, model transitions and rules its
scenarios reached, and those they never reached.

Everything is read from the logs, with the vocabulary table's names
(``zlink_model.vocabulary``): a wire event is reached when some log holds it; a model
transition when a log shows it happened (its wire events, or for the steps the wire
never shows, the event that cannot come without them: a ``resumed`` implies the
``requeue`` of its resume permit, a SpotWide Actor work's ``started`` its ``transfer``
onto the Spot queue, an accepted ``close``/``dispose`` command its transition); a rule
when a transition of its row was reached or a scenario exercised the feature the rule
is about (``FEATURE_RULES``). What the wire cannot show at all (the drain's own
``end_slice``) is listed as such, never as reached from events; a held queue's ``step``
the adapter answered (capability ``held_steps``) counts the step it names.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping
from typing import Any, Final

from zlink_model.vocabulary import (
    CLOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    END_SLICE,
    ENTER_DRAIN,
    EXIT_DRAIN,
    EXPIRE_TIMEOUT,
    REQUEUE,
    SURVIVE_CANCEL,
    TRANSFER,
    TRANSITIONS,
    WIRE_EVENTS,
)

from ..oracle.log import CaseLog
from ..protocol.routing import LIFECYCLE_ENTRIES
from ..protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND
from .scenario import Scenario, iter_scripts, walk_submissions

__all__ = ["FEATURE_RULES", "UNSEEN_TRANSITIONS", "Coverage"]

# Transitions no log can show, with why.
UNSEEN_TRANSITIONS: Final[Mapping[str, str]] = {
    END_SLICE: "where a slice ends is the drain's own business; within one owner the "
                 "order of turns does not depend on it, and the wire has no event for it "
                 "(a held queue's step end_slice, capability held_steps, brings it about "
                 "and counts it)",
}
# Features a scenario exercises, and the rule each is about.
FEATURE_RULES: Final[Mapping[str, str]] = {
    "per_actor": "SE-4.2", "spot_wide": "SE-4.3", "entry_or_instance_spot": "SE-4.1",
    "session": "D-12", "actor": "SE-2.3", "bare_queue": "SE-6.2",
    "lifecycle_work": "SE-6.1", "payload": "SE-5.3", "policy": "SE-6.1",
    "nested_submission": "SE-6.5", "yield": "SE-6.7", "spot_wide_yield": "SE-4.6",
    "raise": "D-11", "wait_for_same_coordinator": "SE-8.2",
    "await_own_scope": "SE-8.2", "busy": "SE-6.4",
    "concurrent_submission": "SE-6.3", "cmd_close": "SE-6.2", "cmd_dispose": "SD-1",
    "cmd_dispose_safely": "SD-2", "cmd_dispose_after_timeout": "SD-1",
    "cmd_destroy": "SD-4", "saw_zombie": "SD-3", "saw_rejection": "SE-5.1",
}


class Coverage:
    """Counts over every scenario run."""

    def __init__(self) -> None:
        self.events: collections.Counter[str] = collections.Counter()
        self.transitions: collections.Counter[str] = collections.Counter()
        self.features: collections.Counter[str] = collections.Counter()

    def add(self, scenario: Scenario, log: CaseLog | None) -> None:
        """Count what one scenario's log shows."""
        features = set(_features(scenario))
        names = [ev.name for _, ev in log.events] if log is not None else []
        self.events.update(names)
        reached: set[str] = set()
        for name in set(names):
            for row in WIRE_EVENTS:
                if row.name == name:
                    reached.update(row.transitions)
        if "resumed" in names:
            reached.add(REQUEUE)
        if "started" in names:
            reached.update((ENTER_DRAIN, EXIT_DRAIN))
        if "zombie" in names:
            features.add("saw_zombie")
        if "rejected" in names:
            features.add("saw_rejection")
        if log is not None:
            reached.update(_command_transitions(log))
            if _spot_wide_started(scenario, log):
                reached.add(TRANSFER)
        self.transitions.update(reached)
        self.features.update(features)

    def rules(self) -> dict[str, int]:
        """Rule -> how many scenarios reached it (by a transition or a feature)."""
        out: collections.Counter[str] = collections.Counter()
        for t in TRANSITIONS:
            for rule in t.rules:
                out[rule] += self.transitions.get(t.event, 0)
        for feature, rule in FEATURE_RULES.items():
            out[rule] += self.features.get(feature, 0)
        return dict(out)

    def report(self) -> dict[str, Any]:
        """Reached and never reached, for each of the three tables."""
        wire = [w.name for w in WIRE_EVENTS]
        events = [t.event for t in TRANSITIONS]
        rules = self.rules()
        return {
            "wire_events": {"reached": {n: self.events[n] for n in wire if self.events[n]},
                            "never": [n for n in wire if not self.events[n]]},
            "transitions": {
                "reached": {n: self.transitions[n] for n in events if self.transitions[n]},
                "never": [n for n in events if not self.transitions[n]
                          and n not in UNSEEN_TRANSITIONS],
                "not_on_the_wire": dict(UNSEEN_TRANSITIONS)},
            "rules": {"reached": {r: n for r, n in sorted(rules.items()) if n},
                      "never": sorted(r for r, n in rules.items() if not n)},
            "features": {f: self.features[f] for f in FEATURE_RULES if self.features[f]},
            "features_never": [f for f in FEATURE_RULES if not self.features[f]],
        }

    def lines(self) -> list[str]:
        """The report as printed lines."""
        r = self.report()
        out = []
        for title, key in (("wire events", "wire_events"), ("model transitions", "transitions"),
                           ("rules", "rules")):
            reached = r[key]["reached"]
            never = r[key]["never"]
            out.append(f"{title}: {len(reached)} reached, {len(never)} never reached")
            out.append("  reached: " + ", ".join(f"{k} {v}" for k, v in reached.items()))
            if never:
                out.append("  NEVER reached: " + ", ".join(never))
        for name, why in UNSEEN_TRANSITIONS.items():
            out.append(f"  not on the wire: {name} ({why})")
        if r["features_never"]:
            out.append("features never exercised: " + ", ".join(r["features_never"]))
        return out


def _features(s: Scenario) -> list[str]:
    out = []
    targets: dict[str, dict[str, Any]] = {}
    for m in s.body:
        cmd = m.get("cmd")
        if cmd == "create":
            targets[m["target"]] = m
            if m["type"] == "spot":
                out.append({"per_actor": "per_actor", "spot_wide": "spot_wide"}.get(
                    m.get("mode") or "", "entry_or_instance_spot"))
            else:
                out.append({"queue": "bare_queue"}.get(m["type"], m["type"]))
            if any(k in m for k in ("policy", "actor_policy", "timer_policy")):
                out.append("policy")
        elif cmd == "submit_concurrent":
            out.append("concurrent_submission")
        elif cmd == CLOSE_COMMAND:
            out.append("cmd_close")
        elif cmd == DISPOSE_COMMAND:
            out.append(f"cmd_{m['mode']}")
        for i, sub in enumerate(walk_submissions(m)):
            if i > 0:
                out.append("nested_submission")
            if sub["entry"] in LIFECYCLE_ENTRIES:
                out.append("lifecycle_work")
            if sub.get("payload_bytes"):
                out.append("payload")
    for op in iter_scripts(s.body):
        name = op.get("op")
        if name == "call":
            out.append("yield")
        elif name == "raise":
            out.append("raise")
        elif name == "wait_for":
            out.append("wait_for_same_coordinator")
        elif name == "await_scope":
            out.append("await_own_scope")
        elif name == "busy":
            out.append("busy")
    spot_wide = {t for t, m in targets.items() if m.get("mode") == "spot_wide"
                 or m.get("kind") == "instance"}
    for m in s.body:
        for sub in walk_submissions(m):
            if sub["target"] in spot_wide and sub["entry"] == "execute_actor" and any(
                    op.get("op") == "call" for op in sub.get("script", [])):
                out.append("spot_wide_yield")
    return out


def _command_transitions(log: CaseLog) -> set[str]:
    """Transitions an accepted command brings about (close, the disposals, a held
    queue's own step that the adapter took on its ``step`` command)."""
    out: set[str] = set()
    sent = [m for d, m in log.entries if d == "sent"]
    last: dict[str, Any] = {}
    for direction, m in log.entries:
        if direction == "sent":
            last = m
        elif "re" in m and m.get("ok") is True and last.get("cmd") == "step":
            out.add(str(last.get("step")))
    for m in sent:
        if m.get("cmd") == CLOSE_COMMAND:
            out.add(CLOSE)
        elif m.get("cmd") == DISPOSE_COMMAND:
            mode = m.get("mode")
            out.add(DISPOSE_SAFELY if mode == "destroy" else str(mode))
    names = {ev.name for _, ev in log.events}
    if DISPOSE_AFTER_TIMEOUT in out and "cancelled" in names:
        out.add(EXPIRE_TIMEOUT)
    if "zombie" in names and any(op.get("ignore_cancel") for m in sent
                                 for sub in walk_submissions(m)
                                 for op in sub.get("script", [])):
        out.add(SURVIVE_CANCEL)
    return out


def _spot_wide_started(s: Scenario, log: CaseLog) -> bool:
    """A SpotWide Actor work started: its Actor queue transferred it to the Spot queue."""
    spot_wide = {m["target"] for m in s.body if m.get("cmd") == "create"
                 and (m.get("mode") == "spot_wide" or m.get("kind") == "instance")}
    works = {sub["work"] for m in s.body for sub in walk_submissions(m)
             if sub["target"] in spot_wide and sub["entry"] == "execute_actor"}
    return any(ev.name == "started" and ev.work in works for _, ev in log.events)
