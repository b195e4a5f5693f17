"""``zlink impact`` and the selection of ``zlink verify --since``: a change is traced to
the rules it touches and why, and a check is left out only when its record shows it
reads none of the changes."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from zlink_tool.checkinputs import environment_digest
from zlink_tool.cli._selection import select, tlc_run_inputs
from zlink_tool.cli.verify import steps
from zlink_tool.impact import analyse
from zlink_tool.resultcache import ResultCache
from zlink_tool.steprun import StepRunner, step_env
from zlink_tool.verifyreport import case_changes, moved_counts

ROOT = Path(__file__).resolve().parent.parent
GIT = ["git", "-c", "user.name=t", "-c", "user.email=t@localhost"]
CASES = "conformance/zlink_conformance/cases"


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    for part in ("specs", "models", CASES):
        shutil.copytree(ROOT / part, tmp_path / part,
                        ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "guide.md").write_text("# Guide\n", encoding="utf-8")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_one.py").write_text("def test_x() -> None:\n    pass\n")
    subprocess.run([*GIT, "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run([*GIT, "commit", "-qm", "base"], cwd=tmp_path, check=True)
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{old!r} is no longer in {path.name}; update this test"
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def test_a_helper_operator_is_traced_to_the_action_that_uses_it(repo: Path) -> None:
    """A change to SelectNext, as the spec authors' guide's D-4 walkthrough makes: it is
    no invariant and no action; its rules are those of TakeNext, which uses it, and
    every SerialQueue run reads it."""
    # A change inside SelectNext's definition (its second line gains a space: the test
    # must not depend on what the line says, the guide's walkthrough changes it).
    module = repo / "models" / "SerialQueue.tla"
    lines = module.read_text(encoding="utf-8").split("\n")
    head = next(i for i, line in enumerate(lines) if line.startswith("SelectNext("))
    lines[head + 1] += " "
    module.write_text("\n".join(lines), encoding="utf-8")
    impact = analyse(repo, "HEAD", tlc_run_inputs(repo))
    assert impact.changed == ["models/SerialQueue.tla"]
    assert {"SE-6.6", "SE-6.1"} <= set(impact.rules)
    assert any("SelectNext is used by TakeNext" in t.why for t in impact.touches)
    assert "SerialQueueBarrierStreak" in impact.runs and "Disposal" not in impact.runs


def test_an_invariant_a_case_and_an_index_row_name_their_rules(repo: Path) -> None:
    _edit(repo / "models" / "SerialQueue.tla", "NoDoubleDrain ==", "NoDoubleDrain  ==")
    case = repo / CASES / "required_SE_6_2_closing_a_spot_finishes_accepted_work_and_" \
                          "refuses_new_work.json"
    case.write_text(case.read_text(encoding="utf-8") + "\n", encoding="utf-8")
    _edit(repo / "specs" / "rules.toml", '[rules."SE-4.4"]\n', '[rules."SE-4.4"]\n# x\n')
    (repo / CASES / "optional_SE_6_1_new.json").write_text(
        '{"id": "optional_SE_6_1_new", "rules": ["SE-6.1"]}\n', encoding="utf-8")
    impact = analyse(repo, "HEAD", tlc_run_inputs(repo))
    why = {t.why: set(t.rules) for t in impact.touches}
    assert {"SE-1.1", "SE-6.5"} <= why["changed NoDoubleDrain: NoDoubleDrain is a checked "
                                        "invariant or property"]
    assert why["conformance case required_SE_6_2_closing_a_spot_finishes_accepted_work_"
               "and_refuses_new_work"] >= {"SE-6.2"}
    assert why["their rows in the traceability index changed"] == {"SE-4.4"}
    assert case_changes(repo, "HEAD")["added"] == ["optional_SE_6_1_new"]


def _runner(root: Path) -> StepRunner:
    return StepRunner(root, ResultCache(root), environment_digest(root), True)


def test_a_check_is_left_out_only_when_its_record_shows_it_reads_no_change(
        repo: Path) -> None:
    runner = _runner(repo)
    by_name = {s.name: s for s in steps()}
    tests, conformance = by_name["tests"], by_name["conformance"]
    options = tests.argv[6:len(tests.argv) - len(tests.paths)]
    env = step_env(tests.env)
    key = runner.test_key("tests", options, env, "tests/test_one.py")
    runner.cache.store("tests", key, {}, ["tests/test_one.py", "docs/guide.md"])
    ckey = runner.plain_key("conformance", conformance.argv, step_env({}))
    runner.cache.store("steps", ckey, {}, [f"{CASES}/retired.json"])
    argv_of = {s.name: s.argv for s in steps()}

    def chosen() -> tuple[dict[str, list[str]], dict[str, str]]:
        sel = select(steps(), analyse(repo, "HEAD", tlc_run_inputs(repo)), runner, argv_of)
        return sel.run, sel.skipped

    # Nothing changed: the recorded checks are left out, the unrecorded ones run.
    run, skipped = chosen()
    assert "tests" in skipped and "conformance" in skipped and "models" in skipped
    assert run["policy"] == ["no record of what it reads (not run with the cache here yet)"]
    # A file the record holds: that check runs, the other recorded one does not.
    _edit(repo / "docs" / "guide.md", "# Guide", "# The guide")
    run, skipped = chosen()
    assert run["tests"] == ["tests/test_one.py: reads docs/guide.md"]
    assert "conformance" in skipped
    # A file no check was seen to read and that touches no rule: everything runs.
    (repo / "NOTES.txt").write_text("x\n", encoding="utf-8")
    run, skipped = chosen()
    assert not skipped and "maps to no check" in run["conformance"][0]


def test_the_report_reads_the_moved_counts_from_the_models_output() -> None:
    output = ("[17/21] SerialQueueBarrierStreak  FAILED success, 45,151 distinct (9.7 s)\n"
              "        distinct states changed: manifest 45917, now 45151\n"
              "        total states changed: manifest 136472, now 134301\n"
              "[18/21] SerialQueue  ok  success (3.0 s)\n")
    assert moved_counts(output) == [
        {"run": "SerialQueueBarrierStreak", "count": "distinct", "pinned": 45917,
         "now": 45151},
        {"run": "SerialQueueBarrierStreak", "count": "total", "pinned": 136472,
         "now": 134301}]
