"""Known failures (``--expect-fail FILE``): the cases a runtime is known to fail, each with
its reason.

A runtime on its way to conformance keeps a TOML file next to its adapter::

    # known failures of our runtime; remove an entry as soon as its case passes
    [expected-failures]
    required_SE_10_10_owner_past_its_time_budget_has_its_slice_cut = "no time slices yet"

A listed case that fails (or errors) is reported as an expected failure (``xfail``) and
does not make the run fail. A listed case that passes is an *unexpected pass*
(``XPASS``) and does make the run fail (exit status 1), so a stale entry is noticed and
removed instead of hiding a later regression. Case IDs are stable (docs/conformance.md,
"Changing a case"), so the file keeps working across versions of the kit; an ID the
catalogue does not know is an error naming it. A retired ID (``cases/retired.json``) is
no error: a newer kit retired it, so the entry is left out with a note saying so and
what replaced it, and the run goes on (a file pinned to an older kit keeps working).
"""

from __future__ import annotations

import dataclasses
import difflib
import tomllib
from collections.abc import Mapping
from pathlib import Path

from .catalog import Catalogue

__all__ = ["KNOWN_FAILURES_TABLE", "KnownFailures", "KnownFailuresError", "load_known_failures"]

KNOWN_FAILURES_TABLE = "expected-failures"


class KnownFailuresError(Exception):
    """The known-failures file cannot be used; the message names the file and the entry."""


@dataclasses.dataclass(frozen=True, slots=True)
class KnownFailures:
    """Case ID -> why the runtime fails it."""

    path: str
    reasons: Mapping[str, str]
    notes: tuple[str, ...] = ()  # entries left out, each saying why (a retired case)


def load_known_failures(path: str | Path, catalogue: Catalogue) -> KnownFailures:
    """Read and check a known-failures file against the case catalogue."""
    source = Path(path)
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise KnownFailuresError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise KnownFailuresError(f"{source}: not TOML: {exc}") from None
    unknown_keys = sorted(k for k in data if k != KNOWN_FAILURES_TABLE)
    if unknown_keys:
        raise KnownFailuresError(f"{source}: unknown key(s) {', '.join(unknown_keys)}; "
                                 f"list the cases under [{KNOWN_FAILURES_TABLE}]")
    table = data.get(KNOWN_FAILURES_TABLE, {})
    if not isinstance(table, dict):
        raise KnownFailuresError(f"{source}: [{KNOWN_FAILURES_TABLE}] must be a table of "
                                 f"case ID = \"reason\"")
    known_ids = {c.id for c in catalogue.cases}
    problems = []
    notes = []
    for case_id, reason in table.items():
        if case_id in catalogue.retired:
            notes.append(f"{source}: {case_id} is retired ({catalogue.retired[case_id]}): "
                         f"its entry is left out; remove it from the file")
        elif case_id not in known_ids:
            near = difflib.get_close_matches(case_id, sorted(known_ids), n=1)
            hint = f" (did you mean {near[0]}?)" if near else ""
            problems.append(f"{case_id} is not a case ID of this kit{hint}")
        elif not isinstance(reason, str) or not reason.strip():
            problems.append(f"{case_id}: the reason must be a non-empty string")
    if problems:
        raise KnownFailuresError(f"{source}: " + "; ".join(problems))
    return KnownFailures(str(source), {k: str(v).strip() for k, v in table.items()
                                       if k not in catalogue.retired}, tuple(notes))
