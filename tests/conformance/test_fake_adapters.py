"""Adapters that misbehave: each problem is an error of the case it happened in, with a
message naming what went wrong (and the adapter's stderr), the adapter is restarted and
the run goes on. An adapter that cannot complete the handshake stops the run with a
clear message. None of this may crash the runner."""

from __future__ import annotations

import pytest

from zlink_conformance.catalog import Catalogue, select
from zlink_conformance.runner import Runner, SuiteAbortedError

from kit_helpers import child_env, fake

THREE = ["required_SE_10_02_per_actor_long_work_on_two_actors_overlaps",
         "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other",
         "required_D_12_session_final_on_an_idle_session_runs_at_once"]


@pytest.mark.parametrize(("fault", "message", "restart"), [
    ("crash", "the adapter exited with status 3 while the runner waited for the reply "
              "to 'settle'", True),
    ("garbage", "not JSON", True),
    ("not_utf8", "not UTF-8", True),
    ("array", "expected a JSON object", True),
    ("unknown_event", "unknown event 'exploded'", True),
    ("missing_field", "event 'started' needs field 'owner'", True),
    ("wrong_reply", "a reply to command 9999, which the runner never sent", True),
    ("refuse", "the adapter refused it: unsupported: this fake refuses to settle", False),
    # an adapter that wrote for a case after it ended is not trusted with the next one
    ("late_event", "adapter fault [AP-5] 1 event(s) came after the reply to the case's "
                   "last settle, before the reply to the reset that ends it", True),
])
def test_a_misbehaving_adapter_fails_only_the_case_it_broke(
    catalogue: Catalogue, fault: str, message: str, restart: bool,
) -> None:
    """Reader-level faults (AP-1 a line that is not the protocol, AP-2 a reply to another
    command) carry their rule and its sentence like every adapter fault."""
    cases = select(catalogue, THREE)
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT=fault), timeout=10) as runner:
        report = runner.run(cases)
    assert [r.status for r in report.results] == ["passed", "error", "passed"]
    broken = report.results[1]
    assert len(broken.messages) == 1 and message in broken.messages[0], broken.messages
    if fault not in ("crash", "refuse", "late_event"):
        rule = "AP-2" if fault == "wrong_reply" else "AP-1"
        assert broken.messages[0].startswith(f"adapter fault [{rule}] adapter stdout line "), \
            broken.messages
        assert f"protocol rule {rule}: " in broken.messages[0]
    assert report.restarts == (1 if restart else 0)
    if fault == "crash":
        assert "fake adapter: crash on purpose" in broken.stderr_tail


@pytest.mark.parametrize(("fault", "rule", "seen", "strict"), [
    ("early_settle", "AP-5", "steps[3]: 1 event(s) came after the reply to settle@12 "
                             "(started:b)", 0.0),
    ("late_thread", "AP-5", "1 event(s) came after the reply to settle@13 (finished:a)", 0.5),
    ("late_event", "AP-5", "1 event(s) came after the reply to the case's last settle, "
                           "before the reply to the reset that ends it (finished:a)", 0.0),
    ("accepted_after_started", "AP-7", "a: accepted@8 was written after started@7", 0.0),
])
def test_AP_5_6_7_protocol_faults_are_adapter_faults_of_the_case_that_caused_them(
    catalogue: Catalogue, fault: str, rule: str, seen: str, strict: float,
) -> None:
    """The runtime behind the fake is the correct reference: the case the adapter broke is
    an error naming the protocol rule, never a failure of a runtime rule, and the cases
    around it pass (nothing is charged to the next case)."""
    cases = select(catalogue, THREE)
    # On a runtime with one execution resource a start before the verdict is SE-6.5 from
    # the order alone (oracle.inference); AP-7 is the adapter's on any other runtime.
    drop = "single_execution_resource" if rule == "AP-7" else ""
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT=fault, FAKE_DROP=drop),
                timeout=10, strict_settle=strict) as runner:
        report = runner.run(cases)
    assert [r.status for r in report.results] == ["passed", "error", "passed"]
    broken = report.results[1]
    assert broken.messages[0].startswith(f"adapter fault [{rule}] "), broken.messages
    assert seen in broken.messages[0]
    assert f"protocol rule {rule}: " in broken.messages[0]
    assert "specs/adapter-protocol.md" in broken.messages[0]
    # never judged as a runtime rule: no line leads with one
    assert not any(m.startswith("[") for m in broken.messages), broken.messages
    assert broken.divergence is None
    assert report.restarts == (1 if fault == "late_event" else 0)


def test_a_hung_adapter_is_an_error_of_its_case_after_the_timeout(catalogue: Catalogue) -> None:
    cases = select(catalogue, THREE)
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT="hang"), timeout=1.0) as runner:
        report = runner.run(cases)
    assert [r.status for r in report.results] == ["passed", "error", "passed"]
    hung = report.results[1]
    assert "no answer within the case timeout while waiting for the reply to 'settle'" \
        in hung.messages[0]
    assert "fake adapter: hang on purpose" in hung.stderr_tail
    assert 1.0 <= hung.seconds < 5
    assert report.restarts == 1


@pytest.mark.parametrize(("adapter", "message", "stderr"), [
    ("no_handshake", "handshake missing: adapter stdout line 1 is a 'started' event", None),
    ("dies_at_start", "handshake failed: the adapter exited with status 1",
     "dies_at_start fake: cannot find my runtime"),
    ("refuses_handshake", "the adapter refused the handshake: unsupported: this adapter "
                          "speaks protocol 7", None),
    ("silent", "handshake failed: no answer within the handshake timeout while waiting for "
               "the reply to hello", "silent fake: reading, never answering"),
])
def test_an_adapter_without_a_handshake_stops_the_run(adapter: str, message: str,
                                                      stderr: str | None) -> None:
    runner = Runner(fake(adapter), env=child_env(), handshake_timeout=1.0)
    with pytest.raises(SuiteAbortedError) as err:
        runner.start()
    runner.stop()
    assert message in err.value.message
    if stderr is not None:
        assert stderr in err.value.stderr_tail


def test_an_adapter_command_that_does_not_exist_is_reported() -> None:
    with pytest.raises(SuiteAbortedError, match="cannot start the adapter"):
        Runner(["/nonexistent/zlink-adapter"]).start()


def test_preload_runs_before_the_handshake_and_a_broken_one_stops_the_adapter() -> None:
    from pathlib import Path

    from zlink_reference_adapter import reference_adapter_command

    fakes = Path(fake("preload_marker")[1]).parent
    runner = Runner(reference_adapter_command(),
                    env=child_env(ZLINK_ADAPTER_PRELOAD=str(fakes / "preload_marker.py")))
    runner.start()
    adapter = runner._adapter
    assert adapter is not None
    runner.stop()
    assert "preload ran" in adapter.stderr_tail()
    broken = Runner(reference_adapter_command(),
                    env=child_env(ZLINK_ADAPTER_PRELOAD=str(fakes / "preload_broken.py")))
    with pytest.raises(SuiteAbortedError) as err:
        broken.start()
    assert "exited with status 3" in err.value.message
    assert any("broken on purpose" in line for line in err.value.stderr_tail)


def test_AP_7_an_adapter_that_exited_before_a_command_is_written_is_reported_as_exited(
) -> None:
    """The handshake's verdict must not depend on which side of the pipe notices a dead
    adapter first: a write into the stdin of an adapter that already exited says it
    exited, with its status and its last stderr, as the reading side does (under load the
    runner's hello can come after the exit, and the message once differed)."""
    import time

    from zlink_conformance.runner.process import AdapterCrashedError, AdapterProcess

    proc = AdapterProcess(fake("dies_at_start"), env=child_env())
    proc.start()
    deadline = time.monotonic() + 10
    while proc.alive and time.monotonic() < deadline:
        time.sleep(0.01)
    try:
        with pytest.raises(AdapterCrashedError) as err:
            for _ in range(64):  # the first writes may still land in the pipe's buffer
                proc.send({"cmd": "hello", "protocol": 1}, time.monotonic() + 5)
        assert "the adapter exited with status 1" in str(err.value)
        assert "dies_at_start fake: cannot find my runtime" in err.value.stderr_tail
    finally:
        proc.stop()
