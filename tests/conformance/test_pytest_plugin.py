"""The pytest plugin, in a child pytest: the cases run as items named by their IDs with
--zlink-adapter, and without it the plugin adds nothing."""

from __future__ import annotations

import importlib.metadata
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from zlink_conformance.catalog import load_catalogue, select
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import child_env, fake

pytestmark = pytest.mark.slow  # each test runs a child pytest


def plugin_args() -> list[str]:
    """Load the plugin by name unless the installed distribution registers it already."""
    for ep in importlib.metadata.entry_points(group="pytest11"):
        if ep.value == "zlink_conformance.pytest_plugin":
            return []
    return ["-p", "zlink_conformance.pytest_plugin"]


def pytest_in(directory: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    import os

    return subprocess.run(
        [sys.executable, "-m", "pytest", *plugin_args(), "-p", "no:cacheprovider",
         "--rootdir", str(directory), *args],
        cwd=directory, capture_output=True, text=True, timeout=300,
        env={**os.environ, **child_env(**env)})


def test_the_cases_run_as_pytest_items(tmp_path: Path) -> None:
    adapter = shlex.join(reference_adapter_command())
    proc = pytest_in(tmp_path, "--zlink-adapter", adapter, "--zlink-only", "SE-10.2",
                     "--zlink-only", "SD-3", "-v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert ("zlink-conformance::required_SE_10_02_per_actor_long_work_on_two_actors_overlaps "
            "PASSED") in proc.stdout
    selected = select(load_catalogue(), ["SE-10.2", "SD-3"])
    assert f"{len(selected)} passed" in proc.stdout


def test_k_selects_by_case_id_and_a_failure_shows_the_reason(tmp_path: Path) -> None:
    proc = pytest_in(tmp_path, "--zlink-adapter", shlex.join(fake("misbehaving")),
                     "-k", "SE_10_02 or SE_10_03", FAKE_FAULT="garbage")
    assert proc.returncode == 1
    assert "1 failed, 1 passed" in proc.stdout
    assert "not JSON" in proc.stdout and "rules SE-10.3" in proc.stdout


def test_without_the_option_the_plugin_adds_nothing(tmp_path: Path) -> None:
    (tmp_path / "test_one.py").write_text("def test_one():\n    pass\n")
    proc = pytest_in(tmp_path, "-q")
    assert proc.returncode == 0 and "1 passed" in proc.stdout, proc.stdout
    helptext = pytest_in(tmp_path, "--help").stdout
    assert "--zlink-adapter" in helptext
