"""The Java example (`conformance/examples/java/`) against the suite: it declares every
capability, so every case runs and passes and the CLI exits 0 without --allow-skips,
also over repeated runs; with several pool threads it drops only the capability that
needs one thread and still passes everything it declares; each deliberate bug of its
runtime (ZLINK_JAVA_BUG) fails the cases of the rule it breaks; its README says what the
code does; bad input gets protocol replies, not a crash."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from zlink_conformance.catalog import Catalogue
from zlink_conformance.cli import main
from zlink_conformance.protocol.wire import CAPABILITIES
from zlink_conformance.runner import Runner, SuiteReport

from kit_helpers import child_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "conformance" / "examples" / "java"
# The capability a pool of several threads cannot honour (D-13: one resource, first come
# first served); the adapter declares it only when it runs on one thread.
ONE_THREAD = "single_execution_resource"
FOUR = "4"  # the pool size the several-threads tests run (and the README names)

JAVAC = shutil.which("javac")
JAVA = shutil.which("java")
needs_jdk = pytest.mark.skipif(
    JAVAC is None or JAVA is None,
    reason="javac/java not found: the Java example adapter needs a JDK "
           "(apt-get install default-jdk-headless)")


def adapter_argv() -> list[str]:
    return ["sh", str(EXAMPLE / "run.sh")]


def run_suite(catalogue: Catalogue, **env: str) -> SuiteReport:
    with Runner(adapter_argv(), env=env) as runner:
        return runner.run(catalogue.cases)


def not_passed(report: SuiteReport) -> list[tuple[str, str, list[str]]]:
    return [(r.case.id, r.status, r.messages) for r in report.results if r.status != "passed"]


# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("java_adapter")


@pytest.fixture(scope="module")
def java_run(catalogue: Catalogue) -> SuiteReport:
    return run_suite(catalogue)


def declared(report: SuiteReport) -> set[str]:
    assert report.handshake is not None
    return set(report.handshake.capabilities)


@needs_jdk
def test_every_case_runs_and_passes(java_run: SuiteReport, catalogue: Catalogue) -> None:
    assert not_passed(java_run) == []
    assert len(java_run.results) == len(catalogue.cases)
    assert java_run.restarts == 0
    assert java_run.success()  # without allow_skips: a conforming runtime
    assert java_run.handshake is not None and java_run.handshake.unknown_capabilities == ()
    # It declares every capability the kit knows but held_steps, which the examples need
    # not offer (docs/conformance.md, "Held steps"), and each is exercised by a case.
    assert declared(java_run) == set(CAPABILITIES) - {"held_steps"}
    assert declared(java_run) <= {cap for r in java_run.results for cap in r.case.capabilities}


@needs_jdk
def test_the_cli_exits_0_without_allow_skips_and_repeats_identically(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])
    runs = 3
    assert main(["run", "--adapter", shlex.join(adapter_argv()), "-q",
                 "--repeat", str(runs)]) == 0
    out = capsys.readouterr().out
    assert "conformance: every required case passed" in out
    assert f"verdicts identical across {runs} runs" in out
    assert "FAIL" not in out and "ERROR" not in out


@needs_jdk
def test_a_pool_of_several_threads_passes_all_it_declares(catalogue: Catalogue) -> None:
    report = run_suite(catalogue, ZLINK_JAVA_THREADS=FOUR)
    assert declared(report) == set(CAPABILITIES) - {ONE_THREAD, "held_steps"}
    for result in report.results:
        if ONE_THREAD in result.case.capabilities:
            assert result.status == "skipped", result.case.id
        else:
            assert result.status == "passed", (result.case.id, result.messages)
    assert report.success(allow_skips=True)


# Each deliberate bug: a rule it breaks (some failing case checks it), what the failure
# must name (the model invariant that caught it), and whether every required case still
# passes: a bug only an optional case can see leaves them passing, but the run fails all
# the same (the optional case ran because the adapter declared its capability).
BUGS = {
    "lifecycle_ignores_burst_limit": ("SE-10.9", "LifecycleBurstBounded", False),
    "admission_not_atomic": ("SE-6.3", "CapacityRespected", True),
    "drain_on_submitter_stack": ("SE-6.5", "OffSubmitterStack", False),
    # no model invariant: the self-wait cases' own checks, which need no detection
    "no_reentrancy_detection": ("SE-8.2", "[SE-8.2] expect[0] errors: w: expected errors "
                                          "['reentrancy'], got []", False),
    # a wait on its own target's quiescence, completion or after-cancellation waits for the
    # waiter itself: the await_scope cases' own checks
    "scope_wait_hangs": ("SE-8.2", "[SE-8.2] expect[0] errors: q: expected errors "
                                   "['reentrancy'], got []", False),
}


@needs_jdk
@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_broken_runtime_fails_the_cases_of_the_rule_it_breaks(
    catalogue: Catalogue, bug: str,
) -> None:
    rule, named, conforming = BUGS[bug]
    report = run_suite(catalogue, ZLINK_JAVA_BUG=bug)
    failed = [r for r in report.results if r.status not in ("passed", "skipped")]
    assert failed, f"{bug}: no case failed"
    # Only a runtime without the detection leaves a capability out: what needs it skips.
    skipped = {r.case.id for r in report.results if r.status == "skipped"}
    assert skipped == {c.id for c in catalogue.cases if "reentrancy_detection" in c.capabilities
                       and bug == "no_reentrancy_detection"}
    for result in failed:
        assert result.status == "failed", (result.case.id, result.messages)
    assert any(result.case.covers(rule) for result in failed)
    assert any(named in message for result in failed for message in result.messages)
    assert (report.verdict().required_failed == 0) is conforming
    assert not report.success()
    if conforming:  # the README's numbers for a bug only an optional case can see
        numbers = re.search(r"\(exit status (\d), `NOT CONFORMING: (\d) optional case\(s\) "
                            r"failed`\)", (EXAMPLE / "README.md").read_text())
        assert numbers is not None
        assert int(numbers.group(2)) == report.verdict().optional_failed
        assert report.verdict().conformance().startswith(
            f"NOT CONFORMING: {numbers.group(2)} optional case(s) failed")
        assert int(numbers.group(1)) == 1  # a FAIL verdict exits 1 (test_run_verdict.py)
    # The cases of rules the bug leaves alone still pass.
    assert any(r.status == "passed" for r in report.results)


@needs_jdk
def test_settle_that_counts_woken_work_late_is_caught(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The naive settle of the README: a task handed to the executor counts itself in when
    it starts, not when it is handed over, so a settle can answer in between; the model
    says the settle left ready work without a drain."""
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])
    monkeypatch.setenv("ZLINK_JAVA_BUG", "count_after_wake")
    args = ["run", "--adapter", shlex.join(adapter_argv()), "-q",
            "--only", "SE-6.7", "--repeat", "2"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "NOT CONFORMING" in out and "FAIL" in out
    assert "[SE-6.5 model NoLostWakeup] settle reply" in out


ORDER_CASE = ("required_SE_6_3_a_nested_submission_and_the_runner_s_are_reported_in_the_"
              "order_the_queue_judged_them")


@needs_jdk
def test_SE_6_3_a_refusal_is_written_after_the_admission_that_filled_the_lane(
    catalogue: Catalogue,
) -> None:
    """A work's nested submission fills the lane; the runner's submission to the same
    queue, judged meanwhile, is refused. ZLINK_JAVA_VERDICT_PAUSE_MS holds the work's
    verdict between its admission and its write, so the runner's refusal comes in that
    window in most runs: it must wait for its place in the queue's order. (Before the
    reject hook gave refusals a ticket, the refusal was written first and the model read
    a refusal with room left, SE-5.1, in most runs with the pause and in about one run
    in a hundred of explore without it.) Either verdict order the queue may take passes."""
    case = next(c for c in catalogue.cases if c.id == ORDER_CASE)
    with Runner(adapter_argv(), env={"ZLINK_JAVA_VERDICT_PAUSE_MS": "200"}) as runner:
        runner.start()
        results = [runner.run_case(case) for _ in range(4)]
    assert [(r.status, r.messages) for r in results if r.status != "passed"] == []


RELEASE_CASE = "required_SE_5_2_a_refusal_is_reported_before_the_turns_that_follow_the_release"


@needs_jdk
def test_SE_5_2_a_refusal_is_written_before_the_turns_that_follow_the_release(
    catalogue: Catalogue,
) -> None:
    """The runner's lifecycle submission is judged while a queued lifecycle work holds
    the lane's bytes, as the gate in front of it opens. ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS
    holds the runner's verdict between its entry call and its write, so the pool ends
    that work and begins the next turns in that window: the verdict must still come
    before those turns. (Before a turn's first event waited for the verdicts its queue
    had judged before the turn began, the refusal came after the next work's start and
    the model read a refusal with room left, SE-5.1, in most runs with the pause and
    about once in 10,000 explore scenarios without it.) Either verdict passes."""
    case = next(c for c in catalogue.cases if c.id == RELEASE_CASE)
    with Runner(adapter_argv(), env={"ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS": "200"}) as runner:
        runner.start()
        results = [runner.run_case(case) for _ in range(6)]
    assert [(r.status, r.messages) for r in results if r.status != "passed"] == []


CLOSE_CASE = ("required_D_12_a_refusal_as_closed_is_reported_after_the_final_work_that_"
              "closed_the_session")


@needs_jdk
def test_D_12_a_refusal_as_closed_is_written_after_the_final_work_that_closed_the_session(
    catalogue: Catalogue,
) -> None:
    """A control work's nested submission of its session's final work closes the
    session; the runner's packet, judged meanwhile, is refused as closed.
    ZLINK_JAVA_VERDICT_PAUSE_MS holds the final work's verdict between its entry call
    and its write, so the runner's refusal comes in that window in most runs: it must
    wait for the verdict of the submission that closed the session. (Before the close
    gave the final work a ticket and a refusal made outside any queue's lock waited for
    every verdict judged before it, the refusal was written first and the model read a
    refusal by an open session, SE-5.1, in most runs with the pause.) Either verdict
    order the session may take passes."""
    case = next(c for c in catalogue.cases if c.id == CLOSE_CASE)
    with Runner(adapter_argv(), env={"ZLINK_JAVA_VERDICT_PAUSE_MS": "200"}) as runner:
        runner.start()
        results = [runner.run_case(case) for _ in range(6)]
    assert [(r.status, r.messages) for r in results if r.status != "passed"] == []


SPOT_CASE = ("required_SE_4_5_a_refusal_by_the_spot_queue_is_reported_after_the_actor_"
             "message_whose_turn_filled_it")


@needs_jdk
def test_SE_4_5_a_refusal_by_the_spot_queue_is_written_after_the_message_that_filled_it(
    catalogue: Catalogue,
) -> None:
    """On four pool threads: the runner's Actor message is accepted by its Actor queue,
    whose claim places its turn on the Spot queue and fills it; a work of another Actor
    executor submits a Spot work there meanwhile, and it is refused. The work's verdicts
    are held 100 ms (its first nested submission delays the second) and the runner's
    400 ms, so the refusal is judged after the turn was placed and would be written
    before the message's acceptance: it must wait for it, verdicts of different queues
    in the order the runtime judged them. (With one sequence of tickets a queue, as
    before, the refusal came first in 5 of 5 runs and the model read a refusal with
    room left, SE-5.1.)"""
    case = next(c for c in catalogue.cases if c.id == SPOT_CASE)
    env = {"ZLINK_JAVA_THREADS": FOUR, "ZLINK_JAVA_VERDICT_PAUSE_MS": "100",
           "ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS": "400"}
    with Runner(adapter_argv(), env=env) as runner:
        runner.start()
        results = [runner.run_case(case) for _ in range(4)]
    assert [(r.status, r.messages) for r in results if r.status != "passed"] == []


@needs_jdk
@pytest.mark.parametrize("lever", ["ZLINK_JAVA_VERDICT_PAUSE_MS",
                                   "ZLINK_JAVA_RUNNER_VERDICT_PAUSE_MS"])
def test_a_bad_verdict_pause_stops_the_adapter(lever: str) -> None:
    done = subprocess.run(adapter_argv(), input="", capture_output=True, text=True,
                          timeout=120, env={**os.environ, lever: "soon"})
    assert done.returncode == UNKNOWN_BUG_STATUS
    assert f"{lever} must be an integer" in done.stderr


UNKNOWN_BUG_STATUS = 2  # the README says so; this test holds the adapter to it


@needs_jdk
def test_an_unknown_bug_name_stops_the_adapter() -> None:
    done = subprocess.run(adapter_argv(), input="", capture_output=True, text=True,
                          timeout=120, env={**os.environ, "ZLINK_JAVA_BUG": "no_such_bug"})
    assert done.returncode == UNKNOWN_BUG_STATUS
    assert "no_such_bug" in done.stderr


@needs_jdk
def test_the_readme_lists_exactly_the_declared_capabilities(java_run: SuiteReport) -> None:
    text = (EXAMPLE / "README.md").read_text()
    paragraph = text.split("Declared capabilities:", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`([a-z_.]+)`", paragraph)) == declared(java_run)


def test_the_readme_names_every_bug_switch() -> None:
    """Every ZLINK_JAVA_BUG name the runtime knows is documented, and only those."""
    source = (EXAMPLE / "src" / "zlink" / "executor" / "ZLinkRuntime.java").read_text()
    known = re.search(r"KNOWN_BUGS = List\.of\((.*?)\);", source, re.S)
    assert known is not None
    names = set(re.findall(r'"([a-z_]+)"', known.group(1)))
    text = (EXAMPLE / "README.md").read_text()
    table = text.split("## Deliberate bugs", 1)[1].split("\n## ", 1)[0]
    assert set(re.findall(r"^\| `([a-z_]+)` \|", table, re.M)) == names
    assert set(BUGS) | {"count_after_wake"} == names


def test_the_readmes_code_excerpts_are_in_the_runtime() -> None:
    """The README quotes the runtime; every quoted line (besides the elisions) must stay
    in the sources, whitespace aside."""
    text = (EXAMPLE / "README.md").read_text()
    blocks = re.findall(r"```java\n(.*?)```", text, re.S)
    assert blocks
    source = " ".join(p.read_text() for p in sorted((EXAMPLE / "src").rglob("*.java")))
    flat = " ".join(source.split())
    for block in blocks:
        for line in block.splitlines():
            quoted = " ".join(line.split())
            if quoted and quoted != "...":
                assert quoted in flat, quoted


@needs_jdk
def test_bad_input_gets_protocol_replies_not_a_crash() -> None:
    lines = [
        {"id": 0, "cmd": "reset"},
        {"id": 1, "cmd": "hello", "protocol": 1},
        "this is not JSON",
        {"id": 2, "cmd": "frobnicate"},
        {"id": 3, "cmd": "submit", "work": "w", "target": "nowhere", "entry": "enqueue"},
        {"id": 4, "cmd": "create", "target": "q", "type": "queue",
         "policy": {"no_such_field": 1}},
        {"id": 5, "cmd": "create", "target": "q", "type": "queue"},
        {"id": 6, "cmd": "submit", "work": "w", "target": "q", "entry": "enqueue",
         "script": [{"op": "teleport"}]},
        {"id": 7, "cmd": "create", "target": "S", "type": "spot", "kind": "user"},
        {"id": 8, "cmd": "settle"},
        {"id": 9, "cmd": "shutdown"},
    ]
    stdin = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                    for line in lines)
    done = subprocess.run(adapter_argv(), input=stdin, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    replies = {m["re"]: m for m in map(json.loads, done.stdout.splitlines())}
    kinds = {n: r["error"]["kind"] for n, r in replies.items() if not r["ok"]}
    assert kinds == {0: "bad_command", 2: "bad_command", 3: "unknown_target",
                     4: "bad_command", 6: "bad_command", 7: "bad_command"}
    assert "no_such_field" in replies[4]["error"]["message"]
    assert "mode" in replies[7]["error"]["message"]  # a User Spot needs its mode (SE-1.2)
    assert replies[1]["ok"] and replies[5]["ok"] and replies[8]["ok"] and replies[9]["ok"]
    assert "not JSON" in done.stderr


@needs_jdk
def test_SE_6_5_a_drain_run_on_the_submitting_thread_fails_the_family_on_four_threads(
        catalogue: Catalogue) -> None:
    """On a pool of several threads too, a runtime that runs an idle queue's drain on the
    submitting thread inside the submit call fails every submitter-stack case on SE-6.5;
    the correct runtime, whose pool threads may start a work before the submit call
    returns, passes them."""
    cases = [c for c in catalogue.cases if "submitter_stack" in c.capabilities]
    assert cases
    with Runner(adapter_argv(), env={"ZLINK_JAVA_THREADS": FOUR,
                                     "ZLINK_JAVA_BUG": "drain_on_submitter_stack"}) as runner:
        broken = runner.run(cases)
    for result in broken.results:
        seen = (result.case.id, result.status, result.messages[:2])
        assert result.status == "failed", seen
        assert any(m.startswith("[SE-6.5 OffSubmitterStack]") for m in result.messages), seen
    with Runner(adapter_argv(), env={"ZLINK_JAVA_THREADS": FOUR}) as runner:
        correct = runner.run(cases)
    assert [(r.case.id, r.messages) for r in correct.results if r.status != "passed"] == []


def test_every_number_in_the_readme_is_held_by_a_test() -> None:
    """Every number in the README's prose (code blocks and rule IDs aside) is one a test
    of this file checks against the adapter or a run: none is typed and left alone."""
    text = (EXAMPLE / "README.md").read_text()
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"\b(?:SE|SD|D)-\d+(?:\.\d+)*", "", prose)
    checked: list[str] = []

    exits = re.search(r"the run exits\s+(\d) without `--allow-skips`", text)
    assert exits is not None and int(exits.group(1)) == 0  # test_the_cli_exits_0_...
    checked.append(exits.group(1))
    threads = re.search(r"With `ZLINK_JAVA_THREADS=(\d+)` the", text)
    assert threads is not None and threads.group(1) == FOUR  # the several-threads tests
    checked.append(threads.group(1))
    status = re.search(r"stops the adapter with status (\d)", text)
    assert status is not None and int(status.group(1)) == UNKNOWN_BUG_STATUS
    checked.append(status.group(1))
    optional = re.search(r"\(exit status (\d), `NOT CONFORMING: (\d) optional", text)
    assert optional is not None  # held by the admission_not_atomic run above
    checked += optional.groups()
    trace = re.search(r"`ZLINK_JAVA_TRACE=(\d)`", text)
    source = (EXAMPLE / "src" / "zlink" / "adapter" / "Adapter.java").read_text()
    assert trace is not None and '!System.getenv("ZLINK_JAVA_TRACE").isEmpty()' in source
    checked.append(trace.group(1))  # any non-empty value switches the trace on
    assert sorted(re.findall(r"\d[\d,]*\d|\d", prose)) == sorted(checked), \
        "a number in the README that no test checks: check it here or remove it"


@needs_jdk
@pytest.mark.parametrize(("threads", "mark"), [(FOUR, "on"), (FOUR, "off"), ("1", "off")])
def test_SE_6_5_an_inline_drain_fails_every_case_it_touches_on_the_rule_never_a_timeout(
        catalogue: Catalogue, threads: str, mark: str) -> None:
    """The inline-drain bug switch over the whole suite: on a four-thread pool with the
    on_submitter_stack mark, and on one thread without it (the kit reads SE-6.5 from the
    order alone there), every case that fails names SE-6.5, every line leads with a rule,
    none is an error and none ends as a bare timeout."""
    with Runner(adapter_argv(), timeout=5,
                env={"ZLINK_JAVA_THREADS": threads, "ZLINK_JAVA_MARK": mark,
                     "ZLINK_JAVA_BUG": "drain_on_submitter_stack"}) as runner:
        report = runner.run(list(catalogue.cases))
    failed = [r for r in report.results if r.status == "failed"]
    assert len(failed) > 80, len(failed)
    assert [(r.case.id, r.messages[:1]) for r in report.results if r.status == "error"] == []
    for result in failed:
        seen = (result.case.id, result.messages[:2])
        assert any(m.startswith("[SE-6.5") for m in result.messages), seen
        assert all(m.startswith("[") for m in result.messages), seen
    if mark == "off":
        assert "submitter_stack" not in declared(report)
