"""An adapter that writes exactly what a script says (for the kit's wording tests).

FAKE_SCRIPT names a JSON file::

    {"capabilities": [...], "surface": {...},
     "steps": [{"cmd": "submit", "work": "a", "events": [...], "reply": {...},
                "error": {"kind": "unsupported", "message": "..."}, "hang": true,
                "thread": {"delay": 0.2, "events": [...]}}, ...]}

Each command the runner sends (after ``hello``) is matched against the next step (a
command naming a work, against the first step naming that work): when the step's
``cmd`` (and ``work``, if given) are the command's, the step is used up: its
``events`` are written before the reply, then, ``delay`` seconds later, its ``reply``
fields (or its ``error``, a refusal); ``hang`` writes the events and then never
answers nor reads again; ``thread`` writes its events from another thread ``delay``
seconds after the reply, as a
multi-threaded runtime's work would. Any other command gets a plain reply (``settle``:
``now_ms`` 0, ``submit``: ``verdict`` accepted). So a test states the log a runtime
would produce, and the runner judges it like any other.
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from typing import Any

_LOCK = threading.Lock()


def write(obj: Any) -> None:
    with _LOCK:
        sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
        sys.stdout.flush()


def later(delay: float, events: list[dict[str, Any]]) -> None:
    time.sleep(delay)
    for event in events:
        write(event)


def main() -> None:
    with open(os.environ["FAKE_SCRIPT"], encoding="utf-8") as fh:
        script = json.load(fh)
    steps: list[dict[str, Any]] = list(script.get("steps", []))
    for raw in sys.stdin:
        cmd = json.loads(raw)
        name = cmd.get("cmd")
        if name == "hello":
            write({"re": cmd["id"], "ok": True, "protocol": 1,
                   "runtime": {"name": "scripted", "version": "0", "language": "python"},
                   "capabilities": script.get("capabilities", []),
                   "surface": script.get("surface", {})})
            continue
        step: dict[str, Any] = {}
        if steps and steps[0].get("cmd") == name and steps[0].get("work", cmd.get("work")) \
                == cmd.get("work"):
            step = steps.pop(0)
        elif "work" in cmd:  # a submit's step is found by its work wherever it stands
            for i, candidate in enumerate(steps):
                if candidate.get("cmd") == name and candidate.get("work") == cmd["work"]:
                    step = steps.pop(i)
                    break
        for event in step.get("events", []):
            write(event)
        if step.get("hang"):
            time.sleep(3600)
            return
        time.sleep(step.get("delay", 0))
        if "error" in step:
            write({"re": cmd["id"], "ok": False, "error": step["error"]})
        else:
            fields: dict[str, Any] = {"now_ms": 0} if name == "settle" else {}
            if name == "submit":
                fields["verdict"] = "accepted"
            write({"re": cmd["id"], "ok": True, **fields, **step.get("reply", {})})
        thread = step.get("thread")
        if thread:
            threading.Thread(target=later, args=(thread["delay"], thread["events"]),
                             daemon=True).start()
        if name == "shutdown":
            return


if __name__ == "__main__":
    main()
