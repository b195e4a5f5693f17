"""A console command whose reader went away: ``zlink-conformance list | head`` closes the
pipe after a few lines, and the command should then stop quietly, as ``ls | head`` does,
not print a traceback of the write that found the pipe closed.

Both console scripts (``zlink-conformance`` and ``zlink``) end their ``main`` through
``stop_on_closed_stdout``. The exit status is 141, what a shell reports for a process
ended by SIGPIPE, so a pipeline that checks statuses still sees the output was cut.
"""

from __future__ import annotations

import os
import sys

__all__ = ["CLOSED_PIPE_STATUS", "stop_on_closed_stdout"]

CLOSED_PIPE_STATUS = 141


def stop_on_closed_stdout() -> int:
    """Point standard output at the null device, so the interpreter's final flush of
    what is still buffered does not raise a second time, and give the status to exit
    with."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no file descriptor behind sys.stdout (a test's capture)
        pass
    return CLOSED_PIPE_STATUS
