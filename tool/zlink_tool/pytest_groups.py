"""A pytest plugin that makes pytest-xdist's ``--dist loadgroup`` keep an ``xdist_group``
on one worker under pytest 9 as it does under pytest 8.

``loadgroup`` hands out whole every set of tests whose node ids end in the same
``@<group>``; each worker appends that suffix to the ids of its tests marked
``pytest.mark.xdist_group`` while it collects. pytest-xdist 3.8 does it by setting
``item._nodeid``, which pytest 9 no longer reads (a node's id is the structured
``item._id``): the marks were silently ignored, every group's tests were spread over
every worker, and each worker made the module and session fixtures again (in a cold
``zlink verify``, ``./dev dist`` three times, the fresh virtual environments, the Java
and Node suites, TLC's bug runs: docs/performance.md, "The verify loop", sixth pass).

This plugin gives an id the suffix when pytest-xdist's own step left it without one,
after every other ``pytest_collection_modifyitems`` (the controller schedules by the ids
a worker reports when its collection is finished). Under pytest 8, where pytest-xdist's
step works, it finds the suffix there and does nothing. ``tests/conftest.py`` loads it
for every run of the suite; ``tests/test_xdist_groups.py`` runs grouped tests on three
workers and requires each group to end on one.
"""

from __future__ import annotations

import pytest

__all__ = ["group_suffix", "pytest_collection_modifyitems"]


def group_suffix(item: pytest.Item) -> str:
    """``@<group>`` for an item marked ``xdist_group`` (several groups joined by ``_``,
    as pytest-xdist names them), else the empty string."""
    names = {str(m.args[0] if m.args else m.kwargs.get("name", "default"))
             for m in item.iter_markers("xdist_group")}
    return "@" + "_".join(sorted(names)) if names else ""


def _set_id(item: pytest.Item, nodeid: str) -> None:
    """Give an item a new node id, in the form the running pytest reads it from."""
    structured = getattr(item, "_id", None)
    if structured is not None and hasattr(type(structured), "parse"):
        item._id = type(structured).parse(nodeid)  # pytest 9
    else:
        item._nodeid = nodeid  # type: ignore[attr-defined]  # pytest 8 and earlier


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In a pytest-xdist worker of a ``loadgroup`` run, give each grouped test's id the
    ``@<group>`` suffix pytest-xdist meant it to have."""
    if not getattr(config.option, "loadgroup", False):
        return
    for item in items:
        suffix = group_suffix(item)
        if suffix and not item.nodeid.endswith(suffix):
            _set_id(item, item.nodeid + suffix)
