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
