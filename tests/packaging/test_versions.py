"""One repository, one version: the five distributions carry the same version, pin each
other at exactly it, and the runtime reports it (the reference adapter's handshake
sends ``zlink_reference.__version__``)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import zlink_reference

ROOT = Path(__file__).resolve().parents[2]
DISTRIBUTIONS = {
    "zlink-model": "model",
    "zlink-reference": "reference",
    "zlink-conformance": "conformance",
    "zlink-reference-adapter": "conformance/examples/python",
    "zlink-tool": "tool",
}


def _projects() -> dict[str, dict[str, object]]:
    found = {}
    for name, folder in DISTRIBUTIONS.items():
        with open(ROOT / folder / "pyproject.toml", "rb") as fh:
            project = tomllib.load(fh)["project"]
        assert project["name"] == name, folder
        found[name] = project
    return found


def test_every_distribution_has_the_one_version() -> None:
    versions = {name: p["version"] for name, p in _projects().items()}
    assert len(set(versions.values())) == 1, versions


def test_distributions_pin_each_other_at_that_version() -> None:
    projects = _projects()
    version = projects["zlink-tool"]["version"]
    for name, project in projects.items():
        deps = project.get("dependencies", [])
        assert isinstance(deps, list)
        for dep in deps:
            match = re.fullmatch(r"([a-z-]+)\s*(.*)", dep)
            assert match is not None, dep
            if match.group(1) in DISTRIBUTIONS:
                assert match.group(2) == f"=={version}", f"{name}: {dep}"


def test_the_runtime_reports_the_distribution_version() -> None:
    assert zlink_reference.__version__ == _projects()["zlink-reference"]["version"]
