"""The CI recipes of docs/ci/ run: each recipe's shell steps (GitHub Actions' ``run:``,
GitLab CI's ``script:``), in order, in a scratch directory holding a copy of the Node
example adapter (a runtime team's repository), with the recipe's own variables and the
kit from ``./dev dist``. A recipe whose steps pass, write the reports it keeps, fail on a
regression and fail on an unexpected pass is a recipe that works when pasted.

Steps that are actions (``uses:``) and GitLab's ``before_script`` (installing the
adapter's toolchain) are the CI service's; here the toolchain is the machine's.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
NODE_EXAMPLE = ROOT / "conformance" / "examples" / "node"
# One pytest-xdist worker builds ./dev dist once for every module that reads it (conftest.py's
# session fixture `built` is made per worker).
pytestmark = [
    pytest.mark.skipif(shutil.which("node") is None,
                       reason="the recipes run against the Node example"),
    pytest.mark.xdist_group("dist"),
]


@dataclass(frozen=True)
class Recipe:
    """What a test needs of one recipe: its variables, shell steps and kept files."""

    variables: dict[str, str]
    steps: list[str]
    artefacts: list[str]


def github(path: Path) -> Recipe:
    data = yaml.safe_load(path.read_text())
    (job,) = data["jobs"].values()
    variables = {**data.get("env", {}), **job.get("env", {})}
    steps = [step["run"] for step in job["steps"] if "run" in step]
    uploads = [step for step in job["steps"] if "upload-artifact" in step.get("uses", "")]
    artefacts = [line.strip() for step in uploads
                 for line in step["with"]["path"].splitlines() if line.strip()]
    return Recipe({k: str(v) for k, v in variables.items()}, steps, artefacts)


def gitlab(path: Path) -> Recipe:
    data = yaml.safe_load(path.read_text())
    (job,) = data.values()
    return Recipe({k: str(v) for k, v in job.get("variables", {}).items()},
                  list(job["script"]), list(job["artifacts"]["paths"]))


RECIPES = {"github-actions.yml": github, "gitlab-ci.yml": gitlab}


def _execute(recipe: Recipe, kit: Path, work: Path, **extra: str
             ) -> tuple[int, subprocess.CompletedProcess[str]]:
    """Run the recipe's steps in order in ``work`` (the first failing step stops the
    job, as on a CI service): (the index of the step that failed or -1, its result)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ZLINK_", "PYTHON", "VIRTUAL_ENV"))}
    # The .venv's python must not be the recipe's python3: the kit is not installed there
    # anyway, but a CI runner's python3 is a plain one.
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep)
                                  if ".venv" not in p)
    env.update(recipe.variables)
    env["ZLINK_KIT"] = str(kit)  # a path in place of the release URL
    env.update(extra)
    result: subprocess.CompletedProcess[str] | None = None
    for number, step in enumerate(recipe.steps):
        result = subprocess.run(["bash", "-e", "-c", step], cwd=work, env=env,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            return number, result
    assert result is not None, "the recipe has no shell step"
    return -1, result


def _repository(tmp_path: Path) -> Path:
    work = tmp_path / "repository"
    shutil.copytree(NODE_EXAMPLE, work, ignore=shutil.ignore_patterns("node_modules"))
    return work


@pytest.mark.parametrize("name", list(RECIPES))
def test_the_recipe_passes_and_keeps_its_reports(name: str, built: Path, tmp_path: Path
                                                 ) -> None:
    recipe = RECIPES[name](ROOT / "docs" / "ci" / name)
    assert len(recipe.steps) >= 3, "fetch, build and run are shell steps"
    work = _repository(tmp_path)
    failed, result = _execute(recipe, built / "zlink-conformance.pyz", work)
    assert failed == -1, f"step {failed} failed:\n{result.stdout}\n{result.stderr}"
    assert "every required case passed" in result.stdout
    for artefact in recipe.artefacts:
        assert (work / artefact).is_file(), f"{name} keeps {artefact}, which was not written"


@pytest.mark.parametrize("name", list(RECIPES))
def test_the_recipe_fails_on_a_regression(name: str, built: Path, tmp_path: Path) -> None:
    recipe = RECIPES[name](ROOT / "docs" / "ci" / name)
    work = _repository(tmp_path)
    # The Node example's bug switch: its drain runs on the submitter's stack (SE-6.5).
    failed, result = _execute(recipe, built / "zlink-conformance.pyz", work,
                              ZLINK_NODE_BUG="drain_on_submitter_stack")
    assert failed == len(recipe.steps) - 1, result.stdout + result.stderr
    assert result.returncode == 1
    assert "verdict: FAIL" in result.stdout
    for artefact in recipe.artefacts:
        assert (work / artefact).is_file(), f"a failing run must still write {artefact}"


@pytest.mark.parametrize("name", list(RECIPES))
def test_the_recipe_fails_on_an_unexpected_pass(name: str, built: Path, tmp_path: Path
                                                ) -> None:
    recipe = RECIPES[name](ROOT / "docs" / "ci" / name)
    work = _repository(tmp_path)
    known = recipe.variables["KNOWN_FAILURES"]
    (work / known).write_text('[expected-failures]\n'
                              '"required_SE_6_6_lifecycle_burst_boundary_is_exact" = '
                              '"listed, yet the example passes it"\n')
    failed, result = _execute(recipe, built / "zlink-conformance.pyz", work)
    assert failed == len(recipe.steps) - 1, result.stdout + result.stderr
    assert result.returncode == 1
    assert "1 unexpected pass(es)" in result.stdout
