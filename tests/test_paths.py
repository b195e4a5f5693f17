"""Where the tool finds models and specs (zlink_tool.paths): ZLINK_ROOT, a checkout, or
the copy shipped in the wheel; a wrong ZLINK_ROOT is an error that names the path and
how to point elsewhere, never a silent fallback."""

from __future__ import annotations

from pathlib import Path

import pytest

from zlink_tool import paths
from zlink_tool.cli.main import main

ROOT = Path(__file__).resolve().parent.parent


def test_a_checkout_is_found_from_inside_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(paths.ENV, raising=False)
    monkeypatch.chdir(ROOT / "docs")
    layout = paths.locate()
    assert (layout.root, layout.source, layout.checkout) == (ROOT, "checkout", True)
    assert layout.test_functions() is None  # a checkout's tests are read directly


def test_zlink_root_wins_and_must_hold_models(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(paths.ENV, str(tmp_path))
    with pytest.raises(paths.DataError, match=r"holds no models/manifest\.json"):
        paths.locate()
    (tmp_path / "models").mkdir()
    (tmp_path / "specs").mkdir()
    (tmp_path / "models" / "manifest.json").write_text('{"runs": []}')
    (tmp_path / "specs" / "rules.toml").write_text("")
    layout = paths.locate()
    assert (layout.root, layout.source, layout.checkout) == (tmp_path, "ZLINK_ROOT", False)


@pytest.mark.parametrize("argv", [["models", "list"], ["rules"]])
def test_a_missing_model_home_exits_2_naming_it(
        argv: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(paths.ENV, str(tmp_path / "nowhere"))
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"{paths.ENV}={tmp_path / 'nowhere'}" in err and "unset it" in err
    assert len(err.strip().splitlines()) == 1


def test_verify_outside_a_checkout_says_it_needs_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    for folder, name, text in (("models", "manifest.json", '{"runs": []}'),
                               ("specs", "rules.toml", "")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / name).write_text(text)
    monkeypatch.setenv(paths.ENV, str(tmp_path))
    assert main(["verify"]) == 2
    assert "needs a ZLink checkout" in capsys.readouterr().err
