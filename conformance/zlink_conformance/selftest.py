"""Self-test: the kit against deliberately broken reference runtimes (the kill matrix).

The reference adapter keeps a catalogue of mutants
(``zlink_reference_adapter.mutants``): each breaks one rule of the reference runtime the
way a real runtime could. The self-test runs the whole suite once per mutant, with the
reference adapter switching that mutant on through its preload hook
(``ZLINK_ADAPTER_PRELOAD`` names a file that applies the mutant named by
``ZLINK_MUTANT_NAME``), one adapter process per mutant.

Criterion. A mutant is *killed on its rule* when at least one case fails (or errors) and
the mutant's rule is among the evidence of at least one failing case: the case's own
rules, the rule the model oracle reports for it, the rule of an invariant it broke, or
the rule a runtime's own guard names in a ``fault`` it reported.
Related rules count: the same rule, a rule under it or above it (``SE-6`` and
``SE-6.3``), and the pairs in ``RELATED`` (a verification item of SE-10 and the rule it
verifies, a decision and the rule it settles). A mutant that fails cases but none on its
rule is *killed elsewhere*, which the self-test treats as a gap; one that fails nothing
*survives*. A mutant that cannot be seen through a process at all is listed in
``UNOBSERVABLE`` with the reason, and must be killed by the project's own machines.
"""

from __future__ import annotations

import dataclasses
import re
import runpy
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

from .catalog import Case
from .runner import CaseResult, Runner

__all__ = [
    "BEGIN",
    "END",
    "RELATED",
    "UNOBSERVABLE",
    "MutantRow",
    "documented_matrix",
    "kill_matrix",
    "load_mutants",
    "matrix_markdown",
    "replace_matrix",
    "rule_matches",
    "run_mutant",
]

BEGIN: Final = "<!-- kill-matrix:begin (zlink conformance self-test --write-docs) -->"
END: Final = "<!-- kill-matrix:end -->"

# Rules that verify or settle one another (both directions count).
RELATED: Final[Mapping[str, tuple[str, ...]]] = {
    "SE-3.1": ("SE-10.1", "SE-2.5"),
    "SE-4.2": ("SE-10.2", "SE-10.5"),
    "SE-4.3": ("SE-10.3",),
    "SE-4.6": ("SE-10.11",),
    "SE-5.1": ("SE-10.6", "SE-6.3"),
    "SE-5.3": ("SE-10.7", "SE-10.8"),
    "SE-6.1": ("SE-10.9", "D-5"),
    "SE-6.4": ("SE-10.10", "D-13"),
    "SE-6.5": ("SE-6.6", "D-10"),
    "SE-6.6": ("SE-10.4", "D-1"),
    "SE-6.7": ("D-1", "D-2"),
    "SE-7.2": ("SE-10.12",),
    "SE-8.2": ("SE-10.13", "D-14"),
    "SD-1": ("D-8", "D-15", "D-17", "D-22"),
    "SD-2": ("SD-3",),
}
# Mutants no process boundary can observe: name -> why. Each is killed by the state
# machines of tests/stateful (docs/properties.md, kill matrix). Listed in the order of
# the catalogue, which is the order the kill matrix prints them in.
UNOBSERVABLE: Final[Mapping[str, str]] = {
    "statistics_skip_barrier_line": (
        "the protocol's statistics command reports active and zombie counts and each "
        "owner's reservations, not a queue's split into ready, running and suspended "
        "works, which is what the mutant gets wrong; the runtime machine (statistics "
        "held to the trace) and the D-24 statistics test kill it"),
    "closed_queue_admits": (
        "every coordinator refuses new work itself once closed (SE-6.2), before a queue "
        "sees it, and no protocol command closes a queue while its coordinator stays "
        "open; the queue's own closed check is a second line the core machine kills"),
    "post_capacity_off_by_one": (
        "no protocol command submits through post (the handle-less lane of an untraced "
        "queue); the runtime machine's post rule and the unit tests kill it"),
}
# A failure line leads with its rule: "[SE-6.6] expect[0] ...", "[SE-4.6 ActorClaimHeld]",
# "[SE-6.6 model FifoWithinLane]".
_LABEL = re.compile(r"^\[((?:SE|SD|D)-[0-9.]+)(?:\]| [A-Za-z ]+\])")
# A runtime's own guard names its rule in a fault message: "... (SE-6.6)".
_GUARD = re.compile(r"\(((?:SE|SD|D)-[0-9]+(?:\.[0-9]+)?)\)")


def _family(rule: str) -> set[str]:
    out = {rule}
    for key, values in RELATED.items():
        if rule == key:
            out |= set(values)
        if rule in values:
            out.add(key)
    return out


def rule_matches(want: str, have: str) -> bool:
    """``have`` is ``want``, under or above it, or related to it (``RELATED``)."""
    for a in _family(want):
        if have == a or have.startswith(a + ".") or a.startswith(have + "."):
            return True
    return False


@dataclasses.dataclass(frozen=True, slots=True)
class MutantRow:
    """One mutant's line of the kill matrix."""

    name: str
    rule: str
    invariant: str
    failing: tuple[str, ...]  # case IDs that failed or errored
    matching: tuple[str, ...]  # those whose evidence names the mutant's rule
    model_rules: tuple[str, ...]  # rules the model oracle reported, in case order
    seconds: float

    @property
    def verdict(self) -> str:
        if self.name in UNOBSERVABLE:
            return "unobservable"
        if self.matching:
            return "killed"
        return "killed elsewhere" if self.failing else "SURVIVED"


def load_mutants(path: str | Path) -> dict[str, Any]:
    """The ``CATALOGUE`` of a mutants file (loading it applies nothing)."""
    namespace = runpy.run_path(str(path), run_name="zlink_mutants")
    return dict(namespace["CATALOGUE"])


def _evidence(result: CaseResult) -> set[str]:
    rules = set(result.case.rules)
    for message in result.messages:
        rules |= set(_LABEL.findall(message))
        if "[NoFault" in message:
            rules |= set(_GUARD.findall(message))
    if result.divergence is not None:
        rules.add(result.divergence.rule)
    return rules


def run_mutant(name: str, rule: str, invariant: str, cases: Sequence[Case],
               argv: Sequence[str], preload: str | Path,
               env: Mapping[str, str] | None = None, timeout: float = 5.0) -> MutantRow:
    """Run ``cases`` once against the reference adapter with mutant ``name`` on."""
    child = {**(env or {}), "ZLINK_ADAPTER_PRELOAD": str(preload), "ZLINK_MUTANT_NAME": name}
    with Runner(argv, env=child, timeout=timeout) as runner:
        report = runner.run(cases)
    failing = [r for r in report.results if r.status in ("failed", "error")]
    matching = [r.case.id for r in failing
                if any(rule_matches(rule, have) for have in _evidence(r))]
    model = [r.divergence.rule for r in failing if r.divergence is not None]
    return MutantRow(name, rule, invariant, tuple(r.case.id for r in failing),
                     tuple(matching), tuple(model), report.seconds)


def kill_matrix(mutants: Mapping[str, Any], cases: Sequence[Case], argv: Sequence[str],
                preload: str | Path, env: Mapping[str, str] | None = None,
                progress: Callable[[MutantRow], None] | None = None) -> list[MutantRow]:
    """One row per mutant of the catalogue, in catalogue order."""
    rows = []
    for name, mutant in mutants.items():
        row = run_mutant(name, mutant.rule, mutant.invariant, cases, argv, preload, env)
        rows.append(row)
        if progress is not None:
            progress(row)
    return rows


def matrix_markdown(rows: Sequence[MutantRow]) -> str:
    """The kill matrix as kept in docs/conformance.md: for each mutant, the cases that kill
    it on its rule. No timings and no list of every failing case: a broken runtime may fail
    a few unrelated cases differently from run to run, and the document must not change
    with them (``self-test`` prints every failing case)."""
    lines = ["| mutant | breaks | verdict | cases that fail on its rule |", "|---|---|---|---|"]
    for row in rows:
        if row.name in UNOBSERVABLE:
            cases = f"not observable through a process: {UNOBSERVABLE[row.name]}"
        else:
            cases = "<br>".join(f"`{c}`" for c in row.matching) or "none"
        lines.append(f"| `{row.name}` | {row.rule} ({row.invariant}) | {row.verdict} | "
                     f"{cases} |")
    killed = sum(r.verdict == "killed" for r in rows)
    lines.append("")
    lines.append(f"{killed} of {len(rows)} mutants killed on their rule.")
    return "\n".join(lines) + "\n"


def replace_matrix(document: str, matrix: str) -> str:
    """``document`` with the text between its kill-matrix markers replaced."""
    if document.count(BEGIN) != 1 or document.count(END) != 1:
        raise ValueError(f"needs exactly one {BEGIN!r} and one {END!r}")
    head, rest = document.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{matrix}{END}{tail}"


def documented_matrix(document: str) -> str:
    """The matrix text between the markers."""
    return document.split(BEGIN, 1)[1].split(END, 1)[0].lstrip("\n")
