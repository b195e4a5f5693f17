"""The compiled build's profile-guided pass (``scripts/compiled_build.py``) must never be
what breaks a build: on a compiler that refuses its flags it prints why and leaves the
plain build to the caller, before anything is compiled. Quick: one probe compile."""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import compiled_build  # noqa: E402  (scripts/ is not a package)

_CC = (sysconfig.get_config_var("CC") or "cc").split()[0]
needs_cc = pytest.mark.skipif(shutil.which(_CC) is None, reason=f"no C compiler ({_CC})")


@needs_cc
def test_a_compiler_refusing_the_profile_flags_leaves_the_plain_build(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(compiled_build, "PGO_USE",
                        [*compiled_build.PGO_USE, "-fzlink-no-such-flag"])
    assert compiled_build.profile_guided(tmp_path, ROOT) is False
    note = capsys.readouterr().err
    assert "does not take" in note and "building without a profile" in note, note
    assert not (tmp_path / "mypyc-instrumented.log").exists(), \
        "an instrumented build was started although the compiler refused the flags"
    assert list(tmp_path.iterdir()) == [], "the probe left files in the build directory"


@needs_cc
def test_the_probe_answers_for_flags_the_compiler_takes(tmp_path: Path) -> None:
    assert compiled_build.compiler_takes(tmp_path, ["-O2"]) is True
    assert compiled_build.compiler_takes(tmp_path, ["-fzlink-no-such-flag"]) is False
