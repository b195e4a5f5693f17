"""A copy of the checkout stands, in ``zlink verify``'s record, for the files of it that
are read later, not for every file copied (``tracelog``, ``pytest_marks.copy_checkout``).

The packaging tests build every distribution from a copy of the checkout; copying reads
every file, so before this rule a change to a guide no distribution ships reran every
build. The record must stay sound: a copied file a later process reads from the copy is
an input of the test files that use the copy, and a file added to a copied folder is
too (the copy's tree is). A scratch project, run twice under strace through the runner
``zlink verify`` uses: a session fixture copies the project, then a child process reads
``data/shipped.txt`` from the copy (as a build reads what it packs); ``data/unread.txt``
is copied and never read.
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
    "conftest.py": '''\
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from zlink_tool.pytest_marks import copy_checkout

ROOT = Path(__file__).resolve().parent


@pytest.fixture(scope="session")
def built():
    folder = Path(tempfile.mkdtemp()) / "source"
    copy_checkout(ROOT, folder, ignore=shutil.ignore_patterns("__pycache__"))
    code = "import sys; print(open(sys.argv[1]).read())"
    out = subprocess.run([sys.executable, "-c", code, str(folder / "data" / "shipped.txt")],
                         capture_output=True, text=True, check=True).stdout
    shutil.rmtree(folder.parent)
    return out
''',
    "tests/test_uses_the_copy.py": '''\
def test_the_build_packs_the_shipped_file(built) -> None:
    assert built.startswith("v")
''',
    "tests/test_other.py": '''\
def test_nothing_of_the_copy() -> None:
    assert True
''',
    "data/shipped.txt": "v1\n",
    "data/unread.txt": "u1\n",
}
USES = "tests/test_uses_the_copy.py"


def _run(root: Path) -> set[str]:
    """Run the test files as the tests step would, in one process; the files run."""
    runner = StepRunner(root, ResultCache(root), environment_digest(root), True)
    out = runner.run_pytest("tests", [sys.executable, "-m", "pytest", "-q", "-p",
                                      "no:cacheprovider"], [], ["tests"], 1, step_env({}))
    assert out.code == 0, out.output
    return set(out.ran_files)


def test_a_copy_stands_for_the_files_read_from_it_and_for_its_tree(tmp_path: Path) -> None:
    for rel, text in FILES.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    assert _run(tmp_path) == {USES, "tests/test_other.py"}
    assert _run(tmp_path) == set(), "nothing changed, yet a test file ran"
    # Copied, never read from the copy: no test file depends on its bytes.
    (tmp_path / "data/unread.txt").write_text("u2\n", encoding="utf-8")
    assert _run(tmp_path) == set(), "a copied file nothing read made the copy's users rerun"
    # Read from the copy by a child of the fixture: the fixture's users rerun.
    (tmp_path / "data/shipped.txt").write_text("v2\n", encoding="utf-8")
    assert _run(tmp_path) == {USES}, "a file read from the copy was not an input"
    # A file added to a copied folder changes the copy's tree.
    (tmp_path / "data/added.txt").write_text("a\n", encoding="utf-8")
    assert _run(tmp_path) == {USES}, "a file added to a copied folder was not an input"
