"""CrossHair checks the PEP 316 contracts of the pure decision rules (admission, lane
selection and the lifecycle burst, reservations, the time slice: ``zlink_model/rules.py``) by
symbolic execution, and finds a counterexample when a rule is planted with an
off-by-one or a dropped condition.

The check runs ``crosshair check --analysis_kind=PEP316`` as a subprocess with a
per-condition timeout and a bound on the whole run, and fails on any counterexample.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
CORE = ROOT / "model" / "zlink_model"
PER_CONDITION = "4"
WHOLE_RUN = 240  # seconds: a bound, not a measurement


def crosshair(target: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("crosshair")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "crosshair"]
    env = dict(os.environ, PYTHONPATH=str(cwd))
    return subprocess.run(
        [*cmd, "check", "--analysis_kind=PEP316", "--per_condition_timeout", PER_CONDITION,
         str(target)],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=WHOLE_RUN,
    )


@pytest.mark.slow
def test_SE_6_3_SE_6_6_rules_keep_their_contracts_under_crosshair() -> None:
    proc = crosshair(CORE / "rules.py", ROOT / "model")
    assert proc.returncode == 0 and "error" not in proc.stdout, (
        f"CrossHair found a counterexample:\n{proc.stdout}\n{proc.stderr}")


# (rule broken, text in rules.py, its broken replacement, the function CrossHair blames)
PLANTED = [
    ("SE-6.3 count off by one", "if reserved_count + 1 > count_capacity:",
     "if reserved_count > count_capacity:", "admission_verdict"),
    ("SE-6.3 bytes off by one", "if reserved_bytes + item_bytes > byte_capacity:",
     "if reserved_bytes + item_bytes >= byte_capacity:", "admission_verdict"),
    ("SE-6.1 burst ignored", "(not application_ready or streak < burst_limit)",
     "(not application_ready or streak <= burst_limit)", "select_next"),
    ("SE-6.1 fixed cost dropped", "return payload_bytes + METADATA_BYTES + fixed_work_byte_cost",
     "return payload_bytes + METADATA_BYTES", "reservation_bytes"),
    ("SE-6.4 budget off by one", "return now - slice_started_at >= budget",
     "return now - slice_started_at > budget", "slice_expired"),
]


@pytest.mark.slow
@pytest.mark.parametrize(("rule", "good", "bad", "function"), PLANTED,
                         ids=[p[0] for p in PLANTED])
def test_crosshair_finds_a_planted_bug(tmp_path: Path, rule: str, good: str, bad: str,
                                       function: str) -> None:
    pkg = tmp_path / "planted"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    shutil.copy(CORE / "errors.py", pkg / "errors.py")
    text = (CORE / "rules.py").read_text(encoding="utf-8")
    assert text.count(good) == 1, f"rules.py changed: {good!r} not found once"
    (pkg / "rules.py").write_text(text.replace(good, bad), encoding="utf-8")
    proc = crosshair(pkg / "rules.py", tmp_path)
    assert proc.returncode != 0, f"CrossHair missed the planted bug ({rule}):\n{proc.stdout}"
    assert f"calling {function}(" in proc.stdout, (
        f"CrossHair failed, but not on {function}:\n{proc.stdout}\n{proc.stderr}")
