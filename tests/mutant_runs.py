"""Pytest runs under one mutant each, every run forked from a process that has already
loaded what a run loads before its mutant is applied.

The kill matrix (``test_kill_matrix.py``) runs the machines and the unit tests under each
catalogued mutant in a pytest run of its own: a mutant patches the reference for the
whole process, so no two may share one. Started fresh, each run spent about a second
of CPU importing pytest, Hypothesis and the reference before its first test, as much as
most runs then spent testing (docs/performance.md, "The verify loop", sixth pass).

A server process (this file run as a script) loads those once: pytest, Hypothesis and
what ``tests/conftest.py`` imports before it applies ``ZLINK_MUTANT``, that is
``zlink_reference`` and the mutant catalogue with the model modules they import. It
applies no mutant and runs no test. For each request it forks; the child takes the
request's environment (the mutant) and runs ``pytest.main`` with the request's
arguments, its output to a file. The child's state when ``tests/conftest.py`` applies
the mutant is the state of a fresh ``python -m pytest`` at that point: the same modules
loaded and nothing run; everything later (conftest, the test modules, the tests) is
loaded and run in the child alone. The one difference is that pytest did not rewrite
the assertions inside Hypothesis's own modules (they were loaded before pytest started),
which changes a message of Hypothesis's internal checks, never a verdict.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

__all__ = ["MutantRuns"]

_SCRIPT = Path(__file__).resolve()


class MutantRuns:
    """A server that forks one pytest run per request; one request at a time (use one
    server per thread). A context manager: the server ends with it."""

    def __init__(self, cwd: Path, env: dict[str, str]) -> None:
        self.cwd = cwd
        server_env = {k: v for k, v in env.items() if k != "ZLINK_MUTANT"}
        # Its own session, so a run that overstays is ended with the server.
        self.proc = subprocess.Popen([sys.executable, str(_SCRIPT)], cwd=cwd, env=server_env,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, start_new_session=True)

    def __enter__(self) -> MutantRuns:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()

    def run(self, args: list[str], env: dict[str, str], timeout: float
            ) -> tuple[int, str]:
        """(exit status, output) of ``pytest.main(args)`` run with ``env`` added to the
        server's environment; a run still going after ``timeout`` seconds is killed with
        the server and reported as exit status -9."""
        assert self.proc.stdin is not None and self.proc.stdout is not None
        with tempfile.NamedTemporaryFile(prefix="zlink-mutant-run-", suffix=".log",
                                         delete=False) as fh:
            output = Path(fh.name)
        try:
            self.proc.stdin.write(json.dumps({"args": args, "env": env,
                                              "output": str(output)}) + "\n")
            self.proc.stdin.flush()
            ready, _, _ = select.select([self.proc.stdout], [], [], timeout)
            line = self.proc.stdout.readline() if ready else ""
            if not line:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
                return -9, output.read_text(errors="replace")
            return int(json.loads(line)["code"]), output.read_text(errors="replace")
        finally:
            output.unlink(missing_ok=True)


def _child(request: dict[str, object]) -> None:
    """In the forked child: take the request's environment and output, run pytest, and
    leave without returning to the server's loop."""
    code = 3
    try:
        env = request["env"]
        assert isinstance(env, dict)
        os.environ.update({str(k): str(v) for k, v in env.items()})
        out = os.open(str(request["output"]), os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(out, 1)
        os.dup2(out, 2)
        os.close(out)
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        import pytest

        args = request["args"]
        assert isinstance(args, list)
        code = int(pytest.main([str(a) for a in args]))
    except BaseException:  # the child must never return into the server's loop
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """The server: load what every run loads before its mutant, then fork a run per
    request line (JSON: args, env, output) and answer each with its exit status."""
    # ``python -m pytest`` puts the working folder first on the path; a script's own
    # folder would be there instead.
    sys.path[0] = os.getcwd()
    import hypothesis  # noqa: F401
    import hypothesis.stateful  # noqa: F401
    import hypothesis.strategies  # noqa: F401
    import pytest  # noqa: F401

    import zlink_reference  # noqa: F401
    from zlink_reference_adapter import mutants  # noqa: F401

    for line in sys.stdin:
        request = json.loads(line)
        if threading.active_count() != 1:
            raise SystemExit("mutant runs: the server started a thread; forking it is unsafe")
        pid = os.fork()
        if pid == 0:
            _child(request)
        _, status = os.waitpid(pid, 0)
        print(json.dumps({"code": os.waitstatus_to_exitcode(status)}), flush=True)


if __name__ == "__main__":
    serve()
