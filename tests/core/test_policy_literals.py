"""SE-6.1: the seed's defaults as literal numbers, partial mappings, and which
time-budget values the policy refuses (decision D-26).

The older defaults test writes ``64 * MIB`` with ``MIB`` imported from the module under
test, so a wrong ``MIB`` changes both sides and the test still passes (a real survivor
of the mutation run of issue 15). Here every number is written out as the seed gives
it: 64 MiB = 67,108,864 bytes, 4 MiB = 4,194,304 bytes.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from zlink_model.policy import MIB, PolicyInputError, load_policy
from zlink_reference import ZLinkExecutionLanePolicy

SEED_DEFAULTS = {
    "application_message_capacity": 1_024,
    "application_byte_capacity": 67_108_864,
    "lifecycle_message_capacity": 128,
    "lifecycle_byte_capacity": 4_194_304,
    "fixed_work_byte_cost": 256,
    "lifecycle_burst_limit": 8,
    "owner_time_budget_ms": 10,
}


def test_SE_6_1_defaults_are_the_seeds_literal_numbers() -> None:
    p = ZLinkExecutionLanePolicy()
    assert p.application_message_capacity == 1_024
    assert p.application_byte_capacity == 67_108_864
    assert p.lifecycle_message_capacity == 128
    assert p.lifecycle_byte_capacity == 4_194_304
    assert p.fixed_work_byte_cost == 256
    assert p.lifecycle_burst_limit == 8
    assert p.owner_time_budget_ms == 10
    assert p.to_mapping() == SEED_DEFAULTS
    assert MIB == 1_048_576


def test_SE_6_1_the_default_file_policy_is_the_seed_policy() -> None:
    assert load_policy(None).to_mapping() == SEED_DEFAULTS


@pytest.mark.parametrize("field", sorted(SEED_DEFAULTS))
def test_SE_6_1_a_partial_mapping_sets_one_field_and_keeps_the_seed_defaults(
        field: str) -> None:
    changed = SEED_DEFAULTS[field] + 1
    p = ZLinkExecutionLanePolicy.from_mapping({field: changed})
    assert p.to_mapping() == {**SEED_DEFAULTS, field: changed}
    # Round trip: the full mapping of a partial policy builds the same policy.
    assert ZLinkExecutionLanePolicy.from_mapping(p.to_mapping()) == p


def test_SE_6_1_an_empty_mapping_is_the_default_policy() -> None:
    assert ZLinkExecutionLanePolicy.from_mapping({}) == ZLinkExecutionLanePolicy()


def test_SE_6_1_a_partial_policy_file_keeps_the_other_defaults(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text("lifecycle_burst_limit = 3\napplication_byte_capacity = 1000\n")
    js = tmp_path / "p.json"
    js.write_text(json.dumps({"owner_time_budget_ms": 2.5}))
    assert load_policy(toml).to_mapping() == {
        **SEED_DEFAULTS, "lifecycle_burst_limit": 3, "application_byte_capacity": 1000}
    assert load_policy(js).to_mapping() == {**SEED_DEFAULTS, "owner_time_budget_ms": 2.5}


def test_SE_6_1_unknown_fields_are_named_in_sorted_order() -> None:
    with pytest.raises(ValueError) as err:
        ZLinkExecutionLanePolicy.from_mapping({"zeta": 1, "alpha": 2, "lifecycle_burst_limit": 1})
    assert str(err.value) == "unknown policy field(s): alpha, zeta"


def test_SE_6_1_a_bad_file_value_names_the_file_and_the_field(tmp_path: Path) -> None:
    js = tmp_path / "bad.json"
    js.write_text(json.dumps({"lifecycle_message_capacity": 0}))
    with pytest.raises(PolicyInputError) as err:
        load_policy(js)
    assert str(err.value) == (f"{js}: lifecycle_message_capacity must be > 0, got 0 "
                              "(SE-6.1)")


@pytest.mark.parametrize("field", ["lifecycle_burst_limit", "fixed_work_byte_cost"])
def test_SE_6_1_the_lower_bound_itself_is_allowed_only_where_it_is_not_strict(
        field: str) -> None:
    if field == "fixed_work_byte_cost":
        assert ZLinkExecutionLanePolicy(fixed_work_byte_cost=0).fixed_work_byte_cost == 0
    else:
        assert ZLinkExecutionLanePolicy(lifecycle_burst_limit=1).lifecycle_burst_limit == 1


def test_SE_6_4_owner_time_budget_ms_refuses_nan_with_the_field_named() -> None:
    with pytest.raises(ValueError) as err:
        ZLinkExecutionLanePolicy(owner_time_budget_ms=math.nan)
    assert str(err.value) == "owner_time_budget_ms must be a number, got nan (SE-6.1)"


@pytest.mark.parametrize("value", [math.inf, -math.inf])
def test_SE_6_4_owner_time_budget_ms_refuses_infinity_with_the_field_named(
        value: float) -> None:
    """Decision D-26: a budget that never expires would switch SE-6.4's slice cut off
    without a word; a caller who wants long slices gives a large finite number."""
    with pytest.raises(ValueError) as err:
        ZLinkExecutionLanePolicy(owner_time_budget_ms=value)
    assert "owner_time_budget_ms" in str(err.value)
    assert "infinity is not allowed" in str(err.value)


def test_SE_6_4_a_large_finite_owner_time_budget_is_allowed() -> None:
    assert ZLinkExecutionLanePolicy(owner_time_budget_ms=1e12).owner_time_budget_ms == 1e12


def test_SE_6_1_a_json_file_is_read_as_json_only(tmp_path: Path) -> None:
    """A ``.json`` file holding TOML is refused: only a file of unknown suffix may be
    either (a mutant that sent ``.json`` to the either-way branch survived before)."""
    js = tmp_path / "p.json"
    js.write_text("lifecycle_burst_limit = 3\n")
    with pytest.raises(PolicyInputError, match="neither valid JSON nor TOML"):
        load_policy(js)
    other = tmp_path / "p.policy"
    other.write_text("lifecycle_burst_limit = 3\n")
    assert load_policy(other).lifecycle_burst_limit == 3
    upper = tmp_path / "p.JSON"
    upper.write_text(json.dumps({"lifecycle_burst_limit": 4}))
    assert load_policy(upper).lifecycle_burst_limit == 4


def test_SE_6_1_a_missing_or_non_table_file_is_a_policy_input_error(tmp_path: Path) -> None:
    with pytest.raises(PolicyInputError, match="cannot read"):
        load_policy(tmp_path / "absent.toml")
    js = tmp_path / "list.json"
    js.write_text("[1, 2]")
    with pytest.raises(PolicyInputError, match="expected a table of policy fields, got list"):
        load_policy(js)


def test_SE_6_1_a_toml_file_is_read_as_toml_only(tmp_path: Path) -> None:
    toml = tmp_path / "p.toml"
    toml.write_text(json.dumps({"lifecycle_burst_limit": 3}))
    with pytest.raises(PolicyInputError, match="neither valid JSON nor TOML"):
        load_policy(toml)


@pytest.mark.parametrize("suffix", [".cfg", ".policy", ".zzz", ""])
def test_SE_6_1_a_file_of_another_suffix_may_be_json_or_toml(
        tmp_path: Path, suffix: str) -> None:
    """Suffixes that sort before, between and after ``.json`` and ``.toml``: each is
    read either way (a mutant that compared suffixes by order survived before)."""
    as_json = tmp_path / f"j{suffix}"
    as_json.write_text(json.dumps({"lifecycle_burst_limit": 5}))
    as_toml = tmp_path / f"t{suffix}"
    as_toml.write_text("lifecycle_burst_limit = 6\n")
    assert load_policy(as_json).lifecycle_burst_limit == 5
    assert load_policy(as_toml).lifecycle_burst_limit == 6


def test_SE_6_1_an_unreadable_file_is_named_with_the_systems_reason(tmp_path: Path) -> None:
    absent = tmp_path / "absent.json"
    with pytest.raises(PolicyInputError) as err:
        load_policy(absent)
    assert str(err.value) == f"cannot read {absent}: No such file or directory"


def test_SE_6_1_a_policy_is_a_slotted_frozen_value() -> None:
    """Many queues share one policy value; it has no per-instance dict (slots) and
    refuses every assignment (frozen)."""
    p = ZLinkExecutionLanePolicy()
    assert not hasattr(p, "__dict__")
    assert type(p).__slots__ == tuple(SEED_DEFAULTS)
