"""The reference adapter, saying hostile things in valid JSON (for the reports' tests).

Everything it writes is valid protocol: the runtime behaves as the reference does, but
the free text an adapter controls is made to break reports that treat it as layout.
HOSTILE names the tricks (comma-separated):

- ``surrogate_name``: a lone surrogate (``\\udc80``) in the runtime's name;
- ``control_name``: an ANSI "clear screen" (ESC[2J) and a NUL in the runtime's version;
- ``huge_name``: a runtime name of 900,000 characters;
- ``many_capabilities``: 95,000 capability names the runner does not know, after the
  real ones;
- ``refuse``: the first settle of case FAKE_CASE (default 2, counted by resets) that
  follows another command of the case (so not the runner's confirming settle right after
  a reset) is refused with an error
  message holding a lone surrogate (``\\ud800``), ESC[2J, BEL, NUL, DEL and a C1 CSI,
  and the same controls go to stderr.

``json.dumps`` writes a lone surrogate as the escape ``\\ud800``, so every line is valid
JSON and valid UTF-8: the runner must take it, and its reports must survive it.
"""

from __future__ import annotations

import os
import sys
from typing import Any

from zlink_reference_adapter.adapter import CommandError, ReferenceAdapter

NASTY = "\ud800 refused \x1b[2J\x1b[31mred\x07\x00\x7f\x9b2J end"


class HostileText(ReferenceAdapter):
    def __init__(self) -> None:
        super().__init__(sys.stdin.buffer, sys.stdout.buffer, sys.stderr)
        self.tricks = set(filter(None, os.environ.get("HOSTILE", "").split(",")))
        self.case = int(os.environ.get("FAKE_CASE", "2"))
        self.resets = 0
        self.struck = False
        self.busy = False  # a command other than reset and settle came in this case

    def hello(self, cmd: dict[str, Any]) -> dict[str, Any]:
        reply = super().hello(cmd)
        runtime = reply["runtime"]
        if "surrogate_name" in self.tricks:
            runtime["name"] = "zlink\udc80reference"
        if "control_name" in self.tricks:
            runtime["version"] = "1.0\x1b[2J\x00"
        if "huge_name" in self.tricks:
            runtime["name"] = "N" * 900_000
        if "many_capabilities" in self.tricks:
            reply["capabilities"] = [*reply["capabilities"],
                                     *(f"x{i}" for i in range(95_000))]
        return reply

    def _run_command(self, name: Any, cmd: dict[str, Any]) -> dict[str, Any]:
        if name == "reset":
            self.resets += 1
            self.busy = False
        elif name != "settle":
            self.busy = True
        if (name == "settle" and "refuse" in self.tricks and not self.struck
                and self.busy and self.resets == self.case):
            self.struck = True
            sys.stderr.write(f"hostile adapter: {NASTY}\n".encode("utf-8", "surrogatepass")
                             .decode("utf-8", "replace"))
            sys.stderr.flush()
            raise CommandError("unsupported", NASTY)
        return super()._run_command(name, cmd)


if __name__ == "__main__":
    sys.exit(HostileText().serve())
