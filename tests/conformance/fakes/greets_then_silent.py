"""An adapter that completes its handshake and then reads commands without ever
answering, ignoring SIGTERM. Started behind ``sh -c`` it is the wrapper's child, so the
runner's own child is the shell: ending only that one leaves this process running.
FAKE_PIDS: a file to append the pid to."""

import json
import os
import signal
import sys
import time

signal.signal(signal.SIGTERM, signal.SIG_IGN)
pids = os.environ.get("FAKE_PIDS")
if pids:
    with open(pids, "a", encoding="utf-8") as fh:
        fh.write(f"{os.getpid()}\n")
hello = json.loads(sys.stdin.readline())
sys.stdout.write(json.dumps({"re": hello["id"], "ok": True, "protocol": 1,
                             "runtime": {"name": "greets then silent"},
                             "capabilities": ["actor", "spot.user.per_actor",
                                              "spot.user.spot_wide", "session"]}) + "\n")
sys.stdout.flush()
sys.stderr.write("greets_then_silent fake: greeted, will answer nothing more\n")
sys.stderr.flush()
for _line in sys.stdin:
    pass
time.sleep(600)
