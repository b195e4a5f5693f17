"""The forked reference adapters (``adapter_forks``) behave as started ones at their ends:
each exits with the adapter's own status, and none outlives the process the runner
started (the runner ends that one; its adapter must go with it)."""

from __future__ import annotations

import select
import subprocess
import time

from zlink_reference_adapter import reference_adapter_command

from adapter_forks import AdapterForks
from kit_helpers import child_env


def _python() -> str:
    return reference_adapter_command()[0]


def test_a_forked_adapter_exits_with_the_adapter_s_status() -> None:
    with AdapterForks(_python(), child_env()) as forks:
        served = subprocess.run(forks.command, input=b"", capture_output=True, timeout=30)
        assert served.returncode == 0, served.stderr.decode()
    # main() refuses a preload that does not load: status 3, its reason on stderr
    with AdapterForks(_python(), child_env(ZLINK_ADAPTER_PRELOAD="/nonexistent.py")) as forks:
        refused = subprocess.run(forks.command, input=b"", capture_output=True, timeout=30)
        assert refused.returncode == 3
        assert b"ZLINK_ADAPTER_PRELOAD" in refused.stderr


def test_a_forked_adapter_ends_with_the_process_the_runner_started() -> None:
    with AdapterForks(_python(), child_env()) as forks:
        proc = subprocess.Popen(forks.command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert proc.stdout is not None and proc.stdin is not None
        proc.stdin.write(b'{"cmd":"hello","protocol":1}\n')
        proc.stdin.flush()
        ready, _, _ = select.select([proc.stdout], [], [], 30)
        assert ready and proc.stdout.readline(), "the forked adapter did not answer"
        proc.kill()
        proc.wait()
        # Only the forked adapter still holds its stdout (this test keeps its stdin
        # open): the end of file comes when it has gone.
        deadline = time.monotonic() + 10
        ended = False
        while not ended:
            ready, _, _ = select.select([proc.stdout], [], [],
                                        max(deadline - time.monotonic(), 0))
            if not ready:
                break
            ended = proc.stdout.read1(65536) == b""
        assert ended, "the forked adapter outlived the process that started it"
        proc.stdin.close()
        proc.stdout.close()
