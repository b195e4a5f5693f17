"""The reference adapter: the Python reference runtime (``zlink_reference``) behind the
conformance protocol (``zlink_conformance``).

This package is the one place that stands on both a runtime and the kit's protocol, the
way ``conformance/examples/node/`` does for the Node runtime: the kit never imports a
runtime, and the runtime never imports the kit. It also holds the catalogue of
deliberately broken versions of the reference (``mutants``) that the self-test and the
project's own state machines use.

Run it as ``python -m zlink_reference_adapter`` (or the ``zlink-reference-adapter``
console script).
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["MUTANTS_FILE", "PRELOAD_FILE", "reference_adapter_command"]

MUTANTS_FILE = Path(__file__).with_name("mutants.py")
"""The mutant catalogue, as a file (the self-test reads its names and rules)."""
PRELOAD_FILE = Path(__file__).with_name("preload_mutant.py")
"""The preload file that switches on the mutant named by ``ZLINK_MUTANT_NAME``."""


def reference_adapter_command() -> list[str]:
    """The command line of the reference adapter, with this interpreter."""
    return [sys.executable, "-m", "zlink_reference_adapter"]
