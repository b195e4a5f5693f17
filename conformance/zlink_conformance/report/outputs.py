"""The JSON report (``--json FILE``): the handshake, the summary, the counts by rule and
every case with its verdict, reasons and time in seconds (``time_s``).

The report is data for programs, so adapter text stays whole (a huge name, every
capability). It is written as ASCII JSON, whose encoder escapes every control character,
after ``text.json_data`` has turned each lone surrogate into visible text: a strict JSON
reader refuses a ``\ud800`` escape, and no UTF-8 writer can write the character."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..runner.suite import SuiteReport
from .text import json_data

__all__ = ["write_json"]


def write_json(report: SuiteReport, path: str | Path,
               extra: Mapping[str, Any] | None = None) -> None:
    """Write ``report.to_json()`` (plus ``extra`` keys) to ``path``."""
    data = report.to_json()
    if extra:
        data.update(extra)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(json_data(data), indent=2, ensure_ascii=True) + "\n",
                      encoding="utf-8")
