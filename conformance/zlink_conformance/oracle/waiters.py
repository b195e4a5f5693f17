"""When a waiter may return and when it must have: the ``await`` command judged from the
log, with no expectation written for it.

A scope's ``await`` mode ``completion`` (SD-3) waits until no *active* work of the
scope is left: a work accepted by the target (any entry, nested submissions and a
session's final work held back included, D-22) that has not ended and is not a zombie
(SD-2). A bare queue's mode ``quiescence`` (SE-6.2) waits until every work it accepted
has ended. From positions alone, two things follow:

* **Returned too early.** A ``returned`` event for the waiter while a work of the scope
  is still active, where the log proves the waiter was waiting while that work was
  active: the work was accepted before the ``await`` was sent, or before the reply to a
  settle that came before the ``returned`` (a settle answers only once every wait that
  can return has returned). The work's terminal event comes after the ``returned``;
  a runtime writes a work's terminal event before its count drops, so the return was
  too early.
* **Never returned.** At the reply to a settle, a waiter that has not returned although
  no work of the scope is active any more: the settle promises that nothing can
  progress, a due return included.

Only what is certain counts. A work counts as a zombie, never active, once a
``zombie`` event names it or once a ``dispose_safely`` (or a ``destroy`` that disposes
safely) was sent after its acceptance; for "returned too early" any disposal sent
before the return excuses the works accepted before it (a cancelling disposal may
leave survivors as zombies at a moment the log does not fix), and for "never returned"
a work that a cancelling disposal may have left running is never taken for a zombie.
A ``returned`` that carries an ``error`` is not judged here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from zlink_model.vocabulary import DISPOSE_SAFELY

from ..protocol.wire import DISPOSE_COMMAND
from .invariants import MAX_REPORTED
from .log import TERMINAL, CaseLog

__all__ = ["WAITER_MODES", "waiter_problems"]

WAITER_MODES = ("completion", "quiescence")
"""The ``await`` modes judged here (``after_cancellation`` waits on disposal's terms)."""


@dataclasses.dataclass(slots=True)
class _Work:
    target: str
    final: bool
    accepted: int | None = None
    ended: int | None = None
    zombie: int | None = None  # its first zombie event


@dataclasses.dataclass(slots=True)
class _Waiter:
    name: str
    target: str
    mode: str
    sent: int
    returned: int | None = None
    error: bool = False


def _submissions(message: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []

    def visit(sub: Mapping[str, Any]) -> None:
        out.append(sub)
        for op in sub.get("script", []) or []:
            if isinstance(op, dict) and op.get("op") == "submit":
                visit(op)

    if message.get("cmd") == "submit":
        visit(message)
    elif message.get("cmd") == "submit_concurrent":
        for sub in message.get("submissions", []) or []:
            if isinstance(sub, dict):
                visit(sub)
    return out


def waiter_problems(log: CaseLog) -> list[str]:
    """Every waiter that returned too early or never returned, in log order."""
    works: dict[str, _Work] = {}
    waiters: dict[str, _Waiter] = {}
    safely: dict[str, list[int]] = {}  # target -> positions of safe disposals sent
    disposed: dict[str, list[int]] = {}  # target -> positions of any disposal sent
    not_safely: set[str] = set()
    settles: list[int] = []  # positions of settle replies
    last: str | None = None
    for pos, (direction, msg) in enumerate(log.entries):
        if direction == "sent":
            last = msg.get("cmd")
            for sub in _submissions(msg):
                work, target = sub.get("work"), sub.get("target")
                if isinstance(work, str) and isinstance(target, str):
                    works.setdefault(work, _Work(target, sub.get("entry") == "execute_final"))
            target = str(msg.get("target"))
            if last == "await" and msg.get("mode") in WAITER_MODES:
                name = str(msg.get("waiter"))
                waiters[name] = _Waiter(name, target, str(msg.get("mode")), pos)
            elif last == "as_not_safely":
                not_safely.add(target)
            elif last == DISPOSE_COMMAND:
                disposed.setdefault(target, []).append(pos)
                mode = msg.get("mode")
                if mode == DISPOSE_SAFELY or (mode == "destroy" and target not in not_safely):
                    safely.setdefault(target, []).append(pos)
            continue
        if "re" in msg:
            if last == "settle" and msg.get("ok"):
                settles.append(pos)
            continue
        event, work = msg.get("event"), msg.get("work")
        if event == "returned":
            waiter = waiters.get(str(msg.get("waiter")))
            if waiter is not None and waiter.returned is None:
                waiter.returned = pos
                waiter.error = "error" in msg
            continue
        info = works.get(work) if isinstance(work, str) else None
        if info is None:
            continue
        if event == "accepted" and info.accepted is None:
            info.accepted = pos
        elif event in TERMINAL and info.ended is None:
            info.ended = pos
        elif event in ("zombie", "zombie_warning") and info.zombie is None:
            info.zombie = pos

    def zombie_at(info: _Work, at: int, marks: Mapping[str, list[int]]) -> bool:
        assert info.accepted is not None
        if info.zombie is not None and info.zombie < at:
            return True
        return any(info.accepted < d < at for d in marks.get(info.target, ()))

    out: list[str] = []
    for waiter in waiters.values():
        if len(out) >= MAX_REPORTED:
            break
        scope = [(w, i) for w, i in works.items() if i.target == waiter.target]
        what = (f"waiter {waiter.name} ({waiter.mode} of {waiter.target}, sent@"
                f"{waiter.sent})")
        if waiter.returned is not None and not waiter.error:
            r = waiter.returned
            for w, info in scope:
                a = info.accepted
                if a is None or a > r or (info.ended is not None and info.ended < r):
                    continue
                if waiter.mode == "completion" and zombie_at(info, r, disposed):
                    continue
                proof = waiter.sent if a < waiter.sent else next(
                    (q for q in settles if a < q < r), None)
                if proof is None:
                    continue
                out.append(_early(waiter, what, w, info, log, proof))
                break
        for q in settles:
            if q < waiter.sent:
                continue
            if waiter.returned is not None and waiter.returned < q:
                break
            active = [w for w, info in scope
                      if info.accepted is not None and info.accepted < q
                      and (info.ended is None or info.ended > q)
                      and not (waiter.mode == "completion" and zombie_at(info, q, safely))]
            if not active:
                out.append(_never(waiter, what, q, scope))
                break
    return out[:MAX_REPORTED]


def _label(waiter: _Waiter, final: bool = False) -> str:
    if waiter.mode == "quiescence":
        return "[SE-6.2]"
    return f"[{'D-22' if final else 'SD-3'} AwaitCompletionIgnoresZombies]"


def _early(waiter: _Waiter, what: str, work: str, info: _Work, log: CaseLog,
           proof: int) -> str:
    if waiter.mode == "quiescence":
        why = "a queue is quiescent only once every work it accepted has ended"
    elif info.final:
        why = ("a session's final work is active work of the session from its "
               "acceptance, held back or not")
    else:
        why = ("a wait for completion returns only once no active work of the scope is "
               "left (zombies aside)")
    when = "the await was sent" if proof == waiter.sent else f"the settle answered@{proof}"
    return (f"{_label(waiter, info.final)} {what} returned@{waiter.returned} while {work} "
            f"({log.describe(work)}) was active: it was active when {when}, and ended "
            f"only after the return; {why}")


def _never(waiter: _Waiter, what: str, q: int, scope: list[tuple[str, _Work]]) -> str:
    ended = ", ".join(w for w, i in scope if i.accepted is not None) or "none accepted"
    rules = "SE-6.2" if waiter.mode == "quiescence" else "SD-2, SD-3"
    return (f"{_label(waiter)} {what} had not returned when the settle answered@{q}, "
            f"although no work it waits for was left (the scope's works: {ended}; each "
            f"ended{'' if waiter.mode == 'quiescence' else ' or a zombie'}): a wait "
            f"returns once none is left ({rules})")
