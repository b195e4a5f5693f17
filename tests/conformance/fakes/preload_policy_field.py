"""A preload file (``ZLINK_ADAPTER_PRELOAD``) that makes the reference adapter act like a
runtime without one policy field (``ZLINK_POLICY_FIELD``), in one of two ways
(``ZLINK_POLICY_FIELD_MODE``): ``refuse`` answers a ``create`` that sets it with the error
kind ``unsupported`` naming the field, as docs/conformance.md asks; ``ignore`` drops it
silently, the mistake the guide warns against."""

import os
from typing import Any

from zlink_reference_adapter import adapter

_FIELD = os.environ["ZLINK_POLICY_FIELD"]
_MODE = os.environ["ZLINK_POLICY_FIELD_MODE"]
_policy = adapter._policy


def _without_field(data: Any, what: str) -> Any:
    if isinstance(data, dict) and _FIELD in data:
        if _MODE == "refuse":
            raise adapter.CommandError("unsupported", f"{what}.{_FIELD} is not supported by "
                                                      f"this runtime")
        data = {k: v for k, v in data.items() if k != _FIELD}
    return _policy(data, what)


adapter._policy = _without_field
