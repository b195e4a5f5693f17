"""Run every check of the project, from all three sides, and print one summary table.

Steps (each a separate process, so one failing never hides another):
  models       TLC on every run of models/manifest.json (bug configurations must fail)
  rules        the traceability index: every rule has a check, every name exists
  policy       z3 proofs of what the default lane policy promises
  symbolic     CrossHair contracts, z3 policy checker tests, state-space agreement
  properties   the Hypothesis state machines (ci profile; --deep for long runs)
  conformance  the conformance suite against the reference adapter
  self-test    the conformance kit against every mutant (kill matrix)
  mutants      every mutant killed by the unit tests and the state machines
  tests        the rest of the pytest suite
  types        mypy --strict on the packages
  lint         ruff on the whole tree

Cores: `-j N` (default: every core of the machine) runs steps at the same time, at most
N processes' worth at once: the models step spreads its TLC runs over the cores it is
given (one JVM each), the pytest steps their tests (pytest-xdist), the rest take one
core. The longest steps start first (by their last time, or with an empty cache by
their typical cost), each on every core free when it starts, so no core waits while a
step waits; a pytest step hands a core back as soon as one of its workers has nothing
left to run, and runs its longest tests first (``zlink_tool.pytest_schedule``); the
tests step runs one worker more than its cores, to fill its tests' waits. `-j 1`
runs them one after the other in the order above. Each step's output is printed whole
when it ends.

Cache: a step that passed is not run again while nothing it reads has changed; it is
reported as "cached: inputs unchanged" (`zlink_tool.resultcache` says what it reads and
how that is known). TLC runs are cached one by one. `--no-cache` runs everything.

Changes: `--since REV` runs only the steps that hold what changed since REV (`zlink
impact` prints why), plus rules, types and lint, and lists what it left out and why.
`--report FILE.md` and `--json FILE` write the result for a reviewer.

`--fast` runs a quick subset of each step (short TLC runs, tests not marked slow, no
self-test, no mutants). A failing step prints its output and the rules it is about.
Exit status is 0 only when every selected step passed.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import re
import sys
import tempfile
import threading
import time
from pathlib import Path

from ..checkinputs import CheckoutFiles, environment_digest
from ..impact import ChangeError, Impact, analyse
from ..resultcache import ResultCache, strace_available
from ..specindex import read_spec_rules, rules_mentioned
from ..steprun import (
    CORES_FREED_VARIABLE,
    TEST_SECONDS_VARIABLE,
    TLC_CACHE_VARIABLE,
    StepRunner,
    step_env,
)
from ..verifyreport import build_report, to_markdown
from ._common import layout
from ._selection import print_impact, select, tlc_run_inputs

__all__ = ["TYPICAL_SECONDS", "Step", "StepResult", "configure", "involved_rules", "run",
           "start_order", "steps"]

# Pytest files that other steps own, so the `tests` step does not run them twice.
_OWNED = {
    "properties": ["tests/stateful"],
    "symbolic": ["tests/symbolic"],
    "mutants": ["tests/test_mutants_unit.py", "tests/test_mutants_coordinators.py"],
    "self-test": ["tests/conformance/test_self_test.py"],
}
# The tests that run TLC on the manifest: the models step does that already.
_MODELS_TESTS = [f"tests/models/test_models.py::test_every_{which}_manifest_run_is_as_pinned"
                 for which in ("quick", "other")]


@dataclasses.dataclass(frozen=True)
class Step:
    """One check: its name, what it is, its command, and the command under --fast
    (None: the same; an empty list: skipped under --fast). ``spread`` says how it uses
    more than one core: "tlc" (parallel TLC runs), "xdist" (pytest workers) or ""
    (one process). ``inputs`` says how its cache entry knows what it reads: "tlc"
    (per run, by the models command), "mypy" or "ruff" (declared), "traced", "none"
    (never cached). ``paths``: a pytest step's test paths, the end of its argv."""

    name: str
    what: str
    argv: list[str]
    fast_argv: list[str] | None = None
    env: dict[str, str] = dataclasses.field(default_factory=dict)
    spread: str = ""
    inputs: str = "traced"
    paths: tuple[str, ...] = ()  # a pytest step's test paths (the end of its argv)
    # pytest-xdist workers beyond its cores, for a step whose tests often wait (time-outs,
    # sleeps, child processes starting) rather than compute: they fill those waits.
    extra_workers: int = 0
    # A one-process step that may start while every core is taken, at the lowest
    # priority (``BACKGROUND_NICE``) and holding no core: it runs in what the running
    # steps leave idle (their waits) instead of after them (``run_steps``).
    background: bool = False


@dataclasses.dataclass
class StepResult:
    """What one step did: its status, time, output, rules, and whether it ran."""

    name: str
    status: str
    seconds: float
    output: str = ""
    rules: list[str] = dataclasses.field(default_factory=list)
    cached: bool = False
    note: str = ""
    selected: tuple[str, ...] | None = None  # the test files --since chose (None: all)
    cpu: float = 0.0  # user + system seconds of its processes (0 when cached)

    @property
    def failed(self) -> bool:
        return self.status.startswith("FAILED")

    def first_failure(self) -> str:
        """The first line of the output that reports a failure (or the last line)."""
        lines = [ln.strip() for ln in self.output.splitlines() if ln.strip()]
        for line in lines:
            if _FINDING.search(line) and not line.startswith("="):
                return line
        return lines[-1] if lines else ""


def steps(deep: bool = False) -> list[Step]:
    """The checks, in the order they run under ``-j 1``."""
    py = sys.executable
    zlink = [py, "-m", "zlink_tool.cli.main"]
    pytest = [py, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    ignore = [f"--ignore={p}" for owned in _OWNED.values() for p in owned]
    ignore += [f"--deselect={t}" for t in _MODELS_TESTS]
    profile = {"ZLINK_HYPOTHESIS_PROFILE": "deep" if deep else "ci"}

    def tests(name: str, what: str, options: list[str], paths: list[str],
              fast: list[str] | None = None, **kw: object) -> Step:
        argv = [*pytest, *options, *paths]
        fast_argv = None if fast is None else ([*pytest, *fast, *paths] if fast else [])
        return Step(name, what, argv, fast_argv, spread="xdist", paths=tuple(paths),
                    **kw)  # type: ignore[arg-type]

    mutants = [*_OWNED["mutants"], "tests/stateful/test_kill_matrix.py"]
    return [
        Step("models", "TLC on every manifest run", [*zlink, "models", "check"],
             [*zlink, "models", "check", "--only", "SerialQueueTwoWorks", "--only", "*_*"],
             spread="tlc", inputs="tlc"),
        Step("rules", "traceability index", [*zlink, "rules", "--gaps"]),
        Step("policy", "z3 proofs of the default policy", [*zlink, "policy", "check"]),
        tests("symbolic", "CrossHair, z3, state-space agreement", [], _OWNED["symbolic"],
              ["-m", "not slow"]),
        tests("properties", f"state machines ({profile['ZLINK_HYPOTHESIS_PROFILE']} profile)",
              ["-m", "not slow"], _OWNED["properties"], env=profile,
              inputs="none" if deep else "traced"),
        Step("conformance", "conformance suite, reference adapter",
             [*zlink, "conformance", "run", "-q"]),
        # One test runs the whole kill matrix, one mutant after the other: a single core,
        # in the background while the tests step holds every core (docs/performance.md,
        # "The verify loop", eighth pass).
        dataclasses.replace(tests("self-test", "conformance kit against every mutant", [],
                                  _OWNED["self-test"], []), spread="", background=True),
        tests("mutants", "mutants killed by unit tests and machines", [], mutants, []),
        # A third of its workers' time is waiting, not computing (a cold run on the
        # 2-core machine: 599 s of its tests' time, 413 s of CPU): one worker more than
        # its cores keeps them busy (docs/performance.md, "The verify loop", fifth pass).
        # The soak tests measure what a tool cannot see (./dev soak runs them).
        tests("tests", "the rest of the pytest suite", ["-m", "not soak", *ignore], ["tests"],
              ["-m", "not slow", *ignore], extra_workers=1),
        Step("types", "mypy --strict", [py, "-m", "mypy"], inputs="mypy"),
        Step("lint", "ruff check", [py, "-m", "ruff", "check", "."], inputs="ruff"),
    ]


_PYTEST_BASE = 6  # [python, -m, pytest, -q, -p, no:cacheprovider]
# What the models command prints when every run was answered from the cache.
_ALL_RUNS_CACHED = re.compile(r"^\s*all \d+ run\(s\) cached: inputs unchanged", re.M)


# The lines of a step's output that report a failure: pytest's summary (FAILED, ERROR),
# the runners' FAIL lines, TLC's violations, rule gaps, refuted proofs, surviving mutants.
# Rule IDs elsewhere in the output (a printed catalogue, a passing case) are not findings.
_FINDING = re.compile(r"FAIL|ERROR|[Vv]iolat|GAP|REFUTED|SURVIVED|killed elsewhere")


def involved_rules(output: str, root: Path) -> list[str]:
    """The spec rules the failure lines of a step's output speak of (IDs no spec
    defines dropped); all of the output when no line looks like a failure."""
    lines = [line for line in output.splitlines() if _FINDING.search(line)]
    text = "\n".join(lines) if lines else output
    try:
        rules, decisions = read_spec_rules(root / "specs")
    except OSError:
        return rules_mentioned(text)
    known = set(rules) | decisions
    return [r for r in rules_mentioned(text) if r in known]


def configure(p: argparse.ArgumentParser) -> None:
    """Options of ``zlink verify``."""
    p.add_argument("--fast", action="store_true", help="a quick subset of each step")
    p.add_argument("--deep", action="store_true",
                   help="the state machines in the deep profile (long runs)")
    p.add_argument("--only", action="append", metavar="STEP",
                   help="run only this step (repeatable)")
    p.add_argument("--skip", action="append", default=[], metavar="STEP",
                   help="leave this step out (repeatable)")
    p.add_argument("--list", action="store_true", help="list the steps and exit")
    p.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1, metavar="N",
                   help="cores to use: steps, TLC runs and pytest workers at once; the "
                        "tests step runs one pytest worker more, and the self-test starts "
                        "at niceness 19 while every core is taken, to fill the waits "
                        "(default: this machine's %(default)s; -j 1: one step after the "
                        "other, in the listed order)")
    p.add_argument("--no-cache", action="store_true",
                   help="run every step even when a passing result with the same inputs "
                        "is in .zlink-cache/")
    p.add_argument("--since", metavar="REV",
                   help="run only the steps that hold what changed since REV (committed "
                        "and uncommitted; see zlink impact), plus rules, types and lint")
    p.add_argument("--report", type=Path, metavar="FILE.md",
                   help="write a Markdown summary for a reviewer (rules touched, each "
                        "layer's result, moved state counts, changed cases, time)")
    p.add_argument("--json", type=Path, metavar="FILE",
                   help="write the same summary as JSON")
    p.add_argument("-v", "--verbose", action="store_true",
                   help="show each step's full output, not only on failure")


class _Display:
    """One progress display for steps that run at the same time: a line when a step
    starts, a line and its whole output when it ends, and every minute a line naming
    the steps still running. Writes are serialised, so outputs never interleave."""

    def __init__(self, total: int) -> None:
        self.total = total
        self.finished = 0
        self.lock = threading.Lock()
        self.running: dict[str, float] = {}
        self._stop = threading.Event()
        self._beat = threading.Thread(target=self._heartbeat, daemon=True)
        self._beat.start()

    def _write(self, text: str) -> None:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()

    def started(self, step: Step, cores: int, background: bool = False) -> None:
        with self.lock:
            self.running[step.name] = time.monotonic()
            on = f" on {cores} cores" if cores > 1 else ""
            if background:
                on = f" in the background (nice {BACKGROUND_NICE}, no core of its own)"
            self._write(f"[start] {step.name}: {step.what}{on}")

    def ended(self, result: StepResult, show_output: bool) -> None:
        with self.lock:
            self.running.pop(result.name, None)
            self.finished += 1
            shown = "ok (cached: inputs unchanged)" if result.cached else result.status
            note = f"; {result.note}" if result.note and not result.cached else ""
            cpu = f", CPU {result.cpu:.1f} s" if result.cpu else ""
            self._write(f"[{self.finished}/{self.total}] {result.name} {shown} "
                        f"({result.seconds:.1f} s{cpu}{note})")
            if show_output and result.output:
                for line in result.output.splitlines():
                    self._write(f"    {line}")
            if result.rules:
                self._write(f"    rules involved: {', '.join(result.rules)}")

    def _heartbeat(self) -> None:
        while not self._stop.wait(60.0):
            with self.lock:
                if self.running:
                    now = time.monotonic()
                    self._write("[running] " + ", ".join(
                        f"{n} {now - t0:.0f} s" for n, t0 in self.running.items()))

    def close(self) -> None:
        self._stop.set()


def _width(step: Step, jobs: int) -> int:
    """Cores a step is given: all of them for steps that spread, else one."""
    return max(1, jobs) if step.spread else 1


def _declared_inputs(step: Step, checkout: CheckoutFiles) -> list[str] | None:
    root = checkout.root.resolve()
    rel = [p.relative_to(root).as_posix() for p in checkout.files]
    if step.inputs == "mypy":
        homes = ("model/", "reference/", "conformance/", "tool/")
        return [r for r in rel if r == "pyproject.toml" or (
            r.startswith(homes) and (r.endswith((".py", ".pyi")) or r.endswith("py.typed")))]
    if step.inputs == "ruff":
        return [r for r in rel if r.endswith((".py", ".pyi")) or
                r in ("pyproject.toml", "ruff.toml", ".ruff.toml")]
    return None


def _execute(step: Step, argv: list[str], cores: int, runner: StepRunner,
             checkout: CheckoutFiles, only: set[str] | None,
             freed: Path | None = None, nice: int = 0) -> StepResult:
    """Run one step (or answer it from the cache). ``only``: under ``--since``, the test
    files of a pytest step to run (None: all). ``freed``: the file a step appends a line
    to for each core it no longer needs. ``nice``: the niceness its processes run at."""
    env = step_env(step.env)
    use_cache = runner.cache.enabled and step.inputs != "none"
    if freed is not None:
        env[CORES_FREED_VARIABLE] = str(freed)
    if step.paths and runner.cache.enabled:
        env[TLC_CACHE_VARIABLE] = str(runner.cache.folder.resolve())
        # The seconds each test took last time: the next run's longest-first order.
        env[TEST_SECONDS_VARIABLE] = str(
            (runner.cache.folder / "test-seconds" / f"{step.name}.json").resolve())
    if step.paths:
        base, paths = argv[:_PYTEST_BASE], list(step.paths)
        options = argv[_PYTEST_BASE:len(argv) - len(paths)]
        out = runner.run_pytest(step.name, base, options, paths, cores, env,
                                use_cache=use_cache and runner.cache.enabled, only=only,
                                extra_workers=step.extra_workers if cores > 1 else 0,
                                nice=nice)
    elif step.spread == "tlc":
        run_argv = [*argv, "--workers", str(cores)]
        if runner.cache.enabled and step.inputs == "tlc":
            run_argv += ["--cache", str(runner.cache.folder)]
        out = runner.run_plain(step.name, run_argv, env, None, use_cache=False, nice=nice)
        # Every run's TLC outcome came from the cache; a failure is still a failure
        # (the outcomes are judged against the manifest as it is now).
        if _ALL_RUNS_CACHED.search(out.output) is not None:
            out.cached = out.code == 0
            out.note = "every TLC outcome from the cache"
    else:
        out = runner.run_plain(step.name, argv, env, _declared_inputs(step, checkout),
                               use_cache=use_cache, nice=nice)
    ok = out.code == 0
    status = "ok" if ok else f"FAILED (exit {out.code})"
    rules = involved_rules(out.output, runner.root) if not ok else []
    return StepResult(step.name, status, out.seconds, out.output, rules, out.cached,
                      out.note, None if only is None else tuple(sorted(only)), out.cpu)


# What each step typically costs, in seconds of CPU (user + system) of a cold run on the
# 2-core reference machine (docs/performance.md, "The verify loop", third pass; types
# with mypy's cache cold): the start order when the cache holds no time of a step yet,
# so that an empty cache starts the longest step first too and the short one-core steps
# fill the cores at the end.
TYPICAL_SECONDS = {
    "tests": 570.0, "mutants": 108.0, "self-test": 50.0, "models": 38.0,
    "properties": 19.0, "symbolic": 16.0, "types": 3.4, "conformance": 1.4,
    "rules": 0.5, "policy": 0.3, "lint": 0.1,
}


# How long a wide step waits for a step that has just started (and may be answered from
# the cache at once) before it starts on fewer cores than its width.
_GRACE_S = 1.0
# The niceness of a step started in the background (``Step.background``): the lowest
# priority, so that it takes what the running steps leave idle and little more.
BACKGROUND_NICE = 19


@dataclasses.dataclass
class _Running:
    """One running step, as the scheduler sees it."""

    cores: int
    freed: Path | None  # the file it tells of cores it no longer needs in
    extra: int  # its pytest workers beyond its cores
    started: float  # time.monotonic() when it started
    given: int = 0  # cores it has handed back so far
    background: bool = False  # started in the background: it holds no core


def start_order(chosen: list[Step], last: dict[str, float]) -> list[Step]:
    """The steps longest first: by the time each took last (``last``), else by its
    typical cost, else as a one-minute step."""
    return sorted(chosen, key=lambda s: -last.get(s.name, TYPICAL_SECONDS.get(s.name, 60.0)))


def _timings(cache: ResultCache) -> dict[str, float]:
    try:
        data = json.loads((cache.folder / "timings.json").read_text("utf-8"))
        return {str(k): float(v) for k, v in data.items()}
    except (OSError, ValueError, AttributeError):
        return {}


def _save_timings(cache: ResultCache, results: list[StepResult]) -> None:
    if not cache.enabled:
        return  # --no-cache leaves .zlink-cache/ as it was
    known = _timings(cache)
    # Only a whole run of a step says how long the step takes: not one answered from the
    # cache, nor a part of it (--since's test files, some files cached).
    known.update({r.name: r.seconds for r in results if not r.cached and r.status == "ok"
                  and r.selected is None and not r.note})
    cache.folder.mkdir(parents=True, exist_ok=True)
    (cache.folder / ".gitignore").write_text("*\n", encoding="utf-8")
    (cache.folder / "timings.json").write_text(json.dumps(known, indent=1), "utf-8")


def run_steps(chosen: list[Step], args: argparse.Namespace, root: Path,
              cache: ResultCache, only: dict[str, set[str]] | None = None
              ) -> list[StepResult]:
    """Run the chosen steps on ``args.jobs`` cores; results in the order of ``chosen``.
    ``only``: for a pytest step named in it, run just those test files.

    Longest first: the step at the head of the queue starts as soon as a core is free,
    on every core then free up to its width, so no core waits while a step waits (under
    -j 1: the listed order, one core each). A running step that appends a line to its
    ``freed`` file for a core it no longer needs (a pytest-xdist worker with nothing
    left) gives that core to the next step at once; the rest come back when it ends.
    While every core is taken, one step marked ``background`` (the first in the queue)
    starts at the lowest priority and holding no core: it fills the running steps' waits
    (not under -j 1)."""
    jobs = max(1, args.jobs)
    checkout = CheckoutFiles(root)
    runner = StepRunner(root, cache, environment_digest(root), strace_available())
    display = _Display(len(chosen))
    results: dict[str, StepResult] = {}
    # Longest first, so the long ones do not end alone (-j 1: the listed order).
    queue = start_order(chosen, _timings(cache)) if jobs > 1 else list(chosen)
    free = jobs
    cond = threading.Condition()
    running: dict[str, _Running] = {}

    def take_freed() -> None:
        """Count the cores running steps have said they no longer need (under cond): a
        step with workers beyond its cores frees a core once those have ended."""
        nonlocal free
        for r in running.values():
            if r.freed is None:
                continue
            try:
                said = r.freed.read_text(encoding="utf-8").count("\n")
            except OSError:
                said = 0
            said = max(0, said - r.extra)
            # The step's own process still runs until it ends: it keeps one core.
            now = min(said, r.cores - 1)
            if now > r.given:
                free += now - r.given
                r.given = now

    def work(step: Step, argv: list[str], cores: int, freed: Path | None,
             nice: int) -> None:
        nonlocal free
        try:
            result = _execute(step, argv, cores, runner, checkout,
                              None if only is None else only.get(step.name), freed, nice)
        except Exception as exc:  # a step that cannot start is a failure, not a crash
            result = StepResult(step.name, "FAILED (could not run)", 0.0, repr(exc))
        display.ended(result, args.verbose or result.failed)
        with cond:
            results[step.name] = result
            ended = running.pop(step.name)
            free += (0 if ended.background else cores) - ended.given
            cond.notify_all()

    threads: list[threading.Thread] = []

    def start(step: Step, cores: int, background: bool = False) -> None:
        """Start ``step`` on ``cores`` (under cond); in the background it holds none."""
        nonlocal free
        argv = step.argv if not args.fast or step.fast_argv is None else step.fast_argv
        if not argv:
            result = StepResult(step.name, "skipped (--fast)", 0.0)
            results[step.name] = result
            display.ended(result, False)
            return
        freed = Path(scratch, step.name) if cores > 1 else None
        if not background:
            free -= cores
        running[step.name] = _Running(cores, freed, step.extra_workers if cores > 1 else 0,
                                      time.monotonic(), background=background)
        display.started(step, cores, background)
        thread = threading.Thread(target=work, daemon=True, args=(
            step, argv, cores, freed, BACKGROUND_NICE if background else 0))
        threads.append(thread)
        thread.start()

    with tempfile.TemporaryDirectory(prefix="zlink-cores-") as scratch:
        try:
            with cond:
                while queue:
                    take_freed()
                    behind = next((s for s in queue if s.background), None)
                    if free < 1 and jobs > 1 and behind is not None and \
                            not any(r.background for r in running.values()):
                        queue.remove(behind)
                        start(behind, 1, background=True)
                        continue
                    if free < 1:
                        watching = any(r.freed is not None for r in running.values())
                        cond.wait(timeout=0.5 if watching else None)
                        continue
                    # A wide step waits a moment for a step that has just started: one
                    # answered from the cache ends at once, and the cores it held are
                    # better given whole than the wide step kept on fewer for its run.
                    young = [r.started for r in running.values()
                             if time.monotonic() - r.started < _GRACE_S and not r.background]
                    if free < min(_width(queue[0], jobs), jobs) and young:
                        cond.wait(timeout=_GRACE_S - (time.monotonic() - max(young)))
                        continue
                    step = queue.pop(0)
                    start(step, min(_width(step, jobs), free))
            for thread in threads:
                thread.join()
        finally:
            display.close()
    ordered = [results[s.name] for s in chosen]
    _save_timings(cache, ordered)
    return ordered


def run(args: argparse.Namespace) -> int:
    """Run every check (the main job) and print one summary table.

    Steps: models, rules, policy, symbolic, properties, conformance, self-test, mutants,
    tests, types, lint (`zlink verify --list`), on every core (-j N), passing results
    answered from .zlink-cache/ while their inputs are unchanged (--no-cache). --since
    REV: only what holds the changes since REV. A failing step names the rules involved.

      zlink verify                       every step on every core, one summary table
      zlink verify --fast                a quick subset of each step
      zlink verify --only models --only rules
      zlink verify --since HEAD --report review.md   what the working tree's change touched

    Exit status: 0 every step passed, 1 a step failed, 2 outside a checkout or for an
    unknown step.
    """
    where = layout()
    if not where.checkout:
        print("zlink verify: runs the project's own checks (tests, mypy, ruff) and needs a "
              f"ZLink checkout; {where.root} ({where.source}) has no tests/. Run it in "
              "a checkout, or set ZLINK_ROOT to one.", file=sys.stderr)
        return 2
    root = where.root
    all_steps = steps(deep=args.deep)
    if args.list:
        for s in all_steps:
            print(f"{s.name:12s} {s.what}")
        return 0
    known = {s.name for s in all_steps}
    unknown = [n for n in [*(args.only or []), *args.skip] if n not in known]
    if unknown:
        print(f"zlink verify: unknown step(s): {', '.join(unknown)}; "
              f"known: {', '.join(s.name for s in all_steps)}", file=sys.stderr)
        return 2
    if args.jobs < 1:
        print("zlink verify: -j needs at least 1", file=sys.stderr)
        return 2
    chosen = [s for s in all_steps
              if (not args.only or s.name in args.only) and s.name not in args.skip]
    cache = ResultCache(root, enabled=not args.no_cache)
    if not strace_available():
        print("verify: strace cannot be used (not installed, or this process is traced "
              "already), so a kept result depends on every file of the checkout and "
              "--since cannot tell what a check reads (./dev tools installs strace)")
    started = time.monotonic()
    impact: Impact | None = None
    skipped: dict[str, str] = {}
    only: dict[str, set[str]] | None = None
    if args.since is not None or args.report is not None or args.json is not None:
        try:
            impact = analyse(root, args.since or "HEAD", tlc_run_inputs(root))
        except ChangeError as exc:
            print(f"zlink verify: {exc}", file=sys.stderr)
            return 2
    if args.since is not None and impact is not None:
        runner = StepRunner(root, cache, environment_digest(root), strace_available())
        argv_of = {s.name: s.argv if not args.fast or s.fast_argv is None else s.fast_argv
                   for s in chosen}
        selection = select(chosen, impact, runner, argv_of)
        print_impact(impact, selection, sys.stdout)
        skipped = {n: why for n, why in selection.skipped.items()
                   if any(s.name == n for s in chosen)}
        only = selection.files
        chosen = [s for s in chosen if s.name in selection.run]
    results = run_steps(chosen, args, root, cache, only)
    elapsed = time.monotonic() - started
    _print_summary(results, elapsed, skipped)
    if args.report is not None or args.json is not None:
        report = build_report(results, impact, elapsed, root, skipped)
        if args.json is not None:
            args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
            print(f"report written to {args.json}")
        if args.report is not None:
            args.report.write_text(to_markdown(report), encoding="utf-8")
            print(f"report written to {args.report}")
    return 1 if any(r.failed for r in results) else 0


def _print_summary(results: list[StepResult], elapsed: float,
                   skipped: dict[str, str] | None = None) -> None:
    print()
    print(f"{'step':12s} {'result':24s} {'time':>8s} {'CPU':>8s}  rules involved")
    print(f"{'-' * 12} {'-' * 24} {'-' * 8} {'-' * 8}  {'-' * 14}")
    for r in results:
        status = "ok (cached)" if r.cached and not r.failed else r.status
        print(f"{r.name:12s} {status:24s} {r.seconds:7.1f}s {r.cpu:7.1f}s  "
              f"{', '.join(r.rules)}".rstrip())
    for name, why in (skipped or {}).items():
        print(f"{name:12s} {'not run (--since)':24s} {'':8s} {'':8s}  {why}")
    failed = [r.name for r in results if r.failed]
    cached = sum(1 for r in results if r.cached)
    cpu = sum(r.cpu for r in results)
    print()
    print("verify: " + ("FAILED: " + ", ".join(failed) if failed else "all checks passed")
          + f" ({elapsed:.0f} s, CPU {cpu:.0f} s"
          + (f"; {cached} step(s) cached" if cached else "") + ")")
