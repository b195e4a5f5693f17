"""A pytest plugin that marks, in an strace log, which test file runs and which reads can
carry over to a later test file.

``zlink verify`` loads it (``-p zlink_tool.pytest_marks``) only when it runs a pytest
step under strace. It marks by opening paths that never exist, so the failed open
calls show in the log on the line of the thread that made them (``tracelog`` reads
them back); nothing else changes, each open fails at once.

- ``/.zlink-test-file/<file>`` before each test: from now on this process runs that
  test file's tests. Before the first test of a file, the project's memoized loaders
  are emptied (``memos.clear_memos``): what an earlier file's tests loaded is read
  again by the file that needs it, and the read is that file's.
- ``/.zlink-carry/<whose>``: whose the reads a thread makes from now on are. ``*``:
  every later test file's, while it imports a module (the module's code and whatever
  its import reads stay in memory for every later caller). ``f/<fixture>``: a session
  or package fixture's, while it is set up (its value outlives the test file; the
  files whose tests use it depend on those reads). ``-``: the running test file's own.
  Whether a thread is importing is seen from its stack at each audit event that opens
  a file, lists a folder, starts a process or a thread, or starts an import
  (``sys.addaudithook``), and marked only when it changes.
- ``/.zlink-uses/<fixture>``: the running test file uses that outliving fixture (once
  per file).
- ``/.zlink-copy/<folder>`` and ``/.zlink-copy/``: around a copy of the checkout into
  ``folder`` made by ``copy_checkout`` (the copy stands for the files of it read later,
  ``tracelog``). A fixture calls it; outside a traced run the marks are failed opens
  and nothing else.
"""

from __future__ import annotations

import os
import shutil
import sys
import threading
from collections.abc import Callable, Generator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from .memos import clear_memos
from .tracelog import CARRY_PREFIX, COPY_PREFIX, EVERY, FIXTURE, MARK_PREFIX, OWN, USES_PREFIX

__all__ = ["copy_checkout", "pytest_configure", "pytest_fixture_setup", "pytest_runtest_protocol"]

# The audit events after which a thread may read a file or start something that does.
_WATCHED = frozenset({"open", "import", "os.listdir", "os.scandir", "subprocess.Popen",
                      "os.posix_spawn", "os.exec", "os.fork", "os.spawn", "os.system",
                      "_thread.start_new_thread", "os.chdir"})
# The frames of the import system below which a module is found, loaded and run.
# (``exec_module`` also when a test loads a module from its file itself.)
_IMPORTING = frozenset({"_find_and_load", "_load", "_exec", "_load_unlocked",
                        "exec_module"})
_BOOTSTRAP = "<frozen importlib._bootstrap"
OUTLIVING = ("session", "package")


class _Thread(threading.local):
    def __init__(self) -> None:
        self.said = OWN  # what the last mark of this thread said its reads are
        self.fixtures: list[str] = []  # session or package fixtures being set up here
        self.busy = False  # inside this plugin's own open (its audit event is ignored)


_state = _Thread()
_last_file: list[str] = []
_used: set[str] = set()  # the fixtures marked as used by the running test file


def _mark(path: str) -> None:
    _state.busy = True
    try:
        os.close(os.open(path, os.O_RDONLY))
    except OSError:
        pass  # always: the path does not exist; the failed open is the mark
    finally:
        _state.busy = False


def _importing(frame: FrameType | None) -> bool:
    while frame is not None:
        code = frame.f_code
        if code.co_name in _IMPORTING and code.co_filename.startswith(_BOOTSTRAP):
            return True
        frame = frame.f_back
    return False


def _settle(starting_import: bool = False) -> None:
    """Mark whose this thread's reads are from now on, if that changed: every later
    test file's (an import), a fixture's (its setup), or the running file's own."""
    if _state.busy:
        return
    if starting_import or _importing(sys._getframe(1)):
        said = EVERY
    else:
        said = FIXTURE + _state.fixtures[-1] if _state.fixtures else OWN
    if said != _state.said:
        _state.said = said
        _mark(CARRY_PREFIX + said)


def _fixture_id(fixturedef: pytest.FixtureDef[Any]) -> str:
    return f"{fixturedef.baseid}::{fixturedef.argname}"


def _audit(event: str, args: tuple[Any, ...]) -> None:
    del args
    if event in _WATCHED and not _state.busy:
        _settle(starting_import=event == "import")


def pytest_configure(config: pytest.Config) -> None:
    """Watch the process's audit events (a hook cannot be removed: the process is a
    traced test run and ends with it)."""
    del config
    sys.addaudithook(_audit)


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
                         ) -> Generator[None, None, None]:
    """A session or package fixture's setup reads for every later test file that uses
    the fixture."""
    del request
    outlives = fixturedef.scope in OUTLIVING
    if outlives:
        _state.fixtures.append(_fixture_id(fixturedef))
        _settle()
    try:
        yield
    finally:
        if outlives:
            _state.fixtures.pop()
            _settle()


def _outliving_fixtures(item: pytest.Item) -> set[str]:
    """The session and package fixtures a test uses (directly or through others)."""
    info = getattr(item, "_fixtureinfo", None)
    defs = getattr(info, "name2fixturedefs", {}) if info is not None else {}
    return {_fixture_id(d) for name in getattr(item, "fixturenames", ())
            for d in defs.get(name, ()) if d.scope in OUTLIVING}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Empty the memoized loaders at a new test file, mark the test's file and the
    outliving fixtures it uses, then let pytest run the test as usual."""
    del nextitem
    root = Path(str(item.config.rootpath)).resolve()
    rel = Path(str(item.path)).resolve().relative_to(root).as_posix()
    if _last_file != [rel]:
        clear_memos(root)
        _last_file[:] = [rel]
        _used.clear()
    _settle()
    _mark(MARK_PREFIX + rel)
    for fixture in sorted(_outliving_fixtures(item) - _used):
        _used.add(fixture)
        _mark(USES_PREFIX + fixture)


def copy_checkout(root: Path, folder: Path,
                  ignore: Callable[[str, list[str]], set[str]] | None = None) -> None:
    """Copy the checkout ``root`` into ``folder`` (``shutil.copytree``, which moves the
    bytes without looking at them), marked so that a traced run counts the files of the
    copy read later as reads of the checkout's, and the copying itself as a listing of
    the copied folders only. Symlinks are copied as the files they point to."""
    target = folder.resolve()
    _mark(COPY_PREFIX + target.as_posix())
    try:
        shutil.copytree(root, target, ignore=ignore)
    finally:
        _mark(COPY_PREFIX)
