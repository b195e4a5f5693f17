"""The kit prints the protocol and the guide and copies the example adapters out
(``zlink-conformance docs``, ``examples``): here from a checkout, where an editable kit
reads the checkout's files; tests/packaging/test_wheels.py runs the same from an
installed wheel, which carries its own copies (conformance/setup.py)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from zlink_conformance.cli import main

ROOT = Path(__file__).resolve().parents[2]


def test_docs_protocol_prints_the_adapter_protocol(capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    assert main(["docs", "protocol"]) == 0
    out = capsys.readouterr().out
    assert out == (ROOT / "specs" / "adapter-protocol.md").read_text(encoding="utf-8")


def test_docs_guide_prints_the_guide_after_a_note_on_its_paths(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["docs", "guide"]) == 0
    out = capsys.readouterr().out
    note, text = out.split("\n\n", 1)
    assert "paths it names are the repository's" in note
    assert text == (ROOT / "docs" / "conformance.md").read_text(encoding="utf-8")


def test_examples_lists_each_example_and_how_it_runs(capsys: pytest.CaptureFixture[str]
                                                      ) -> None:
    assert main(["examples"]) == 0
    out = capsys.readouterr().out
    assert "node adapter.js" in out and "sh run.sh" in out
    assert "adapter.js" in out and "src/zlink/adapter/Adapter.java" in out


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_a_copied_example_passes_the_suite(tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    target = tmp_path / "mine"
    assert main(["examples", "--copy", "node", str(target)]) == 0
    assert sorted(p.name for p in target.iterdir()) == sorted(
        p.name for p in (ROOT / "conformance" / "examples" / "node").iterdir()
        if p.name != "node_modules")
    monkeypatch.chdir(target)
    assert main(["run", "-q", "--adapter", "node adapter.js"]) == 0
    assert "every required case passed" in capsys.readouterr().out


def test_copying_refuses_an_unknown_example_or_a_full_folder(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["examples", "--copy", "cobol", str(tmp_path / "x")]) == 2
    assert "no example 'cobol'" in capsys.readouterr().err
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "mine.txt").write_text("keep me")
    assert main(["examples", "--copy", "node", str(tmp_path / "full")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert [p.name for p in (tmp_path / "full").iterdir()] == ["mine.txt"]
