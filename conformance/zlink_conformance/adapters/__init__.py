"""Adapters shipped with the kit: the reference adapter over ``zlink_reference``."""

from __future__ import annotations

import sys

__all__ = ["reference_adapter_command"]


def reference_adapter_command() -> list[str]:
    """The command line of the bundled reference adapter, with this interpreter."""
    return [sys.executable, "-m", "zlink_conformance.adapters.reference"]
