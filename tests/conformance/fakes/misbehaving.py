"""The reference adapter, misbehaving on purpose (for the runner's tests).

FAKE_FAULT names what goes wrong; it strikes at the first settle of case number FAKE_CASE
(default 2) of this process, counted by its reset commands. A restarted process counts
again from 1, so the cases after a failure run normally.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

from zlink_reference_adapter.adapter import CommandError, ReferenceAdapter


class Misbehaving(ReferenceAdapter):
    def __init__(self) -> None:
        super().__init__(sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
        self.resets = 0
        self.struck = False

    def _run_command(self, name: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        if name == "reset":
            self.resets += 1
            if os.environ.get("FAKE_FAULT") == "late_event" and self.resets == int(
                    os.environ.get("FAKE_CASE", "2")):
                # an event of the previous case, after its last settle answered
                self._out.write(b'{"event":"finished","work":"a","owner":"S/actor:A"}\n')
        if name == "settle" and not self.struck and self.resets == int(
                os.environ.get("FAKE_CASE", "2")):
            self.struck = True
            self.strike(os.environ["FAKE_FAULT"])
        return super()._run_command(name, cmd)

    def strike(self, fault: str) -> None:
        out = self._out
        lines = {
            "garbage": b"this is not json\n",
            "unknown_event": b'{"event":"exploded","work":"a"}\n',
            "missing_field": b'{"event":"started","work":"a"}\n',
            "wrong_reply": b'{"re":9999,"ok":true}\n',
            "not_utf8": b"\xff\xfe{}\n",
            "array": b"[1, 2, 3]\n",
        }
        if fault in lines:
            out.write(lines[fault])
            out.flush()
            return
        sys.stderr.write(f"fake adapter: {fault} on purpose\n")
        sys.stderr.flush()
        if fault == "crash":
            os._exit(3)
        if fault == "hang":
            time.sleep(600)
        if fault == "refuse":
            raise CommandError("unsupported", "this fake refuses to settle")
        raise SystemExit(f"unknown FAKE_FAULT {fault!r}")


if __name__ == "__main__":
    sys.exit(Misbehaving().serve())
