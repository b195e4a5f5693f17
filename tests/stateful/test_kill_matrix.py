"""The kill matrix: every catalogued mutant (tests/mutants.py) is caught by at least one
state machine.

Each mutant is switched on in a fresh pytest process (``ZLINK_MUTANT``) that runs the four
machines in the ``ci`` profile and, where the unit suites have a test written for the rule
the mutant breaks, that test. A layer kills a mutant when its test fails. The matrix is
printed (run with ``-s``) and must equal the one recorded in docs/properties.md, so a
machine that stops catching a mutant, or starts catching one, shows up as a diff of the
documentation.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import mutants
from test_mutants_coordinators import DISPOSAL_KILLER
from test_mutants_coordinators import KILLER as COORDINATOR_KILLER
from test_mutants_unit import KILLER as QUEUE_KILLER

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "properties.md"

MACHINES = {
    "core": "tests/stateful/test_core_machine.py",
    "runtime": "tests/stateful/test_runtime_machine.py",
    "coordinator": "tests/stateful/test_coordinator_machine.py",
    "disposal": "tests/stateful/test_disposal_machine.py",
}
LAYERS = [*MACHINES, "unit"]

# mutant -> (unit test file, test name) written for the rule it breaks
UNIT_TESTS: dict[str, tuple[str, str]] = {
    **{m: ("tests/coordinators/test_se10.py", t) for m, t in COORDINATOR_KILLER.items()},
    **{m: ("tests/coordinators/test_disposal.py", t) for m, t in DISPOSAL_KILLER.items()},
    **{m: ("tests/core tests/shell", t) for m, t in QUEUE_KILLER.items()},
}


def kills(mutant: str) -> dict[str, bool]:
    """Run every layer against one mutant; which layers fail (kill it)."""
    paths = list(MACHINES.values())
    select = "Machine"
    unit = UNIT_TESTS.get(mutant)
    if unit is not None:
        paths += unit[0].split()
        select += f" or {unit[1]}"
    env = dict(os.environ, ZLINK_MUTANT=mutant, ZLINK_HYPOTHESIS_PROFILE="ci",
               ZLINK_TEST_TIMEOUT="5")
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *paths, "-k", select, "-q", "-rf", "--tb=no",
         "-p", "no:cacheprovider", "-o", "timeout=240"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
    )
    failed = re.findall(r"^FAILED (\S+)", proc.stdout, re.M)
    passed_or_failed = re.search(r"\d+ (passed|failed)", proc.stdout)
    if passed_or_failed is None:
        raise AssertionError(f"{mutant}: the run did not complete:\n{proc.stdout[-3000:]}"
                             f"\n{proc.stderr[-3000:]}")
    out = {layer: any(path in f for f in failed) for layer, path in MACHINES.items()}
    out["unit"] = unit is not None and any(unit[1] in f for f in failed)
    return out


def render(matrix: dict[str, dict[str, bool]]) -> str:
    """The matrix as the Markdown table docs/properties.md records."""
    lines = ["| mutant | rule | " + " | ".join(LAYERS) + " |",
             "|---|---|" + "---|" * len(LAYERS)]
    for name in sorted(matrix):
        row = matrix[name]
        unit = "x" if row["unit"] else ("-" if name in UNIT_TESTS else "n/a")
        cells = ["x" if row[layer] else "-" for layer in MACHINES] + [unit]
        lines.append(f"| `{name}` | {mutants.CATALOGUE[name].rule} | " +
                     " | ".join(cells) + " |")
    return "\n".join(lines)


def recorded() -> str:
    """The matrix recorded in docs/properties.md (between the kill-matrix markers)."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(r"<!-- kill-matrix -->\n(.*?)\n<!-- /kill-matrix -->", text, re.S)
    assert found, "docs/properties.md lost its kill-matrix markers"
    return found.group(1).strip()


@pytest.mark.slow
def test_every_mutant_is_killed_by_a_machine() -> None:
    names = sorted(mutants.CATALOGUE)
    with ThreadPoolExecutor(max_workers=2) as pool:
        results = dict(zip(names, pool.map(kills, names), strict=True))
    table = render(results)
    print("\nkill matrix (x: the layer fails under the mutant; n/a: no unit test mapped)")
    print(table)
    survivors = [m for m, row in results.items() if not any(row[k] for k in MACHINES)]
    assert not survivors, f"mutants no machine catches: {survivors}"
    assert table == recorded(), (
        "the kill matrix changed; update docs/properties.md with the table printed above")
