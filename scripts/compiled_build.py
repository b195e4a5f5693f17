"""The compiled build behind ``./dev compiled``: copy the model and the reference into a
build directory, adapt the copy where mypyc needs it, and compile the model core and the
shell rooms listed in ``COMPILED`` there. The sources stay as they are and stay the
reference; every adaptation below says why it is needed and is checked to apply (a
source that drifted fails the build with the edit that no longer fits). Where the C
compiler is gcc, the C that mypyc emits is built profile-guided: instrumented, trained
on the core, shell and coordinator tests, built again with the counts (``PGO_*`` below;
``--no-pgo`` skips it; a compiler that refuses the flags gets a plain build and a note).
``--unoptimised`` builds the same C at ``-O0`` and without the profile: the same modules,
wheels and metadata in half the time, for a test of how the build is put together (not
of how fast it runs).

    .venv/bin/python scripts/compiled_build.py BUILD_DIR
    .venv/bin/python scripts/compiled_build.py BUILD_DIR --no-pgo    # one plain build
    .venv/bin/python scripts/compiled_build.py BUILD_DIR --unoptimised   # -O0, no profile
    PYTHONPATH=BUILD_DIR .venv/bin/python -m pytest tests/shell
    .venv/bin/python scripts/compiled_build.py BUILD_DIR --wheels dist   # after ./dev dist

``./dev compiled`` runs it into ``.build-compiled`` whenever the model, the reference or
this script changed, and CI runs the core, shell and coordinator tests and the whole
conformance suite against that build (docs/performance.md, "The compiled build").
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

COMPILED = [
    "zlink_model/queue.py",
    "zlink_model/rules.py",
    *(f"zlink_reference/_shell/{room}.py"
      for room in ("clock", "loop", "checks", "context", "handle", "scope", "surface",
                   "drain", "drive", "queue", "__init__")),
    # The coordinators: their entries are the hot path of every message to an Actor,
    # a Spot or a session (and interpreted classes may not inherit from a compiled
    # trait, the scope surface ``_base.Coordinator`` builds on).
    *(f"zlink_reference/coordinators/{name}.py"
      for name in ("_base", "snapshot", "lane", "actor", "session", "spot_wide", "spot")),
]

IMPORT = "from __future__ import annotations\n"
MYPYC = IMPORT + "from mypy_extensions import mypyc_attr, trait\n"

# (file, old, new, count): count is how many times old must occur (0: at least once).
EDITS: list[tuple[str, str, str, int]] = [
    # Shells and checkers subclass WorkRecord: the compiled class must allow it.
    ("zlink_model/queue.py", IMPORT, MYPYC, 1),
    ("zlink_model/queue.py", "\nclass WorkRecord:",
     "\n@mypyc_attr(allow_interpreted_subclasses=True)\nclass WorkRecord:", 1),
    # The scope surface is a second base of the queue (mypyc allows that for traits
    # only) and the base of the interpreted coordinators.
    ("zlink_reference/_shell/surface.py", IMPORT, MYPYC, 1),
    ("zlink_reference/_shell/surface.py", "\nclass ScopeSurface:",
     "\n@trait\n@mypyc_attr(allow_interpreted_subclasses=True)\nclass ScopeSurface:", 1),
    ("zlink_reference/coordinators/_base.py", IMPORT, MYPYC, 1),
    ("zlink_reference/coordinators/_base.py", "\nclass Coordinator(ScopeSurface):",
     "\n@mypyc_attr(allow_interpreted_subclasses=True)\nclass Coordinator(ScopeSurface):",
     1),
    # Bad input must meet the entries' own typed errors (SE-6.2, SD-1), not the
    # compiled argument check: these parameters are checked by the code itself.
    ("zlink_reference/_shell/queue.py", "payload_bytes: int)", "payload_bytes: Any)", 2),
    ("zlink_reference/_shell/scope.py", "timeout_ms: float)", "timeout_ms: Any)", 0),
    ("zlink_reference/_shell/surface.py", "timeout_ms: float)", "timeout_ms: Any)", 0),
    # ``inherit`` answers a parent that is not a scope with its own TypeError (SD-4).
    ("zlink_reference/_shell/surface.py", "parent: ScopeSurface,", "parent: Any,", 1),
    # The coordinators' entries check their ids, payloads and modes themselves, with
    # typed errors that name the argument (SE-6.3: nothing inserted); compiled, the
    # annotations would be checked first, with mypyc's own message.
    ("zlink_reference/coordinators/spot.py", "actor_id: str", "actor_id: Any", 0),
    ("zlink_reference/coordinators/spot.py", "spot_id: str", "spot_id: Any", 1),
    ("zlink_reference/coordinators/spot.py", "timer_name: str", "timer_name: Any", 0),
    ("zlink_reference/coordinators/spot.py", "payload_bytes: int", "payload_bytes: Any", 0),
    ("zlink_reference/coordinators/spot.py",
     "mode: ZLinkUserSpotExecutionMode | None = None", "mode: Any = None", 1),
    ("zlink_reference/coordinators/actor.py", "actor_id: str,", "actor_id: Any,", 1),
    ("zlink_reference/coordinators/actor.py", "payload_bytes: int", "payload_bytes: Any", 1),
    ("zlink_reference/coordinators/session.py", "session_id: str", "session_id: Any", 1),
    ("zlink_reference/coordinators/session.py", "payload_bytes: int", "payload_bytes: Any", 1),
    # A native class has no __slots__ to read.
    ("zlink_reference/_shell/queue.py", "for k in self.__slots__)",
     "for k in _STATISTICS_FIELDS)", 1),
    # mypy keeps ``aux.waiters`` narrowed to a list across the ``yield from``; compiled,
    # the read in ``finally`` is then checked as a list although _settle set it to None.
    ("zlink_reference/_shell/handle.py",
     "                if aux.waiters is not None and fut in aux.waiters:\n"
     "                    aux.waiters.remove(fut)",
     "                waiting: Any = getattr(aux, 'waiters')\n"
     "                if waiting is not None and fut in waiting:\n"
     "                    waiting.remove(fut)", 1),
    # mypyc gives a class with a ``Generic`` base a ``__dict__`` and a ``__weakref__``
    # slot (16 B per queue, which took the idle owner over its 256 B): the compiled
    # core is typed with ``WorkRecord`` where the reference's is generic in it, and the
    # few places of the shell that read a handle's own fields off the core say so.
    ("zlink_model/queue.py", 'R = TypeVar("R", bound=WorkRecord)', "R = WorkRecord", 1),
    ("zlink_model/queue.py", "class QueueCore(Generic[R]):", "class QueueCore:", 1),
    ("zlink_model/queue.py", "QueueCore[R]", "QueueCore", 0),
    ("zlink_model/queue.py", "QueueCore[Any]", "QueueCore", 0),
    ("zlink_reference/_shell/__init__.py", "QueueCore[Any]", "QueueCore", 2),
    ("zlink_reference/_shell/scope.py", "QueueCore[Any]", "QueueCore", 2),
    ("zlink_reference/_shell/queue.py", "QueueCore[Any]", "QueueCore", 1),
    ("zlink_reference/_shell/queue.py", "QueueCore[ZLinkWorkHandle[Any]]", "QueueCore", 1),
    ("zlink_reference/_shell/drain.py", "QueueCore[ZLinkWorkHandle[Any]]", "QueueCore", 0),
    ("zlink_reference/_shell/queue.py",
     "        taken = []\n", "        taken: list[Any] = []\n", 1),
    ("zlink_reference/_shell/queue.py",
     "ended, live = core.expire_timeout() if expire else core.dispose()",
     "ended, live = cast(Any, core.expire_timeout() if expire else core.dispose())", 1),
]


# drive's ``types.coroutine`` generator, awaited by a work's code: compiled, a generator
# is no iterable coroutine (``await`` on it fails), so it moves to an interpreted module.
GENERATORS_START = "@types.coroutine\ndef _post_from_drive("
GENERATORS_END = "    return (yield _DriveSignal(callback))\n"


def split_generators(build: Path) -> None:
    """Move drive's awaited generator into ``_shell/_drive_generators.py`` (interpreted)."""
    drive = build / "zlink_reference" / "_shell" / "drive.py"
    text = drive.read_text()
    start = text.index(GENERATORS_START)
    end = text.rindex(GENERATORS_END) + len(GENERATORS_END)
    head = text[:text.index("\n\n", text.index("from .scope import"))]
    moved = head + "\n\nfrom .drive import _FAILED, _DriveSignal, _Steps\n\n\n" + text[start:end]
    (drive.parent / "_drive_generators.py").write_text(moved)
    drive.write_text(text[:start] + text[end:]
                     + "\n\nfrom ._drive_generators import _post_from_drive  # noqa\n")


# clock's two Protocols: mypyc compiles a Protocol as a native trait (or, marked
# non-native, as a class without ``typing.Protocol`` among its bases), and
# ``typing.runtime_checkable`` refuses either when the module loads. ``ZLinkClock`` is
# public and runtime checkable, so both move to an interpreted module and clock.py
# imports them back: ``isinstance(clock, ZLinkClock)`` answers as it does interpreted.
PROTOCOLS_START = "class Cancellable(Protocol):"
PROTOCOLS_END = "class MonotonicClock:"


def split_protocols(build: Path) -> None:
    """Move clock's Protocols into ``_shell/_clock_protocols.py`` (interpreted)."""
    clock = build / "zlink_reference" / "_shell" / "clock.py"
    text = clock.read_text()
    start = text.index(PROTOCOLS_START)
    end = text.index(PROTOCOLS_END)
    head = text[:text.index("__all__")]
    (clock.parent / "_clock_protocols.py").write_text(head + "\n" + text[start:end].rstrip()
                                                      + "\n")
    clock.write_text(text[:start]
                     + "from ._clock_protocols import Cancellable, ZLinkClock  # noqa\n\n\n"
                     + text[end:])


# The compiled modules in two groups, one per distribution: each group's shared library
# (``zlink_model__mypyc``, ``zlink_reference__mypyc``) ships in that distribution's
# compiled wheel, and the reference's group calls into the model's.
SETUP = """
import sys
from setuptools import setup
from mypyc.build import mypycify
groups = [[p for p in sys.argv[1].split(",") if p.startswith(top)]
          for top in ("zlink_model/", "zlink_reference/")]
opt_level = sys.argv[2]
sys.argv[1:3] = []
setup(name="zlink-compiled", ext_modules=mypycify(
    [p for g in groups for p in g],
    separate=[(groups[0], "zlink_model"), (groups[1], "zlink_reference")],
    opt_level=opt_level))
"""

MYPY_EXTENSIONS = "mypy-extensions>=1.0.0"
# (distribution, its import package) of each compiled wheel.
WHEELS = (("zlink_model", "zlink_model"), ("zlink_reference", "zlink_reference"))


# The C compiler's optimisation level of a build (mypyc's ``opt_level``): its default,
# and the one of an unoptimised build. Only the C compiler's flags differ: mypyc emits
# the same C either way.
OPTIMISED = "3"
UNOPTIMISED = "0"


def compile_copy(build: Path, *, pgo: bool = True, optimise: bool = True) -> int:
    """Copy, adapt and compile into ``build``: profile-guided where the compiler allows
    (``pgo``); unless ``optimise``, the C at ``-O0`` and without the profile. 0 when
    done, 1 with the reason printed."""
    here = Path(__file__).resolve().parent.parent
    shutil.rmtree(build, ignore_errors=True)
    build.mkdir(parents=True)
    skip = shutil.ignore_patterns("__pycache__")
    shutil.copytree(here / "model" / "zlink_model", build / "zlink_model", ignore=skip)
    shutil.copytree(here / "reference" / "zlink_reference", build / "zlink_reference",
                    ignore=skip)
    for rel, old, new, count in EDITS:
        path = build / rel
        text = path.read_text()
        found = text.count(old)
        if found == 0 or (count and found != count):
            print(f"[dev] compiled build: {rel} has {found} of {old!r} (expected "
                  f"{count or 'some'}); the edit for mypyc no longer fits", file=sys.stderr)
            return 1
        path.write_text(text.replace(old, new))
    split_generators(build)
    split_protocols(build)
    queue = build / "zlink_reference" / "_shell" / "queue.py"
    text = queue.read_text()
    fields = text[text.index("    __slots__ = (", text.index("class QueueStatistics")):]
    fields = fields[len("    __slots__ = "):fields.index(")") + 1]
    queue.write_text(text + f"\n\n_STATISTICS_FIELDS = {fields}\n")
    # mypy's own defaults, wherever the build directory is: mypy looks for a
    # configuration upwards from it, and the project's strict one (for the sources)
    # would flag the copy's adaptations (an ignore or a cast the adapted types make
    # redundant). The sources themselves are checked strict by ``zlink verify``.
    (build / "mypy.ini").write_text("[mypy]\n")
    if pgo and optimise and profile_guided(build, here):
        return 0
    if not run_setup(build, "mypyc.log", [], OPTIMISED if optimise else UNOPTIMISED):
        sys.stderr.write((build / "mypyc.log").read_text())
        return 1
    return 0


def run_setup(build: Path, log_name: str, cflags: list[str],
              opt_level: str = OPTIMISED) -> bool:
    """Run mypyc and the C compiler over the copy in ``build``, at ``opt_level``, with
    ``cflags`` added to the C compiler's flags (and to the linker's: setuptools passes
    ``CFLAGS`` to both); the output goes to ``build/log_name``. True when it built.
    Every object is compiled again (``--force``): an instrumented one left by a
    profile-guided attempt looks newer than its source."""
    env = dict(os.environ)
    if cflags:
        env["CFLAGS"] = " ".join([env.get("CFLAGS", ""), *cflags]).strip()
    with open(build / log_name, "w") as log:
        done = subprocess.run(
            [sys.executable, "-c", SETUP, ",".join(COMPILED), opt_level, "build_ext",
             "--inplace", "--force"],
            cwd=build, stdout=log, stderr=log, env=env)
    return done.returncode == 0


# Profile-guided optimisation of the C that mypyc emits (gcc): build once instrumented,
# run the core, shell and coordinator tests against that build (every path of the
# queue, the drain, the drive task and the coordinators, not one benchmark's shape),
# and build again with the counts, which lay out hot and cold code apart and decide
# inlining and branch order from what ran. ``-fprofile-partial-training`` keeps the
# code the training did not reach optimised as without a profile (gcc >= 10); the
# profile's counters stay in the build directory and ship in no wheel.
# docs/performance.md, "Profile-guided build" has the figures.
PGO_DIR = ".pgo"
PGO_GENERATE = ["-fprofile-generate={dir}", "-fprofile-update=single"]
PGO_USE = ["-fprofile-use={dir}", "-fprofile-partial-training", "-Wno-missing-profile"]
PGO_TRAINING = ["-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0",
                "tests/core", "tests/shell", "tests/coordinators"]


def pgo_note(why: str) -> None:
    print(f"[dev] compiled build: {why}; building without a profile", file=sys.stderr)


def compiler_takes(build: Path, flags: list[str]) -> bool:
    """Whether the C compiler Python's extensions are built with accepts ``flags``
    (clang, say, takes ``-fprofile-generate`` but not ``-fprofile-partial-training``
    nor gcc's profile files)."""
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    probe = build / "probe.c"
    probe.write_text("int zlink_probe(int x) { return x + 1; }\n")
    try:
        done = subprocess.run([*cc, *flags, "-Werror", "-c", str(probe), "-o",
                               str(build / "probe.o")], capture_output=True)
    except OSError:
        return False
    finally:
        probe.unlink()
        (build / "probe.o").unlink(missing_ok=True)
    return done.returncode == 0


def profile_guided(build: Path, here: Path) -> bool:
    """Build ``build`` profile-guided; False (with a note printed) when the compiler,
    the checkout or a step does not allow it, and the caller then builds plainly."""
    profile = build / PGO_DIR
    generate = [f.format(dir=profile) for f in PGO_GENERATE]
    use = [f.format(dir=profile) for f in PGO_USE]
    if not (here / "tests" / "shell").is_dir():
        pgo_note("no tests/ to train a profile on")
        return False
    if not (compiler_takes(build, generate) and compiler_takes(build, use)):
        pgo_note(f"the C compiler does not take {' '.join(PGO_GENERATE + PGO_USE)}")
        return False
    if not run_setup(build, "mypyc-instrumented.log", generate):
        pgo_note(f"the instrumented build failed (see {build / 'mypyc-instrumented.log'})")
        return False
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        [str(build), *filter(None, [os.environ.get("PYTHONPATH")])]))
    with open(build / "pgo-training.log", "w") as log:
        trained = subprocess.run([sys.executable, *PGO_TRAINING], cwd=here, env=env,
                                 stdout=log, stderr=log)
    if trained.returncode != 0:
        # The counts of the tests that ran are still a profile; a failing test is for
        # the test run against the finished build to report.
        print(f"[dev] compiled build: the training run failed (see "
              f"{build / 'pgo-training.log'}); its counts are used as they are",
              file=sys.stderr)
    if not run_setup(build, "mypyc.log", use):
        pgo_note(f"the build with the profile failed (see {build / 'mypyc.log'})")
        return False
    return True


def compiled_wheels(build: Path, dist: Path) -> list[Path]:
    """Beside each pure wheel of ``dist`` (``./dev dist``) whose package is compiled in
    ``build``, a wheel for this interpreter and platform: the pure wheel's metadata, the
    build's package (its adapted sources and their compiled modules) and its group's
    shared library. The pure wheels stay the reference."""
    tag = (f"cp{sys.version_info.major}{sys.version_info.minor}-"
           f"cp{sys.version_info.major}{sys.version_info.minor}-"
           + sysconfig.get_platform().replace("-", "_").replace(".", "_"))
    made = []
    for dist_name, package in WHEELS:
        pure = sorted(dist.glob(f"{dist_name}-*-py3-none-any.whl"))
        if len(pure) != 1:
            raise SystemExit(f"[dev] compiled wheels: want one pure {dist_name} wheel in "
                             f"{dist}, found {len(pure)} (run ./dev dist first)")
        with tempfile.TemporaryDirectory() as tmp:
            subprocess.run([sys.executable, "-m", "wheel", "unpack", "--dest", tmp,
                            str(pure[0])], check=True, capture_output=True)
            (root,) = Path(tmp).iterdir()
            shutil.rmtree(root / package)
            shutil.copytree(build / package, root / package,
                            ignore=shutil.ignore_patterns("__pycache__", "*.c", "*.h"))
            for lib in build.glob(f"{package}__mypyc.*"):
                shutil.copy2(lib, root / lib.name)
            (info,) = root.glob("*.dist-info")
            wheel = info / "WHEEL"
            lines = [line for line in wheel.read_text().splitlines()
                     if line and not line.startswith(("Tag:", "Root-Is-Purelib:"))]
            wheel.write_text("\n".join([*lines, "Root-Is-Purelib: false", f"Tag: {tag}", ""]))
            # Compiled modules import mypy_extensions (the decorators of the edits above)
            # when they load: a dependency of the compiled wheels only.
            meta = info / "METADATA"
            head, sep, body = meta.read_text().partition("\n\n")
            meta.write_text(f"{head}\nRequires-Dist: {MYPY_EXTENSIONS}{sep}{body}")
            (info / "RECORD").unlink()
            before = set(dist.iterdir())
            subprocess.run([sys.executable, "-m", "wheel", "pack", "--dest-dir", str(dist),
                            str(root)], check=True, capture_output=True)
            made += sorted(set(dist.iterdir()) - before)
    return made


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("build", type=Path, help="the build directory (emptied first)")
    parser.add_argument("--wheels", type=Path, metavar="DIST",
                        help="also make compiled wheels beside the pure ones in DIST")
    parser.add_argument("--no-pgo", action="store_true",
                        help="build without the profile-guided pass (no training run)")
    parser.add_argument("--unoptimised", action="store_true",
                        help="build the C at -O0 without the profile: the same modules in "
                             "half the time, not for measuring")
    args = parser.parse_args(argv)
    if compile_copy(args.build.resolve(), pgo=not args.no_pgo,
                    optimise=not args.unoptimised) != 0:
        return 1
    if args.wheels is not None:
        for path in compiled_wheels(args.build.resolve(), args.wheels.resolve()):
            print(f"[dev] compiled wheel {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
