"""Which rule a failure line leads with, when its check names none.

A check of a case with several rules that does not name the one it observes cannot say
by itself which rule the log broke. The rest of the judgement can: the model oracle's
first divergence names the rule of the transition it forbade, and a broken invariant
names its rule. A failing check's lines are therefore written once the whole case is
judged (``Failing``), leading with that evidence (``evidence``), so that a lifecycle
work that could not overtake waiting application work is headed SE-6.6, the rule the
model found broken, and not the case's first rule.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from typing import Final

from .checks import Check, CheckContext, explain
from .log import CaseLog
from .model import Divergence

__all__ = ["Evidence", "Failing", "evidence", "lines"]

# (rule, what in the log points at it)
Evidence = tuple[str, str]
# An invariant's line: ``[SE-4.6 ActorClaimHeld] ...`` (oracle.invariants).
_INVARIANT_LINE: Final = re.compile(r"\[((?:SE|SD|D)-[0-9.]+) ([A-Za-z]+)\] ")


def evidence(divergence: Divergence | None, others: Iterable[object]) -> Evidence | None:
    """The model's divergence, else the first broken invariant among ``others`` (the
    case's other lines), else None."""
    if divergence is not None:
        return (divergence.rule, f"the model's verdict at {divergence.what()} "
                                 f"({divergence.invariant or 'its replay'}, below)")
    for line in others:
        found = _INVARIANT_LINE.match(line) if isinstance(line, str) else None
        if found:
            return found.group(1), f"invariant {found.group(2)} (below)"
    return None


@dataclasses.dataclass(frozen=True, slots=True)
class Failing:
    """A check, or a command's reply expectation, that failed on the log; its lines are
    written once the case is judged. For a reply expectation ``check`` is None and
    ``problems`` holds what ``match_reply`` found."""

    where: str  # "expect[0] start_order", "steps[3] statistics reply"
    check: Check | None
    problems: tuple[str, ...] = ()
    why: str = ""
    case_rules: tuple[str, ...] = ()
    rule_texts: Mapping[str, str] = dataclasses.field(default_factory=dict)

    def lines(self, log: CaseLog, ctx: CheckContext, found: Evidence | None) -> list[str]:
        """The failure lines, each leading with its rule."""
        if self.check is not None:
            return self.check.evaluate(log, ctx, where=self.where, evidence=found)
        rule, text, seen = "", "", ""
        if found is not None:
            rule, seen = found
            text = self.rule_texts.get(rule, "")
        elif len(self.case_rules) == 1:
            rule = self.case_rules[0]
            text = self.rule_texts.get(rule, "")
        return [explain(rule, text, self.why, p, where=self.where, context=self.case_rules,
                        evidence=seen) for p in self.problems]


def lines(pending: Iterable[str | Failing], log: CaseLog, ctx: CheckContext,
          divergence: Divergence | None) -> list[str]:
    """Every line of a judged case: text as it is, each failing check's lines leading
    with its own rule or the evidence the other lines give."""
    items = list(pending)
    found = evidence(divergence, items)
    out: list[str] = []
    for item in items:
        out += [item] if isinstance(item, str) else item.lines(log, ctx, found)
    return out
