"""The reader of adapter lines: examples of each problem it names, and Hypothesis fuzzing
that it never raises anything but AdapterMessageError and agrees with the JSON Schema."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from jsonschema import Draft202012Validator

from zlink_conformance.protocol.schemas import load_schema
from zlink_conformance.protocol.wire import (
    ERROR_KINDS,
    EVENT_FIELDS,
    OUTCOMES,
    REJECT_REASONS,
    REPLY_ERROR_KINDS,
    AdapterMessageError,
    Event,
    Reply,
    parse_adapter_line,
)

SCHEMA = Draft202012Validator(load_schema("adapter-message.schema.json"))


@pytest.mark.parametrize(("line", "problem"), [
    (b"", "empty line"),
    (b"hello\n", "not JSON"),
    (b"NaN\n", "not JSON"),
    (b'{"re": 1, "ok": true', "not JSON"),
    (b"[1]\n", "expected a JSON object"),
    (b"\xff\xfe\n", "not UTF-8"),
    (b'{"x": 1}\n', "neither a reply"),
    (b'{"re": 1, "event": "started"}\n', "not both"),
    (b'{"re": -1, "ok": true}\n', "'re' must be"),
    (b'{"re": true, "ok": true}\n', "'re' must be"),
    (b'{"re": 1}\n', "needs 'ok'"),
    (b'{"re": 1, "ok": false}\n', "needs an 'error' object"),
    (b'{"re": 1, "ok": false, "error": {"kind": "oops", "message": ""}}\n', "error kind"),
    (b'{"re": 1, "ok": true, "error": {}}\n', "only belongs"),
    (b'{"event": "exploded"}\n', "unknown event 'exploded'"),
    (b'{"event": "started", "work": "a"}\n', "needs field 'owner'"),
    (b'{"event": "started", "work": "a", "owner": "S", "x": 1}\n', "unknown field(s)"),
    (b'{"event": "started", "work": "1a", "owner": "S"}\n', "field 'work' must be a name"),
    (b'{"event": "started", "work": "a", "owner": "S/queue:x"}\n', "owner name"),
    (b'{"event": "rejected", "work": "a", "owner": "S", "reason": "full"}\n', "reason"),
    (b'{"event": "snapshot", "work": "a", "owner": "S", "values": {"x": [1]}}\n',
     "snapshot values"),
    (b"{" + b" " * (1 << 20) + b"}\n", "longer than"),
])
def test_each_problem_is_named_with_the_line_number(line: bytes, problem: str) -> None:
    with pytest.raises(AdapterMessageError) as err:
        parse_adapter_line(line, 42)
    assert err.value.line == 42
    assert str(err.value).startswith("adapter stdout line 42: ")
    assert problem in str(err.value)


def test_valid_messages_parse() -> None:
    reply = parse_adapter_line(b'{"re": 3, "ok": true, "verdict": "accepted"}\n', 1)
    assert isinstance(reply, Reply) and reply.re == 3 and reply.fields == {"verdict": "accepted"}
    refused = parse_adapter_line(
        '{"re": 4, "ok": false, "error": {"kind": "unsupported", "message": "no"}}', 2)
    assert isinstance(refused, Reply) and refused.error_kind == "unsupported"
    event = parse_adapter_line(b'{"event":"yielded","work":"w1","owner":"S/actor:A","call":"c"}', 3)
    assert isinstance(event, Event) and event.work == "w1" and event.owner == "S/actor:A"


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=200))
def test_any_bytes_give_a_message_or_a_protocol_error(raw: bytes) -> None:
    try:
        parse_adapter_line(raw, 1)
    except AdapterMessageError as exc:
        assert exc.line == 1


# Names come from an alphabet without line breaks: the Python validator's regex `$` also
# matches before a final newline, which the schema's ECMA-262 regex does not.
_alphabet = st.sampled_from("aZ09_.-/: ")
junk = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(_alphabet, max_size=6),
                 st.lists(st.integers(0, 3), max_size=2),
                 st.dictionaries(st.text("ab", max_size=2), st.integers(0, 2), max_size=2))
names = st.one_of(st.sampled_from(["a", "w1", "S", "Zed_2.x-y"]), st.text(_alphabet, max_size=6))
owners = st.one_of(st.sampled_from(["S", "S/actor:A", "S/timer:t", "q.1"]),
                   st.text(_alphabet, max_size=8))
plain = st.dictionaries(st.text("xyz", min_size=1, max_size=2),
                        st.one_of(st.text(max_size=3), st.integers(0, 9), st.booleans()),
                        max_size=2)
VALID: dict[str, Any] = {
    "id": names, "owner": owners, "string": st.text(max_size=5), "int": st.integers(-1, 5),
    "object": plain, "id_list": st.lists(names, max_size=3),
    "string_list": st.lists(st.text(max_size=3), max_size=3), "bool": st.booleans(),
}
ENUMS = {"reason": REJECT_REASONS, "kind": ERROR_KINDS, "outcome": OUTCOMES,
         "error": ERROR_KINDS}


@st.composite
def events(draw: st.DrawFn) -> dict[str, Any]:
    name = draw(st.sampled_from([*EVENT_FIELDS, "exploded"]))
    obj: dict[str, Any] = {"event": name}
    for field, spec in EVENT_FIELDS.get(name, {}).items():
        if draw(st.integers(0, 9)) == 0:
            continue  # leave it out
        if draw(st.integers(0, 4)) == 0:
            obj[field] = draw(junk)
        elif spec.kind == "enum":
            obj[field] = draw(st.sampled_from([*ENUMS[field], "nonsense"]))
        else:
            obj[field] = draw(VALID[spec.kind])
    if draw(st.integers(0, 9)) == 0:
        obj[draw(st.sampled_from(["extra", "re", "work"]))] = draw(junk)
    return obj


@st.composite
def replies(draw: st.DrawFn) -> dict[str, Any]:
    obj: dict[str, Any] = {"re": draw(st.one_of(st.integers(-1, 9), junk))}
    if draw(st.integers(0, 9)):
        obj["ok"] = draw(st.one_of(st.booleans(), junk))
    if draw(st.booleans()):
        obj["error"] = draw(st.one_of(junk, st.fixed_dictionaries(
            {"kind": st.sampled_from([*REPLY_ERROR_KINDS, "bad"]), "message": st.one_of(
                st.text(max_size=3), st.integers())},
            optional={"extra": junk})))
    if draw(st.booleans()):
        obj[draw(st.sampled_from(["verdict", "now_ms", "event"]))] = draw(junk)
    return obj


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(events(), replies()))
def test_the_reader_and_the_schema_agree(message: dict[str, Any]) -> None:
    line = json.dumps(message).encode()
    try:
        parsed = parse_adapter_line(line, 1)
    except AdapterMessageError:
        reader_ok = False
    else:
        reader_ok = True
        wire = parsed.to_json() if isinstance(parsed, Event) else None
        if wire is not None:
            assert wire == message  # a valid event round-trips
    assert reader_ok == SCHEMA.is_valid(message), message
