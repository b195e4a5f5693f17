"""A message's state snapshot judged from the log: the ``snapshot`` events of a work
against the registrations the runner sent, with no expectation written for them.

SE-7.2: an Actor's message reads one snapshot of its Actor's registration, taken once,
for its whole run; a registration changed meanwhile is seen by the next message, never
by this one, and never mixed (SE-10.12). So, for each work:

* every ``snapshot`` event it wrote reports the same values (the snapshot does not
  change mid-message, whatever ``update_registration`` came in between);
* those values are a registration the Actor really had: the values of a ``register``
  with every ``update_registration`` sent after it merged in, one command at a time, up
  to the last one sent before the work's ``started`` (or nothing registered: no
  values). A registration is changed in a state-lane turn of its own, which may come
  after the command's reply, so any earlier one is allowed too; a later one never is.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .invariants import MAX_REPORTED
from .log import CaseLog

__all__ = ["snapshot_problems"]

Key = tuple[str, str | None]  # (target, actor id)


def _label() -> str:
    return "[SE-7.2 SnapshotConsistent]"


def snapshot_problems(log: CaseLog) -> list[str]:
    """Every work whose snapshots changed mid-message or were never registered."""
    versions: dict[Key, list[tuple[int, dict[str, Any]]]] = {}  # key -> (sent at, values)
    key_of: dict[str, Key] = {}  # work -> its Actor's registration
    started: dict[str, int] = {}
    seen: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}

    def visit(sub: Mapping[str, Any]) -> None:
        work, target = sub.get("work"), sub.get("target")
        if isinstance(work, str) and isinstance(target, str) and \
                sub.get("entry") == "execute_actor":
            actor = sub.get("actor_id")
            key_of.setdefault(work, (target, actor if isinstance(actor, str) else None))
        for op in sub.get("script", []) or []:
            if isinstance(op, dict) and op.get("op") == "submit":
                visit(op)

    for pos, (direction, msg) in enumerate(log.entries):
        if direction == "sent":
            cmd = msg.get("cmd")
            if cmd == "submit":
                visit(msg)
            elif cmd == "submit_concurrent":
                for sub in msg.get("submissions", []) or []:
                    if isinstance(sub, dict):
                        visit(sub)
            elif cmd in ("register", "update_registration"):
                actor = msg.get("actor_id")
                key = (str(msg.get("target")), actor if isinstance(actor, str) else None)
                line = versions.setdefault(key, [])
                sent = msg.get("values")
                values: dict[str, Any] = sent if isinstance(sent, dict) else {}
                base = line[-1][1] if line and cmd == "update_registration" else {}
                line.append((pos, {**base, **values}))
            continue
        name, work = msg.get("event"), msg.get("work")
        if not isinstance(work, str):
            continue
        if name == "started":
            started.setdefault(work, pos)
        elif name == "snapshot" and isinstance(msg.get("values"), dict):
            seen.setdefault(work, []).append((pos, msg["values"]))
    out: list[str] = []
    for work, snaps in seen.items():
        if len(out) >= MAX_REPORTED:
            break
        first_pos, first = snaps[0]
        changed = next(((p, v) for p, v in snaps[1:] if dict(v) != dict(first)), None)
        if changed is not None:
            out.append(f"{_label()} {work}: snapshot@{first_pos} read {dict(first)}, "
                       f"snapshot@{changed[0]} of the same message read {dict(changed[1])}:"
                       f" a message keeps the snapshot it started with for its whole run "
                       f"(SE-10.12: a registration change mid-message is never seen)")
            continue
        actor = key_of.get(work)
        if actor is None or actor not in versions:
            continue
        start = started.get(work, first_pos)
        allowed: list[dict[str, Any]] = [{}]
        allowed += [v for p, v in versions[actor] if p < start]
        if dict(first) not in allowed:
            out.append(f"{_label()} {work}: snapshot@{first_pos} read {dict(first)}, which "
                       f"its Actor never had by its start@{start} (registrations sent "
                       f"before it: {allowed[1:]}): a snapshot is one registration, "
                       f"never values mixed from several or from a later one")
    return out
