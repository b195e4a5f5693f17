"""The JSON Schemas: valid draft 2020-12, every shipped case validates, every line of a
full run validates, and the schema and the loader agree on broken case files."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator
from referencing import Registry, Resource

from zlink_conformance.catalog import CaseError, Catalogue, load_catalogue, parse_case
from zlink_conformance.protocol.schemas import SCHEMA_FILES, load_schema, schema_texts

from kit_helpers import FullRun

CASES_DIR = Path(__file__).resolve().parents[2] / "conformance" / "zlink_conformance" / "cases"


def validator(name: str, ref: str | None = None) -> Draft202012Validator:
    registry: Registry[Any] = Registry().with_resources(
        (uri, Resource.from_contents(schema)) for uri, schema in schema_texts().items())
    schema = load_schema(name)
    if ref is not None:
        schema = {"$ref": f"{schema['$id']}#/$defs/{ref}"}
    return Draft202012Validator(schema, registry=registry)


@pytest.mark.parametrize("name", SCHEMA_FILES)
def test_schemas_are_valid_draft_2020_12(name: str) -> None:
    Draft202012Validator.check_schema(load_schema(name))


def test_every_shipped_case_file_validates(catalogue: Catalogue) -> None:
    v = validator("case.schema.json")
    files = sorted(CASES_DIR.glob("required_*.json")) + sorted(CASES_DIR.glob("optional_*.json"))
    assert len(files) == len(catalogue.cases)
    problems = {}
    for path in files:
        errors = list(v.iter_errors(json.loads(path.read_text())))
        if errors:
            problems[path.name] = [e.message for e in errors]
    assert problems == {}


def test_every_line_of_a_full_run_validates(full_run: FullRun) -> None:
    commands = validator("command.schema.json")
    messages = validator("adapter-message.schema.json")
    hello = validator("adapter-message.schema.json", "hello_reply")
    sent = [json.loads(line) for d, line in full_run.wire if d == "sent"]
    received = [json.loads(line) for d, line in full_run.wire if d == "received"]
    assert len(sent) > 500 and len(received) > 1000
    bad = [(m, e.message) for m in sent for e in commands.iter_errors(m)]
    bad += [(m, e.message) for m in received for e in messages.iter_errors(m)]
    assert bad == []
    assert hello.is_valid(received[0]), list(hello.iter_errors(received[0]))
    events = {m["event"] for m in received if "event" in m}
    assert events >= {"accepted", "rejected", "started", "yielded", "resumed", "finished",
                      "failed", "cancelled", "error", "waited", "snapshot", "zombie",
                      "zombie_warning", "returned"}


def _a_case() -> dict[str, Any]:
    path = CASES_DIR / "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other.json"
    data: dict[str, Any] = json.loads(path.read_text())
    return data


BROKEN = {
    "unknown key": lambda c: c.update(colour="red"),
    "no intent": lambda c: c.pop("intent"),
    "bad strength": lambda c: c.update(strength="mandatory"),
    "rule not an ID": lambda c: c.update(rules=["SE10.3"]),
    "unknown capability": lambda c: c.update(capabilities=["teleport"]),
    "runner command in a case": lambda c: c["steps"].insert(0, {"cmd": "hello", "protocol": 1}),
    "unknown command field": lambda c: c["steps"][0].update(colour="red"),
    "unknown op": lambda c: c["steps"][1]["script"].append({"op": "sleep", "ms": 5}),
    "unknown check": lambda c: c["expect"].append({"check": "vibes"}),
    "bad status": lambda c: c["expect"].append({"check": "status", "works": {"a": "done"}}),
    "unknown check field": lambda c: c["expect"][0].update(colour="red"),
    "empty steps": lambda c: c.update(steps=[]),
}


@pytest.mark.parametrize("what", sorted(BROKEN))
def test_schema_and_loader_both_refuse_a_broken_case(what: str, catalogue: Catalogue) -> None:
    case = _a_case()
    name = f"{case['id']}.json"
    assert validator("case.schema.json").is_valid(case)
    assert parse_case(copy.deepcopy(case), name, catalogue.rules, {})[1] == []
    BROKEN[what](case)
    assert not validator("case.schema.json").is_valid(case)
    parsed, problems = parse_case(case, name, catalogue.rules, {})
    assert parsed is None and problems, what
    assert all(p.startswith(name) for p in problems)


def test_case_error_is_raised_for_a_directory_of_broken_cases(tmp_path: Path) -> None:
    (tmp_path / "required_X_1_broken.json").write_text("{not json")
    with pytest.raises(CaseError, match=r"required_X_1_broken\.json: cannot read"):
        load_catalogue(tmp_path)


def test_every_found_case_file_validates() -> None:
    """The cases explore wrote and the suite keeps (strength found, with their origin)."""
    v = validator("case.schema.json")
    found = sorted((Path(__file__).parent / "found").glob("found_*.json"))
    assert found
    problems = {p.name: [e.message for e in v.iter_errors(json.loads(p.read_text()))]
                for p in found}
    assert {k: m for k, m in problems.items() if m} == {}
    broken = json.loads(found[0].read_text())
    del broken["found"]["seed"]
    assert list(v.iter_errors(broken))
