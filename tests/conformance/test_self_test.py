"""Self-test: every mutant of the reference adapter's catalogue
(``zlink_reference_adapter.mutants``), switched on in the reference adapter, fails at
least one case on the rule it breaks, and the kill matrix in docs/conformance.md is what
a fresh run prints (refresh it with `zlink conformance self-test --write-docs
docs/conformance.md`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from zlink_conformance.catalog import Catalogue
from zlink_conformance.selftest import (
    UNOBSERVABLE,
    documented_matrix,
    kill_matrix,
    load_mutants,
    matrix_markdown,
    rule_matches,
)
from zlink_reference_adapter import MUTANTS_FILE, PRELOAD_FILE, reference_adapter_command

from kit_helpers import child_env

pytestmark = pytest.mark.slow  # one adapter process per mutant, about 20 s in all

ROOT = Path(__file__).resolve().parents[2]


def test_rules_match_themselves_their_family_and_their_related_rules() -> None:
    assert rule_matches("SE-6.3", "SE-6.3") and rule_matches("SE-6", "SE-6.3")
    assert rule_matches("SE-6.3", "SE-6") and rule_matches("SE-4.6", "SE-10.11")
    assert rule_matches("SE-10.11", "SE-4.6")
    assert not rule_matches("SE-6.3", "SE-6.4") and not rule_matches("SE-1", "SE-10.1")


def test_every_mutant_is_killed_on_its_rule_and_the_documented_matrix_is_current(
        catalogue: Catalogue) -> None:
    mutants = load_mutants(MUTANTS_FILE)
    rows = kill_matrix(mutants, catalogue.cases, reference_adapter_command(),
                       PRELOAD_FILE, child_env())
    assert [(r.name, r.verdict) for r in rows if r.verdict != "killed"] == [
        (name, "unobservable") for name in UNOBSERVABLE]
    # Under a mutant the runtime is broken, and a broken runtime may fail a timing-
    # sensitive case on one run and not the next; so the documented matrix must have the
    # same mutants, rules and verdicts, and share at least one killing case per row.
    documented = _rows(documented_matrix((ROOT / "docs" / "conformance.md").read_text()))
    fresh = _rows(matrix_markdown(rows))
    hint = "the kill matrix changed: run `zlink conformance self-test --write-docs " \
           "docs/conformance.md`"
    assert {m: r[:2] for m, r in documented.items()} == \
        {m: r[:2] for m, r in fresh.items()}, hint
    stale = [m for m, r in fresh.items() if r[2] and not r[2] & documented[m][2]]
    assert not stale, f"{hint} (rows with no documented case left: {stale})"


def _rows(table: str) -> dict[str, tuple[str, str, set[str]]]:
    """mutant -> (breaks, verdict, killing cases) of a kill-matrix table."""
    out = {}
    for line in table.splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4:
            cases = {c.strip("`") for c in cells[3].split("<br>") if c.startswith("`")}
            out[cells[0].strip("`")] = (cells[1], cells[2], cases)
    return out
