"""Every ``pip install`` the repository tells a reader to type names a distribution we
build, or a third-party one we depend on: never a name someone else holds.

The bare name ``zlink`` on the package index is an unrelated project; an instruction or
an error hint that said ``pip install zlink`` would install it. The test reads every
``pip install`` line of the repository (docs, READMEs, code, scripts, CI recipes), takes
the distributions it names (requirements, and the names inside wheel file names), and
holds each ``zlink``-prefixed one to the five folders' pyprojects and every other one to
the third-party requirements those pyprojects and requirements-dev.txt declare.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterator
from pathlib import Path

import zlink_tool

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("model", "reference", "conformance", "conformance/examples/python", "tool")
_SKIPPED_DIRS = {".git", ".venv", "build", "dist", "node_modules", "__pycache__",
                 ".mypy_cache", ".ruff_cache", ".pytest_cache", ".hypothesis", "states",
                 "out", ".build-compiled"}
_TEXT = {".md", ".py", ".txt", ".toml", ".yml", ".yaml", ".sh", ".cfg", ".java", ".js",
         ".json", ""}
# Options of `pip install` that take a value (the value is not a requirement).
_VALUED = {"-r", "--requirement", "-e", "--editable", "-c", "--constraint", "-f",
           "--find-links", "-i", "--index-url", "--extra-index-url", "--python", "-t",
           "--target", "--config-settings", "-C", "--prefix", "--root", "--platform"}
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")
# Where the command ends: markup, a comment, another command, a redirection.
_STOP = re.compile(r'`|#|&&|\|\||;|\||\)|\s\(|"|\s\d?[<>]')


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _ours() -> set[str]:
    names = set()
    for folder in FOLDERS:
        with open(ROOT / folder / "pyproject.toml", "rb") as fh:
            names.add(_normal(tomllib.load(fh)["project"]["name"]))
    return names


def _third_party() -> set[str]:
    """What the pyprojects and requirements-dev.txt depend on (and pip itself)."""
    found = {"pip"}
    for folder in FOLDERS:
        with open(ROOT / folder / "pyproject.toml", "rb") as fh:
            data = tomllib.load(fh)
        project = data["project"]
        requirements = list(project.get("dependencies", []))
        for extra in project.get("optional-dependencies", {}).values():
            requirements += extra
        requirements += data.get("build-system", {}).get("requires", [])
        for requirement in requirements:
            match = _NAME.match(requirement)
            assert match is not None, requirement
            found.add(_normal(match.group()))
    for raw in (ROOT / "requirements-dev.txt").read_text().splitlines():
        line = raw.split("#", 1)[0].strip()
        if line and not line.startswith("-"):
            match = _NAME.match(line)
            assert match is not None, line
            found.add(_normal(match.group()))
    return found - _ours()


def _files() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*")):
        rel = path.relative_to(ROOT)
        if any(part in _SKIPPED_DIRS or part.endswith(".egg-info") for part in rel.parts):
            continue
        if path == Path(__file__).resolve():
            continue  # this file quotes wrong names on purpose
        if path.is_file() and path.suffix in _TEXT and path.stat().st_size < 2_000_000:
            yield path


def named_distributions(line: str) -> list[str]:
    """The distributions one line's ``pip install`` commands name (normalised)."""
    line = line.replace("{DISTRIBUTION}", zlink_tool.DISTRIBUTION)
    names = []
    for match in re.finditer(r"\bpip3? install\b(.*)", line):
        rest = match.group(1).lstrip()
        if rest.startswith('"'):  # pip install "name[extra]": the quoted requirement
            rest = rest[1:]
        rest = _STOP.split(rest, maxsplit=1)[0]
        tokens = rest.replace("'", " ").replace('"', " ").split()
        skip_next = False
        for token in tokens:
            if skip_next:
                skip_next = False
                continue
            if not any(c.isalnum() for c in token):
                continue  # punctuation around a quoted command
            if token.startswith("-"):
                skip_next = token in _VALUED
                continue
            if token.endswith((".whl", ".tar.gz")):
                # A wheel or sdist file: its name starts with the distribution's.
                stem = token.rsplit("/", 1)[-1]
                names.append(_normal(stem.split("-", 1)[0]))
                continue
            if "/" in token or token.startswith((".", "$", "~")):
                continue  # a folder of a checkout
            found = _NAME.match(token)
            if found is None or "{" in token.split("[", 1)[0]:
                raise AssertionError(f"cannot read the requirement {token!r} in {line!r}")
            names.append(_normal(found.group()))
    return names


def test_every_pip_install_names_a_distribution_we_build_or_depend_on() -> None:
    ours, theirs = _ours(), _third_party()
    seen: set[str] = set()
    wrong = []
    for path in _files():
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        for number, line in enumerate(text.splitlines(), 1):
            for name in named_distributions(line):
                seen.add(name)
                allowed = ours if name.startswith("zlink") else theirs
                if name not in allowed:
                    wrong.append(f"{path.relative_to(ROOT)}:{number}: pip install {name}")
    assert not wrong, ("names that are neither one of our five distributions nor a declared "
                       "dependency:\n" + "\n".join(wrong))
    # The grep found the install lines it exists for.
    assert {"zlink-conformance", "zlink-tool"} <= seen, seen


def test_the_tool_distribution_is_the_name_its_hints_use() -> None:
    with open(ROOT / "tool" / "pyproject.toml", "rb") as fh:
        assert tomllib.load(fh)["project"]["name"] == zlink_tool.DISTRIBUTION
    assert zlink_tool.DISTRIBUTION in _ours()


def test_the_bare_name_zlink_is_refused() -> None:
    assert named_distributions("pip install 'zlink[all]'") == ["zlink"]
    assert named_distributions("run `pip install zlink` now") == ["zlink"]
    assert "zlink" not in _ours()


def test_install_docs_state_the_five_names() -> None:
    text = (ROOT / "docs" / "install.md").read_text()
    for name in _ours():
        assert f"`{name}`" in text, name
