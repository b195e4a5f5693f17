"""Run one step of ``zlink verify`` as a process, answering what it can from the cache.

Three kinds of step, by how their inputs are known (``resultcache`` explains the cache):

- a pytest step is split by test file: each test file that passed is kept with the
  files its own tests opened and those its process read that carry over to it
  (imports, the session fixtures it uses, collection; ``tracelog``); a run re-runs
  only the test files with no entry whose inputs are all unchanged, and says how many
  it answered from the cache;
- a step with declared inputs (mypy, ruff) is kept with those files;
- any other step is kept with everything its processes opened.

Tracing needs strace; without it a kept result depends on every file of the checkout.
"""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from functools import cached_property
from pathlib import Path
from typing import IO

from .importgraph import ImportGraph
from .resultcache import ResultCache
from .tracelog import Reads, read_trace

__all__ = ["CORES_FREED_VARIABLE", "STRACE", "TEST_SECONDS_VARIABLE", "TLC_CACHE_VARIABLE",
           "Outcome", "StepRunner", "expand_test_files",
           "run_counting_cpu", "step_env"]

STRACE = ["strace", "-f", "-qq", "-y", "--seccomp-bpf", "-e",
          "trace=openat,open,creat,clone,clone3,fork,vfork", "-e", "signal=none"]
# The variable naming the folder of verify's result cache to a pytest step: a test that
# runs TLC on a manifest entry keeps and reads the outcome there, as the models step does
# (tests/models/test_counterexamples.py), so the two run each bug configuration once.
TLC_CACHE_VARIABLE = "ZLINK_TLC_CACHE"
# The variables naming, to a pytest step run on several cores, the file it tells verify
# of each core it no longer needs in, and the file of its tests' seconds in the last
# run (``pytest_schedule``).
CORES_FREED_VARIABLE = "ZLINK_CORES_FREED"
TEST_SECONDS_VARIABLE = "ZLINK_TEST_SECONDS"
# Pytest exit codes after which each test file's own result can be trusted: all
# passed, some failed, none selected.
_PYTEST_RAN = (0, 1, 5)


@dataclasses.dataclass
class Outcome:
    """A step's process result, or its answer from the cache."""

    code: int
    output: str
    seconds: float
    cached: bool = False
    note: str = ""
    ran_files: tuple[str, ...] = ()
    cpu: float = 0.0  # user + system seconds of the step's processes


def step_env(extra: dict[str, str]) -> dict[str, str]:
    """The environment a step runs in: this one, unbuffered, writing bytecode, with the
    step's own. A step starts hundreds of Python processes (pytest and its workers,
    adapters, the command line, forked mutant runs); with ``PYTHONDONTWRITEBYTECODE``
    set by the caller, each compiled the project's modules from source again (pytest
    collecting the suite: 3.1 s of CPU, 1.0 s with the bytecode kept). The bytecode goes
    to ``__pycache__``, which git ignores, and a compiled module read counts as a read
    of its source (``tracelog``)."""
    env = dict(os.environ, PYTHONUNBUFFERED="1", **extra)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


# ``ZLINK_*`` variables that say where results are kept, not what a check does.
# Nor do the variables that say where a step tells of the cores it freed and where its
# tests' seconds are kept: they change the order and the cores, not what is checked.
_NOT_PROFILE = frozenset({TLC_CACHE_VARIABLE, CORES_FREED_VARIABLE, TEST_SECONDS_VARIABLE})


def _profile(env: dict[str, str]) -> str:
    """The variables of an environment that choose what a check does (``ZLINK_*``)."""
    return json.dumps({k: v for k, v in env.items()
                       if k.startswith("ZLINK_") and k not in _NOT_PROFILE}, sort_keys=True)


def expand_test_files(root: Path, paths: Sequence[str], options: Sequence[str]) -> list[str]:
    """The test files pytest would collect from ``paths`` (files and folders), less those
    under an ``--ignore=`` option: checkout-relative, sorted."""
    ignored = [root / o.split("=", 1)[1] for o in options if o.startswith("--ignore=")]
    found: set[str] = set()
    for p in paths:
        path = root / p
        candidates = [path] if path.is_file() else sorted(path.rglob("test_*.py"))
        for c in candidates:
            if any(c == i or i in c.parents for i in ignored):
                continue
            found.add(c.relative_to(root).as_posix())
    return sorted(found)


def run_counting_cpu(argv: list[str], cwd: Path, env: dict[str, str]
                     ) -> tuple[int, str, float]:
    """Run a command to its end: (exit status, stdout then stderr, CPU seconds). The CPU
    time (user + system) is the process's and that of every process it waited for, as
    ``wait4`` reports it: on a machine shared with other work the wall time says how
    long the wait was, the CPU time what the check cost."""
    proc = subprocess.Popen(argv, cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    outputs: dict[str, str] = {}

    def drain(name: str, stream: IO[str]) -> None:
        outputs[name] = stream.read()
        stream.close()

    readers = [threading.Thread(target=drain, args=(name, stream), daemon=True)
               for name, stream in (("out", proc.stdout), ("err", proc.stderr))
               if stream is not None]
    for reader in readers:
        reader.start()
    for reader in readers:
        reader.join()
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    return (proc.returncode, outputs.get("out", "") + outputs.get("err", ""),
            usage.ru_utime + usage.ru_stime)


def _junit_failures(path: Path) -> tuple[set[str], bool]:
    """(test files with a failing or erroring test, whether the report could be read)."""
    try:
        tree = ET.parse(path)
    except (OSError, ET.ParseError):
        return set(), False
    failed: set[str] = set()
    for case in tree.iter("testcase"):
        bad = any(child.tag in ("failure", "error") for child in case)
        if bad:
            failed.add(case.get("file") or "?")
    return failed, True


@dataclasses.dataclass
class StepRunner:
    """Runs steps in ``root`` with ``cache``; ``traced``: strace is there to use."""

    root: Path
    cache: ResultCache
    environment: str
    traced: bool

    @cached_property
    def _graph(self) -> ImportGraph:
        return ImportGraph(self.root.resolve())

    def _every_file(self) -> Reads:
        return Reads(set(self.cache.every_file()), set())

    def _run(self, argv: list[str], env: dict[str, str], trace: Path | None,
             nice: int = 0) -> tuple[int, str, float, float]:
        """(exit status, output, wall seconds, CPU seconds) of one step's process, run
        (and traced) at niceness ``nice``."""
        run_argv = [*STRACE, "-o", str(trace), "--", *argv] if trace is not None else argv
        if nice and shutil.which("nice") is not None:  # else at the usual priority
            run_argv = ["nice", "-n", str(nice), *run_argv]
        started = time.monotonic()
        code, output, cpu = run_counting_cpu(run_argv, self.root, env)
        return code, output.rstrip(), time.monotonic() - started, cpu

    def _trace_file(self) -> Path | None:
        if not (self.traced and self.cache.enabled):
            return None
        fd, name = tempfile.mkstemp(prefix="zlink-trace-", suffix=".log")
        os.close(fd)
        return Path(name)

    def _key(self, *parts: str) -> str:
        return self.cache.key(*parts, self.environment)

    def plain_key(self, name: str, argv: list[str], env: dict[str, str]) -> str:
        """The cache key of a step kept whole."""
        return self._key(name, json.dumps(_without_cores(argv)[1:]), _profile(env))

    def test_key(self, name: str, options: list[str], env: dict[str, str], file: str) -> str:
        """The cache key of one test file of a pytest step."""
        return self._key("test-file", name, json.dumps(options), _profile(env), file)

    def run_plain(self, name: str, argv: list[str], env: dict[str, str],
                  declared: list[str] | None, use_cache: bool = True,
                  nice: int = 0) -> Outcome:
        """A step kept whole: with its ``declared`` inputs, or with what it opened; its
        processes at niceness ``nice``."""
        key = self.plain_key(name, argv, env)
        started = time.monotonic()
        if use_cache:
            hit = self.cache.load("steps", key)
            if hit is not None:
                return Outcome(0, str(hit["result"].get("output", "")),
                               time.monotonic() - started, cached=True)
        trace = self._trace_file() if declared is None and use_cache else None
        try:
            code, output, seconds, cpu = self._run(argv, env, trace, nice)
            if code == 0 and use_cache:
                if declared is not None:
                    reads = Reads(set(declared), set())
                elif trace is not None:
                    reads = read_trace(self.root, trace.read_text(errors="replace")).everything
                else:
                    reads = self._every_file()
                self.cache.store("steps", key, {"step": name, "output": output,
                                                "seconds": seconds},
                                 reads.files, reads.folders)
        finally:
            if trace is not None:
                trace.unlink(missing_ok=True)
        return Outcome(code, output, seconds, cpu=cpu)

    def run_pytest(self, name: str, base: list[str], options: list[str], paths: list[str],
                   cores: int, env: dict[str, str], use_cache: bool = True,
                   only: set[str] | None = None, extra_workers: int = 0,
                   nice: int = 0) -> Outcome:
        """A pytest step, test file by test file. ``only``: run just these test files
        (``--since``), the others are neither run nor looked up. ``nice``: the niceness
        its processes run at."""
        files = expand_test_files(self.root, paths, options)
        if only is not None:
            files = [f for f in files if f in only]
        keys = {f: self.test_key(name, options, env, f) for f in files}
        started = time.monotonic()
        cached = [f for f in files if use_cache and self.cache.load("tests", keys[f])]
        todo = [f for f in files if f not in cached]
        if not todo:
            note = f"all {len(files)} test files cached: inputs unchanged" if files \
                else "no test file selected"
            return Outcome(0, note, time.monotonic() - started, cached=bool(files),
                           note=note)
        trace = self._trace_file() if use_cache else None
        with tempfile.TemporaryDirectory(prefix="zlink-junit-") as scratch:
            junit = Path(scratch) / "junit.xml"
            argv = [*base, *options, f"--junitxml={junit}", "-o", "junit_family=xunit1"]
            if cores > 1:
                # loadgroup: the tests of a module marked ``xdist_group`` (a costly
                # module or session fixture) go to one worker, which makes it once.
                argv += ["-n", str(cores + extra_workers), "--dist", "loadgroup"]
                # The longest tests first, and each core handed back to verify when its
                # worker has nothing left (``pytest_schedule``).
                argv += ["-p", "zlink_tool.pytest_schedule"]
            if trace is not None:
                argv += ["-p", "zlink_tool.pytest_marks"]
            argv += todo
            try:
                code, output, seconds, cpu = self._run(argv, env, trace, nice)
                failed, readable = _junit_failures(junit)
                if use_cache and code in _PYTEST_RAN and readable:
                    self._keep_files(name, [f for f in todo if f not in failed], keys, trace)
            finally:
                if trace is not None:
                    trace.unlink(missing_ok=True)
        if code == 5:
            code = 0  # the selected files hold no test of this step's selection
        note = f"ran {len(todo)} of {len(files)} test files, {len(cached)} cached: " \
               "inputs unchanged" if cached else ""
        if note:
            output = f"{output}\n{note}"
        return Outcome(code, output, seconds, note=note, ran_files=tuple(todo), cpu=cpu)

    def _keep_files(self, name: str, passed: list[str], keys: dict[str, str],
                    trace: Path | None) -> None:
        if trace is not None:
            found = read_trace(self.root, trace.read_text(errors="replace"))
        for f in passed:
            if trace is None:
                reads = self._every_file()
            else:
                # A file without a mark ran no test (all deselected): it still depends on
                # everything collection read.
                reads = found.per_file.get(f) or found.everything
            # The test file itself and the test modules it imports (collection's reads
            # of test modules are not attributed, see tracelog).
            reads.files.add(f)
            reads.files.update(
                p.relative_to(self.root.resolve()).as_posix()
                for p in self._graph.closure([self.root / f])
                if p.name.startswith("test_") and self.root.resolve() in p.parents)
            self.cache.store("tests", keys[f], {"step": name, "file": f},
                             reads.files, reads.folders)


def _without_cores(argv: list[str]) -> list[str]:
    """The command without its core count (it changes how fast, not what is checked)."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in ("-n", "--workers"):
            skip = True
            continue
        out.append(a)
    return out

