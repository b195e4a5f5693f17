"""SE-8.2 and SE-10.13 for waits on a whole scope: a work that awaits its own target's
quiescence, completion or after-cancellation (the ``await_scope`` op, capability
``scope_wait``) waits for itself, so the runtime must refuse the wait at once. Each case
passes on the reference and fails, on SE-8.2, on the catalogued mutant that removes the
check; a runtime that hangs in the wait fails SE-8.2 on the log, never a bare timeout."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from scripted_kit import ev, run_scripted

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.explore import Declared, ExploreConfig, RandomStrategy, explore
from zlink_conformance.explore.scenario import iter_scripts
from zlink_conformance.protocol.wire import CAPABILITIES, OPS, SCOPE_WAIT_MODES
from zlink_conformance.runner import Runner
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from kit_helpers import child_env

KINDS = ("actor_executor", "per_actor_spot", "spot_wide_spot", "entry_spot", "session")


def scope_wait_cases() -> list[Any]:
    return [c for c in load_catalogue().cases if "scope_wait" in c.capabilities]


def test_SE_8_2_the_op_and_its_capability_are_in_the_protocol() -> None:
    assert "await_scope" in OPS
    assert "scope_wait" in CAPABILITIES
    assert SCOPE_WAIT_MODES == ("quiescence", "completion", "after_cancellation")


def test_SE_8_2_every_scope_kind_and_every_wait_has_a_required_case() -> None:
    """Quiescence and completion on each scope kind, after-cancellation on a zombie of an
    Actor executor and of a session."""
    cases = scope_wait_cases()
    ids = {c.id for c in cases}
    for kind in KINDS:
        assert (f"required_SE_8_2_a_work_awaiting_quiescence_or_completion_of_its_own_"
                f"{kind}_raises_at_once") in ids
    for kind in ("actor_executor", "session"):
        assert (f"required_SE_8_2_a_zombie_awaiting_after_cancellation_of_its_own_{kind}_"
                f"raises_at_once") in ids
    assert all(c.strength == "required" and "SE-8.2" in c.rules for c in cases)


@pytest.mark.slow
def test_SE_8_2_each_case_passes_on_the_reference_and_fails_without_the_check() -> None:
    cases = scope_wait_cases()
    with Runner(reference_adapter_command(), env=child_env(), timeout=10) as runner:
        good = runner.run(cases)
    assert [(r.case.id, r.messages) for r in good.results if r.status != "passed"] == []
    env = child_env(ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE),
                    ZLINK_MUTANT_NAME="scope_wait_check_off")
    with Runner(reference_adapter_command(), env=env, timeout=10) as runner:
        bad = runner.run(cases)
    for result in bad.results:
        assert result.status == "failed", (result.case.id, result.status, result.messages)
        assert result.messages[0].startswith("[SE-8.2] expect[0] errors"), result.messages


CASE = {"id": "required_SE_8_2_scope_self_wait", "rules": ["SE-8.2"],
        "capabilities": ["actor", "scope_wait"],
        "steps": [{"cmd": "create", "target": "A", "type": "actor"},
                  {"cmd": "submit", "work": "w", "target": "A", "entry": "execute_actor",
                   "script": [{"op": "gate", "gate": "g"},
                              {"op": "await_scope", "mode": "quiescence"}]},
                  {"cmd": "open", "gate": "g"},
                  {"cmd": "settle"}],
        "expect": [{"check": "errors", "work": "w", "kinds": ["reentrancy"]}]}


def test_SE_8_2_a_runtime_that_hangs_in_its_own_scope_wait_fails_the_rule(
        tmp_path: Path) -> None:
    """The settle never answers while w, past its opened gate, is in await_scope: the
    hang is the deadlock SE-8.2 forbids, and the failure says so."""
    steps = [{"cmd": "submit", "work": "w", "events": [
                 ev("accepted", "w", "A"), ev("started", "w", "A")]},
             {"cmd": "open"},
             {"cmd": "settle", "hang": True}]
    result = run_scripted(tmp_path, CASE, steps, capabilities=["actor", "scope_wait"],
                          timeout=1.0)
    assert result.status == "failed", result.messages
    assert result.messages[0].startswith("[SE-8.2] w (started@"), result.messages
    assert "awaits its own target's quiescence (op 1)" in result.messages[0]


def test_SE_8_2_a_hang_before_the_scope_wait_is_not_charged_to_it(tmp_path: Path) -> None:
    """Should the gate before the wait never have been opened, the work may be held
    there: the hang is not evidence of a self-wait, and the kit does not claim it."""
    case = {**CASE, "steps": [s for s in CASE["steps"] if s.get("cmd") != "open"]}
    steps = [{"cmd": "submit", "work": "w", "events": [
                 ev("accepted", "w", "A"), ev("started", "w", "A")]},
             {"cmd": "settle", "hang": True}]
    result = run_scripted(tmp_path, case, steps, capabilities=["actor", "scope_wait"],
                          timeout=1.0)
    assert not any(m.startswith("[SE-8.2] w (started@") for m in result.messages), \
        result.messages


def test_SE_8_2_explore_draws_await_scope_only_where_scope_wait_is_declared() -> None:
    """The op comes with its capability and never without; and the draws of the main
    stream are the same with or without it (only the added ops differ)."""
    every = Declared.of(list(CAPABILITIES), None)
    without = Declared.of([c for c in CAPABILITIES if c != "scope_wait"], None)
    with_ops = [RandomStrategy(every, 7).scenario(i) for i in range(200)]
    without_ops = [RandomStrategy(without, 7).scenario(i) for i in range(200)]
    assert any(op.get("op") == "await_scope" for s in with_ops for op in iter_scripts(s.body))
    assert not any(op.get("op") == "await_scope"
                   for s in without_ops for op in iter_scripts(s.body))
    for a, b in zip(with_ops, without_ops, strict=True):
        assert _without_scope_waits(a.body) == b.body


def _without_scope_waits(value: Any) -> Any:
    if isinstance(value, list):
        return [_without_scope_waits(v) for v in value
                if not (isinstance(v, dict) and v.get("op") == "await_scope")]
    if isinstance(value, dict):
        return {k: _without_scope_waits(v) for k, v in value.items()}
    return value


@pytest.mark.slow
def test_SE_8_2_explore_kills_the_mutant_on_its_rule() -> None:
    """Without the check, explore's first failure is on SE-8.2 (the work left in its
    own scope wait), not a bare D-11, and it shrinks to a case of a few commands."""
    env = {**child_env(), "ZLINK_ADAPTER_PRELOAD": str(PRELOAD_FILE),
           "ZLINK_MUTANT_NAME": "scope_wait_check_off"}
    report = explore(ExploreConfig(reference_adapter_command(), seed=1, runs=200, out=None,
                                   env=env, repeat=2), say=lambda line: None)
    confirmed = [f for f in report.findings if not f.flaky]
    assert confirmed, "explore found nothing"
    assert confirmed[0].rule == "SE-8.2", confirmed[0].rule
    assert len((confirmed[0].shrunk or confirmed[0].scenario).steps()) <= 4
