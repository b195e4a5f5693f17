"""The adapter protocol on the wire: names, field tables and the message reader.

Theory of operation
===================

The runner and the runtime under test (the *adapter*, a separate process) speak JSON
Lines: one JSON object per line, UTF-8, on the adapter's stdin (commands) and stdout
(replies and events). The adapter's stderr is its log; the runner only keeps its tail
for reports. ``specs/adapter-protocol.md`` is the prose version of this module and the
JSON Schemas in ``protocol/schemas/`` are the machine-checkable one; a property test
holds the reader below and the schema in agreement.

* A **command** is ``{"id": N, "cmd": NAME, ...fields}``; the runner sends one and waits
  for its reply before sending the next, so the adapter never has to handle two at once.
* A **reply** is ``{"re": N, "ok": true, ...}`` or ``{"re": N, "ok": false,
  "error": {"kind": K, "message": M}}``. Every command gets exactly one.
* An **event** is ``{"event": NAME, ...fields}``: something the runtime did. Events may
  come at any time; the runner keeps them in arrival order, which is the order the
  protocol's checks read. Every event that a command caused must be written before that
  command's reply (so a ``settle`` reply closes a complete log).

Everything here is data plus one pure function, ``parse_adapter_line``: it turns one
line into a ``Reply`` or an ``Event`` or raises ``AdapterMessageError`` saying exactly
what is wrong. It never raises anything else, whatever the bytes (a Hypothesis test
fuzzes it), because a misbehaving adapter must never crash the runner.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

from zlink_model.vocabulary import CLOSE, DISPOSALS, DISPOSE
from zlink_model.vocabulary import OUTCOMES as WORK_OUTCOMES

__all__ = [
    "CAPABILITIES",
    "CLOSE_COMMAND",
    "COMMANDS",
    "DISPOSE_COMMAND",
    "DISPOSE_MODES",
    "ENTRIES",
    "ENTRY_PARAMETERS",
    "ERROR_KINDS",
    "EVENT_FIELDS",
    "ID_PATTERN",
    "IMPLIED_CAPABILITIES",
    "MAX_LINE_BYTES",
    "OPS",
    "OUTCOMES",
    "POLICY_FIELDS",
    "PROTOCOL_VERSION",
    "REJECT_REASONS",
    "REPLY_ERROR_KINDS",
    "SCOPE_WAIT_MODES",
    "SPOT_KINDS",
    "SPOT_MODES",
    "TARGET_TYPES",
    "AdapterMessageError",
    "Event",
    "FieldSpec",
    "Reply",
    "parse_adapter_line",
    "with_implied",
]

PROTOCOL_VERSION: Final = 1

# Runner-chosen names: targets, works, gates, external calls, waiters, actor ids and
# timer names. Short, ASCII, no separators, so owner names can be built from them.
ID_PATTERN: Final = re.compile(r"[A-Za-z][A-Za-z0-9_.-]{0,63}")
# Canonical owner (queue) names: a target, or a Spot's Actor or timer queue.
OWNER_PATTERN: Final = re.compile(
    r"[A-Za-z][A-Za-z0-9_.-]{0,63}(/(actor|timer):[A-Za-z][A-Za-z0-9_.-]{0,63})?"
)
# One line may not be longer than this; a longer one is a protocol error, not a hang.
MAX_LINE_BYTES: Final = 1 << 20

TARGET_TYPES: Final = ("spot", "actor", "session", "queue")
SPOT_KINDS: Final = ("user", "entry", "instance")
SPOT_MODES: Final = ("per_actor", "spot_wide")

# The entry points of each target type (SE-3) and the queue primitive's entries (SE-6.2).
ENTRIES: Final[Mapping[str, tuple[str, ...]]] = {
    "spot": ("execute_spot", "execute_actor", "execute_timer", "execute_lifecycle"),
    "actor": ("execute_actor", "execute_lifecycle"),
    "session": ("execute_application", "execute_control", "execute_infrastructure",
                "execute_final"),
    "queue": ("enqueue", "enqueue_with_payload_bytes", "enqueue_lifecycle",
              "enqueue_barrier_next"),
}
# What each entry takes besides the work, per target type: the whole surface a caller
# has (SE-3.1: nothing names a queue). The handshake reports the runtime's own surface
# in this form and the SE-10.1 case compares.
ENTRY_PARAMETERS: Final[Mapping[str, Mapping[str, tuple[str, ...]]]] = {
    "spot": {
        "execute_spot": ("work",),
        "execute_actor": ("actor_id", "work", "payload_bytes"),
        "execute_timer": ("timer_name", "work"),
        "execute_lifecycle": ("work",),
    },
    "actor": {
        "execute_actor": ("work", "payload_bytes"),
        "execute_lifecycle": ("work",),
    },
    "session": {
        "execute_application": ("work", "payload_bytes"),
        "execute_control": ("work",),
        "execute_infrastructure": ("work",),
        "execute_final": ("work",),
    },
}

POLICY_FIELDS: Final = (
    "application_message_capacity",
    "application_byte_capacity",
    "lifecycle_message_capacity",
    "lifecycle_byte_capacity",
    "fixed_work_byte_cost",
    "lifecycle_burst_limit",
    "owner_time_budget_ms",
)

CAPABILITIES: Final[Mapping[str, str]] = {
    "spot.user.per_actor": "User Spots in PerActor mode",
    "spot.user.spot_wide": "User Spots in SpotWide mode",
    "spot.entry": "Entry Spots (PerActor wiring, no Yield)",
    "spot.instance": "Instance Spots (SpotWide wiring)",
    "actor": "the Actor serial executor",
    "session": "the Session serial executor",
    "queue": "a bare ZLinkSerialExecutionQueue as a target (enqueue_* entries, barrier-next)",
    "yield": "the `call` op: yield_framework_call on an external call the runner settles",
    "virtual_clock": "a runtime clock that only moves on `advance` and the `busy` op",
    "single_execution_resource": (
        "every owner of a case shares one execution resource that serves ready owners "
        "first come, first served (D-13); needed to observe a cut time slice"
    ),
    "snapshots": "Actor registrations (`register`, `update_registration`) and the `snapshot` op",
    "synchronous_wait": (
        "the `wait_for` op: a work waits synchronously for another work (a runtime without "
        "reentrancy detection blocks where SE-8.2 demands an error, and fails there)"
    ),
    "reentrancy_detection": (
        "the runtime refuses a synchronous wait that could never end (`wait_for` reports "
        "`error` `reentrancy`, SE-8.2); implies `synchronous_wait`"
    ),
    "scope_wait": (
        "the `await_scope` op: a work awaits its own target's `await_quiescence`, "
        "`await_completion` or `await_after_cancellation` (SE-8.2, SE-10.13: refused with "
        "`error` `reentrancy` at once; a runtime without the check blocks there, and fails)"
    ),
    "disposal": "dispose, dispose_safely, dispose_after_timeout, destroy, as_not_safely, await",
    "await_after_dispose_safely": (
        "`await` mode `after_cancellation` after `dispose_safely` alone waits for the "
        "zombies (D-19's reading; a runtime that asks for a cancelling disposal first, "
        "the seed's letter, leaves it out)"
    ),
    "runtime_end": "the runtime end of SD-5 (`runtime_end`)",
    "statistics": "the `statistics` command: active and zombie counts, reservations per owner",
    "zombie_listing": "the `zombies` command: the zombies of a target while they run",
    "zombie_warning": "`zombie_warning` events for zombies outliving a threshold (SD-6)",
    "concurrent_submission": (
        "`submit_concurrent`: several submissions at once, each from its own OS thread"
    ),
    "member_listing": (
        "the handshake's `members`: each coordinator's public members beyond its entry "
        "points, and whether one hands out a queue"
    ),
    "submitter_stack": (
        "every `started` says whether the work's code began on the submitter's stack "
        "(`on_submitter_stack`, SE-6.5)"
    ),
    "queue_observation": (
        "a bare queue's `is_current` (the `is_current` op) and `await_quiescence` (`await` "
        "mode `quiescence`), SE-6.2"
    ),
    "held_steps": (
        "a bare queue created with `held` takes none of its own steps (enter its drain, "
        "take the next turn, end a slice, leave the drain, requeue a returned call's "
        "work) until a `step` command names it"
    ),
}

# Two commands are named for the core transitions they ask for: ``close`` closes every
# queue of the target; ``dispose`` disposes its scope by one of ``DISPOSE_MODES``.
CLOSE_COMMAND: Final = CLOSE
DISPOSE_COMMAND: Final = DISPOSE

# A capability that implies others: an adapter declaring the key offers them too. An
# adapter written before `synchronous_wait` existed offered `wait_for` under
# `reentrancy_detection` alone, and keeps running every case it ran.
IMPLIED_CAPABILITIES: Final[Mapping[str, tuple[str, ...]]] = {
    "reentrancy_detection": ("synchronous_wait",),
}


def with_implied(capabilities: Iterable[str]) -> tuple[str, ...]:
    """The capabilities with every one they imply, in order, each once."""
    out: dict[str, None] = {}
    for cap in capabilities:
        out[cap] = None
        for implied in IMPLIED_CAPABILITIES.get(cap, ()):
            out[implied] = None
    return tuple(out)


COMMANDS: Final = (
    "hello", "reset", "create", "submit", "submit_concurrent", "open", "complete", "fail",
    "advance", "register", "update_registration", "settle", CLOSE_COMMAND, DISPOSE_COMMAND,
    "as_not_safely",
    "await", "runtime_end", "statistics", "zombies", "step", "shutdown",
)
OPS: Final = ("gate", "call", "busy", "submit", "wait_for", "snapshot", "raise", "is_current",
               "await_scope")
# The scope waits the ``await_scope`` op names: the ``await`` command's modes, awaited from
# inside a work of the same target.
SCOPE_WAIT_MODES: Final = ("quiescence", "completion", "after_cancellation")
# The three disposal calls (the core transitions of the same names) and the Actor's
# destroy, which disposes its scope.
DISPOSE_MODES: Final = (*DISPOSALS, "destroy")

REJECT_REASONS: Final = (
    "application_count", "application_bytes", "lifecycle_count", "lifecycle_bytes", "closed",
)
ERROR_KINDS: Final = ("reentrancy", "yield_not_supported", "closed", "not_disposed", "other")
OUTCOMES: Final = tuple(o.wire for o in WORK_OUTCOMES)  # how a waited-for work ended
REPLY_ERROR_KINDS: Final = (
    "bad_command", "unsupported", "unknown_target", "unknown_work", "internal",
)


@dataclasses.dataclass(frozen=True, slots=True)
class FieldSpec:
    """One field of an event: its JSON type and, for strings, what it may hold."""

    kind: str  # "id", "owner", "string", "enum", "int", "bool", "object", "id_list", "string_list"
    required: bool = True
    choices: tuple[str, ...] = ()


_WORK = FieldSpec("id")
_OWNER = FieldSpec("owner")

# Every event the adapter may send, with its fields. Unknown events and unknown fields
# are errors: a typo in an adapter should fail loudly, not be ignored.
EVENT_FIELDS: Final[Mapping[str, Mapping[str, FieldSpec]]] = {
    "accepted": {"work": _WORK, "owner": _OWNER},
    "rejected": {"work": _WORK, "owner": _OWNER,
                 "reason": FieldSpec("enum", choices=REJECT_REASONS)},
    "started": {"work": _WORK, "owner": _OWNER,
                "on_submitter_stack": FieldSpec("bool", required=False)},
    "yielded": {"work": _WORK, "owner": _OWNER, "call": FieldSpec("id")},
    "resumed": {"work": _WORK, "owner": _OWNER},
    "finished": {"work": _WORK, "owner": _OWNER},
    "failed": {"work": _WORK, "owner": _OWNER, "message": FieldSpec("string")},
    "cancelled": {"work": _WORK, "owner": _OWNER},
    "error": {"work": _WORK, "owner": _OWNER, "op": FieldSpec("int"),
              "kind": FieldSpec("enum", choices=ERROR_KINDS)},
    "waited": {"work": _WORK, "owner": _OWNER, "target": FieldSpec("id"),
               "outcome": FieldSpec("enum", choices=OUTCOMES)},
    "snapshot": {"work": _WORK, "owner": _OWNER, "values": FieldSpec("object")},
    "current": {"work": _WORK, "owner": _OWNER, "target": FieldSpec("id"),
                "current": FieldSpec("bool")},
    "zombie": {"work": _WORK, "owner": _OWNER},
    "zombie_warning": {"work": _WORK, "owner": _OWNER},
    "fault": {"message": FieldSpec("string")},
    "returned": {
        "waiter": FieldSpec("id"),
        "error": FieldSpec("enum", required=False, choices=ERROR_KINDS),
        "errors": FieldSpec("string_list", required=False),
        "cancelled": FieldSpec("id_list", required=False),
        "abandoned": FieldSpec("id_list", required=False),
    },
}


class AdapterMessageError(Exception):
    """A line from the adapter is not a valid protocol message. ``line`` is its number on
    the adapter's stdout (1-based), ``text`` a short excerpt of it."""

    def __init__(self, line: int, problem: str, text: str = "") -> None:
        self.line = line
        self.problem = problem
        self.text = text
        excerpt = f": {text!r}" if text else ""
        super().__init__(f"adapter stdout line {line}: {problem}{excerpt}")


@dataclasses.dataclass(frozen=True, slots=True)
class Reply:
    """The answer to command ``re``. ``fields`` holds everything but re/ok/error."""

    re: int
    ok: bool
    fields: Mapping[str, Any]
    error_kind: str | None = None
    error_message: str | None = None
    line: int = 0


@dataclasses.dataclass(frozen=True, slots=True)
class Event:
    """Something the runtime did. ``fields`` holds everything but the event name."""

    name: str
    fields: Mapping[str, Any]
    line: int = 0

    @property
    def work(self) -> str | None:
        """The work the event is about (None for ``returned`` and ``fault``)."""
        value = self.fields.get("work")
        return value if isinstance(value, str) else None

    @property
    def owner(self) -> str | None:
        """The owner (queue) the event names, if any."""
        value = self.fields.get("owner")
        return value if isinstance(value, str) else None

    def to_json(self) -> dict[str, Any]:
        """The wire form."""
        return {"event": self.name, **self.fields}


def _excerpt(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def _reject_constants(token: str) -> Any:
    raise ValueError(f"{token} is not JSON")


def _loads(text: str) -> Any:
    # NaN and Infinity are not JSON; Python's json accepts them unless told not to.
    return json.loads(text, parse_constant=_reject_constants)


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_name(value: Any) -> bool:
    return isinstance(value, str) and bool(ID_PATTERN.fullmatch(value))


# kind -> (accepts the value?, what it must be)
_FIELD_KINDS: Final[Mapping[str, tuple[Any, str]]] = {
    "id": (_is_name, f"a name matching {ID_PATTERN.pattern}"),
    "owner": (lambda v: isinstance(v, str) and bool(OWNER_PATTERN.fullmatch(v)),
              "an owner name like S, S/actor:A or S/timer:t"),
    "string": (lambda v: isinstance(v, str), "a string"),
    "int": (lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "object": (lambda v: isinstance(v, dict), "a JSON object"),
    "id_list": (lambda v: isinstance(v, list) and all(_is_name(x) for x in v),
                "a list of names"),
    "string_list": (lambda v: isinstance(v, list) and all(isinstance(x, str) for x in v),
                    "a list of strings"),
}


def _check_field(name: str, spec: FieldSpec, value: Any) -> str | None:
    """Why ``value`` does not fit ``spec`` (None if it does)."""
    if spec.kind == "enum":
        if value in spec.choices:
            return None
        return f"field {name!r} must be one of {', '.join(spec.choices)}"
    accepts, what = _FIELD_KINDS[spec.kind]
    return None if accepts(value) else f"field {name!r} must be {what}"


def parse_adapter_line(raw: bytes | str, line: int) -> Reply | Event:
    """Parse one line of the adapter's stdout (without or with its newline).

    Raises ``AdapterMessageError`` (and nothing else) when the line is not a valid
    reply or event, naming the line number and the problem.
    """
    if isinstance(raw, bytes):
        if len(raw) > MAX_LINE_BYTES:
            raise AdapterMessageError(line, f"line longer than {MAX_LINE_BYTES} bytes")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise AdapterMessageError(
                line, f"not UTF-8 (byte {exc.start})", _excerpt(raw.decode("utf-8", "replace"))
            ) from None
    else:
        text = raw
    text = text.rstrip("\r\n")
    if not text.strip():
        raise AdapterMessageError(line, "empty line (every line must hold one JSON object)")
    try:
        obj = _loads(text)
    except (ValueError, RecursionError) as exc:
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else str(exc)
        raise AdapterMessageError(line, f"not JSON ({problem})", _excerpt(text)) from None
    if not isinstance(obj, dict):
        raise AdapterMessageError(line, "expected a JSON object", _excerpt(text))
    if "re" in obj and "event" in obj:
        raise AdapterMessageError(line, "a message is a reply (re) or an event, not both",
                                  _excerpt(text))
    if "re" in obj:
        return _parse_reply(obj, line, text)
    if "event" in obj:
        return _parse_event(obj, line, text)
    raise AdapterMessageError(
        line, "neither a reply (no 're') nor an event (no 'event')", _excerpt(text)
    )


def _parse_reply(obj: dict[str, Any], line: int, text: str) -> Reply:
    re_ = obj["re"]
    if not _is_int(re_) or re_ < 0:
        raise AdapterMessageError(line, "'re' must be a non-negative integer", _excerpt(text))
    ok = obj.get("ok")
    if not isinstance(ok, bool):
        raise AdapterMessageError(line, "a reply needs 'ok': true or false", _excerpt(text))
    fields = {k: v for k, v in obj.items() if k not in ("re", "ok", "error")}
    if ok:
        if "error" in obj:
            raise AdapterMessageError(line, "'error' only belongs to a reply with ok false",
                                      _excerpt(text))
        return Reply(re_, True, fields, line=line)
    error = obj.get("error")
    if not isinstance(error, dict):
        raise AdapterMessageError(line, "a reply with ok false needs an 'error' object",
                                  _excerpt(text))
    kind, message = error.get("kind"), error.get("message")
    if kind not in REPLY_ERROR_KINDS:
        raise AdapterMessageError(
            line, f"error kind must be one of {', '.join(REPLY_ERROR_KINDS)}", _excerpt(text)
        )
    if not isinstance(message, str):
        raise AdapterMessageError(line, "error message must be a string", _excerpt(text))
    extra = sorted(set(error) - {"kind", "message"})
    if extra:
        raise AdapterMessageError(line, f"unknown error field(s): {', '.join(extra)}",
                                  _excerpt(text))
    return Reply(re_, False, fields, kind, message, line=line)


def _parse_event(obj: dict[str, Any], line: int, text: str) -> Event:
    name = obj["event"]
    if not isinstance(name, str):
        raise AdapterMessageError(line, "'event' must be a string", _excerpt(text))
    specs = EVENT_FIELDS.get(name)
    if specs is None:
        raise AdapterMessageError(line, f"unknown event {_excerpt(name, 40)!r}", _excerpt(text))
    fields = {k: v for k, v in obj.items() if k != "event"}
    unknown = sorted(set(fields) - set(specs))
    if unknown:
        names = ", ".join(_excerpt(u, 40) for u in unknown)
        raise AdapterMessageError(line, f"unknown field(s) of event {name!r}: {names}",
                                  _excerpt(text))
    for field, spec in specs.items():
        if field not in fields:
            if spec.required:
                raise AdapterMessageError(line, f"event {name!r} needs field {field!r}",
                                          _excerpt(text))
            continue
        problem = _check_field(field, spec, fields[field])
        if problem is not None:
            raise AdapterMessageError(line, f"event {name!r}: {problem}", _excerpt(text))
    if name == "snapshot" and not _json_values_ok(fields["values"]):
        raise AdapterMessageError(line, "snapshot values must be strings, integers or booleans",
                                  _excerpt(text))
    return Event(name, fields, line=line)


def _json_values_ok(values: dict[str, Any]) -> bool:
    return all(isinstance(value, str | int | bool) for value in values.values())
