"""One verdict for a run, printed the same way by the console, JSON, JUnit, HTML and the
pytest plugin, with the same exit: --allow-skips never claims that every required case
passed, an optional case that ran and failed fails the run everywhere, known failures
work in the plugin too, and an adapter that never starts is one error."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_pytest_plugin import pytest_in

import zlink_conformance
from zlink_conformance.catalog import load_catalogue, select

from kit_helpers import child_env, fake

SHIPPED = Path(zlink_conformance.__file__).parent / "cases"
OPTIONAL = "optional_SE_6_2_barrier_next_runs_right_after_the_current_turn"
BROKEN_OPTIONAL = "optional_SE_6_2_wrong_expectation"
REQUIRED = "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other"
DISPOSAL = "required_SD_1_dispose_safely_closes_and_cancels_nothing"
VERDICT = re.compile(r"verdict: (PASS|FAIL): required .*unexpected pass\(es\)")


def _cases(tmp_path: Path, *, broken_optional: bool) -> Path:
    out = tmp_path / "cases"
    out.mkdir()
    for name in ("rules.json", "retired.json"):
        shutil.copy(SHIPPED / name, out / name)
    for case in (REQUIRED, DISPOSAL, OPTIONAL):
        shutil.copy(SHIPPED / f"{case}.json", out / f"{case}.json")
    if broken_optional:
        data = json.loads((SHIPPED / f"{OPTIONAL}.json").read_text())
        (out / f"{OPTIONAL}.json").unlink()
        for check in data["expect"] + [s for s in data["steps"] if "check" in s]:
            if check["check"] == "start_order":
                check["works"] = list(reversed(check["works"]))
        data["id"] = BROKEN_OPTIONAL
        (out / f"{BROKEN_OPTIONAL}.json").write_text(json.dumps(data))
    return out


def _cli(tmp_path: Path, cases: Path, *extra: str, **env: str) -> tuple[int, dict[str, str]]:
    proc = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "run", "--cases", str(cases),
         "--adapter", shlex.join(fake("misbehaving")), "--json", str(tmp_path / "r.json"),
         "--junit", str(tmp_path / "r.xml"), "--html", str(tmp_path / "r.html"), *extra],
        capture_output=True, text=True, timeout=120, env=child_env(**env), check=False)
    junit = ET.parse(tmp_path / "r.xml").getroot()
    props = {p.get("name"): p.get("value") for p in junit.iter("property")}
    lines = {
        "console": _verdict_in(proc.stdout),
        "json": json.loads((tmp_path / "r.json").read_text())["verdict"]["line"],
        "junit": str(props["verdict"]),
        "html": _verdict_in((tmp_path / "r.html").read_text()),
    }
    lines["junit_failed"] = "yes" if int(junit.get("failures", "0")) + int(
        junit.get("errors", "0")) else "no"
    lines["stdout"] = proc.stdout
    return proc.returncode, lines


def _verdict_in(text: str) -> str:
    found = VERDICT.search(text)
    assert found, text[-2000:]
    return found.group(0)


def _plugin(tmp_path: Path, cases: Path, *extra: str, **env: str
            ) -> subprocess.CompletedProcess[str]:
    work = tmp_path / "plugin"
    work.mkdir(exist_ok=True)
    return pytest_in(work, "--zlink-adapter", shlex.join(fake("misbehaving")),
                     "--zlink-cases", str(cases), *extra, **env)


@pytest.mark.slow
def test_an_optional_failure_fails_the_run_in_the_cli_junit_and_the_plugin_alike(
        tmp_path: Path) -> None:
    cases = _cases(tmp_path, broken_optional=True)
    code, lines = _cli(tmp_path, cases)
    assert code == 1
    assert lines["junit_failed"] == "yes"
    assert len({lines[k] for k in ("console", "json", "junit", "html")}) == 1, lines
    assert lines["console"].startswith("verdict: FAIL: required 2/2 passed")
    assert "optional 0/1 passed, 0 not run, 1 failed" in lines["console"]
    assert "conformance: NOT CONFORMING: 1 optional case(s) failed" in lines["stdout"]
    proc = _plugin(tmp_path, cases)
    assert proc.returncode == 1, proc.stdout
    assert f"zlink conformance {lines['console']}" in proc.stdout


@pytest.mark.slow
def test_allow_skips_never_says_every_required_case_passed_when_one_did_not_run(
        tmp_path: Path) -> None:
    cases = _cases(tmp_path, broken_optional=False)
    code, lines = _cli(tmp_path, cases, "--allow-skips", FAKE_DROP="disposal")
    assert code == 0
    assert "every required case passed" not in lines["stdout"]
    assert ("conformance: no required case failed; 1 required case(s) did not run "
            "(allowed by --allow-skips)") in lines["stdout"]
    assert len({lines[k] for k in ("console", "json", "junit", "html")}) == 1, lines
    assert lines["console"].startswith("verdict: PASS: required 1/2 passed, 1 not run")
    assert lines["junit_failed"] == "no"
    proc = _plugin(tmp_path, cases, "--zlink-allow-skips", FAKE_DROP="disposal")
    assert proc.returncode == 0, proc.stdout
    assert f"zlink conformance {lines['console']}" in proc.stdout
    # without --allow-skips the unrun required case fails the run everywhere
    code, lines = _cli(tmp_path, cases, FAKE_DROP="disposal")
    assert code == 1 and lines["junit_failed"] == "yes"
    assert lines["console"].startswith("verdict: FAIL: required 1/2 passed, 1 not run")
    proc = _plugin(tmp_path, cases, FAKE_DROP="disposal")
    assert proc.returncode == 1 and "required case not run" in proc.stdout, proc.stdout


@pytest.mark.slow
def test_the_plugin_takes_the_known_failures_file(tmp_path: Path) -> None:
    cases = _cases(tmp_path, broken_optional=True)
    known = tmp_path / "known.toml"
    known.write_text(f'[expected-failures]\n{BROKEN_OPTIONAL} = "start order under study"\n')
    code, lines = _cli(tmp_path, cases, "--expect-fail", str(known))
    assert code == 0, lines["stdout"]
    proc = _plugin(tmp_path, cases, "--zlink-expect-fail", str(known), "-rx")
    assert proc.returncode == 0, proc.stdout
    assert "1 xfailed" in proc.stdout and "start order under study" in proc.stdout
    assert f"zlink conformance {lines['console']}" in proc.stdout


@pytest.mark.slow
def test_an_adapter_that_never_starts_is_one_error_in_the_plugin(tmp_path: Path) -> None:
    selected = select(load_catalogue(), ["SE-10"])
    proc = pytest_in(tmp_path, "--zlink-adapter", shlex.join(fake("dies_at_start")),
                     "--zlink-only", "SE-10")
    assert proc.returncode == 1, proc.stdout
    assert "1 error" in proc.stdout and f"{len(selected) - 1} skipped" in proc.stdout
    assert "failed" not in proc.stdout.splitlines()[-1], proc.stdout
    assert proc.stdout.count("the adapter did not start: handshake failed") >= 1
