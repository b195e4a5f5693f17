"""``ZLinkExecutionLanePolicy``: the injected limits of one serial queue (SE-6.1).

The policy is a value, never a constant inside the queue, because a Spot, an Actor and a
session use different limits (SE-6.1). It is validated once, at construction, so every
later rule can assume sane numbers; a bad value names the field and the rule it breaks.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from pathlib import Path
from typing import Any

__all__ = ["MIB", "PolicyInputError", "ZLinkExecutionLanePolicy", "load_policy"]

MIB = 1024 * 1024

# (field, lower bound, strict?) -- one table so the error text and the checkers agree.
_BOUNDS: tuple[tuple[str, int, bool], ...] = (
    ("application_message_capacity", 0, True),
    ("application_byte_capacity", 0, True),
    ("lifecycle_message_capacity", 0, True),
    ("lifecycle_byte_capacity", 0, True),
    ("fixed_work_byte_cost", 0, False),
    ("lifecycle_burst_limit", 0, True),
    ("owner_time_budget_ms", 0, True),
)


@dataclasses.dataclass(frozen=True, slots=True)
class ZLinkExecutionLanePolicy:
    """Limits of one serial queue. Defaults are the seed's (SE-6.1).

    Counts and bytes bound what a lane holds at once: a work's reservation is taken at
    admission and returned when the work finishes (SE-5.2), so running and suspended
    works count too.
    """

    application_message_capacity: int = 1024
    application_byte_capacity: int = 64 * MIB
    lifecycle_message_capacity: int = 128
    lifecycle_byte_capacity: int = 4 * MIB
    fixed_work_byte_cost: int = 256
    lifecycle_burst_limit: int = 8
    owner_time_budget_ms: float = 10

    def __post_init__(self) -> None:
        for name, low, strict in _BOUNDS:
            value = getattr(self, name)
            is_number = isinstance(value, int | float) and not isinstance(value, bool)
            integral = name != "owner_time_budget_ms"
            if not is_number or (integral and not isinstance(value, int)):
                kind = "an integer" if integral else "a number"
                raise TypeError(f"{name} must be {kind}, got {value!r} (SE-6.1)")
            if math.isnan(value):
                raise ValueError(f"{name} must be a number, got nan (SE-6.1)")
            if math.isinf(value):
                # Decision D-26: a budget that never expires would turn the SE-6.4
                # slice cut off silently; only the budget can be a float at all.
                raise ValueError(f"{name} must be finite (infinity is not allowed), "
                                 f"got {value} (SE-6.1, SE-6.4)")
            if (strict and value <= low) or (not strict and value < low):
                op = ">" if strict else ">="
                raise ValueError(f"{name} must be {op} {low}, got {value} (SE-6.1)")

    @classmethod
    def from_mapping(cls, data: dict[str, Any]) -> ZLinkExecutionLanePolicy:
        """Build a policy from plain data (JSON, TOML); unknown keys are an error."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown policy field(s): {', '.join(unknown)}")
        return cls(**data)

    def to_mapping(self) -> dict[str, int | float]:
        """The policy as plain data, field names as in this class."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


class PolicyInputError(ValueError):
    """A policy file that cannot be read as a policy; the message names the problem."""


def load_policy(path: Path | None) -> ZLinkExecutionLanePolicy:
    """The policy in a JSON or TOML file (field names of the dataclass; missing fields
    keep their defaults), or the default policy when ``path`` is None."""
    if path is None:
        return ZLinkExecutionLanePolicy()
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise PolicyInputError(f"cannot read {path}: {exc.strerror or exc}") from None
    data: object
    suffix = path.suffix.lower()
    try:
        if suffix == ".toml":
            data = tomllib.loads(raw.decode("utf-8"))
        elif suffix == ".json":
            data = json.loads(raw)
        else:
            try:
                data = json.loads(raw)
            except ValueError:
                data = tomllib.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:
        raise PolicyInputError(f"{path} is neither valid JSON nor TOML: {exc}") from None
    if not isinstance(data, dict):
        raise PolicyInputError(f"{path}: expected a table of policy fields, got "
                               f"{type(data).__name__}")
    try:
        return ZLinkExecutionLanePolicy.from_mapping(data)
    except (TypeError, ValueError) as exc:
        raise PolicyInputError(f"{path}: {exc}") from None
