"""The finer record of ``zlink verify``'s test files is sound where a loader keeps what
it read: a test file that gets a file's content only from a memoized loader an earlier
test file filled is recomputed when that file changes. And it is finer than the whole
process's timeline: a file one test file's own test read is not a later file's input.

A scratch project of two test files run in one process, in order, under strace, through
the runner ``zlink verify`` uses: ``test_a_first`` calls the memoized loader (its first
call reads ``data/setting.txt``) and reads ``data/only_a.txt`` itself;
``test_b_second`` calls the same loader. Without the boundary emptying the loader,
``test_b_second`` would read nothing and its record would miss ``data/setting.txt``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zlink_tool.checkinputs import environment_digest
from zlink_tool.resultcache import ResultCache, strace_available
from zlink_tool.steprun import StepRunner, step_env

pytestmark = pytest.mark.skipif(not strace_available(),
                                reason="strace is missing or this process is traced")

FILES = {
    "pytest.ini": "[pytest]\n",
    "conftest.py": "",
    "loader.py": '''\
import functools
from pathlib import Path


@functools.cache
def setting() -> str:
    return (Path(__file__).parent / "data" / "setting.txt").read_text()
''',
    "tests/test_a_first.py": '''\
from pathlib import Path

from loader import setting


def test_reads_its_own_file_and_fills_the_loader() -> None:
    assert (Path(__file__).parents[1] / "data" / "only_a.txt").read_text()
    assert setting().startswith("v")
''',
    "tests/test_b_second.py": '''\
from loader import setting


def test_uses_what_the_loader_holds() -> None:
    assert setting().startswith("v")
''',
    "data/setting.txt": "v1\n",
    "data/only_a.txt": "a\n",
}
A, B = "tests/test_a_first.py", "tests/test_b_second.py"


def _run(root: Path) -> set[str]:
    """Run both test files as the tests step would, in one process; the files run."""
    runner = StepRunner(root, ResultCache(root), environment_digest(root), True)
    out = runner.run_pytest("tests", [sys.executable, "-m", "pytest", "-q", "-p",
                                      "no:cacheprovider"], [], ["tests"], 1, step_env({}))
    assert out.code == 0, out.output
    return set(out.ran_files)


def test_a_file_read_only_through_a_loader_an_earlier_file_filled_is_an_input(
        tmp_path: Path) -> None:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert _run(tmp_path) == {A, B}
    assert _run(tmp_path) == set(), "nothing changed, yet a test file ran"
    # The loader's file: both files use its content, so both are recomputed.
    (tmp_path / "data/setting.txt").write_text("v2\n", encoding="utf-8")
    assert _run(tmp_path) == {A, B}, "a file read through the loader was not an input"
    # A file test_a's own test read: test_a only, not the file after it.
    (tmp_path / "data/only_a.txt").write_text("b\n", encoding="utf-8")
    assert _run(tmp_path) == {A}
