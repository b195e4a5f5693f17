"""The files ``./dev dist`` builds, made once per run for the packaging tests: from a clean
copy of the checkout (no environment, build output or caches leak in), every wheel built
from its own sdist, and the kit's zipapp."""

from __future__ import annotations

import importlib.metadata
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from zlink_tool.pytest_marks import copy_checkout

ROOT = Path(__file__).resolve().parents[2]
# Everything but environments, build output and caches (a stale build/ would otherwise
# leak into the wheels).
NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", "build", "dist", "*.egg-info", "__pycache__", "*.pyc", ".mypy_cache",
    ".ruff_cache", ".pytest_cache", ".hypothesis", "states", "out", "node_modules",
    ".build-compiled")


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The folder ``scripts/dist.py`` filled: five sdists, five wheels, one ``.pyz``."""
    have = importlib.metadata.version("setuptools")
    if int(have.split(".")[0]) < 77:
        pytest.fail(f"setuptools {have} cannot build the wheels (the pyprojects need >= 77); "
                    "run ./dev env to refresh .venv from requirements-dev.txt")
    work = tmp_path_factory.mktemp("dist")
    source = work / "source"
    # Marked as a copy: under verify's tracing, the tests that use this build depend on
    # the files the build reads from the copy (what the sdists carry), not on every
    # file copied (a guide no distribution ships).
    copy_checkout(ROOT, source, ignore=NOT_COPIED)
    out = work / "dist"
    result = subprocess.run([sys.executable, str(source / "scripts" / "dist.py"), "--out",
                             str(out)], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, f"./dev dist failed:\n{result.stdout}\n{result.stderr}"
    return out
