"""A pytest plugin that marks, in an strace log, which test file runs from now on.

``zlink verify`` loads it (``-p zlink_tool.pytest_marks``) only when it runs a pytest
step under strace: before each test it opens ``/.zlink-test-file/<file>``, a path that
never exists, so the open call, and the test file, show in the log on the line of the
process running the test (``tracelog`` reads it back). Nothing else changes: the open
fails at once and the test runs as it would.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from .tracelog import MARK_PREFIX

__all__ = ["pytest_runtest_protocol"]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    """Mark the test's file, then let pytest run the test as usual."""
    del nextitem
    rel = Path(str(item.path)).resolve().relative_to(Path(str(item.config.rootpath)).resolve())
    try:
        os.close(os.open(MARK_PREFIX + rel.as_posix(), os.O_RDONLY))
    except OSError:
        pass  # always: the path does not exist; the failed open is the mark
