"""The compiled wheels (``./dev dist --compiled``): zlink-model and zlink-reference built by
mypyc for this interpreter and platform, beside the pure wheels. Installed from their own
folder into a fresh environment, with nothing of the checkout on the path, they must
import their compiled modules (each wheel carries its group's shared library) and run a
queue and a Spot as the pure packages do. Slow: a compiled build and a fresh venv."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

# One pytest-xdist worker builds ./dev dist once for every module that reads it (conftest.py's
# session fixture `built` is made per worker).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dist")]

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import compiled_build  # noqa: E402  (scripts/ is not a package)

_SCRUBBED = ("ZLINK_ROOT", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")

SMOKE = """
import asyncio, sys
import zlink_model.queue, zlink_reference._shell.queue, zlink_reference.coordinators.spot
modules = (zlink_model.queue, zlink_reference._shell.queue, zlink_reference.coordinators.spot)
interpreted = [m.__name__ for m in modules if not m.__file__.endswith(".so")]
assert not interpreted, f"interpreted, not compiled: {interpreted}"
from zlink_reference import (ZLinkSerialExecutionQueue, ZLinkSpotSerialExecutor,
                             ZLinkUserSpotExecutionMode)

async def main():
    queue = ZLinkSerialExecutionQueue()
    ran = []
    queue.post(lambda: ran.append("post"))
    handle = queue.enqueue(lambda: ran.append("enqueue") or 7)
    async def suspends():
        await asyncio.sleep(0)
        ran.append("async")
    queue.enqueue(suspends)
    assert await handle == 7
    await queue.await_quiescence()
    spot = ZLinkSpotSerialExecutor("s", mode=ZLinkUserSpotExecutionMode.PER_ACTOR)
    assert await spot.execute_actor("a", lambda: 3) == 3
    assert ran == ["post", "enqueue", "async"], ran
    print("ok")

asyncio.run(main())
"""


def _levels(log: Path) -> set[str]:
    """The optimisation level each C compiler call of a build log ran at: the last
    ``-O`` of its line (mypyc's level comes after Python's own flags)."""
    return {re.findall(r" (-O\w*)", line)[-1] for line in log.read_text().splitlines()
            if " -c " in line and re.search(r" -O\w*", line)}


def test_the_compiled_wheels_install_and_run_compiled(built: Path, tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for name in ("zlink_model", "zlink_reference"):
        (pure,) = built.glob(f"{name}-*-py3-none-any.whl")
        shutil.copy2(pure, wheels)
    # One unoptimised build (the C at -O0, no profile): the wheels' contents and
    # metadata depend on neither, and mypyc emits the same C at every level. The
    # optimised, profile-guided build (an instrumented build, a training run, a second
    # build) is made and tested by CI's compiled job (`./dev compiled`, the core, shell,
    # coordinator and reference-run tests against it), and its fallback by
    # tests/packaging/test_compiled_build.py. Made here, the profile cost the verify
    # about a minute of CPU more, and -O3 a further 14 s (docs/performance.md).
    assert compiled_build.compile_copy(tmp_path / "build", optimise=False) == 0
    assert _levels(tmp_path / "build" / "mypyc.log") == {"-O0"}
    made = compiled_build.compiled_wheels(tmp_path / "build", wheels)
    assert sorted(p.name.split("-")[0] for p in made) == ["zlink_model", "zlink_reference"]
    assert all(not p.name.endswith("-py3-none-any.whl") for p in made), made
    # Their one dependency beyond the model: mypy_extensions, which compiled modules
    # import as they load (the wheels say so in their metadata).
    for path in made:
        with zipfile.ZipFile(path) as whl:
            (meta,) = [n for n in whl.namelist() if n.endswith(".dist-info/METADATA")]
            assert f"Requires-Dist: {compiled_build.MYPY_EXTENSIONS}" in whl.read(meta).decode()
    third = tmp_path / "thirdparty"
    got = subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                          "download", "-q", "--only-binary=:all:", "-d", str(third),
                          compiled_build.MYPY_EXTENSIONS], capture_output=True, text=True,
                         timeout=240)
    if got.returncode != 0:
        pytest.skip(f"cannot get mypy_extensions as a wheel: {got.stderr.strip()[-200:]}")
    env_dir = tmp_path / "env"
    venv.EnvBuilder(with_pip=False, clear=True).create(env_dir)
    python = env_dir / "bin" / "python"
    for path in [*third.glob("*.whl"), *made]:  # the compiled wheels, not the pure ones
        done = subprocess.run(
            [sys.executable, "-m", "pip", "--disable-pip-version-check", "--python",
             str(python), "install", "-q", "--no-index", "--no-deps", str(path)],
            capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, f"installing {path.name}:\n{done.stdout}\n{done.stderr}"
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    run = subprocess.run([str(python), "-c", SMOKE], cwd=cwd, env=env, capture_output=True,
                         text=True, timeout=120)
    assert run.returncode == 0 and run.stdout.strip() == "ok", (
        f"the compiled wheels do not run:\n{run.stdout}\n{run.stderr}")
