"""The ZLink conformance kit: a language-neutral suite that runtimes of ZLink serial
executors run against themselves through an adapter process.

* ``protocol``: the wire protocol (reader, command tables, routing table, JSON Schemas);
  specs/adapter-protocol.md describes it.
* ``catalog``: the case files (``cases/``), their loader and the selection by case or
  rule ID.
* ``oracle``: how a case's log is judged: its own checks and the invariants every log
  must hold.
* ``runner``: adapter processes and case execution; ``report``: console, JSON, JUnit.
* ``selftest``: the kill matrix of a catalogue of deliberately broken runtimes.
* ``pytest_plugin``: the cases as pytest items (``pytest --zlink-adapter CMD``).

``zlink-conformance run --adapter CMD`` is the command line (``cli``); docs/conformance.md
the guide. The kit stands on the model (``zlink_model``) only: it never imports a runtime.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .catalog import Case, CaseError, Catalogue, SelectionError, load_catalogue, select
    from .protocol.wire import PROTOCOL_VERSION
    from .runner import CaseResult, Runner, SuiteAbortedError, SuiteReport

__all__ = [
    "PROTOCOL_VERSION",
    "Case",
    "CaseError",
    "CaseResult",
    "Catalogue",
    "Runner",
    "SelectionError",
    "SuiteAbortedError",
    "SuiteReport",
    "load_catalogue",
    "select",
]

# The module each public name lives in, imported at the name's first use: a process that
# needs one part of the kit imports only that part. An adapter reads ``protocol.wire``
# alone, and importing the package would otherwise load the runner, the catalogue and the
# oracle at every adapter start (about half of the reference adapter's start-up time).
_HOMES = {
    "PROTOCOL_VERSION": "protocol.wire",
    "Case": "catalog", "CaseError": "catalog", "Catalogue": "catalog",
    "SelectionError": "catalog", "load_catalogue": "catalog", "select": "catalog",
    "CaseResult": "runner", "Runner": "runner", "SuiteAbortedError": "runner",
    "SuiteReport": "runner",
}


def __getattr__(name: str) -> Any:
    """Import a public name's module on the name's first use (PEP 562)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
