"""The oracle: what a case's log is judged by. The case's own checks (``checks``), the
invariants every log must hold (``invariants``), over the log of positions (``log``)."""

from .checks import CHECK_FIELDS, STATUSES, Check, CheckContext, match_reply, parse_check
from .invariants import INVARIANTS, WorkInfo, check_invariants
from .log import CaseLog, Lifetime

__all__ = [
    "CHECK_FIELDS",
    "INVARIANTS",
    "STATUSES",
    "CaseLog",
    "Check",
    "CheckContext",
    "Lifetime",
    "WorkInfo",
    "check_invariants",
    "match_reply",
    "parse_check",
]
