"""Both console commands stop quietly when the reader of their output goes away
(``zlink-conformance list | head``): no traceback, and the status a shell gives a
process ended by SIGPIPE (141), so a pipeline that checks statuses sees the cut."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

COMMANDS = {
    "zlink-conformance list": ["-m", "zlink_conformance.cli", "list"],
    "zlink conformance list": ["-m", "zlink_tool.cli.main", "conformance", "list"],
}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_a_closed_pipe_stops_the_command_quietly(name: str) -> None:
    # The reading end is closed before the command starts, so its first write finds
    # the pipe closed whatever the timing (as ``| head`` does after its lines).
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        proc = subprocess.run([sys.executable, *COMMANDS[name]], stdout=write_end,
                              stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(write_end)
    err = proc.stderr.decode()
    assert "Traceback" not in err, f"{name}: a traceback when the reader went away:\n{err}"
    assert proc.returncode == 141, (
        f"{name}: status {proc.returncode} after the reader went away, not 141")
