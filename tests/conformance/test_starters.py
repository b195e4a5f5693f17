"""``zlink-conformance init --lang java|node|python DIR`` writes a starter adapter that
the suite accepts: its handshake passes, every case it runs is refused as unsupported
(the stub the author replaces), the cases needing capabilities it does not declare are
skipped for them, and the one case that needs no capability passes. Each starter is
generated here and run with the kit."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zlink_conformance.cli import main
from zlink_conformance.starter import LANGUAGES

TOOLCHAIN = {"python": None, "node": "node", "java": "javac"}
NO_CAPABILITY_CASE = "required_SE_10_01_surface_offers_no_queue_choice"


@pytest.mark.parametrize("language", sorted(LANGUAGES))
def test_a_generated_starter_passes_the_handshake_and_refuses_each_case(
        language: str, tmp_path: Path) -> None:
    needs = TOOLCHAIN[language]
    if needs is not None and shutil.which(needs) is None:
        pytest.skip(f"the {language} starter needs {needs}")
    target = tmp_path / "my-adapter"
    assert main(["init", "--lang", language, str(target)]) == 0
    command = LANGUAGES[language][1].replace("python3", shlex.quote(sys.executable))
    report = tmp_path / "report.json"
    result = subprocess.run([sys.executable, "-m", "zlink_conformance.cli", "run", "-q",
                             "--adapter", command, "--json", str(report)], cwd=target,
                            capture_output=True, text=True, timeout=600)
    # 1, not 2: the handshake passed and the run has verdicts.
    assert result.returncode == 1, result.stdout + result.stderr
    cases = json.loads(report.read_text())["cases"]
    statuses = {case["id"]: case["status"] for case in cases}
    assert statuses.pop(NO_CAPABILITY_CASE) == "passed"
    refused = [case for case in cases if case["status"] == "error"]
    assert refused, "no case ran against the stub"
    for case in refused:
        assert "refused it: unsupported" in case["messages"][0], case
    assert set(statuses.values()) == {"error", "skipped"}, statuses


def test_init_refuses_an_unknown_language_and_a_full_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["init", "--lang", "cobol", str(tmp_path / "x")])
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "keep.txt").write_text("mine")
    assert main(["init", "--lang", "python", str(tmp_path / "full")]) == 2
    assert "not an empty folder" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["keep.txt"]
