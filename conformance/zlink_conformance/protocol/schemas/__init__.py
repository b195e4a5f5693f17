"""The protocol's JSON Schemas (draft 2020-12), shipped with the package.

``command.schema.json``: a command from the runner; ``adapter-message.schema.json``: a
reply or an event from the adapter (``#/$defs/hello_reply`` is the handshake);
``case.schema.json``: a case file. They refer to each other by relative URI, so load them
together (``schema_texts``) into one registry. The runner itself needs no schema library:
its reader and case loader check the same things in code, and the tests hold the two in
agreement.
"""

from __future__ import annotations

import json
from importlib import resources
from typing import Any

__all__ = ["SCHEMA_FILES", "load_schema", "schema_texts"]

SCHEMA_FILES = ("command.schema.json", "adapter-message.schema.json", "case.schema.json")


def load_schema(name: str) -> dict[str, Any]:
    """One schema, parsed."""
    text = resources.files(__name__).joinpath(name).read_text(encoding="utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def schema_texts() -> dict[str, dict[str, Any]]:
    """Every schema by its ``$id``, for a validator's registry."""
    out = {}
    for name in SCHEMA_FILES:
        schema = load_schema(name)
        out[str(schema["$id"])] = schema
    return out
