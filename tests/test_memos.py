"""What the finer record of ``zlink verify``'s test files rests on: no module of the
project keeps file content in memory where a later test file could use it without
reading the file, except in memoized functions, which the test-file boundary empties
(``zlink_tool.memos``, ``zlink_tool.pytest_marks``). Every module-level cache, memoized
function, cached property, rebound global and outliving fixture of the packages, the
tests and their conftests is found and either emptied at the boundary or reviewed."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zlink_tool.memos import clear_memos, find_memos, load_module, scan, source_files, uncovered

ROOT = Path(__file__).resolve().parent.parent


def test_every_in_memory_copy_of_file_content_is_emptied_at_a_file_boundary_or_reviewed(
) -> None:
    found = scan(ROOT, source_files(ROOT))
    # The scan sees the project's memoized loaders (it is not looking at nothing).
    assert any(m.key == "tool/zlink_tool/tla/runcache.py:_digest" for m in found)
    problems = uncovered(ROOT, found, load_module)
    assert not problems, "a test file could use file content an earlier one read:\n" + \
        "\n".join(problems)


PLANTED = '''\
import functools
from pathlib import Path

_CACHE: dict[str, str] = {}
_LAST = None


def load(path: str) -> str:
    """A module-level cache: what it read stays for every later caller."""
    if path not in _CACHE:
        _CACHE[path] = Path(path).read_text()
    return _CACHE[path]


def remember(path: str) -> str:
    global _LAST
    _LAST = Path(path).read_text()
    return _LAST


@functools.cache
def settings() -> str:
    return Path("settings.toml").read_text()


def factory():
    @functools.cache
    def inner() -> str:
        return Path("inner.txt").read_text()
    return inner


read_once = functools.lru_cache(maxsize=1)(load)


class Loader:
    _seen: dict[str, str] = {}

    def load(self, path: str) -> str:
        return self._seen.setdefault(path, Path(path).read_text())


def test_reaches_a_fixture_by_name(request) -> None:
    assert request.getfixturevalue("catalogue")
'''


def test_a_planted_module_level_cache_is_found_and_fails_the_check(tmp_path: Path) -> None:
    module = tmp_path / "pkg" / "loaders.py"
    module.parent.mkdir()
    module.write_text(PLANTED, encoding="utf-8")
    found = scan(tmp_path, [module])
    problems = "\n".join(uncovered(tmp_path, found, load_module))
    # The dict cache and the rebound global are neither emptied nor reviewed; the cache
    # memoized inside a function is out of the clearing's reach.
    assert "module state changed _CACHE" in problems
    assert "global rebound _LAST" in problems
    assert "memoized function factory.inner" in problems and "cannot reach" in problems
    # A container every instance shares, filled by a method.
    assert "class state changed Loader._seen" in problems
    # A fixture reached by name is not among those the plugin marks as used.
    assert "fixture reached by name" in problems
    # The module's memoized functions are emptied at the boundary: no problem there.
    assert "settings" not in problems and "read_once" not in problems
    # Every REVIEWED entry names something of the real project, none of this module.
    assert "reviewed in memos.REVIEWED, but no such state found" in problems


def test_the_boundary_empties_every_memoized_function_of_the_project(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    module = tmp_path / "loaders_for_clear.py"
    module.write_text(PLANTED, encoding="utf-8")
    (tmp_path / "settings.toml").write_text("a = 1\n", encoding="utf-8")
    loaded = load_module(module)
    memos = find_memos(tmp_path, [loaded])
    assert {k.split(":", 1)[1] for k in memos} == {"settings", "read_once"}
    loaded.settings()
    assert loaded.settings.cache_info().currsize == 1
    sys.modules["loaders_for_clear_planted"] = loaded
    try:
        assert clear_memos(tmp_path) >= 2
    finally:
        del sys.modules["loaders_for_clear_planted"]
    assert loaded.settings.cache_info().currsize == 0
