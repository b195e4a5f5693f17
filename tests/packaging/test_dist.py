"""``./dev dist`` refuses to build five distributions that do not share one version, and
names the files it must leave (scripts/dist.py; the build itself runs in the slow
packaging tests, through conftest.py's ``built``)."""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import dist  # noqa: E402  (scripts/ is not a package)


def _pyprojects(into: Path) -> Path:
    for folder in dist.FOLDERS:
        (into / folder).mkdir(parents=True)
        shutil.copy(ROOT / folder / "pyproject.toml", into / folder / "pyproject.toml")
    return into


def test_one_version_is_read_from_the_five_pyprojects() -> None:
    found = dist.versions()
    assert set(found) == {"zlink-model", "zlink-reference", "zlink-conformance",
                          "zlink-reference-adapter", "zlink-tool"}
    assert dist.the_version() == next(iter(found.values()))


def test_differing_versions_stop_the_build(tmp_path: Path) -> None:
    root = _pyprojects(tmp_path)
    path = root / "reference" / "pyproject.toml"
    text = path.read_text()
    version = dist.the_version()
    path.write_text(text.replace(f'version = "{version}"', 'version = "9.9.9"', 1))
    with pytest.raises(dist.DistError, match=r"one version.*zlink-reference 9\.9\.9"):
        dist.the_version(root)


def test_the_expected_files_are_an_sdist_and_a_wheel_per_distribution() -> None:
    files = dist.expected_files("1.2.3")
    assert len(files) == 10
    assert "zlink_tool-1.2.3.tar.gz" in files
    assert "zlink_reference_adapter-1.2.3-py3-none-any.whl" in files


def test_every_distribution_has_complete_metadata() -> None:
    """What an index page and a packager read: where the project lives, what it is for,
    which Pythons, which license (twine check --strict reads the rest in the slow test)."""
    import tomllib

    for folder in dist.FOLDERS:
        with open(ROOT / folder / "pyproject.toml", "rb") as fh:
            project = tomllib.load(fh)["project"]
        name = project["name"]
        assert set(project.get("urls", {})) >= {"Repository", "Documentation", "Issues"}, name
        assert project.get("keywords"), name
        classifiers = project.get("classifiers", [])
        assert "Programming Language :: Python :: 3.11" in classifiers, name
        assert project.get("requires-python") == ">=3.11", name
        assert project.get("license") == "Apache-2.0", name
        assert project.get("readme") == "README.md", name


@pytest.mark.parametrize("folder", dist.FOLDERS)
def test_an_editable_install_builds_without_setuptools_warnings(folder: str,
                                                                tmp_path: Path) -> None:
    """``./dev env`` installs the five folders in editable mode; each build of an
    editable wheel (setuptools' PEP 660 hook, what pip calls) must print no warning
    block, so the first ``./dev`` run shows only what matters."""
    import subprocess

    probe = ("import sys, warnings; warnings.simplefilter('always'); "
             "from setuptools import build_meta; "
             f"print(build_meta.build_editable({str(tmp_path)!r}))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=ROOT / folder,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / result.stdout.strip().splitlines()[-1]).is_file()
    assert "Warning" not in result.stderr and "!!" not in result.stderr, result.stderr
    shutil.rmtree(ROOT / folder / "build", ignore_errors=True)
