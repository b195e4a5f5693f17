"""TLC's own distributed mode for one run of the manifest: a server and workers over RMI.

When one machine is not enough, TLC (the same ``tla2tools.jar``) splits a breadth-first
search between a server, ``tlc2.tool.distributed.TLCServer``, which holds the queue of
unexplored states and the set of seen fingerprints, and any number of workers,
``tlc2.tool.distributed.TLCWorker``, which compute successors and check invariants. The
workers fetch the modules from the server over RMI, so only the server's machine needs
the models; a worker machine needs Java and the jar. Nothing here schedules anything:
this module starts TLC's server on a run of the manifest and TLC's workers, and reads
the server's verdict like any other run.

Ports. The server's RMI registry listens on ``port`` (TLC's default 10997, property
``tlc2.tool.distributed.TLCServer.port``); the objects it exports, and every worker's,
listen on ports RMI picks. Each side must tell RMI the address the other reaches it at
(``java.rmi.server.hostname``): ``advertise``. On one machine that is 127.0.0.1.

What is compared. The distinct-state count of a complete search is the same however the
work is split, so a distributed run is held to the manifest's verdict and distinct count;
the number of generated states depends on how the states were split (workers cache
fingerprints) and is not compared. TLC's distributed mode checks invariants (safety);
``TLCGet``/``TLCSet`` and temporal properties are not supported by it.
"""

from __future__ import annotations

import dataclasses
import re
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Final

from .runner import (
    ManifestEntry,
    TlcOutcome,
    config_names,
    jvm_options,
    parse_tlc_output,
    wait_or_kill,
)

__all__ = [
    "DEFAULT_PORT",
    "PORT_PROPERTY",
    "DistributedResult",
    "serve",
    "server_command",
    "work",
    "worker_command",
]

DEFAULT_PORT: Final = 10997
PORT_PROPERTY: Final = "tlc2.tool.distributed.TLCServer.port"
THREADS_PROPERTY: Final = "tlc2.tool.distributed.TLCWorker.threadCount"
_READY = re.compile(r"TLC server at .* is ready")
_TRACE = "The behavior up to this point is:"


@dataclasses.dataclass(frozen=True, slots=True)
class DistributedResult:
    """A distributed run: TLC's verdict and counts, how long it took, and how it
    differs from the manifest (verdict and distinct states)."""

    entry: ManifestEntry
    outcome: TlcOutcome
    seconds: float
    problems: tuple[str, ...]
    output: str

    @property
    def ok(self) -> bool:
        """The manifest's verdict and distinct count."""
        return not self.problems


def server_command(java: str, jar: Path, entry: ManifestEntry, scratch: Path, *,
                   port: int = DEFAULT_PORT, advertise: str | None = None) -> list[str]:
    """The command line of TLC's server for one run of the manifest."""
    argv = [java, *jvm_options(short=False), f"-D{PORT_PROPERTY}={port}",
            f"-Djava.io.tmpdir={scratch / 'tmp'}"]
    if advertise:
        argv.append(f"-Djava.rmi.server.hostname={advertise}")
    argv += ["-cp", str(jar), "tlc2.tool.distributed.TLCServer", "-tool",
             "-metadir", str(scratch / "meta"), "-config", entry.config]
    if not entry.check_deadlock:
        argv.append("-deadlock")
    argv.append(Path(entry.module).stem)
    return argv


def worker_command(java: str, jar: Path, host: str, *, port: int = DEFAULT_PORT,
                   threads: int | None = None, advertise: str | None = None) -> list[str]:
    """The command line of one TLC worker that serves the server at ``host``."""
    argv = [java, *jvm_options(short=False), f"-D{PORT_PROPERTY}={port}"]
    if threads is not None:
        argv.append(f"-D{THREADS_PROPERTY}={max(1, threads)}")
    if advertise:
        argv.append(f"-Djava.rmi.server.hostname={advertise}")
    argv += ["-cp", str(jar), "tlc2.tool.distributed.TLCWorker", host]
    return argv


def _compare(entry: ManifestEntry, outcome: TlcOutcome) -> tuple[str, ...]:
    expected = entry.expected
    unnamed = outcome.result == "safety" and outcome.violated is None
    if outcome.result != expected.result or (
            expected.name is not None and outcome.violated != expected.name and not unnamed):
        return (f"expected {expected.describe()}, got {outcome.describe()}",)
    if expected.result == "success" and entry.distinct is not None \
            and outcome.distinct != entry.distinct:
        return (f"distinct states: manifest {entry.distinct}, distributed run "
                f"{outcome.distinct}",)
    return ()


def serve(entry: ManifestEntry, models_dir: Path, java: str, jar: Path, *,
          port: int = DEFAULT_PORT, advertise: str | None = None, local_workers: int = 0,
          worker_threads: int | None = None, timeout: float = 3600.0,
          on_line: Callable[[str], None] | None = None) -> DistributedResult:
    """Run TLC's server on ``entry`` until the search ends, with ``local_workers``
    workers of its own on this machine (more may join from other machines at any time),
    and compare its verdict and distinct count with the manifest.

    ``on_line`` sees every line the server prints (progress, workers joining)."""
    scratch = Path(tempfile.mkdtemp(prefix=f"zlink-tlcserver-{entry.name}-"))
    (scratch / "tmp").mkdir()
    lines: list[str] = []
    ready = threading.Event()
    workers: list[subprocess.Popen[str]] = []
    started = time.monotonic()
    try:
        server = subprocess.Popen(
            server_command(java, jar, entry, scratch, port=port, advertise=advertise),
            cwd=models_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)

        def read() -> None:
            assert server.stdout is not None
            for line in server.stdout:
                lines.append(line)
                if _READY.search(line):
                    ready.set()
                if on_line is not None:
                    on_line(line.rstrip("\n"))
            ready.set()

        reader = threading.Thread(target=read, daemon=True)
        reader.start()
        if local_workers > 0:
            ready.wait(timeout=min(timeout, 120.0))
            host = advertise or "127.0.0.1"
            for i in range(local_workers):
                with (scratch / f"worker{i}.out").open("w", encoding="utf-8") as sink:
                    workers.append(subprocess.Popen(
                        worker_command(java, jar, host, port=port, threads=worker_threads,
                                       advertise=host),
                        stdout=sink, stderr=subprocess.STDOUT, text=True))
        code = wait_or_kill(server, timeout)
        reader.join(timeout=10)
        for proc in workers:
            wait_or_kill(proc, 30)
        # A violation is found, and named, by the worker that found it: the server
        # prints only the trace. The local workers' output is read with the server's.
        output = "".join(lines) + "".join(
            p.read_text(encoding="utf-8", errors="replace")
            for p in sorted(scratch.glob("worker*.out")))
        properties = config_names((models_dir / entry.config).read_text(encoding="utf-8"),
                                  ("PROPERTY", "PROPERTIES"))
        outcome = parse_tlc_output(output, _verdict_exit(output, code), properties)
        if outcome.result == "error" and code == 0 and _TRACE in output:
            # TLC 2.15's server prints the trace of a violation but names no invariant.
            outcome = dataclasses.replace(
                outcome, result="safety", violated=None,
                detail="TLC's distributed mode does not say which invariant; run the "
                       "configuration in one process (zlink models check) to see it")
        if code == -1:
            outcome = TlcOutcome(-1, "error", detail=f"timed out after {timeout:.0f} s")
    finally:
        for proc in workers:  # on the way out after an error: nothing left running
            wait_or_kill(proc, 30)
        shutil.rmtree(scratch, ignore_errors=True)
    elapsed = time.monotonic() - started
    return DistributedResult(entry, outcome, elapsed, _compare(entry, outcome), output)


def _verdict_exit(output: str, code: int) -> int:
    """The exit code a single-process TLC would have given: TLC's server exits 0 after
    a verdict of any kind, so the verdict's own code is taken from what it printed."""
    if code != 0:
        return code
    if "Invariant " in output and " is violated" in output:
        return 12
    if "Deadlock reached" in output:
        return 11
    return code


def work(host: str, java: str, jar: Path, *, port: int = DEFAULT_PORT, count: int = 1,
         threads: int | None = None, advertise: str | None = None,
         timeout: float | None = None) -> int:
    """Run ``count`` TLC workers for the server at ``host`` until it is done; the
    highest exit code of the workers."""
    procs = [subprocess.Popen(worker_command(java, jar, host, port=port, threads=threads,
                                             advertise=advertise))
             for _ in range(max(1, count))]
    codes = []
    for proc in procs:
        try:
            codes.append(proc.wait(timeout=timeout))
        except subprocess.TimeoutExpired:
            proc.kill()
            codes.append(proc.wait())
    return max(codes)
