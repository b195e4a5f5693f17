"""SE-6.1: the injected policy, its defaults and its validation."""

from __future__ import annotations

import dataclasses

import pytest

from zlink_model.policy import MIB
from zlink_reference import ZLinkExecutionLanePolicy


def test_SE_6_1_policy_defaults_are_the_seed_values() -> None:
    p = ZLinkExecutionLanePolicy()
    assert p.to_mapping() == {
        "application_message_capacity": 1024,
        "application_byte_capacity": 64 * MIB,
        "lifecycle_message_capacity": 128,
        "lifecycle_byte_capacity": 4 * MIB,
        "fixed_work_byte_cost": 256,
        "lifecycle_burst_limit": 8,
        "owner_time_budget_ms": 10,
    }


@pytest.mark.parametrize(
    ("field", "bad", "message"),
    [
        ("application_message_capacity", 0, "application_message_capacity must be > 0, got 0"),
        ("application_byte_capacity", -1, "application_byte_capacity must be > 0, got -1"),
        ("lifecycle_message_capacity", 0, "lifecycle_message_capacity must be > 0, got 0"),
        ("lifecycle_byte_capacity", 0, "lifecycle_byte_capacity must be > 0, got 0"),
        ("fixed_work_byte_cost", -1, "fixed_work_byte_cost must be >= 0, got -1"),
        ("lifecycle_burst_limit", 0, "lifecycle_burst_limit must be > 0, got 0"),
        ("owner_time_budget_ms", 0, "owner_time_budget_ms must be > 0, got 0"),
    ],
)
def test_SE_6_1_invalid_policy_names_field_and_rule(field: str, bad: int, message: str) -> None:
    with pytest.raises(ValueError) as err:
        ZLinkExecutionLanePolicy(**{field: bad})
    assert str(err.value) == f"{message} (SE-6.1)"


@pytest.mark.parametrize("bad", [1.5, "3", None, True])
def test_SE_6_1_counts_must_be_integers(bad: object) -> None:
    with pytest.raises(TypeError, match="application_message_capacity must be an integer"):
        ZLinkExecutionLanePolicy(application_message_capacity=bad)  # type: ignore[arg-type]


def test_SE_6_1_zero_fixed_cost_is_allowed_and_budget_may_be_fractional() -> None:
    p = ZLinkExecutionLanePolicy(fixed_work_byte_cost=0, owner_time_budget_ms=0.5)
    assert p.fixed_work_byte_cost == 0 and p.owner_time_budget_ms == 0.5


def test_SE_6_1_policy_is_immutable_and_round_trips() -> None:
    p = ZLinkExecutionLanePolicy(lifecycle_burst_limit=3)
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.lifecycle_burst_limit = 4  # type: ignore[misc]
    assert ZLinkExecutionLanePolicy.from_mapping(p.to_mapping()) == p
    with pytest.raises(ValueError, match="unknown policy field"):
        ZLinkExecutionLanePolicy.from_mapping({"burst": 1})
