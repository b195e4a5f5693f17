"""A failing check says which rule it observes, what that rule demands and what was seen
instead, in every report: console, JSON, JUnit, HTML and the pytest plugin."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from test_pytest_plugin import pytest_in

from zlink_reference_adapter import reference_adapter_command

from kit_helpers import child_env

CASE = "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other"
WRONG = "required_SE_10_03_wrong_start_order"
RULE = "SE-10.3"
# What each report must carry: the rule ID, its one sentence, what was seen (positions
# in the log) and the reason.
NEEDLES = ("[SE-10.3]", "rule SE-10.3: SpotWide: the same submissions run one after the other",
           "got a b (started at log positions a@", "why: these works must start in exactly "
           "this order")


def _cases_dir(tmp_path: Path) -> Path:
    """The shipped SE-10.3 case with its start order reversed: the reference adapter
    fails it, the way a runtime that breaks SE-10.3 would."""
    import zlink_conformance

    shipped = Path(zlink_conformance.__file__).parent / "cases"
    out = tmp_path / "cases"
    out.mkdir()
    for name in ("rules.json", "retired.json"):
        shutil.copy(shipped / name, out / name)
    data = json.loads((shipped / f"{CASE}.json").read_text())
    for check in data["expect"]:
        if check["check"] == "start_order":
            check["works"] = list(reversed(check["works"]))
    data["id"] = WRONG
    (out / f"{WRONG}.json").write_text(json.dumps(data))
    return out


def test_SE_10_3_a_failing_check_names_rule_demand_seen_and_reason_in_every_report(
        tmp_path: Path) -> None:
    cases = _cases_dir(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "run", "--cases", str(cases),
         "--adapter", shlex.join(reference_adapter_command()),
         "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
         "--html", str(tmp_path / "r.html")],
        capture_output=True, text=True, timeout=120, env={**child_env()}, check=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    reports = {"console": proc.stdout,
               "json": json.loads((tmp_path / "r.json").read_text())["cases"][0]["messages"][0],
               "junit": (tmp_path / "r.xml").read_text(),
               "html": (tmp_path / "r.html").read_text().replace("&#x27;", "'")}
    for name, text in reports.items():
        for needle in NEEDLES:
            assert needle in text, (name, needle)
    assert 'type="SE-10.3"' in reports["junit"]


@pytest.mark.slow
def test_SE_10_3_the_pytest_plugin_names_rule_demand_seen_and_reason(tmp_path: Path) -> None:
    cases = _cases_dir(tmp_path)
    work = tmp_path / "run"
    work.mkdir()
    proc = pytest_in(work, "--zlink-adapter", shlex.join(reference_adapter_command()),
                     "--zlink-cases", str(cases))
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for needle in NEEDLES:
        assert needle in proc.stdout, needle
