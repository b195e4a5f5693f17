"""What a traced check read: an ``strace -f -y`` log of open calls, read back.

``zlink verify`` runs a step under strace to learn which files and folders of the
checkout it opened, so the result cache can tell when a passing result still holds
(``resultcache``). A pytest step is also split by test file: the pytest plugin
``zlink_tool.pytest_marks`` opens paths that do not exist, and the log shows them on
the line of the thread that opened them: ``/.zlink-test-file/<file>`` before each test
(the process runs that file's tests from now on) and ``/.zlink-carry/1`` or ``/0``
(the thread's reads from now on can, or cannot, carry over to a later test file).

A test file depends, in each process that ran its tests, on

- what the process read that can carry over, up to the end of the file's last test:
  everything before its first test (collection, the imports, conftest), and after it
  the reads marked as carrying over (imports and what they read, session and package
  fixtures) and those of any thread or child process started while its starter's reads
  carried over (a server a session fixture started keeps what it read);
- what its own tests read: every other read between its first mark and the next file's.

What an earlier file's own tests read and a loader kept in memory is not a later file's
input because the plugin empties the project's memoized loaders at each file boundary,
and ``memos`` (with its test) holds that no module keeps file content any other way.
When its tests ran in several processes (pytest-xdist), a test file depends on the union.
Threads and child processes (an adapter, TLC, Node) count as their parent's: their
reads join the parent's timeline, carrying over or not as their starter's did at the
time. Processes that never ran a test (pytest-xdist's controller) count for every test
file. Collection's reads of test modules and test folders are not inputs of the other
test files (``_other_test_module``). Files outside the checkout are the environment's
(its digest is in the cache key), except a jar, kept by its absolute path: a check that
ran TLC depends on the jar's bytes. A jar the traced processes wrote themselves before
reading it (a test's stand-in for TLC in a temporary folder) is their own output, not
an input: its bytes come from what the check read, and the folder is gone after it.

A copy of the checkout (``/.zlink-copy/<folder>`` before it, ``/.zlink-copy/`` after
it, on the copying thread) stands for the files of it that are read later, not for
every file copied: the copying thread only moves bytes, so its opens of the checkout's
files are not reads of their content; what it lists is (the copy's tree, so a file
added to or removed from a copied folder still counts). After the copy, opening
``<folder>/X`` (from any process) is a read of the checkout's ``X`` when ``X`` was
copied; a file the copy did not come from the checkout (build output written into it)
is derived from reads that are recorded. A package whose build reads only some files
of a copy (the packaging tests' sdists) then depends on those, and on no guide it does
not ship.
"""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

__all__ = ["CARRY_PREFIX", "COPY_PREFIX", "EVERY", "FIXTURE", "MARK_PREFIX", "OWN",
           "USES_PREFIX", "Reads", "read_trace"]

MARK_PREFIX = "/.zlink-test-file/"
CARRY_PREFIX = "/.zlink-carry/"
USES_PREFIX = "/.zlink-uses/"
COPY_PREFIX = "/.zlink-copy/"
# Whose a thread's reads are (after CARRY_PREFIX): every later test file's, a fixture's
# (FIXTURE + its id), or the running test file's own.
EVERY = "*"
FIXTURE = "f/"
OWN = "-"
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


def _opened(root: Path, m: re.Match[str], *, real: bool = True) -> Path:
    """The absolute path one open call names: the path it reached (``-y``'s, symlinks
    resolved) when ``real`` and the call succeeded, else the path as it was given."""
    if real and int(m.group("ret")) >= 0 and m.group("real"):
        return Path(os.path.normpath(m.group("real")))
    base = m.group("cwd") or m.group("dir") or str(root)
    return Path(os.path.normpath(Path(base, m.group("path"))))


def _opened_text(m: re.Match[str]) -> str:
    """``_opened(root, m)`` as a string, for a process's own folder given by ``-y``
    (``AT_FDCWD<...>``) or by a descriptor; without either, the empty string (the path
    is then read the long way)."""
    if int(m.group("ret")) >= 0 and m.group("real"):
        return os.path.normpath(m.group("real"))
    base = m.group("cwd") or m.group("dir")
    return os.path.normpath(os.path.join(base, m.group("path"))) if base else ""


def _may_count(path: str, under: list[str]) -> bool:
    """Whether an opened path (``_opened_text``) can be what the log is read for: in the
    checkout or a copy of it (``under``), or a jar. False only when it cannot: most
    opens of a log are the interpreter's, the libraries' and the temporary folders', and
    reading each the long way (``_relative``, pathlib) took most of the time spent
    reading a log (docs/performance.md, "The verify loop", sixth pass)."""
    if not path or path.endswith(".jar"):
        return True
    return any(path == folder or path.startswith(folder.rstrip("/") + "/")
               for folder in under)


def _written(m: re.Match[str]) -> bool:
    flags = m.group("flags") or ""
    return "O_WRONLY" in flags or "O_RDWR" in flags or "O_CREAT" in flags


def _folder(m: re.Match[str]) -> bool:
    """The open call opened a folder (to list it)."""
    return "O_DIRECTORY" in (m.group("flags") or "")


def _inside(root: Path, path: Path, folder: bool) -> tuple[str, bool] | None:
    """(path relative to ``root``, is a folder), or None when ``path`` is not a file of
    ``root`` that counts (outside it, a tool's cache)."""
    try:
        rel = path.relative_to(root)
    except ValueError:
        return None
    if not rel.parts or SKIPPED.intersection(rel.parts) or rel.parts[0].startswith("<"):
        return None  # "<unknown>", "<string>": names of code objects, not files
    if "__pycache__" in rel.parts:
        pyc = _PYC.match(rel.name)
        if pyc is None or rel.parent.name != "__pycache__":
            return None
        rel = rel.parent.parent / (pyc.group("stem") + ".py")  # the source it stands for
    return rel.as_posix(), folder


def _relative(root: Path, m: re.Match[str], made: set[Path] | None = None
              ) -> tuple[str, bool] | None:
    """(checkout-relative path, is a folder) of one open call, or None if it does not
    count (outside the checkout, written, a tool's cache). ``made``: the jars outside
    the checkout the traced processes wrote (their own output)."""
    path = _opened(root, m)
    if _written(m):
        if made is not None and path.suffix == ".jar":
            made.add(path)
        return None  # the check's own output
    found = _inside(root, path, _folder(m))
    if found is None and path.suffix == ".jar" and int(m.group("ret")) >= 0 \
            and not path.is_relative_to(root) and path not in (made or set()):
        # Outside the checkout only a jar counts (TLC's, whose content the checks
        # that run TLC depend on); the rest is the environment's.
        return path.as_posix(), False
    return found


@dataclasses.dataclass
class _Copy:
    """A copy of the checkout: where it is, and the files and folders it came from."""

    folder: Path
    files: set[str] = dataclasses.field(default_factory=set)
    folders: set[str] = dataclasses.field(default_factory=set)

    def source(self, root: Path, m: re.Match[str]) -> tuple[str, bool] | None:
        """The checkout's file or folder an open inside the copy reads, if the copy
        took it from the checkout."""
        folder = _folder(m)
        found = _inside(self.folder, _opened(root, m), folder)
        if found is None:
            return None
        return found if found[0] in (self.folders if folder else self.files) else None


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
    marks = ((MARK_PREFIX, "mark"), (CARRY_PREFIX, "whose"), (USES_PREFIX, "uses"))
    copying: dict[int, _Copy] = {}  # per thread: the copy it is making
    copies: list[_Copy] = []
    made: set[Path] = set()  # jars outside the checkout the traced processes wrote
    under = [str(root)]  # the checkout and the copies of it (``_may_count``)
    inside = str(root).rstrip("/") + "/"
    known: dict[tuple[str, str], tuple[str, bool] | None] = {}
    for pid, call in _joined(log.splitlines()):
        if spawn := _SPAWN.match(call):
            child = int(spawn.group("child"))
            parent[child] = pid
            events.append((pid, "spawn", str(child), False))
            continue
        m = _OPEN.match(call)
        if m is None:
            continue
        path = m.group("path")
        if path.startswith(COPY_PREFIX):
            folder = path[len(COPY_PREFIX):]
            copying.pop(pid, None)
            if folder:
                copying[pid] = _Copy(Path(os.path.normpath(folder)))
                copies.append(copying[pid])
                under.append(str(copying[pid].folder))
            continue
        kind = next((k for prefix, k in marks if path.startswith(prefix)), None)
        if kind is not None:
            events.append((pid, kind, path.split("/", 2)[2], False))
            continue
        if pid in copying:
            # The path as the copy named it (a symlink copied is the link's path).
            taken = None if _written(m) else _inside(
                root, _opened(root, m, real=False), _folder(m))
            if taken is not None:
                into = copying[pid]
                (into.folders if taken[1] else into.files).add(taken[0])
                if taken[1]:
                    events.append((pid, "read", taken[0], True))  # the tree is an input
            continue
        text = _opened_text(m)
        if not _may_count(text, under):
            continue
        if text.startswith(inside) and not text.endswith(".jar"):
            # A file of the checkout (not a jar): what ``_relative`` answers depends on
            # the path and the flags only, and most such paths are opened again and
            # again (every process imports the same modules).
            key = (text, m.group("flags") or "")
            if key not in known:
                known[key] = _relative(root, m, made)
            found = known[key]
        else:
            found = _relative(root, m, made)
        if found is None and not _written(m):
            found = next((f for c in copies if (f := c.source(root, m)) is not None), None)
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

    said: dict[int, str] = {}  # the last whose-mark of each thread
    born: dict[int, str] = {}  # started while its starter's reads were not its test's own

    def whose(pid: int) -> str:
        """Whose a thread's reads are now: EVERY, FIXTURE + id, or OWN."""
        seen: set[int] = set()
        while pid not in seen:
            seen.add(pid)
            if pid in born:
                return born[pid]
            if pid in said:
                return said[pid]
            if pid in marking or pid not in parent:
                return OWN if pid in marking else EVERY
            pid = parent[pid]
        return EVERY

    everything = Reads()
    shared = Reads()  # opened by processes that ran no test: every test file's input
    carried: dict[int, Reads] = {}  # per process: what carries over to every later file
    fixtures: dict[tuple[int, str], Reads] = {}  # per process and fixture: its setup's
    own: dict[int, Reads] = {}  # per process: what the running file's tests read
    uses: dict[int, set[str]] = {}  # per process: the fixtures the running file uses
    current: dict[int, str] = {}
    per_file: dict[str, Reads] = {}

    def close(who: int, name: str) -> None:
        reads = per_file.setdefault(name, Reads())
        reads.update(carried.setdefault(who, Reads()))
        reads.update(own.pop(who, Reads()))
        for fixture in uses.pop(who, set()):
            reads.update(fixtures.get((who, fixture), Reads()))

    for pid, kind, path, folder in events:
        who = owner(pid)
        if kind == "spawn":
            if who is not None and who in current and (now := whose(pid)) != OWN:
                born[int(path)] = now
            continue
        if kind == "whose":
            said[pid] = path
            continue
        if kind == "uses":
            if who is not None:
                uses.setdefault(who, set()).add(path)
            continue
        if kind == "mark":
            if who is None:
                continue
            was = current.get(who)
            if was is not None and was != path:
                close(who, was)
            current[who] = path
            continue
        target = (everything.folders if folder else everything.files)
        target.add(path)
        collecting = who is None or who not in current
        if collecting and _other_test_module(path, folder):
            continue  # collection reads every test module: each is its own input only
        if who is None:
            line = shared
        elif collecting:
            line = carried.setdefault(who, Reads())
        else:
            now = whose(pid)
            if now == OWN:
                line = own.setdefault(who, Reads())
            elif now.startswith(FIXTURE):
                line = fixtures.setdefault((who, now[len(FIXTURE):]), Reads())
            else:
                line = carried.setdefault(who, Reads())
        (line.folders if folder else line.files).add(path)
    for who, name in current.items():
        close(who, name)
    for reads in per_file.values():
        reads.update(shared)
    return Trace(everything, per_file)
