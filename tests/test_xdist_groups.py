"""A test module whose fixture is made once per module (or reads the session's ``./dev
dist`` build) keeps all its tests on one pytest-xdist worker: ``zlink verify`` and
``./dev test`` run ``--dist loadgroup``, and a module fixture split over two workers is
made twice (TLC's bug runs, the Java suite, fresh virtual environments: tens of seconds
of CPU each). Every such module must carry an ``xdist_group`` mark; every module that
reads ``built`` the one group ``dist``, so ``./dev dist`` is built once per run."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _scope(decorator: ast.expr) -> str | None:
    """The scope of a ``@pytest.fixture(scope=...)`` decorator, else None."""
    if isinstance(decorator, ast.Call):
        for kw in decorator.keywords:
            if kw.arg == "scope" and isinstance(kw.value, ast.Constant):
                return str(kw.value.value)
    return None


def _groups(tree: ast.Module) -> set[str]:
    """The names of the ``pytest.mark.xdist_group(...)`` calls in ``pytestmark``."""
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            for call in ast.walk(node.value):
                if (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                        and call.func.attr == "xdist_group" and call.args
                        and isinstance(call.args[0], ast.Constant)):
                    found.add(str(call.args[0].value))
    return found


def _modules() -> dict[str, tuple[bool, bool, set[str]]]:
    """Test module -> (has a module or session fixture, reads ``built``, its groups)."""
    out: dict[str, tuple[bool, bool, set[str]]] = {}
    for path in sorted(TESTS.rglob("test_*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = [n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)]
        wide = any(_scope(d) in ("module", "session", "package")
                   for f in functions for d in f.decorator_list)
        built = any(a.arg == "built" for f in functions for a in f.args.args)
        out[path.relative_to(TESTS.parent).as_posix()] = (wide, built, _groups(tree))
    return out


def test_a_module_with_a_module_fixture_keeps_its_tests_on_one_worker() -> None:
    modules = _modules()
    assert any(wide for wide, _, _ in modules.values()), "no module fixture found at all"
    ungrouped = [m for m, (wide, _, groups) in modules.items() if wide and not groups]
    assert ungrouped == [], ("module fixtures made once per worker, not once: mark these "
                             f"pytest.mark.xdist_group(...): {ungrouped}")


def test_every_module_reading_the_dist_build_is_in_the_dist_group() -> None:
    modules = _modules()
    readers = {m: groups for m, (_, built, groups) in modules.items() if built}
    assert len(readers) >= 3, readers
    apart = {m: sorted(g) for m, g in readers.items() if g != {"dist"}}
    assert apart == {}, f"./dev dist would be built once per worker for these: {apart}"


_GROUPED = '''
import os, pathlib, pytest
pytestmark = pytest.mark.xdist_group("g")
@pytest.mark.parametrize("n", range(4))
def test_grouped(n):
    pathlib.Path(os.environ["OUT"], f"{__name__}-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''
_LOOSE = '''
import os, pathlib, pytest
@pytest.mark.parametrize("n", range(4))
def test_loose(n):
    pathlib.Path(os.environ["OUT"], f"loose-{n}").write_text(os.environ["PYTEST_XDIST_WORKER"])
'''


def test_the_tests_of_a_group_run_on_one_worker(tmp_path: Path) -> None:
    """The marks above are kept by pytest-xdist only with ``zlink_tool.pytest_groups``
    under pytest 9 (without it, this run spread the group over both workers)."""
    import os
    import subprocess
    import sys

    project = tmp_path / "project"
    project.mkdir()
    (project / "conftest.py").write_text('pytest_plugins = ["zlink_tool.pytest_groups"]\n')
    (project / "test_one.py").write_text(_GROUPED)
    (project / "test_two.py").write_text(_GROUPED)
    (project / "test_three.py").write_text(_LOOSE)
    out = tmp_path / "out"
    out.mkdir()
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          "-n", "2", "--dist", "loadgroup", str(project)],
                         cwd=project, env=dict(os.environ, OUT=str(out)),
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr
    workers = {p.name: p.read_text() for p in out.iterdir()}
    grouped = {w for name, w in workers.items() if name.startswith("test_")}
    assert len(workers) == 12 and len(grouped) == 1, workers
