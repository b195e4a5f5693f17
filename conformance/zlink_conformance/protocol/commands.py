"""The runner's commands and the work-script ops: which fields each takes.

The case loader validates every command of a case file against these tables before
anything is sent, so a typo in a case is an error naming the file and the step, never a
confusing reply from an adapter. The JSON Schema ``command.schema.json`` says the same in
its own language; a test holds the two in agreement on every shipped case.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from zlink_model.vocabulary import HELD_STEPS

from .wire import (
    CLOSE_COMMAND,
    DISPOSE_COMMAND,
    DISPOSE_MODES,
    ENTRIES,
    ID_PATTERN,
    OPS,
    POLICY_FIELDS,
    SCOPE_WAIT_MODES,
    SPOT_KINDS,
    SPOT_MODES,
    TARGET_TYPES,
)

__all__ = [
    "CASE_COMMANDS",
    "COMMAND_FIELDS",
    "MAX_CONCURRENT",
    "OP_FIELDS",
    "RUNNER_COMMANDS",
    "SUBMISSION_FIELDS",
    "command_problems",
    "op_problems",
]

# Field kinds: "id", "int" (>= 0), "bool", "enum:<a|b>", "policy", "values", "script",
# "entry", "submissions" (2 to MAX_CONCURRENT submission objects). A leading "!" marks a
# required field.
MAX_CONCURRENT: Final = 16
SUBMISSION_FIELDS: Final[Mapping[str, str]] = {
    "work": "!id", "target": "!id", "entry": "!entry", "actor_id": "id",
    "timer_name": "id", "payload_bytes": "int", "script": "script",
}

COMMAND_FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "hello": {"protocol": "!int"},
    "reset": {},
    "create": {
        "target": "!id", "type": "!enum:" + "|".join(TARGET_TYPES),
        "kind": "enum:" + "|".join(SPOT_KINDS), "mode": "enum:" + "|".join(SPOT_MODES),
        "policy": "policy", "actor_policy": "policy", "timer_policy": "policy",
        "actor_type": "id", "zombie_warn_after_ms": "int", "held": "bool",
    },
    "submit": SUBMISSION_FIELDS,
    "submit_concurrent": {"submissions": "!submissions"},
    "open": {"gate": "!id"},
    "complete": {"call": "!id"},
    "fail": {"call": "!id", "message": "string"},
    "advance": {"ms": "!int"},
    "register": {"target": "!id", "actor_id": "id", "actor_type": "id", "values": "values"},
    "update_registration": {"target": "!id", "actor_id": "id", "values": "!values"},
    "settle": {},
    CLOSE_COMMAND: {"target": "!id"},
    DISPOSE_COMMAND: {"target": "!id", "mode": "!enum:" + "|".join(DISPOSE_MODES),
                "timeout_ms": "int"},
    "as_not_safely": {"target": "!id"},
    "await": {"target": "!id", "waiter": "!id",
              "mode": "!enum:completion|after_cancellation|quiescence"},
    "runtime_end": {"waiter": "!id", "grace_ms": "int"},
    "statistics": {"target": "!id"},
    "zombies": {"target": "!id"},
    "step": {"target": "!id", "step": "!enum:" + "|".join(HELD_STEPS), "work": "id"},
    "shutdown": {},
}
# Commands only the runner sends (a case file may not: the runner owns the session).
RUNNER_COMMANDS: Final = ("hello", "reset", "shutdown")
CASE_COMMANDS: Final = tuple(c for c in COMMAND_FIELDS if c not in RUNNER_COMMANDS)

OP_FIELDS: Final[Mapping[str, Mapping[str, str]]] = {
    "gate": {"gate": "!id", "ignore_cancel": "bool"},
    "call": {"call": "!id"},
    "busy": {"ms": "!int"},
    "submit": SUBMISSION_FIELDS,
    "wait_for": {"work": "!id", "wrapped": "bool"},
    "snapshot": {},
    "raise": {"message": "!string"},
    "is_current": {"target": "!id"},
    "await_scope": {"mode": "!enum:" + "|".join(SCOPE_WAIT_MODES)},
}
assert tuple(OP_FIELDS) == OPS

_ALL_ENTRIES: Final = sorted({e for entries in ENTRIES.values() for e in entries})


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _field_problem(name: str, kind: str, value: Any, where: str) -> list[str]:
    if kind == "id":
        if not isinstance(value, str) or not ID_PATTERN.fullmatch(value):
            return [f"{where}: {name!r} must be a name matching {ID_PATTERN.pattern}"]
    elif kind == "int":
        if not _is_int(value) or value < 0:
            return [f"{where}: {name!r} must be a non-negative integer"]
    elif kind == "bool":
        if not isinstance(value, bool):
            return [f"{where}: {name!r} must be true or false"]
    elif kind == "string":
        if not isinstance(value, str):
            return [f"{where}: {name!r} must be a string"]
    elif kind.startswith("enum:"):
        choices = kind[5:].split("|")
        if value not in choices:
            return [f"{where}: {name!r} must be one of {', '.join(choices)}"]
    elif kind == "entry":
        if value not in _ALL_ENTRIES:
            return [f"{where}: {name!r} must be an entry point ({', '.join(_ALL_ENTRIES)})"]
    elif kind == "policy":
        return _policy_problems(name, value, where)
    elif kind == "values":
        if not isinstance(value, dict) or not all(
            isinstance(v, str | int) for v in value.values()
        ):
            return [f"{where}: {name!r} must be an object of strings, integers or booleans"]
    elif kind == "submissions":
        if not isinstance(value, list) or not 2 <= len(value) <= MAX_CONCURRENT:
            return [f"{where}: 'submissions' must be a list of 2 to {MAX_CONCURRENT} "
                    f"submissions"]
        found: list[str] = []
        for i, sub in enumerate(value):
            if not isinstance(sub, dict):
                found.append(f"{where}.submissions[{i}]: a submission must be an object")
            else:
                found += _fields_problems(sub, SUBMISSION_FIELDS, (),
                                          f"{where}.submissions[{i}]")
        return found
    elif kind == "script":
        if not isinstance(value, list):
            return [f"{where}: 'script' must be a list of ops"]
        out: list[str] = []
        for i, op in enumerate(value):
            out += op_problems(op, f"{where}.script[{i}]")
        return out
    return []


def _policy_problems(name: str, value: Any, where: str) -> list[str]:
    if not isinstance(value, dict):
        return [f"{where}: {name!r} must be an object"]
    out = []
    for key, number in value.items():
        if key not in POLICY_FIELDS:
            out.append(f"{where}: {name!r} has no field {key!r} "
                       f"(fields: {', '.join(POLICY_FIELDS)})")
        elif not _is_int(number) or number < 0:
            out.append(f"{where}: {name}.{key} must be a non-negative integer")
    return out


def _fields_problems(obj: Mapping[str, Any], table: Mapping[str, str], skip: tuple[str, ...],
                     where: str) -> list[str]:
    out = []
    for key in obj:
        if key not in table and key not in skip:
            out.append(f"{where}: unknown field {key!r} (fields: {', '.join(table) or 'none'})")
    for key, spec in table.items():
        required = spec.startswith("!")
        kind = spec.lstrip("!")
        if key not in obj:
            if required:
                out.append(f"{where}: missing field {key!r}")
            continue
        out += _field_problem(key, kind, obj[key], where)
    return out


def command_problems(obj: Any, where: str, *, allowed: tuple[str, ...] = CASE_COMMANDS,
                     extra: tuple[str, ...] = ()) -> list[str]:
    """What is wrong with one command object (empty when nothing is). ``extra`` are keys
    the caller allows besides the command's own fields (a case step's ``expect``)."""
    if not isinstance(obj, dict):
        return [f"{where}: a command must be an object"]
    name = obj.get("cmd")
    if not isinstance(name, str) or name not in allowed:
        return [f"{where}: unknown command {name!r} (commands: {', '.join(allowed)})"]
    return _fields_problems(obj, COMMAND_FIELDS[name], ("cmd", *extra), where)


def op_problems(obj: Any, where: str) -> list[str]:
    """What is wrong with one script op."""
    if not isinstance(obj, dict):
        return [f"{where}: an op must be an object"]
    name = obj.get("op")
    if not isinstance(name, str) or name not in OP_FIELDS:
        return [f"{where}: unknown op {name!r} (ops: {', '.join(OPS)})"]
    return _fields_problems(obj, OP_FIELDS[name], ("op",), where)
