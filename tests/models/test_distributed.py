"""TLC's many workers: ``--tlc-workers`` threads in one process, and TLC's own distributed
mode, tested on this machine: a server and two workers on 127.0.0.1.

``zlink models serve NAME`` starts TLC's server (``tlc2.tool.distributed.TLCServer``) on a
run of the manifest and ``zlink models work HOST`` starts TLC's workers
(``tlc2.tool.distributed.TLCWorker``), which fetch the model from the server over RMI. A
complete search explores the same distinct states however it is split, so the server
must report the distinct-state count the single-process run pinned in the manifest (the
number of generated states depends on the split, and is not compared).
"""

from __future__ import annotations

import socket
import subprocess
import sys
from pathlib import Path

import pytest

from zlink_tool.cli.main import main
from zlink_tool.tla.distributed import server_command, worker_command
from zlink_tool.tla.runner import (
    ManifestEntry,
    ToolMissingError,
    find_jar,
    find_java,
    load_manifest,
    tlc_command,
)

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = ROOT / "models" / "manifest.json"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _entry(name: str) -> ManifestEntry:
    return next(e for e in load_manifest(MANIFEST).entries if e.name == name)


@pytest.mark.slow
def test_server_and_two_workers_on_localhost_find_the_pinned_distinct_states() -> None:
    try:
        find_java(), find_jar()
    except ToolMissingError as exc:
        pytest.skip(str(exc))
    port = str(_free_port())
    zlink = [sys.executable, "-c", "import sys; from zlink_tool.cli.main import main; "
                                   "sys.exit(main(sys.argv[1:]))"]
    server = subprocess.Popen(
        [*zlink, "models", "serve", "SerialQueue", "--advertise", "127.0.0.1", "--port", port],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=ROOT)
    workers: list[subprocess.Popen[str]] = []
    try:
        assert server.stdout is not None
        seen: list[str] = []
        for line in server.stdout:
            seen.append(line)
            if "is ready" in line:
                break
        else:
            pytest.fail("the server never became ready:\n" + "".join(seen))
        workers = [subprocess.Popen(
            [*zlink, "models", "work", "127.0.0.1", "--port", port, "--threads", "1"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True, cwd=ROOT)
            for _ in range(2)]
        rest, _ = server.communicate(timeout=300)
        output = "".join(seen) + rest
        codes = [w.wait(timeout=60) for w in workers]
    finally:
        for proc in (server, *workers):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    pinned = _entry("SerialQueue").distinct
    assert pinned is not None
    assert server.returncode == 0, output
    assert f"SerialQueue: success, {pinned:,} distinct" in output, output
    assert output.count("Registration for worker") >= 2, output
    assert codes == [0, 0]


def test_server_and_worker_command_lines_carry_port_and_address(tmp_path: Path) -> None:
    entry = _entry("SerialQueue_close_drops_accepted")
    argv = server_command("java", Path("t.jar"), entry, tmp_path, port=1234,
                          advertise="10.0.0.5")
    assert "-Dtlc2.tool.distributed.TLCServer.port=1234" in argv
    assert "-Djava.rmi.server.hostname=10.0.0.5" in argv
    assert argv[argv.index("-cp") + 2] == "tlc2.tool.distributed.TLCServer"
    assert "-deadlock" in argv and argv[-1] == "MCSerialQueue"
    argv = worker_command("java", Path("t.jar"), "server.example", port=1234, threads=3)
    assert argv[-2:] == ["tlc2.tool.distributed.TLCWorker", "server.example"]
    assert "-Dtlc2.tool.distributed.TLCWorker.threadCount=3" in argv


def test_tlc_workers_pass_through_to_tlc(tmp_path: Path) -> None:
    entry = _entry("SerialQueue")
    argv = tlc_command("java", Path("t.jar"), entry, tmp_path, tlc_workers=3)
    assert argv[argv.index("-workers") + 1] == "3"
    assert tlc_command("java", Path("t.jar"), entry, tmp_path)[
        argv.index("-workers") + 1] == "1"


@pytest.mark.slow
def test_a_run_with_two_tlc_workers_keeps_the_pinned_counts(
        capsys: pytest.CaptureFixture[str]) -> None:
    try:
        find_java(), find_jar()
    except ToolMissingError as exc:
        pytest.skip(str(exc))
    assert main(["models", "check", "--only", "SerialQueueTwoWorks", "--tlc-workers", "2"]) == 0
    assert "all as the manifest says" in capsys.readouterr().out
