"""Fresh reference adapter processes, each forked from a server that has loaded the
adapter and run nothing.

A test that runs every case alone in a fresh adapter (``test_case_isolation``) starts
one process per case: 242 reference adapters, each about a tenth of a second of CPU
before its first command, most of it the interpreter starting and importing asyncio,
the reference and the kit's protocol (docs/performance.md, "The verify loop", eighth
pass). Here one server process (this file run as a script, with the environment the
adapters would have) imports what ``python -m zlink_reference_adapter`` imports before
it calls ``main``, and nothing else runs in it: no case, no ``main``. For each process
that connects to its socket it forks; the child takes that process's three standard
streams as its own and calls ``main()``, which applies the preload (a mutant) and
serves, as a fresh adapter would. The child's state when ``main`` begins is a fresh
adapter's at that point: the same modules loaded, nothing run.

The command handed to the runner (``AdapterForks.command``) is the connecting process:
an interpreter started in isolated mode without ``site`` (a hundredth of a second) that
passes its streams to the server and exits with the child's exit status. When it ends
first (the runner ended it), the child ends too: it watches the connection.
"""

from __future__ import annotations

import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import traceback
from pathlib import Path

__all__ = ["AdapterForks"]

_SCRIPT = Path(__file__).resolve()
_STATUS = struct.Struct("!i")

# The connecting process: its streams to the server, then the child's exit status as
# its own (70, EX_SOFTWARE, when the child went without saying it).
_CONNECT = """
import os, socket, struct, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
socket.send_fds(s, [b"x"], [0, 1, 2])
got = b""
while len(got) < 4:
    more = s.recv(4 - len(got))
    if not more:
        break
    got += more
os._exit(struct.unpack("!i", got)[0] if len(got) == 4 else 70)
"""


class AdapterForks:
    """A server forking reference adapters; ``command`` starts one. A context manager:
    the server and whatever it forked end with it."""

    def __init__(self, python: str, env: dict[str, str]) -> None:
        self._folder = tempfile.TemporaryDirectory(prefix="zlink-adapter-forks-")
        self.socket = str(Path(self._folder.name) / "forks.sock")
        self.proc = subprocess.Popen([python, str(_SCRIPT), self.socket],
                                     env={**os.environ, **env}, stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, text=True,
                                     start_new_session=True)
        assert self.proc.stdout is not None
        ready = self.proc.stdout.readline().strip()
        if ready != "ready":
            self.close()
            raise RuntimeError(f"the adapter fork server did not start: {ready!r}")
        self.command = [python, "-I", "-S", "-c", _CONNECT, self.socket]

    def __enter__(self) -> AdapterForks:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End the server and every adapter it forked (one process group)."""
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        if self.proc.stdout is not None:
            self.proc.stdout.close()
        self._folder.cleanup()


def _child(conn: socket.socket, fds: list[int]) -> None:
    """In the forked child: take the three streams, run the adapter's ``main``, say its
    exit status, and leave without returning to the server's loop."""
    code = 70
    try:
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server's, not an adapter's
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)

        def watch() -> None:  # the connecting process went first: so does the adapter
            conn.recv(1)
            os._exit(70)

        threading.Thread(target=watch, daemon=True).start()
        from zlink_reference_adapter.adapter import main

        try:
            code = int(main())
        except SystemExit as stop:
            code = stop.code if isinstance(stop.code, int) else 1
    except BaseException:  # the child must never return into the server's loop
        traceback.print_exc()
        code = 1
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        conn.sendall(_STATUS.pack(code))
        os._exit(code)


def serve(path: str) -> None:
    """The server: load what a fresh adapter loads before ``main``, then fork an
    adapter for each connection."""
    # ``python -m`` puts the working folder first on the path; a script's own folder
    # would be there instead.
    sys.path[0] = os.getcwd()
    import zlink_reference_adapter.adapter  # noqa: F401

    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the children are reaped as they end
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(path)
    listener.listen(16)
    print("ready", flush=True)
    while True:
        conn, _ = listener.accept()
        _, fds, _, _ = socket.recv_fds(conn, 1, 3)
        if threading.active_count() != 1:
            raise SystemExit("adapter forks: the server started a thread; forking it is "
                             "unsafe")
        if os.fork() == 0:
            listener.close()
            _child(conn, fds)
        for fd in fds:
            os.close(fd)
        conn.close()


if __name__ == "__main__":
    serve(sys.argv[1])
