"""What a traced check read: an ``strace -f -y`` log of open calls, read back.

``zlink verify`` runs a step under strace to learn which files and folders of the
checkout it opened, so the result cache can tell when a passing result still holds
(``resultcache``). A pytest step is also split by test file: the pytest plugin
``zlink_tool.pytest_marks`` opens a path that does not exist, ``/.zlink-test-file/<file>``,
before each test, and the log shows it in the test process's line. A test file depends
on everything its process opened up to the end of its last test: what it opened itself,
and what the process opened before (collection, imports, session fixtures, and whatever
an earlier test file left in memory: a cached loader reads a file once); when its tests
ran in several processes (pytest-xdist), on the union of those. Threads and
child processes (an adapter, TLC, Node) count as their parent's: their opens join the
parent's timeline. Processes that never ran a test (pytest-xdist's controller) count
for every test file. Collection's reads of test modules and test folders are not
inputs of the other test files (``_other_test_module``). Files outside the checkout are
the environment's (its digest is in the cache key), except a jar, kept by its absolute
path: a check that ran TLC depends on the jar's bytes.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

__all__ = ["MARK_PREFIX", "Reads", "read_trace"]

MARK_PREFIX = "/.zlink-test-file/"
# Folders whose contents never decide a check's result (tools' own caches, the
# environment, which the environment digest covers, and the result cache).
SKIPPED = frozenset({".git", ".venv", ".zlink-cache", ".pytest_cache", ".mypy_cache",
                     ".ruff_cache", ".hypothesis", ".build-compiled", "node_modules"})

_LINE = re.compile(r"^(?P<pid>\d+)\s+(?P<rest>.*)$")
_OPEN = re.compile(r'^(?:openat|open|creat)\((?:AT_FDCWD<(?P<cwd>[^>]*)>|\d+<(?P<dir>'
                   r'[^>]*)>)?,?\s*"(?P<path>(?:[^"\\]|\\.)*)"(?:,\s*(?P<flags>[A-Z_|]+))?'
                   r'.*\)\s*=\s*(?P<ret>-?\d+)(?:<(?P<real>[^>]*)>)?')
_SPAWN = re.compile(r"^(?:clone3?|fork|vfork)\(.*\)\s*=\s*(?P<child>\d+)")
_PYC = re.compile(r"^(?P<stem>.+)\.cpython-\d+(?:\.opt-\d)?\.pyc$")


@dataclasses.dataclass
class Reads:
    """Files (relative to the checkout) and folders opened."""

    files: set[str] = dataclasses.field(default_factory=set)
    folders: set[str] = dataclasses.field(default_factory=set)

    def copy(self) -> Reads:
        return Reads(set(self.files), set(self.folders))

    def update(self, other: Reads) -> None:
        self.files |= other.files
        self.folders |= other.folders


@dataclasses.dataclass
class Trace:
    """Everything the log shows: all reads, and the reads each test file depends on."""

    everything: Reads
    per_file: dict[str, Reads]


def _relative(root: Path, m: re.Match[str]) -> tuple[str, bool] | None:
    """(checkout-relative path, is a folder) of one open call, or None if it does not
    count (outside the checkout, written, a tool's cache)."""
    flags = m.group("flags") or ""
    if "O_WRONLY" in flags or "O_RDWR" in flags or "O_CREAT" in flags:
        return None  # the check's own output
    if int(m.group("ret")) >= 0 and m.group("real"):
        path = Path(m.group("real"))
    else:
        base = m.group("cwd") or m.group("dir") or str(root)
        path = Path(base, m.group("path"))
    path = Path(os.path.normpath(path))
    try:
        rel = path.relative_to(root)
    except ValueError:
        # Outside the checkout only a jar counts (TLC's, whose content the checks
        # that run TLC depend on); the rest is the environment's.
        return (path.as_posix(), False) if path.suffix == ".jar" and \
            int(m.group("ret")) >= 0 else None
    if not rel.parts or SKIPPED.intersection(rel.parts) or rel.parts[0].startswith("<"):
        return None  # "<unknown>", "<string>": names of code objects, not files
    if "__pycache__" in rel.parts:
        pyc = _PYC.match(rel.name)
        if pyc is None or rel.parent.name != "__pycache__":
            return None
        rel = rel.parent.parent / (pyc.group("stem") + ".py")  # the source it stands for
    return rel.as_posix(), "O_DIRECTORY" in flags


def _other_test_module(path: str, folder: bool) -> bool:
    """A test module's source, or a folder of tests, as collection reads them. Collecting
    imports every test module of the run and lists its folders; a test module's code
    reaches only itself and the test modules that import it (``steprun`` adds those), so
    these reads are no other file's input. What a test reads while it runs (a test that
    parses every test module, as the rules index does) still counts for it."""
    if not path.startswith("tests/"):
        return False
    if folder:
        return True
    name = path.rsplit("/", 1)[-1]
    return name.startswith("test_") and name.endswith(".py")


def _joined(lines: list[str]) -> list[tuple[int, str]]:
    """(pid, call) with strace's ``<unfinished ...>`` / ``<... resumed>`` halves joined."""
    pending: dict[int, str] = {}
    calls: list[tuple[int, str]] = []
    for line in lines:
        m = _LINE.match(line)
        if m is None:
            continue
        pid, rest = int(m.group("pid")), m.group("rest")
        if rest.endswith("<unfinished ...>"):
            pending[pid] = rest[: -len("<unfinished ...>")]
            continue
        if rest.startswith("<..."):
            head = pending.pop(pid, "")
            rest = head + rest.split("resumed>", 1)[-1]
        calls.append((pid, rest))
    return calls


def read_trace(root: Path, log: str) -> Trace:
    """Read a log written by ``strace -f -y -e trace=openat,open,creat,clone,clone3,
    fork,vfork``."""
    root = root.resolve()
    parent: dict[int, int] = {}
    events: list[tuple[int, str, str, bool]] = []  # (pid, kind, path, folder)
    for pid, call in _joined(log.splitlines()):
        if spawn := _SPAWN.match(call):
            parent[int(spawn.group("child"))] = pid
            continue
        m = _OPEN.match(call)
        if m is None:
            continue
        if m.group("path").startswith(MARK_PREFIX):
            events.append((pid, "mark", m.group("path")[len(MARK_PREFIX):], False))
            continue
        found = _relative(root, m)
        if found is not None:
            events.append((pid, "read", found[0], found[1]))
    marking = {pid for pid, kind, _, _ in events if kind == "mark"}

    def owner(pid: int) -> int | None:
        seen: set[int] = set()
        while pid not in marking:
            if pid in seen or pid not in parent:
                return None
            seen.add(pid)
            pid = parent[pid]
        return pid

    everything = Reads()
    shared = Reads()  # opened by processes that ran no test: every test file's input
    timelines: dict[int, Reads] = {}
    current: dict[int, str] = {}
    per_file: dict[str, Reads] = {}
    for pid, kind, path, folder in events:
        who = owner(pid)
        if kind == "mark":
            if who is None:
                continue
            was = current.get(who)
            if was is not None and was != path:
                per_file.setdefault(was, Reads()).update(timelines.setdefault(who, Reads()))
            current[who] = path
            continue
        target = (everything.folders if folder else everything.files)
        target.add(path)
        collecting = who is None or who not in current
        if collecting and _other_test_module(path, folder):
            continue  # collection reads every test module: each is its own input only
        line = shared if who is None else timelines.setdefault(who, Reads())
        (line.folders if folder else line.files).add(path)
    for who, name in current.items():
        per_file.setdefault(name, Reads()).update(timelines.get(who, Reads()))
    for reads in per_file.values():
        reads.update(shared)
    return Trace(everything, per_file)
