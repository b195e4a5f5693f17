"""The JSON report (``--json FILE``): the handshake, the summary, the counts by rule and
every case with its verdict, reasons and time in seconds (``time_s``)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..runner.suite import SuiteReport

__all__ = ["write_json"]


def write_json(report: SuiteReport, path: str | Path,
               extra: Mapping[str, Any] | None = None) -> None:
    """Write ``report.to_json()`` (plus ``extra`` keys) to ``path``."""
    data = report.to_json()
    if extra:
        data.update(extra)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
