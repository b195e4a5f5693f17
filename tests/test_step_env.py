"""The environment of ``zlink verify``'s steps (``steprun.step_env``): a step writes the
bytecode of the modules it imports even when the caller's environment asks Python not
to (``PYTHONDONTWRITEBYTECODE``), so that its hundreds of Python processes do not each
compile the project's modules from source; reads of that bytecode count as reads of the
sources (``tracelog``, tested in ``test_verify_parallel.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from zlink_tool.steprun import run_counting_cpu, step_env


def test_a_step_writes_bytecode_whatever_its_caller_asks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    env = step_env({"ZLINK_EXAMPLE": "kept"})
    code, output, _ = run_counting_cpu(
        [sys.executable, "-c", "import os, sys; print(sys.dont_write_bytecode, "
                               "os.environ['ZLINK_EXAMPLE'], os.environ['PYTHONUNBUFFERED'])"],
        tmp_path, env)
    assert code == 0
    assert output.split() == ["False", "kept", "1"]
