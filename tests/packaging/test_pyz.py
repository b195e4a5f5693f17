"""The kit in one file: ``zlink-conformance.pyz`` (built by ``./dev dist``) runs the suite
on a bare Python, with nothing of ours installed, from an empty directory, and gives the
same verdict for every case as the installed kit, against the Node and the Java examples.

The bare interpreter is the one the test environment was made from, started with ``-I``
(no user site, no environment variables) and ``-S`` (no site-packages at all).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# One pytest-xdist worker builds ./dev dist once for every module that reads it (conftest.py's
# session fixture `built` is made per worker).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dist")]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "conformance" / "examples"
ADAPTERS = {
    "node": ("node", f"node {EXAMPLES / 'node' / 'adapter.js'}"),
    "java": ("javac", f"sh {EXAMPLES / 'java' / 'run.sh'}"),
}
_BARE = getattr(sys, "_base_executable", sys.executable)


def _verdicts(report: Path) -> dict[str, str]:
    data = json.loads(report.read_text())
    return {case["id"]: case["status"] for case in data["cases"]}


def _bare_env() -> dict[str, str]:
    return {"PATH": os.environ.get("PATH", ""), "HOME": os.environ.get("HOME", "/tmp"),
            "LANG": "C.UTF-8"}


def test_the_pyz_refuses_nothing_a_bare_python_lacks(built: Path, tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    probe = subprocess.run([_BARE, "-I", "-S", "-c", "import zlink_conformance"],
                           cwd=empty, env=_bare_env(), capture_output=True, text=True)
    assert probe.returncode != 0, "the bare interpreter already has the kit"
    result = subprocess.run([_BARE, "-I", "-S", str(built / "zlink-conformance.pyz"),
                             "--version"], cwd=empty, env=_bare_env(), capture_output=True,
                            text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("zlink-conformance ")
    assert not list(empty.iterdir())


@pytest.mark.parametrize("example", list(ADAPTERS))
def test_the_pyz_gives_the_installed_kits_verdicts(built: Path, tmp_path: Path,
                                                   example: str) -> None:
    needs, adapter = ADAPTERS[example]
    if shutil.which(needs) is None:
        pytest.skip(f"the {example} example needs {needs}")
    empty = tmp_path / "empty"
    empty.mkdir()
    bare = subprocess.run([_BARE, "-I", "-S", str(built / "zlink-conformance.pyz"), "run",
                           "-q", "--adapter", adapter, "--json", str(tmp_path / "pyz.json")],
                          cwd=empty, env=_bare_env(), capture_output=True, text=True,
                          timeout=600)
    assert bare.returncode == 0, bare.stdout + bare.stderr
    assert not list(empty.iterdir()), "the pyz left files in its working directory"
    installed = subprocess.run([sys.executable, "-m", "zlink_conformance.cli", "run", "-q",
                                "--adapter", adapter, "--json",
                                str(tmp_path / "installed.json")],
                               capture_output=True, text=True, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    pyz_verdicts = _verdicts(tmp_path / "pyz.json")
    assert pyz_verdicts == _verdicts(tmp_path / "installed.json")
    assert len(pyz_verdicts) > 0
    assert bare.stdout.splitlines()[-2:] == installed.stdout.splitlines()[-2:]
