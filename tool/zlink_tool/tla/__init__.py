"""Running the TLA+ models in ``models/`` with TLC and checking them against
``models/manifest.json`` (see ``runner``). Separate from the runtime: nothing here is
imported by the queues."""

from .runner import (
    CheckReport,
    Expectation,
    ManifestEntry,
    RunResult,
    TlcOutcome,
    ToolMissingError,
    check_manifest,
    find_jar,
    find_java,
    load_manifest,
    parse_tlc_output,
)

__all__ = [
    "CheckReport",
    "Expectation",
    "ManifestEntry",
    "RunResult",
    "TlcOutcome",
    "ToolMissingError",
    "check_manifest",
    "find_jar",
    "find_java",
    "load_manifest",
    "parse_tlc_output",
]
