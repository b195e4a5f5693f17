"""The adapter as a child process: start, handshake, one command at a time, stop.

Two reader threads drain the child's stdout (lines, handed over through a queue) and
stderr (its last lines kept for reports), so a chatty adapter can never block on a full
pipe and the runner can wait for a line with a deadline. The deadline is the only use of
the wall clock in the whole runner: it tells a hung adapter from a slow one, and never
decides a verdict. Anything the adapter does wrong (dies, hangs, writes garbage, skips
the handshake, answers the wrong command) becomes an ``AdapterError`` with a message
naming what happened and the tail of its stderr; the runner reports it for the case
that was running and starts a fresh adapter for the next.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import queue
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from ..protocol.wire import (
    CAPABILITIES,
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    AdapterMessageError,
    Event,
    Reply,
    parse_adapter_line,
)

__all__ = [
    "AdapterCrashedError",
    "AdapterError",
    "AdapterHungError",
    "AdapterProcess",
    "AdapterProtocolError",
    "Handshake",
    "HandshakeError",
    "WireTap",
]

STDERR_TAIL = 30
_EOF = None

WireTap = Callable[[str, bytes], None]
"""Sees every raw line: ("sent", command) or ("received", reply or event)."""


class AdapterError(Exception):
    """The adapter misbehaved; the run goes on with a fresh adapter."""

    def __init__(self, message: str, stderr_tail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.stderr_tail = list(stderr_tail)


class AdapterCrashedError(AdapterError):
    """The adapter's stdout closed (it exited or closed the stream)."""


class AdapterHungError(AdapterError):
    """No reply before the case's deadline."""


class AdapterProtocolError(AdapterError):
    """The adapter wrote something that is not the protocol."""


class HandshakeError(AdapterError):
    """The adapter did not complete the handshake."""


@dataclasses.dataclass(frozen=True, slots=True)
class Handshake:
    """What the adapter said about itself in its reply to ``hello``."""

    protocol: int
    runtime: Mapping[str, Any]
    capabilities: tuple[str, ...]
    unknown_capabilities: tuple[str, ...]
    reply: Mapping[str, Any]

    @property
    def name(self) -> str:
        """The runtime's name and version, for reports."""
        name = self.runtime.get("name", "unnamed runtime")
        version = self.runtime.get("version")
        return f"{name} {version}" if version else str(name)


class AdapterProcess:
    """One running adapter. ``argv`` is its command line; ``env`` extra variables."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, wire_tap: WireTap | None = None) -> None:
        if not argv:
            raise ValueError("the adapter command is empty")
        self.argv = list(argv)
        self._env = dict(os.environ, **(env or {}))
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._lines: queue.Queue[bytes | None] = queue.Queue()
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._stderr_lock = threading.Lock()
        self._stderr_thread: threading.Thread | None = None
        self._next_id = 0
        self._line_no = 0
        self._tap = wire_tap
        self.handshake: Handshake | None = None

    # -------------------------------------------------------------- lifetime
    def start(self) -> None:
        """Start the process (no handshake yet)."""
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self._env, cwd=self._cwd,
            )
        except OSError as exc:
            raise AdapterCrashedError(f"cannot start the adapter {self.argv!r}: {exc}") from None
        assert self._proc.stdout is not None and self._proc.stderr is not None
        threading.Thread(target=self._read_stdout, args=(self._proc.stdout,),
                         daemon=True, name="zlink-adapter-stdout").start()
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, args=(self._proc.stderr,), daemon=True,
            name="zlink-adapter-stderr")
        self._stderr_thread.start()

    def _read_stdout(self, stream: IO[bytes]) -> None:
        try:
            while True:
                line = stream.readline(MAX_LINE_BYTES + 1)
                if not line:
                    break
                self._lines.put(line)
        except (OSError, ValueError):
            pass
        self._lines.put(_EOF)

    def _read_stderr(self, stream: IO[bytes]) -> None:
        try:
            for raw in iter(lambda: stream.readline(64 * 1024), b""):
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                with self._stderr_lock:
                    self._stderr.append(text)
        except (OSError, ValueError):
            pass

    def stderr_tail(self) -> list[str]:
        """The adapter's last lines of stderr."""
        with self._stderr_lock:
            return list(self._stderr)

    @property
    def alive(self) -> bool:
        """The process runs."""
        return self._proc is not None and self._proc.poll() is None

    def stop(self, timeout: float = 2.0) -> None:
        """Ask the adapter to shut down; kill it if it does not go within ``timeout``."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None and self.handshake is not None:
            with contextlib.suppress(AdapterError):
                self.request({"cmd": "shutdown"}, time.monotonic() + timeout)
        self.kill(timeout)

    def kill(self, timeout: float = 2.0) -> None:
        """End the process now (terminate, then kill)."""
        proc = self._proc
        if proc is None:
            return
        for stream in (proc.stdin,):
            with contextlib.suppress(OSError, ValueError):
                if stream is not None:
                    stream.close()
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                with contextlib.suppress(subprocess.TimeoutExpired):
                    proc.wait(timeout)
        # let the stderr reader take the last lines (it ends at the pipe's end of file)
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout)

    # ------------------------------------------------------------- messages
    def _fail(self, cls: type[AdapterError], message: str) -> AdapterError:
        return cls(message, self.stderr_tail())

    def _next_message(self, deadline: float, waiting_for: str,
                      limit: str = "the case timeout") -> Reply | Event:
        remaining = deadline - time.monotonic()
        try:
            raw = self._lines.get(timeout=max(remaining, 0.0)) if remaining > 0 \
                else self._lines.get_nowait()
        except queue.Empty:
            raise self._fail(AdapterHungError, f"no answer within {limit} while waiting for "
                                               f"{waiting_for}") from None
        if raw is _EOF:
            code = self._exit_code()
            how = f"exited with status {code}" if code is not None else "closed its stdout"
            if self._stderr_thread is not None:
                self._stderr_thread.join(1.0)
            raise self._fail(AdapterCrashedError, f"the adapter {how} while the runner waited for "
                                                  f"{waiting_for}")
        self._line_no += 1
        if self._tap is not None:
            self._tap("received", raw)
        try:
            return parse_adapter_line(raw, self._line_no)
        except AdapterMessageError as exc:
            raise self._fail(AdapterProtocolError, str(exc)) from None

    def _exit_code(self) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        try:
            return proc.wait(2.0)
        except subprocess.TimeoutExpired:
            return None

    def send(self, message: Mapping[str, Any]) -> int:
        """Write one command with a fresh id; returns the id."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise self._fail(AdapterCrashedError, "the adapter is not running")
        ident = self._next_id
        self._next_id += 1
        line = json.dumps({"id": ident, **message}, separators=(",", ":")) + "\n"
        if self._tap is not None:
            self._tap("sent", line.encode("utf-8"))
        try:
            proc.stdin.write(line.encode("utf-8"))
            proc.stdin.flush()
        except (BrokenPipeError, OSError, ValueError):
            code = self._exit_code()
            raise self._fail(AdapterCrashedError, f"the adapter stopped reading its stdin "
                                                  f"(exit status {code})") from None
        return ident

    def request(self, message: Mapping[str, Any], deadline: float,
                on_event: Callable[[Event], None] | None = None) -> tuple[int, Reply]:
        """Send one command and wait for its reply, passing every event that comes first
        to ``on_event``. Returns (command id, reply)."""
        ident = self.send(message)
        what = f"the reply to {message.get('cmd')!r} (id {ident})"
        while True:
            msg = self._next_message(deadline, what)
            if isinstance(msg, Event):
                if on_event is not None:
                    on_event(msg)
                continue
            if msg.re != ident:
                raise self._fail(AdapterProtocolError,
                                 f"adapter stdout line {msg.line}: a reply to command {msg.re}, "
                                 f"but the runner waits for {ident}")
            return ident, msg

    def quiet(self, seconds: float, on_event: Callable[[Event], None]) -> None:
        """Wait ``seconds`` with no command in flight, passing every event that comes to
        ``on_event`` (``--strict-settle``: after a settle, nothing may come)."""
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            try:
                msg = self._next_message(end, "nothing (a quiet period after settle)")
            except AdapterHungError:
                return
            if isinstance(msg, Reply):
                raise self._fail(AdapterProtocolError,
                                 f"adapter stdout line {msg.line}: a reply to command "
                                 f"{msg.re} while no command was in flight")
            on_event(msg)

    def hello(self, deadline: float) -> Handshake:
        """The handshake: must be the adapter's first message."""
        ident = self.send({"cmd": "hello", "protocol": PROTOCOL_VERSION})
        try:
            msg = self._next_message(deadline, "the reply to hello", "the handshake timeout")
        except AdapterError as exc:
            raise HandshakeError(f"handshake failed: {exc.message}", exc.stderr_tail) from None
        if isinstance(msg, Event):
            raise self._fail(HandshakeError,
                             f"handshake missing: adapter stdout line {msg.line} is a "
                             f"{msg.name!r} event; the first line must be the reply to hello")
        if msg.re != ident:
            raise self._fail(HandshakeError, f"handshake missing: adapter stdout line "
                                             f"{msg.line} answers command {msg.re}, not hello")
        if not msg.ok:
            raise self._fail(HandshakeError, f"the adapter refused the handshake: "
                                             f"{msg.error_kind}: {msg.error_message}")
        self.handshake = _read_handshake(msg, self._fail)
        return self.handshake


def _read_handshake(msg: Reply, fail: Callable[[type[AdapterError], str], AdapterError]
                    ) -> Handshake:
    fields = msg.fields
    where = f"adapter stdout line {msg.line} (reply to hello)"
    protocol = fields.get("protocol")
    if protocol != PROTOCOL_VERSION:
        raise fail(HandshakeError, f"{where}: protocol {protocol!r}; this runner speaks "
                                   f"{PROTOCOL_VERSION}")
    caps = fields.get("capabilities")
    if not isinstance(caps, list) or not all(isinstance(c, str) for c in caps):
        raise fail(HandshakeError, f"{where}: 'capabilities' must be a list of strings")
    runtime = fields.get("runtime", {})
    if not isinstance(runtime, dict):
        raise fail(HandshakeError, f"{where}: 'runtime' must be an object")
    surface = fields.get("surface")
    if surface is not None and not isinstance(surface, dict):
        raise fail(HandshakeError, f"{where}: 'surface' must be an object")
    known = tuple(c for c in caps if c in CAPABILITIES)
    unknown = tuple(c for c in caps if c not in CAPABILITIES)
    return Handshake(PROTOCOL_VERSION, runtime, known, unknown, dict(fields))
