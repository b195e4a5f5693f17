"""The ZLink conformance kit: a language-neutral suite that runtimes of ZLink serial
executors run against themselves through an adapter process.

* ``protocol``: the wire protocol (reader, command tables, routing table, JSON Schemas);
  specs/adapter-protocol.md describes it.
* ``catalog``: the case files (``cases/``), their loader and the selection by case or
  rule ID.
* ``oracle``: how a case's log is judged: its own checks and the invariants every log
  must hold.
* ``runner``: adapter processes and case execution; ``report``: console, JSON, JUnit.
* ``adapters.reference``: the reference runtime behind the protocol.
* ``pytest_plugin``: the cases as pytest items (``pytest --zlink-adapter CMD``).

``zlink conformance run`` is the command line; docs/conformance.md the guide.
"""

from .adapters import reference_adapter_command
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
    "reference_adapter_command",
    "select",
]
