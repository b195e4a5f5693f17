"""Known failures (`--expect-fail FILE`): listed cases that fail are expected failures and
do not fail the run; a listed case that passes is an unexpected pass and does; the file
names only cases of this kit."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zlink_conformance.catalog import Catalogue, catalogue_dir, load_catalogue
from zlink_conformance.known import KnownFailuresError, load_known_failures
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command
from zlink_tool.cli.main import main

from kit_helpers import child_env

SLICE = "required_SE_10_10_owner_past_its_time_budget_has_its_slice_cut"
BURST = "required_SE_10_09_lifecycle_overtakes_then_one_application_item_after_the_limit"


@pytest.fixture(autouse=True)
def _children_import_this_checkout(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])


def write(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "known.toml"
    path.write_text(body, encoding="utf-8")
    return path


def test_a_known_failures_file_reads_case_ids_and_reasons(tmp_path: Path,
                                                          catalogue: Catalogue) -> None:
    path = write(tmp_path, f'[expected-failures]\n{SLICE} = "  no slices yet  "\n')
    known = load_known_failures(path, catalogue)
    assert known.reasons == {SLICE: "no slices yet"}


@pytest.mark.parametrize(("body", "needle"), [
    ('[expected-failures]\nrequired_SE_10_10_no_such_case = "x"\n',
     "required_SE_10_10_no_such_case is not a case ID of this kit (did you mean "),
    (f'[expected-failures]\n{SLICE} = ""\n', "the reason must be a non-empty string"),
    (f'[expected-failures]\n{SLICE} = 3\n', "the reason must be a non-empty string"),
    ('[known]\nx = "y"\n', "unknown key(s) known"),
    ("[expected-failures\n", "not TOML"),
    ('expected-failures = "x"\n', "must be a table"),
])
def test_a_bad_known_failures_file_is_an_error_naming_the_entry(
        tmp_path: Path, catalogue: Catalogue, body: str, needle: str) -> None:
    with pytest.raises(KnownFailuresError) as info:
        load_known_failures(write(tmp_path, body), catalogue)
    assert needle in str(info.value) and str(tmp_path) in str(info.value)


def test_a_retired_case_id_says_it_is_retired_and_the_run_goes_on(
        tmp_path: Path, catalogue: Catalogue) -> None:
    """A file pinned to an older kit names a case a newer kit retired: the entry is left
    out with a note saying so and what replaced it; the other entries stand."""
    retired = Catalogue(catalogue.cases, catalogue.rules,
                        {"required_SE_1_1_old": "replaced by required_SE_1_1_new"})
    other = catalogue.cases[0].id
    listed = load_known_failures(
        write(tmp_path, f'[expected-failures]\nrequired_SE_1_1_old = "x"\n{other} = "y"\n'),
        retired)
    assert dict(listed.reasons) == {other: "y"}
    assert len(listed.notes) == 1
    assert "required_SE_1_1_old is retired (replaced by required_SE_1_1_new): its entry is " \
           "left out" in listed.notes[0]


def test_the_command_line_notes_a_retired_entry_and_runs(tmp_path: Path) -> None:
    """Through ``zlink-conformance run --expect-fail``: the note on stderr, then the run."""
    source = catalogue_dir()
    cases = tmp_path / "cases"
    cases.mkdir()
    for name in ("rules.json", load_catalogue().cases[0].path):
        shutil.copy(source / name, cases / name)
    (cases / "retired.json").write_text(json.dumps(
        {"retired": {"required_SE_1_1_old": "replaced by required_SE_1_1_new"}}))
    known = write(tmp_path, '[expected-failures]\nrequired_SE_1_1_old = "x"\n')
    proc = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "run", "--cases", str(cases),
         "--adapter", shlex.join(reference_adapter_command()), "--expect-fail", str(known)],
        capture_output=True, text=True, timeout=120, env=child_env(), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "note: --expect-fail" in proc.stderr and "required_SE_1_1_old is retired" \
        in proc.stderr


def test_expected_failures_pass_the_run_and_an_unexpected_pass_fails_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("ZLINK_ADAPTER_PRELOAD", str(PRELOAD_FILE))
    monkeypatch.setenv("ZLINK_MUTANT_NAME", "time_budget_ignored")
    known = write(tmp_path, f'[expected-failures]\n{SLICE} = "no slices yet"\n')
    report = tmp_path / "r.json"
    code = main(["conformance", "run", "--only", SLICE, "--expect-fail", str(known),
                 "--json", str(report)])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "xfail (known failure)" in out and "no slices yet" in out
    case = json.loads(report.read_text())["cases"][0]
    assert (case["status"], case["outcome"], case["expected_failure"]) == (
        "failed", "xfail", "no slices yet")
    stale = write(tmp_path, f'[expected-failures]\n{SLICE} = "no slices yet"\n'
                            f'{BURST} = "an old entry"\n')
    code = main(["conformance", "run", "--only", SLICE, "--only", BURST, "--expect-fail",
                 str(stale), "--junit", str(tmp_path / "r.xml")])
    out = capsys.readouterr().out
    assert code == 1
    assert "XPASS" in out and f"remove them from the --expect-fail file:\n  {BURST}" in out
    assert "unexpected pass" in (tmp_path / "r.xml").read_text()


def test_an_unknown_case_id_in_the_file_stops_the_run(tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    known = write(tmp_path, '[expected-failures]\nrequired_SE_99_1_gone = "x"\n')
    assert main(["conformance", "run", "--expect-fail", str(known)]) == 2
    assert "required_SE_99_1_gone is not a case ID" in capsys.readouterr().err
