"""``zlink verify``: the main job lists its steps, refuses unknown ones, and a failing step
is shown with the rules it is about."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zlink_tool.cli.main import main
from zlink_tool.cli.verify import involved_rules, steps

ROOT = Path(__file__).resolve().parent.parent
STEPS = ["models", "rules", "policy", "symbolic", "properties", "conformance", "self-test",
         "mutants", "tests", "types", "lint"]


def test_the_steps_cover_every_layer(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--list"]) == 0
    listed = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert listed == STEPS == [s.name for s in steps()]


def test_the_deep_flag_reaches_the_state_machines() -> None:
    (properties,) = [s for s in steps(deep=True) if s.name == "properties"]
    assert properties.env == {"ZLINK_HYPOTHESIS_PROFILE": "deep"}


def test_no_test_file_runs_in_two_steps() -> None:
    """The `tests` step leaves out what other steps own, so nothing runs twice."""
    (rest,) = [s for s in steps() if s.name == "tests"]
    owned = [a.split("=", 1)[1] for a in rest.argv if a.startswith("--ignore=")]
    others = [a for s in steps() if s.name != "tests" for a in s.argv if a.startswith("tests/")]
    assert sorted(owned) == sorted(p for p in others if p != "tests/stateful/test_kill_matrix.py")


def test_an_unknown_step_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "--only", "model"]) == 2
    assert "unknown step(s): model" in capsys.readouterr().err


def test_SE_9_a_failing_step_names_the_rules_involved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    for part in ("specs", "models", "tests"):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__", "*.out"))
    toml = tmp_path / "specs" / "rules.toml"
    toml.write_text(toml.read_text().replace('tla = ["NoDoubleDrain", "NoLostWakeup"]',
                                             'tla = ["NoDoubleDrain", "NoLostWakeUp"]'))
    monkeypatch.setenv("ZLINK_ROOT", str(tmp_path))
    assert main(["verify", "--only", "rules", "--only", "policy"]) == 1
    out = capsys.readouterr().out
    assert "rules involved: SE-6.5" in out
    assert "verify: FAILED: rules" in out and "policy       ok" in out


def test_SE_9_only_failure_lines_count() -> None:
    """A rule mentioned in passing (a printed catalogue, a passing case) is not named."""
    output = ("catalogue = Catalogue(cases=('D-22': 'session final'))\n"
              "required_SE_6_6_x PASSED\n"
              "FAILED tests/core/test_core_rules.py::test_D_4_a_barrier_take_resets - x\n"
              "Invariant NoDoubleDrain is violated.\n")
    assert involved_rules(output, ROOT) == ["D-4", "D-10", "SE-6.5"]
    assert involved_rules("boom in SE-6.3", ROOT) == ["SE-6.3"]
