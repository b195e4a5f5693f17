"""The z3 policy checker (``zlink policy check``): its encodings agree with the rules, it
proves the default policy, refutes bad ones with a counterexample in the policy's own
terms, calls a policy that can admit nothing contradictory, refutes a broken selection
rule, and names the problem of a bad input file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import z3
from hypothesis import given
from hypothesis import strategies as st

from zlink_model.rules import Source, admission_verdict, select_next
from zlink_reference import RejectReason, ZLinkExecutionLanePolicy
from zlink_tool.cli.main import main
from zlink_tool.policycheck import (
    ACCEPT,
    BYTES,
    CLOSED,
    COUNT,
    NONE,
    check_policy,
    z3_admission_verdict,
    z3_select_next,
)

CODES = {None: ACCEPT, RejectReason.CLOSED: CLOSED,
         RejectReason.APPLICATION_COUNT: COUNT, RejectReason.LIFECYCLE_COUNT: COUNT,
         RejectReason.APPLICATION_BYTES: BYTES, RejectReason.LIFECYCLE_BYTES: BYTES}


def _value(term: Any) -> int:
    return int(z3.simplify(term).as_long())


# ------------------------------------------------------------ the encodings
@given(closed=st.booleans(), lifecycle=st.booleans(), count=st.integers(0, 50),
       used=st.integers(0, 5000), item=st.integers(0, 900), ccap=st.integers(1, 50),
       bcap=st.integers(1, 5000))
def test_SE_6_3_z3_admission_verdict_is_the_rule(closed: bool, lifecycle: bool, count: int,
                                                used: int, item: int, ccap: int,
                                                bcap: int) -> None:
    want = CODES[admission_verdict(closed, lifecycle, count, used, item, ccap, bcap)]
    assert _value(z3_admission_verdict(closed, count, used, item, ccap, bcap)) == want


@given(barrier=st.integers(0, 3), life=st.integers(0, 3), app=st.integers(0, 3),
       data=st.data(), limit=st.integers(1, 9))
def test_SE_6_6_z3_select_next_is_the_rule(barrier: int, life: int, app: int,
                                          data: st.DataObject, limit: int) -> None:
    streak = data.draw(st.integers(0, limit))
    source, after = select_next(barrier, life, app, streak, limit)
    z_source, z_after = z3_select_next(z3.IntVal(barrier), z3.IntVal(life), z3.IntVal(app),
                                       z3.IntVal(streak), z3.IntVal(limit))
    assert _value(z_source) == (NONE if source is None else int(source))
    assert _value(z_after) == after


# ------------------------------------------------------------ the properties
def by_name(policy: ZLinkExecutionLanePolicy) -> dict[str, Any]:
    return {f.name: f for f in check_policy(policy)}


def test_SE_10_08_default_policy_is_proved() -> None:
    found = by_name(ZLinkExecutionLanePolicy())
    assert all(f.proved for f in found.values()), [f for f in found.values() if not f.proved]
    assert "unrolled over 9 takes" in found["burst_bounded"].method


def test_SE_10_08_count_binds_first_at_the_exact_boundary() -> None:
    exact = ZLinkExecutionLanePolicy(application_message_capacity=4,
                                     application_byte_capacity=4 * 256)
    assert by_name(exact)["count_binds_first[application]"].proved
    short = ZLinkExecutionLanePolicy(application_message_capacity=4,
                                     application_byte_capacity=4 * 256 - 1)
    f = by_name(short)["count_binds_first[application]"]
    assert not f.proved and not f.contradictory
    # the first refusal: 3 items (768 bytes) held, the 4th does not fit
    assert f.counterexample.startswith("with 3 fixed-cost item(s) reserved (768 bytes)")


def test_SE_6_1_a_lane_that_can_admit_nothing_is_contradictory() -> None:
    policy = ZLinkExecutionLanePolicy(fixed_work_byte_cost=300, lifecycle_byte_capacity=256)
    f = by_name(policy)["admits_one[lifecycle]"]
    assert not f.proved and f.contradictory
    assert "nothing can ever be admitted to the lifecycle lane" in f.counterexample
    assert by_name(policy)["admits_one[application]"].proved


def test_SE_10_09_burst_is_proved_by_induction_for_a_large_limit() -> None:
    f = by_name(ZLinkExecutionLanePolicy(lifecycle_burst_limit=10**6))["burst_bounded"]
    assert f.proved and "induction" in f.method and "unrolled" not in f.method


def _ignores_burst(b: z3.ArithRef, life: z3.ArithRef, app: z3.ArithRef, s: z3.ArithRef,
                   limit: z3.ArithRef) -> tuple[z3.ArithRef, z3.ArithRef]:
    """The selection rule with the lifecycle_ignores_burst bug: lifecycle always first."""
    source = z3.If(b > 0, z3.IntVal(int(Source.BARRIER)),
                   z3.If(life > 0, z3.IntVal(int(Source.LIFECYCLE)),
                         z3.If(app > 0, z3.IntVal(int(Source.APPLICATION)), z3.IntVal(NONE))))
    after = z3.If(b > 0, z3.IntVal(0), z3.If(life > 0, z3.If(app > 0, s + 1, z3.IntVal(0)),
                                            z3.IntVal(0)))
    return source, after


def test_SE_10_09_a_selection_rule_that_ignores_the_burst_is_refuted() -> None:
    f = {x.name: x for x in check_policy(ZLinkExecutionLanePolicy(lifecycle_burst_limit=3),
                                         select=_ignores_burst)}["burst_bounded"]
    assert not f.proved and f.counterexample


# ------------------------------------------------------------ the command
def run_cli(*args: str) -> int:
    return main(["policy", "check", *args])


def test_zlink_policy_check_default_policy_exits_0(capsys: pytest.CaptureFixture[str]
                                                   ) -> None:
    assert run_cli() == 0
    out = capsys.readouterr().out
    assert "5 proved, 0 refuted" in out


def test_zlink_policy_check_prints_each_counterexample_and_exits_1(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "tight.toml"
    path.write_text("application_byte_capacity = 1000\nfixed_work_byte_cost = 300\n"
                    "lifecycle_byte_capacity = 200\n")
    assert run_cli(str(path)) == 1
    out = capsys.readouterr().out
    assert out.count("counterexample:") == 3  # (a) in both lanes, (b) in the lifecycle lane
    assert "the policy is contradictory" in out


def test_zlink_policy_check_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "p.json"
    path.write_text(json.dumps({"lifecycle_burst_limit": 2}))
    assert run_cli(str(path), "--json") == 0
    report = json.loads(capsys.readouterr().out)
    assert report["policy"]["lifecycle_burst_limit"] == 2
    assert [f["name"] for f in report["findings"]] == [
        "count_binds_first[application]", "count_binds_first[lifecycle]",
        "admits_one[application]", "admits_one[lifecycle]", "burst_bounded"]


@pytest.mark.parametrize(("name", "content", "message"), [
    ("unknown.json", '{"lifecycle_burst": 3}', "unknown policy field(s): lifecycle_burst"),
    ("negative.json", '{"application_message_capacity": 0}',
     "application_message_capacity must be > 0"),
    ("typed.toml", 'fixed_work_byte_cost = "many"', "fixed_work_byte_cost must be an integer"),
    ("broken.json", '{"application_message_capacity": ', "neither valid JSON nor TOML"),
    ("list.json", "[1, 2]", "expected a table of policy fields"),
])
def test_zlink_policy_check_bad_input_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                              name: str, content: str, message: str) -> None:
    path = tmp_path / name
    path.write_text(content)
    assert run_cli(str(path)) == 2
    assert message in capsys.readouterr().err


def test_zlink_policy_check_unreadable_file_exits_2(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    assert run_cli(str(tmp_path / "missing.json")) == 2
    assert "cannot read" in capsys.readouterr().err
