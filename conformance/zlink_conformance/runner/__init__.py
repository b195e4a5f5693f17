"""The runner: adapter processes and case execution."""

from .process import (
    AdapterCrashedError,
    AdapterError,
    AdapterHungError,
    AdapterProcess,
    AdapterProtocolError,
    Handshake,
    HandshakeError,
)
from .suite import (
    DEFAULT_HANDSHAKE_TIMEOUT,
    DEFAULT_TIMEOUT,
    CaseResult,
    InvalidDurationError,
    Runner,
    SuiteAbortedError,
    SuiteReport,
    Verdict,
)

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "AdapterCrashedError",
    "AdapterError",
    "AdapterHungError",
    "AdapterProcess",
    "AdapterProtocolError",
    "CaseResult",
    "Handshake",
    "HandshakeError",
    "InvalidDurationError",
    "Runner",
    "SuiteAbortedError",
    "SuiteReport",
    "Verdict",
]
