"""The adapter as a child process: start, handshake, one command at a time, stop.

The runner reads the child's stdout itself, with ``select`` against the case's deadline,
into a buffer of whole lines; a reader thread drains its stderr (its last lines kept for
reports). Writes are bounded the same way: the adapter's stdin is non-blocking and every
command is written against the deadline, and while a command waits for room in the pipe
the runner goes on reading stdout, so a chatty adapter can never block both sides on two
full pipes, and an adapter that stops reading (its pipe fills) is a hung case, not a hung
runner. Reading in the runner's own thread keeps a round trip to one wake-up: no line is
handed from thread to thread. The
deadline is the only use of the wall clock in the whole runner: it tells a hung adapter
from a slow one, and never decides a verdict. Anything the adapter does wrong (dies,
hangs, writes garbage, skips the handshake, answers the wrong command) becomes an
``AdapterError`` with a message naming what happened and the tail of its stderr; the
runner reports it for the case that was running and starts a fresh adapter for the next.

The adapter runs in a session (and so a process group) of its own, and every way of
ending it (timeout, crash, restart, the end of the run) ends the whole group: an adapter
started through a wrapper (``sh -c``, a build tool, a language launcher) leaves no
grandchild behind.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import json
import os
import select
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import IO, Any

from ..protocol.faults import adapter_fault
from ..protocol.wire import (
    CAPABILITIES,
    MAX_LINE_BYTES,
    PROTOCOL_VERSION,
    AdapterMessageError,
    Event,
    Reply,
    parse_adapter_line,
    with_implied,
)

__all__ = [
    "ANSWERED_WINDOW",
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
STDERR_LINE_CHARS = 2000  # a kept stderr line is cut here: a flood must not fill reports
# How many commands back a reply is still recognised as a second reply to an answered
# command (and charged to the case that sent it): the runner keeps what it needs for
# that about the last ANSWERED_WINDOW commands only, so a long exploration's memory
# stays flat. A reply to a command further back is still an AP-2 fault, of the case
# that reads it ("a reply to command N, but the runner waits for M").
ANSWERED_WINDOW = 10_000
_READ_BYTES = 1 << 16  # one read of the adapter's stdout takes at most this much
_DRAIN_READS = 64  # drain reads at most this many times (4 MiB); a flood is read later

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
    """One running adapter. ``argv`` is its command line; ``env`` extra variables.

    ``on_stale`` (set by the runner) is told of a second reply to a command of an earlier
    case, one sent before ``begin_case``: that line is the earlier case's fault (AP-2), so
    it is handed over and skipped instead of failing the case that is running."""

    def __init__(self, argv: Sequence[str], *, env: Mapping[str, str] | None = None,
                 cwd: str | None = None, wire_tap: WireTap | None = None) -> None:
        if not argv:
            raise ValueError("the adapter command is empty")
        self.argv = list(argv)
        self._env = dict(os.environ, **(env or {}))
        self._cwd = cwd
        self._proc: subprocess.Popen[bytes] | None = None
        self._stdout_fd = -1
        self._unread = bytearray()  # stdout bytes read, not yet a whole line
        self._lines: collections.deque[bytes] = collections.deque()  # whole lines read
        self._eof = False  # stdout ended (after the lines in _lines)
        self._stderr: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL)
        self._stderr_lock = threading.Lock()
        self._stderr_thread: threading.Thread | None = None
        self._next_id = 0
        self._line_no = 0
        self._tap = wire_tap
        self._answered: dict[int, tuple[str, int]] = {}  # id -> (command, line of its reply)
        self._case_start = 0  # the first id sent for the running case
        self._forgotten = 0  # ids below this have left _answered (ANSWERED_WINDOW)
        self.on_stale: Callable[[Reply, str], None] | None = None
        self.handshake: Handshake | None = None

    # -------------------------------------------------------------- lifetime
    def start(self) -> None:
        """Start the process (no handshake yet), in a session of its own."""
        try:
            self._proc = subprocess.Popen(
                self.argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.PIPE, env=self._env, cwd=self._cwd,
                start_new_session=True,
            )
        except OSError as exc:
            raise AdapterCrashedError(f"cannot start the adapter {self.argv!r}: {exc}") from None
        assert self._proc.stdout is not None and self._proc.stderr is not None
        assert self._proc.stdin is not None
        # Written with os.write against a deadline (send): never blocks the runner.
        os.set_blocking(self._proc.stdin.fileno(), False)
        # Read with os.read after select (_read_stdout), never through the file object.
        self._stdout_fd = self._proc.stdout.fileno()
        self._stderr_thread = threading.Thread(
            target=self._read_stderr, args=(self._proc.stderr,), daemon=True,
            name="zlink-adapter-stderr")
        self._stderr_thread.start()

    @property
    def pid(self) -> int | None:
        """The adapter's process id, which is also its process group's and session's."""
        return self._proc.pid if self._proc is not None else None

    def _read_stdout(self, timeout: float) -> None:
        """Wait up to ``timeout`` seconds for the adapter's stdout to be readable, then
        read what it holds into whole lines. A line longer than the protocol allows is
        cut at ``MAX_LINE_BYTES + 1`` bytes (so it fails to parse, AP-1) and its rest read
        as further lines; a last line without its newline is a line at the end."""
        if self._eof:
            return
        try:
            ready, _, _ = select.select([self._stdout_fd], [], [], max(timeout, 0.0))
            if not ready:
                return
            data = os.read(self._stdout_fd, _READ_BYTES)
        except (OSError, ValueError):
            data = b""
        unread = self._unread
        if not data:
            if unread:
                self._lines.append(bytes(unread))
                unread.clear()
            self._eof = True
            return
        unread += data
        start = 0
        while True:
            end = unread.find(b"\n", start)
            if end < 0 or end - start > MAX_LINE_BYTES:
                if len(unread) - start <= MAX_LINE_BYTES:
                    break
                end = start + MAX_LINE_BYTES  # too long: cut where readline would
            self._lines.append(bytes(unread[start:end + 1]))
            start = end + 1
        del unread[:start]

    def _read_stderr(self, stream: IO[bytes]) -> None:
        try:
            for raw in iter(lambda: stream.readline(64 * 1024), b""):
                text = raw.decode("utf-8", "replace").rstrip("\r\n")
                if len(text) > STDERR_LINE_CHARS:
                    text = f"{text[:STDERR_LINE_CHARS]}... ({len(raw)} bytes)"
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
        """Ask the adapter to shut down; end its process group if it does not go within
        ``timeout`` (and end what it leaves of the group in any case)."""
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None and self.handshake is not None:
            with contextlib.suppress(AdapterError):
                self.request({"cmd": "shutdown"}, time.monotonic() + timeout)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(min(timeout, 0.5))
        self.kill(timeout)

    def kill(self, timeout: float = 2.0) -> None:
        """End the adapter's whole process group now: SIGTERM, up to ``timeout`` for the
        adapter to go, then SIGKILL for whatever of the group is left (a grandchild that
        a wrapper started, a process that ignores SIGTERM)."""
        proc = self._proc
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            if proc.stdin is not None:
                proc.stdin.close()
        if proc.poll() is None:
            self._signal_group(signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                pass
        if self._group_exists():
            # the adapter went; give the rest of its group a moment to follow
            self._signal_group(signal.SIGTERM)
            end = time.monotonic() + min(timeout, 0.5)
            while self._group_exists() and time.monotonic() < end:
                time.sleep(0.01)
        self._signal_group(signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout)
        # let the stderr reader take the last lines (it ends at the pipe's end of file,
        # which comes now that no process of the group holds the pipe)
        if self._stderr_thread is not None:
            self._stderr_thread.join(timeout)

    def _signal_group(self, sig: signal.Signals) -> None:
        proc = self._proc
        if proc is None:
            return
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            pass
        except PermissionError:  # the group is gone and its id taken: only the child
            with contextlib.suppress(ProcessLookupError):
                proc.send_signal(sig)

    def _group_exists(self) -> bool:
        proc = self._proc
        if proc is None:
            return False
        try:
            os.killpg(proc.pid, 0)
        except (ProcessLookupError, PermissionError):
            return False
        return True

    # ------------------------------------------------------------- messages
    def _fail(self, cls: type[AdapterError], message: str) -> AdapterError:
        return cls(message, self.stderr_tail())

    @property
    def next_id(self) -> int:
        """The id the next command will carry."""
        return self._next_id

    @property
    def told_apart_from(self) -> int:
        """The first command id whose second reply is still told apart as one (the last
        ``ANSWERED_WINDOW`` commands before the running case's)."""
        return self._forgotten

    def begin_case(self) -> None:
        """Mark where a case starts: a second reply to a command sent before this is the
        fault of the case that sent it (``on_stale``), not of the one that runs."""
        self._case_start = self._next_id
        forget = self._case_start - ANSWERED_WINDOW
        answered = self._answered
        while self._forgotten < forget:
            answered.pop(self._forgotten, None)
            self._forgotten += 1

    def _next_message(self, deadline: float, waiting_for: str,
                      limit: str = "the case timeout") -> Reply | Event:
        # The deadline is checked before the lines read: a flood of lines cannot carry
        # the runner past it.
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._fail(AdapterHungError, f"no answer within {limit} while waiting "
                                                   f"for {waiting_for}")
            if self._lines or self._eof:
                break
            self._read_stdout(remaining)
        if self._lines:
            return self._parse(self._lines.popleft())
        # the end of stdout, seen by this and every later read
        code = self._exit_code()
        how = f"exited with status {code}" if code is not None else "closed its stdout"
        if self._stderr_thread is not None:
            self._stderr_thread.join(1.0)
        raise self._fail(AdapterCrashedError, f"the adapter {how} while the runner waited for "
                                              f"{waiting_for}")

    def _parse(self, raw: bytes) -> Reply | Event:
        self._line_no += 1
        if self._tap is not None:
            self._tap("received", raw)
        try:
            return parse_adapter_line(raw, self._line_no)
        except AdapterMessageError as exc:
            raise self._fail(AdapterProtocolError, adapter_fault("AP-1", str(exc))) from None

    def drain(self) -> list[Reply | Event | str]:
        """Every line the adapter has written and the runner not read yet, without
        waiting: the messages, and for a line that is not the protocol its AP-1 fault."""
        out: list[Reply | Event | str] = []
        reads = 0  # an adapter that never stops writing must not keep the runner here
        while True:
            if not self._lines:
                unread = len(self._unread)
                if reads == _DRAIN_READS:
                    return out
                self._read_stdout(0.0)
                reads += 1
                if not self._lines and len(self._unread) == unread:
                    return out  # nothing more is waiting in the pipe (or it ended)
                continue
            try:
                out.append(self._parse(self._lines.popleft()))
            except AdapterError as exc:
                out.append(exc.message)

    def _exit_code(self) -> int | None:
        proc = self._proc
        if proc is None:
            return None
        try:
            return proc.wait(2.0)
        except subprocess.TimeoutExpired:
            return None

    def send(self, message: Mapping[str, Any], deadline: float) -> int:
        """Write one command with a fresh id, by ``deadline``; returns the id. An adapter
        that does not read its stdin (the pipe stays full) is hung, like one that does not
        answer."""
        proc = self._proc
        if proc is None or proc.stdin is None:
            raise self._fail(AdapterCrashedError, "the adapter is not running")
        ident = self._next_id
        self._next_id += 1
        line = json.dumps({"id": ident, **message}, separators=(",", ":")) + "\n"
        data = memoryview(line.encode("utf-8"))
        if self._tap is not None:
            self._tap("sent", bytes(data))
        try:
            fd = proc.stdin.fileno()
            while data:
                try:
                    data = data[os.write(fd, data):]
                    continue
                except BlockingIOError:
                    pass  # the pipe is full: wait until the adapter reads, or the deadline
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise self._fail(
                        AdapterHungError,
                        f"the adapter did not read its stdin within the case timeout: "
                        f"{len(data)} of {len(line)} byte(s) of {message.get('cmd')!r} "
                        f"(id {ident}) could not be written (its stdin pipe is full)")
                # read stdout meanwhile: an adapter blocked on writing its replies and
                # events must not keep its stdin full
                readable, _, _ = select.select([self._stdout_fd], [fd], [], remaining)
                if readable:
                    self._read_stdout(0.0)
        except (BrokenPipeError, OSError, ValueError):
            code = self._exit_code()
            # An adapter that exited closed its stdin with it: say it exited, in the words
            # the reading side uses, so the verdict does not depend on which side of the
            # pipe noticed first.
            how = (f"exited with status {code} (its stdin closed)" if code is not None
                   else "stopped reading its stdin, still running")
            if code is not None and self._stderr_thread is not None:
                self._stderr_thread.join(1.0)  # its last words, as on the reading side
            raise self._fail(AdapterCrashedError, f"the adapter {how}") from None
        return ident

    def request(self, message: Mapping[str, Any], deadline: float,
                on_event: Callable[[Event], None] | None = None) -> tuple[int, Reply]:
        """Send one command and wait for its reply, passing every event that comes first
        to ``on_event``. Returns (command id, reply)."""
        name = str(message.get("cmd"))
        ident = self.send(message, deadline)
        what = f"the reply to {name!r} (id {ident})"
        while True:
            msg = self._next_message(deadline, what)
            if isinstance(msg, Event):
                if on_event is not None:
                    on_event(msg)
                continue
            if msg.re != ident:
                earlier = self._answered.get(msg.re)
                if earlier is not None and msg.re < self._case_start \
                        and self.on_stale is not None:
                    self.on_stale(msg, earlier[0])
                    continue
                raise self._fail(AdapterProtocolError, self._wrong_reply(msg, ident))
            self._answered[ident] = (name, msg.line)
            return ident, msg

    def _wrong_reply(self, msg: Reply, ident: int) -> str:
        earlier = self._answered.get(msg.re)
        if earlier is not None:
            seen = (f"adapter stdout line {msg.line}: a second reply to command {msg.re} "
                    f"({earlier[0]!r}, answered at line {earlier[1]}), while the runner "
                    f"waits for {ident}")
        elif msg.re >= self._next_id:
            seen = (f"adapter stdout line {msg.line}: a reply to command {msg.re}, which the "
                    f"runner never sent (it waits for {ident})")
        else:
            seen = (f"adapter stdout line {msg.line}: a reply to command {msg.re}, but the "
                    f"runner waits for {ident}")
        return adapter_fault("AP-2", seen)

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
                raise self._fail(AdapterProtocolError, adapter_fault(
                    "AP-2", f"adapter stdout line {msg.line}: a reply to command {msg.re} "
                            f"while no command was in flight"))
            on_event(msg)

    def hello(self, deadline: float) -> Handshake:
        """The handshake: must be the adapter's first message."""
        try:
            ident = self.send({"cmd": "hello", "protocol": PROTOCOL_VERSION}, deadline)
            msg = self._next_message(deadline, "the reply to hello", "the handshake timeout")
        except AdapterError as exc:
            raise HandshakeError(f"handshake failed: {exc.message}", exc.stderr_tail) from None
        if isinstance(msg, Event):
            raise self._fail(HandshakeError, adapter_fault(
                "AP-3", f"handshake missing: adapter stdout line {msg.line} is a "
                        f"{msg.name!r} event; the first line must be the reply to hello"))
        if msg.re != ident:
            raise self._fail(HandshakeError, adapter_fault(
                "AP-3", f"handshake missing: adapter stdout line {msg.line} answers command "
                        f"{msg.re}, not hello"))
        self._answered[ident] = ("hello", msg.line)
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
    # A capability that implies others brings them (an older adapter's wait_for).
    known = tuple(c for c in with_implied(caps) if c in CAPABILITIES)
    unknown = tuple(c for c in caps if c not in CAPABILITIES)
    return Handshake(PROTOCOL_VERSION, runtime, known, unknown, dict(fields))
