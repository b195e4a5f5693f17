"""The reference adapter, misbehaving on purpose (for the runner's tests).

FAKE_FAULT names what goes wrong; it strikes at the first settle of case number FAKE_CASE
(default 2) of this process, counted by its reset commands, that follows another command
of the case (so not the runner's confirming settle right after a reset). A restarted
process counts again from 1, so the cases after a failure run normally. Protocol faults
of the adapter (AP rules of specs/adapter-protocol.md) that leave the runtime correct:

- ``early_settle``: that settle answers without letting anything run (AP-5);
- ``late_thread``: after that settle answered, an event comes 0.3 s later (AP-5, seen
  only by a quiet period: ``--strict-settle``);
- ``late_event``: an event of case FAKE_CASE written at the reset that ends it, after
  the case's last settle answered (AP-5: that settle answered early);
- ``accepted_after_started``: in case FAKE_CASE every ``accepted`` is written after the
  work's ``started`` (AP-7).

Hostile output, for the runner's fuzz test (each strikes at that settle too):

- ``huge_line``: a 10 MB line (AP-1);
- ``flood``: a thread writes valid events without end, and the settle is never
  answered (a hung case however many lines come);
- ``stderr_flood``: 20 MB of stderr in 100 kB lines, and the settle is never answered;
- ``double_reply``: that settle's reply is written twice (AP-2);
- ``double_reset_reply``: the reply to the reset that ends case FAKE_CASE is written
  twice (AP-2, of case FAKE_CASE, never of the next);
- ``random_lines``: lines drawn from a pool of hostile pieces (random bytes, cut JSON,
  deep nesting, replies to other ids, lone surrogates), seeded by FAKE_SEED, the first
  one never a valid message (AP-1 or AP-2);
- ``hang``: answers nothing more and never reads stdin again;
- ``stale_reply``: the reply to that settle is written again at the first command of
  the next case, after that case has begun (AP-2, of case FAKE_CASE);
- ``trailing_line``: the reply to the runner's confirming settle after the reset that
  ends case FAKE_CASE is followed by an event (AP-6, of case FAKE_CASE);
- ``trailing_line_late``: the same event, written 0.15 s after that reply, by a thread
  (only a strict runner's quiet period after the confirmation sees it in time).

FAKE_DROP names capabilities (comma-separated) left out of the handshake, so the cases
needing them are not run. FAKE_PIDS names a file to which the process appends its pid
(a test checks that no adapter process outlives the run). FAKE_ONCE names a file: the
first process to start creates it; a later one (a restart) never completes its handshake.
"""

from __future__ import annotations

import json
import os
import random
import sys
import threading
import time
from collections.abc import Mapping
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
        self.twice = False  # the next reply is written twice
        self.trail = False  # the next reply is followed by an event
        self.stale: int | None = None  # the id of the settle to answer again later

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
            if self.fault == "double_reset_reply" and self.resets == self.case + 1:
                self.twice = True
            if self.fault == "late_event" and self.resets == self.case + 1:
                # an event of case FAKE_CASE, after its last settle answered
                self._out.write(b'{"event":"finished","work":"a","owner":"S/actor:A"}\n')
        if name == "reset":
            self.busy = False
        elif name != "settle":
            self.busy = True
        if name == "settle" and not self.busy \
                and self.fault in ("trailing_line", "trailing_line_late") \
                and self.resets == self.case + 1:
            self.trail = True
        if self.fault == "stale_reply" and self.stale is not None \
                and self.resets == self.case + 1 and name not in ("reset", "settle"):
            self._out.write(b'{"re":%d,"ok":true,"now_ms":0}\n' % self.stale)
            self._out.flush()
            self.stale = None
        if name == "settle" and self.busy and not self.struck and self.resets == self.case:
            self.struck = True
            if self.fault == "stale_reply":
                self.stale = cmd["id"]
            if self.fault == "early_settle":
                return {"now_ms": self._case.clock.now()}
            if self.fault == "late_thread":
                threading.Thread(target=self.late_line, daemon=True).start()
            elif self.fault == "flood":
                threading.Thread(target=self.flood, daemon=True).start()
                time.sleep(600)
            elif self.fault == "double_reply":
                self.twice = True
            elif self.fault and self.fault not in ("late_event", "accepted_after_started",
                                                   "double_reset_reply", "trailing_line",
                                                   "trailing_line_late",
                                                   "stale_reply"):
                self.strike(self.fault)
        return super()._run_command(name, cmd)

    def _flush(self, reply: Mapping[str, Any]) -> None:
        super()._flush(reply)
        if self.twice and reply.get("re") != -1:
            self.twice = False
            super()._flush(reply)
        if self.trail:
            self.trail = False
            if self.fault == "trailing_line_late":
                threading.Thread(target=self.late_line, args=(0.15,), daemon=True).start()
                return
            self._out.write(b'{"event":"finished","work":"a","owner":"S"}\n')
            self._out.flush()

    def flood(self) -> None:
        line = b'{"event":"finished","work":"a","owner":"S"}\n'
        while True:
            self._out.write(line * 100)
            self._out.flush()
            time.sleep(0.001)

    def random_lines(self) -> None:
        rng = random.Random(int(os.environ.get("FAKE_SEED", "0")))
        invalid = [
            lambda: bytes(rng.randrange(256) for _ in range(rng.randrange(1, 200))),
            lambda: b'{"event":"started","work":',
            lambda: b"[" * rng.randrange(1000, 100_000),
            lambda: b'{"re":%d,"ok":true}' % rng.randrange(10_000, 1 << 62),
            lambda: b'{"event":"fault","message":"\xed\xa0\x80"}',
            lambda: b'{"re":-1,"ok":"yes"}',
            lambda: b"\x00" * rng.randrange(1, 1000),
            lambda: b'{"event":"started","work":"a","owner":"S","extra":1}',
        ]
        valid = [
            lambda: b'{"event":"finished","work":"a","owner":"S"}',
            lambda: json.dumps({"event": "fault", "message": "\ud800"}).encode(),
        ]
        out = [rng.choice(invalid)()]
        for _ in range(rng.randrange(1, 50)):
            out.append(rng.choice(invalid + valid)())
        self._out.write(b"\n".join(out) + b"\n")
        self._out.flush()

    def late_line(self, delay: float = 0.3) -> None:
        time.sleep(delay)
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
        if fault == "huge_line":
            out.write(b'{"event":"fault","message":"' + b"x" * (10 << 20) + b'"}\n')
            out.flush()
            return
        if fault == "random_lines":
            self.random_lines()
            return
        if fault == "stderr_flood":
            chunk = "e" * 100_000 + "\n"
            for _ in range(200):
                sys.stderr.write(chunk)
            sys.stderr.flush()
            time.sleep(600)
        sys.stderr.write(f"fake adapter: {fault} on purpose\n")
        sys.stderr.flush()
        if fault == "crash":
            os._exit(3)
        if fault == "hang":
            time.sleep(600)
        if fault == "refuse":
            raise CommandError("unsupported", "this fake refuses to settle")
        raise SystemExit(f"unknown FAKE_FAULT {fault!r}")


def _record_and_gate() -> None:
    """FAKE_PIDS and FAKE_ONCE (see the module's doc)."""
    pids = os.environ.get("FAKE_PIDS")
    if pids:
        with open(pids, "a", encoding="utf-8") as fh:
            fh.write(f"{os.getpid()}\n")
    once = os.environ.get("FAKE_ONCE")
    if once:
        try:
            with open(once, "x", encoding="utf-8"):
                pass
        except FileExistsError:
            sys.stderr.write("fake adapter: started again, will never greet\n")
            sys.stderr.flush()
            time.sleep(600)


if __name__ == "__main__":
    _record_and_gate()
    sys.exit(Misbehaving().serve())
