"""Coordinator tests fail on any work failure nobody asked for: every coordinator built
by the tests reports failures into ``unexpected_errors``."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from coordinator_errors import unexpected_errors


@pytest.fixture(autouse=True)
def _no_unexpected_work_failures(request: pytest.FixtureRequest) -> Iterator[None]:
    unexpected_errors.clear()
    yield
    if request.node.get_closest_marker("expect_errors") is None:
        assert not unexpected_errors, f"works failed unexpectedly: {unexpected_errors!r}"


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "expect_errors: the test expects work failures")
