"""The reference adapter, misbehaving on purpose (for the runner's tests).

FAKE_FAULT names what goes wrong; it strikes at the first settle of case number FAKE_CASE
(default 2) of this process, counted by its reset commands, that follows another command
of the case (so not the runner's confirming settle right after a reset). A restarted
process counts again from 1, so the cases after a failure run normally. Protocol faults of the adapter
(AP rules of specs/adapter-protocol.md) that leave the runtime correct:

- ``early_settle``: that settle answers without letting anything run (AP-5);
- ``late_thread``: after that settle answered, an event comes 0.3 s later (AP-5, seen
  only by a quiet period: ``--strict-settle``);
- ``late_event``: an event of case FAKE_CASE written at the reset that ends it (AP-6);
- ``accepted_after_started``: in case FAKE_CASE every ``accepted`` is written after the
  work's ``started`` (AP-7).

FAKE_DROP names capabilities (comma-separated) left out of the handshake, so the cases
needing them are not run.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from zlink_reference_adapter.adapter import CommandError, ReferenceAdapter


class Misbehaving(ReferenceAdapter):
    def __init__(self) -> None:
        super().__init__(sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
        self.resets = 0
        self.struck = False
        self.fault = os.environ.get("FAKE_FAULT", "")
        self.case = int(os.environ.get("FAKE_CASE", "2"))
        self.held: dict[str, dict[str, Any]] = {}
        self.busy = False  # a command other than reset and settle came in this case

    def hello(self, cmd: dict[str, Any]) -> dict[str, Any]:
        reply = super().hello(cmd)
        drop = set(filter(None, os.environ.get("FAKE_DROP", "").split(",")))
        reply["capabilities"] = [c for c in reply["capabilities"] if c not in drop]
        return reply

    def emit(self, event: str, **fields: Any) -> None:
        if self.fault != "accepted_after_started" or self.resets != self.case:
            super().emit(event, **fields)
            return
        if event == "accepted":
            self.held[fields["work"]] = fields
            return
        super().emit(event, **fields)
        if event == "started" and fields["work"] in self.held:
            super().emit("accepted", **self.held.pop(fields["work"]))

    def _run_command(self, name: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        if name == "reset":
            self.resets += 1
            if self.fault == "late_event" and self.resets == self.case + 1:
                # an event of case FAKE_CASE, after its last settle answered
                self._out.write(b'{"event":"finished","work":"a","owner":"S/actor:A"}\n')
        if name == "reset":
            self.busy = False
        elif name != "settle":
            self.busy = True
        if name == "settle" and self.busy and not self.struck and self.resets == self.case:
            self.struck = True
            if self.fault == "early_settle":
                return {"now_ms": self._case.clock.now()}
            if self.fault == "late_thread":
                threading.Thread(target=self.late_line, daemon=True).start()
            elif self.fault and self.fault not in ("late_event", "accepted_after_started"):
                self.strike(self.fault)
        return super()._run_command(name, cmd)

    def late_line(self) -> None:
        time.sleep(0.3)
        self._out.write(b'{"event":"finished","work":"a","owner":"S"}\n')
        self._out.flush()

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
