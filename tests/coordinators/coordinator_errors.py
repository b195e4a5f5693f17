"""The list every coordinator built by the coordinator tests reports work failures
into; the autouse fixture in conftest.py fails a test that leaves one it did not expect.
A module of its own, so tests and fixture share one list whatever conftest pytest
loaded last."""

from __future__ import annotations

unexpected_errors: list[BaseException] = []
