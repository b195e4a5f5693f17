"""The result cache of ``zlink verify`` is sound: changing any kind of input a check reads
recomputes the results that depend on it, and only those. And ``zlink verify --since``
is sound: with a catalogued mutant or a bug configuration applied as a change to a
file, it runs a check that fails, as the full verify does.

A scratch copy of the checkout (its packages first on PYTHONPATH, its own TLC jar) is
checked once through the same runners ``zlink verify`` uses: three TLC runs on three
modules, the traceability index, ruff, and three test files (the core's rules, the case
catalogue, the rules index). Then one input of each kind is changed, a .tla module, a
.cfg, a core module, a case file, ``specs/rules.toml`` and the jar, harmlessly (a
comment, a reformatting, an extra jar entry), and everything is checked again: what
read the changed file runs, the rest is answered from the cache. Last, a change that
breaks a rule is recomputed and fails, rather than reusing the pass before it.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from zlink_tool.checkinputs import CheckoutFiles, environment_digest
from zlink_tool.cli.verify import steps
from zlink_tool.resultcache import ResultCache, strace_available
from zlink_tool.steprun import StepRunner, step_env
from zlink_tool.tla.runner import find_jar

ROOT = Path(__file__).resolve().parent.parent
HOMES = ["model", "reference", "conformance", "conformance/examples/python", "tool"]
RUNS = ["SerialQueueTwoWorks", "SpotWidePerActor", "DisposalLiveness"]
TEST_FILES = ["tests/core/test_core_rules.py", "tests/conformance/test_case_catalogue.py",
              "tests/test_rules_index.py"]
CASE = "conformance/zlink_conformance/cases/required_SE_6_2_closing_a_spot_finishes_" \
       "accepted_work_and_refuses_new_work.json"

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(not strace_available(),
                                 reason="strace is missing or this process is traced")]


class Scratch:
    """A copy of the checkout and the checks run in it."""

    def __init__(self, root: Path, jar: Path) -> None:
        self.root = root
        self.env = {"PYTHONPATH": os.pathsep.join(str(root / h) for h in HOMES),
                    "ZLINK_TLA2TOOLS": str(jar), "ZLINK_ROOT": str(root)}
        self.jar = jar

    @contextlib.contextmanager
    def active(self) -> Iterator[None]:
        """This process's environment pointed at the copy, for the runners' keys."""
        saved = {k: os.environ.get(k) for k in self.env}
        os.environ.update(self.env)
        try:
            yield
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v

    def runner(self) -> StepRunner:
        return StepRunner(self.root, ResultCache(self.root),
                          environment_digest(self.root), True)

    def check(self) -> dict[str, bool]:
        """Run every check; name -> True when it was answered from the cache."""
        with self.active():
            cache = ResultCache(self.root)
            runner = StepRunner(self.root, cache, environment_digest(self.root), True)
            out: dict[str, bool] = {}
            proc = subprocess.run(
                [sys.executable, "-m", "zlink_tool.cli.main", "models", "check",
                 *[a for r in RUNS for a in ("--only", r)], "--cache", str(cache.folder)],
                cwd=self.root, env=step_env({}), capture_output=True, text=True)
            assert proc.returncode == 0, proc.stdout + proc.stderr
            for run in RUNS:
                line = next(ln for ln in proc.stdout.splitlines() if f" {run} " in ln)
                out[run] = "cached: inputs unchanged" in line
            by_name = {s.name: s for s in steps()}
            for name in ("rules", "lint"):
                step = by_name[name]
                declared = None if name == "rules" else [
                    p.relative_to(self.root).as_posix()
                    for p in CheckoutFiles(self.root).files if p.suffix == ".py"
                ] + ["pyproject.toml"]
                result = runner.run_plain(name, step.argv, step_env({}), declared)
                assert result.code == 0, result.output
                out[name] = result.cached
            tests = by_name["tests"]
            # One process per test file: a test file's inputs include what its process
            # read before it (tracelog), so in one process the later files would also
            # depend on the earlier ones' reads, sound but not what this test measures.
            for f in TEST_FILES:
                result = runner.run_pytest("tests", tests.argv[:6], [], [f], 1,
                                           step_env({}))
                assert result.code == 0, result.output
                out[f] = f not in result.ran_files
            return out


def _copy(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    base = tmp_path_factory.mktemp("checkout")
    for path in CheckoutFiles(ROOT).files:
        rel = path.relative_to(ROOT)
        if rel.parts[0] in (".zlink-cache",):
            continue
        (base / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, base / rel)
    git = ["git", "-c", "user.name=scratch", "-c", "user.email=scratch@localhost"]
    subprocess.run([*git, "init", "-q"], cwd=base, check=True)
    subprocess.run([*git, "add", "-A"], cwd=base, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "base"], cwd=base, check=True)
    jar = base.parent / "tla2tools.jar"
    shutil.copy2(find_jar(), jar)
    return Scratch(base, jar)


@pytest.fixture
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Scratch:
    return _copy(tmp_path_factory)


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


def _recomputed(now: dict[str, bool]) -> set[str]:
    return {name for name, cached in now.items() if not cached}


@pytest.mark.timeout(1200)
def test_each_kind_of_input_recomputes_what_reads_it_and_only_that(scratch: Scratch) -> None:
    first = scratch.check()
    assert _recomputed(first) == set(first), "a fresh copy found something in the cache"
    assert _recomputed(scratch.check()) == set(), "nothing changed, yet something ran"

    root = scratch.root
    expected = {
        # A .tla module: the runs of that module, and the index and its test, which
        # parse every module's operators; the Disposal and SerialQueue runs, ruff and
        # the other tests not.
        "models/SpotWide.tla": {"SpotWidePerActor", "rules", "tests/test_rules_index.py"},
        # A run's configuration: that run (another configuration of the same module, as
        # SerialQueue's other runs have, would stay cached), and the index's test, which
        # copies the whole models folder into a scratch checkout of its own.
        "models/MCSerialQueueTwoWorks.cfg": {"SerialQueueTwoWorks",
                                             "tests/test_rules_index.py"},
        # A core module: the test files that import it, the index (it imports the
        # invariants, which import the core), ruff; no TLC run reads Python.
        "model/zlink_model/rules.py": {"rules", "lint", *TEST_FILES},
        # A case file: what loads the catalogue (the index counts each case's rules).
        CASE: {"rules", "tests/conformance/test_case_catalogue.py",
               "tests/test_rules_index.py"},
        # The traceability index.
        "specs/rules.toml": {"rules", "tests/test_rules_index.py"},
    }
    changes = {
        "models/SpotWide.tla": "\n\\* a comment after the module's end\n",
        "models/MCSerialQueueTwoWorks.cfg": "\n\\* a comment\n",
        "model/zlink_model/rules.py": "\n# a comment\n",
        "specs/rules.toml": "\n# a comment\n",
    }
    for rel, want in expected.items():
        path = root / rel
        if rel == CASE:
            data = json.loads(path.read_text(encoding="utf-8"))
            path.write_text(json.dumps(data, indent=4) + "\n", encoding="utf-8")
        else:
            _append(path, changes[rel])
        got = _recomputed(scratch.check())
        assert got == want, f"after changing {rel}: recomputed {sorted(got)}, " \
                            f"expected {sorted(want)}"

    # The jar: every TLC run, and nothing that does not run TLC.
    with zipfile.ZipFile(scratch.jar, "a") as jar:
        jar.writestr("zlink-cache-test.txt", "an extra entry\n")
    assert _recomputed(scratch.check()) == set(RUNS)

    # A change that breaks a rule is judged again and fails, not answered from the cache.
    rules = root / "model/zlink_model/rules.py"
    text = rules.read_text(encoding="utf-8")
    broken = re.sub(r"return Source\.BARRIER, 0\b", "return Source.BARRIER, streak", text)
    assert broken != text, "select_next's barrier take moved; update this test"
    rules.write_text(broken, encoding="utf-8")
    with pytest.raises(AssertionError, match="test_D_4_a_barrier_take_resets"):
        scratch.check()


def _killers() -> dict[str, str]:
    """Mutant -> the test written to kill it (the unit and coordinator kill matrices)."""
    import test_mutants_coordinators
    import test_mutants_unit

    return {**test_mutants_unit.KILLER, **test_mutants_coordinators.KILLER,
            **test_mutants_coordinators.DISPOSAL_KILLER}


def _test_file(name: str) -> str:
    hits = sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                  if f"def {name}" in p.read_text(encoding="utf-8"))
    assert hits, f"no test file defines {name}"
    return hits[0]


def _bug_runs() -> list[tuple[str, str, str]]:
    """(bug run, the configuration it uses, the main run of the same module)."""
    manifest = json.loads((ROOT / "models" / "manifest.json").read_text(encoding="utf-8"))
    runs = manifest["runs"]
    out = []
    for run in runs:
        if "_" not in run["name"]:
            continue
        main = next(r for r in runs if r["name"] == run["name"].split("_")[0])
        out.append((run["name"], run["files"]["cfg"], main["files"]["cfg"]))
    return out


@pytest.mark.timeout(1800)
def test_since_runs_a_failing_check_for_every_catalogued_mutant_and_bug_configuration(
        tmp_path_factory: pytest.TempPathFactory) -> None:
    """A mutant of the catalogue is a patch that ``mutants.py`` applies; as a change to a
    file it is a call of ``apply`` added to that file, which every test process imports
    (tests/conftest.py). A bug configuration is its configuration written over its main
    run's. For each: the selection of ``verify --since HEAD`` holds the check that the
    kill matrix (or the manifest) says fails, that check fails when run; with the change
    undone, neither the killers' test files nor the models are selected."""
    from zlink_tool.cli._selection import select, tlc_run_inputs
    from zlink_tool.impact import analyse

    scratch = _copy(tmp_path_factory)
    root = scratch.root
    by_name = {s.name: s for s in steps()}
    tests = by_name["tests"]
    options = tests.argv[6:len(tests.argv) - len(tests.paths)]
    killers = _killers()
    files = {m: _test_file(t) for m, t in killers.items()}
    mutants_py = root / "conformance/examples/python/zlink_reference_adapter/mutants.py"
    original = mutants_py.read_text(encoding="utf-8")
    with scratch.active():
        runner = scratch.runner()
        env = step_env({})
        # Record what the killers' test files read, as a verify run would.
        primed = runner.run_pytest("tests", tests.argv[:6], options, list(tests.paths), 2,
                                   env, only=set(files.values()))
        assert primed.code == 0, primed.output
        argv_of = {s.name: s.argv for s in steps()}

        def selection() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
            impact = analyse(root, "HEAD", tlc_run_inputs(root))
            sel = select(steps(), impact, runner, argv_of)
            return sel.run, sel.files

        run, chosen = selection()
        assert "models" not in run and not set(files.values()) & chosen.get("tests", set())
        for mutant, killer in sorted(killers.items()):
            mutants_py.write_text(original + f"\napply({mutant!r})\n", encoding="utf-8")
            run, chosen = selection()
            assert "tests" in run and files[mutant] in chosen.get("tests", {files[mutant]})
            # A mutant may hang a test: bounded as the unit kill matrix bounds it.
            result = runner.run_pytest(
                "tests", tests.argv[:6], [*options, "-o", "timeout=30"], list(tests.paths),
                1, {**env, "ZLINK_TEST_TIMEOUT": "5"}, use_cache=False,
                only={files[mutant]})
            # It fails, naming its killer (or pytest itself stops on the broken runtime).
            assert result.code != 0, (mutant, result.output)
            assert killer in result.output or result.code not in (0, 1), (mutant, result.output)
        mutants_py.write_text(original, encoding="utf-8")
        for bug, cfg, main_cfg in _bug_runs():
            target = root / "models" / main_cfg
            before = target.read_text(encoding="utf-8")
            target.write_text((root / "models" / cfg).read_text(encoding="utf-8"),
                              encoding="utf-8")
            run, _ = selection()
            assert "models" in run, (bug, run)
            mains = [r.split()[2] for r in run["models"] if r.startswith("TLC run ")]
            proc = subprocess.run(
                [sys.executable, "-m", "zlink_tool.cli.main", "models", "check",
                 *[a for m in mains for a in ("--only", m)]],
                cwd=root, env=env, capture_output=True, text=True)
            assert proc.returncode != 0, (bug, proc.stdout)
            target.write_text(before, encoding="utf-8")
        run, chosen = selection()
        assert "models" not in run and not set(files.values()) & chosen.get("tests", set())
