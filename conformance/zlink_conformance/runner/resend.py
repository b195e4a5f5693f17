"""Reproducing one case: send a recorded command sequence to an adapter again and judge
what comes back.

Every case that did not pass carries, in the JSON report (``--json``), the exact commands
the runner sent to the adapter (``commands``, starting with ``reset``; the adapter
process adds the ``id`` of each). ``zlink conformance resend FILE`` reads either that
report (``--case ID`` picks a case; without it, the report's only case with commands) or
a file holding one such case object on its own (``{"id": ..., "commands": [...]}``, as
cut out of a report), starts the adapter, completes the handshake, sends the commands
one by one and judges the log: the invariants and the model oracle always, and the
case's own checks too when the ID names a shipped case and the commands are that case's
(every check whose commands were all sent is judged at the point the runner judges it).
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..catalog import Case, Catalogue, Command, _Builder
from ..oracle.checks import Check, CheckContext, match_reply
from ..oracle.evidence import Evidence, Failing, lines
from ..oracle.invariants import WorkInfo, check_invariants
from ..oracle.log import CaseLog
from ..oracle.model import Divergence, check_model
from .process import AdapterError, AdapterProcess, WireTap
from .suite import check_duration

__all__ = ["ResendError", "ResendResult", "load_resend", "resend"]


class ResendError(Exception):
    """The file to re-send cannot be used; the message says why."""


@dataclasses.dataclass(slots=True)
class ResendResult:
    """The verdict on one re-sent command sequence."""

    case_id: str
    status: str  # passed, failed, error
    messages: list[str]
    log: CaseLog
    divergence: Divergence | None = None
    judged_by_case: bool = False


def load_resend(path: str | Path, case_id: str | None = None
                ) -> tuple[str, list[dict[str, Any]]]:
    """The case ID and the command sequence stored in ``path``."""
    source = Path(path)
    try:
        data = json.loads(source.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ResendError(f"{source}: cannot read: {exc.strerror or exc}") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ResendError(f"{source}: not JSON: {exc}") from None
    if isinstance(data, dict) and isinstance(data.get("cases"), list):
        with_commands = [c for c in data["cases"]
                         if isinstance(c, dict) and isinstance(c.get("commands"), list)]
        if case_id is None:
            if len(with_commands) != 1:
                ids = ", ".join(str(c.get("id")) for c in with_commands) or "none"
                raise ResendError(f"{source}: choose a case with --case ID (cases with "
                                  f"commands: {ids})")
            entry = with_commands[0]
        else:
            found = [c for c in data["cases"] if isinstance(c, dict) and c.get("id") == case_id]
            if not found:
                raise ResendError(f"{source}: no case {case_id} in this report")
            entry = found[0]
            if not isinstance(entry.get("commands"), list):
                raise ResendError(f"{source}: case {case_id} carries no commands (only cases "
                                  f"that did not pass do)")
    elif isinstance(data, dict) and isinstance(data.get("commands"), list):
        entry = data
        if case_id is not None and data.get("id") != case_id:
            raise ResendError(f"{source}: holds case {data.get('id')}, not {case_id}")
    else:
        raise ResendError(f"{source}: expected a JSON report (--json) or one case object "
                          f"with 'id' and 'commands'")
    commands = entry["commands"]
    if not commands or not all(isinstance(c, dict) and isinstance(c.get("cmd"), str)
                               for c in commands):
        raise ResendError(f"{source}: 'commands' must be a non-empty list of command objects")
    if any("id" in c for c in commands):
        raise ResendError(f"{source}: commands carry no 'id'; the runner numbers them")
    return str(entry.get("id", "resend")), [dict(c) for c in commands]


def resend(argv: Sequence[str], case_id: str, commands: Sequence[Mapping[str, Any]], *,
           catalogue: Catalogue | None = None, timeout: float = 10.0,
           handshake_timeout: float = 30.0, env: Mapping[str, str] | None = None,
           wire_tap: WireTap | None = None) -> ResendResult:
    """Send ``commands`` to a fresh adapter and judge the log."""
    timeout = check_duration("--timeout", timeout)
    handshake_timeout = check_duration("--handshake-timeout", handshake_timeout)
    sequence = [dict(c) for c in commands]
    if sequence[0].get("cmd") != "reset":
        sequence.insert(0, {"cmd": "reset"})
    case = None
    if catalogue is not None:
        try:
            case = catalogue.case(case_id)
        except KeyError:
            case = None
    log = CaseLog()
    adapter = AdapterProcess(argv, env=env, wire_tap=wire_tap)
    wire_ids: list[int] = []
    reply_at: list[int] = []  # log position of each command's reply
    try:
        adapter.start()
        handshake = adapter.hello(time.monotonic() + handshake_timeout)
        deadline = time.monotonic() + timeout
        for command in sequence:
            log.sent(command)
            ident, reply = adapter.request(command, deadline, log.record_event)
            reply_at.append(log.reply(reply))
            wire_ids.append(ident)
            if not reply.ok:
                return ResendResult(case_id, "error",
                                    [f"{command['cmd']}: the adapter refused it: "
                                     f"{reply.error_kind}: {reply.error_message}"], log)
    except AdapterError as exc:
        return ResendResult(case_id, "error", [exc.message, *exc.stderr_tail], log)
    finally:
        adapter.stop()
    pending: list[str | Failing] = []
    judged = False
    ctx = CheckContext(handshake.reply)
    if case is not None:
        judged, found = _case_checks(case, sequence, log, reply_at, ctx)
        pending += found
    works = _works(sequence, wire_ids)
    pending += check_invariants(log, works)
    verdict = check_model(log, single_resource="single_execution_resource"
                          in handshake.capabilities)
    if verdict.divergence is not None:
        pending.append(verdict.divergence.message())
    messages = lines(pending, log, ctx, verdict.divergence)
    if not judged and case is not None:
        messages.insert(0, f"note: the commands are not those of case {case_id}; judged by "
                           f"the invariants and the model only")
    failed = any(not m.startswith("note:") for m in messages)
    return ResendResult(case_id, "failed" if failed else "passed", messages, log,
                        verdict.divergence, judged)


def _prefix(log: CaseLog, end: int) -> CaseLog:
    """The log as it was up to and including position ``end``."""
    out = CaseLog()
    events = dict(log.events)
    for position, (direction, message) in enumerate(log.entries[:end + 1]):
        if direction == "sent":
            out.sent(message)
        elif position in events:
            out.event(events[position])
        else:
            ident = message.get("re")
            out.reply(log.replies[ident][1])  # type: ignore[index]
    return out


def _case_checks(case: Case, sequence: Sequence[Mapping[str, Any]], log: CaseLog,
                 reply_at: Sequence[int], ctx: CheckContext
                 ) -> tuple[bool, list[str | Failing]]:
    """Judge the case's own checks where the re-sent commands are the case's. Returns
    (whether the sequence is the case's, failure messages)."""
    expected = [dict(s.message) for s in case.steps if isinstance(s, Command)]
    expected = [{"cmd": "reset"}, *expected, {"cmd": "settle"}]
    sent = [dict(c) for c in sequence]
    if sent != expected[:len(sent)]:
        return False, []
    out: list[str | Failing] = []
    number = 0  # commands of the case sent so far (after reset)
    for i, step in enumerate(case.steps):
        if isinstance(step, Check):
            if number >= len(sent):
                break
            # Judged on the log as it was then: its lines are written from that prefix.
            prefix = _prefix(log, reply_at[number])
            if step.evaluate(prefix, ctx):
                out.append(_Prefixed(f"steps[{i}] {step.kind}", step, prefix=prefix))
                return True, out
            continue
        number += 1
        if number >= len(sent):
            return True, out
        if isinstance(step, Command) and step.expect is not None:
            reply = log.entries[reply_at[number]][1]
            fields = {k: v for k, v in reply.items() if k not in ("re", "ok")}
            problems = match_reply(step.expect, fields, f"{step.name} reply")
            if problems:
                out.append(Failing(f"steps[{i}] {step.name} reply", None, tuple(problems),
                                   step.why, step.case_rules, step.rule_texts))
    if len(sent) == len(expected):
        out += [Failing(f"expect[{i}] {check.kind}", check)
                for i, check in enumerate(case.expect) if check.evaluate(log, ctx)]
    return True, out


@dataclasses.dataclass(frozen=True, slots=True)
class _Prefixed(Failing):
    """A step's check, whose lines are written from the log as it was at that step."""

    prefix: CaseLog | None = None

    def lines(self, log: CaseLog, ctx: CheckContext, found: Evidence | None) -> list[str]:
        return Failing.lines(self, self.prefix or log, ctx, found)


def _works(sequence: Sequence[Mapping[str, Any]], wire_ids: Sequence[int]
           ) -> dict[str, WorkInfo]:
    """Every work the commands submit, with the wire id of its submit command."""
    builder = _Builder("resend")
    for command in sequence:
        if command.get("cmd") == "reset":
            continue
        builder.step(dict(command), "resend")
    out = {}
    for work, info in builder.works.items():
        wire = wire_ids[info.command_id] if info.command_id is not None \
            and info.command_id < len(wire_ids) else None
        out[work] = dataclasses.replace(info, command_id=wire)
    return out
