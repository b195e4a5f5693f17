"""The runner is never held hostage by an adapter, and charges every fault to the case
that caused it.

Each run here goes on in a thread the test waits for with a bound computed from the
run's timeouts: a runner that blocks (on a full stdin pipe, on a flood of lines) fails
the test instead of hanging it, and the adapter processes are then ended by the test so
nothing is left behind either way. After each run every process the adapters recorded
(their pids, the grandchild of an ``sh -c`` wrapper included) and every process group the
runner started must be gone.
"""

from __future__ import annotations

import contextlib
import io
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from zlink_conformance.catalog import Case, Catalogue, select
from zlink_conformance.cli import main as kit_main
from zlink_conformance.report import ConsoleReporter
from zlink_conformance.runner import InvalidDurationError, Runner, SuiteReport, process, suite
from zlink_conformance.runner.process import STDERR_LINE_CHARS
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import FAKES, child_env, fake

THREE = ["required_SE_10_02_per_actor_long_work_on_two_actors_overlaps",
         "required_SE_10_03_spot_wide_same_submissions_run_one_after_the_other",
         "required_D_12_session_final_on_an_idle_session_runs_at_once"]
# The adapter process's own waits when it ends one (AdapterProcess.kill's defaults):
# SIGTERM and up to 2 s for the adapter, 0.5 s for the rest of its group, SIGKILL and up
# to 2 s more; stopping at the end of a run adds a shutdown of up to 2 s and 0.5 s.
KILL = 2.0 + 0.5 + 2.0
STOP = 2.0 + 0.5 + KILL


def run_bound(cases: int, timeout: float, handshake_timeout: float) -> float:
    """How long a run may take at most: every case may hang to its timeout and be
    killed, each case may need a fresh adapter, and the run ends with a stop. The
    adapter's own start is bounded by the handshake timeout."""
    return handshake_timeout + cases * (timeout + KILL + handshake_timeout) + STOP


def alive(pid: int) -> bool:
    """The process exists and is not a zombie (a zombie no longer runs)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def group_members(pgid: int) -> list[int]:
    """The running processes whose process group is ``pgid``."""
    out = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            out.append(int(entry.name))
    return out


def recorded(pids_file: Path) -> list[int]:
    if not pids_file.exists():
        return []
    return [int(line) for line in pids_file.read_text().split()]


def bounded_run(runner: Runner, cases: list[Case], bound: float, pids_file: Path
                ) -> tuple[SuiteReport, float]:
    """Run the cases in a thread and wait at most ``bound`` seconds; then check that no
    adapter process is left. A run that overstays is a failure (its processes are
    killed by the test, so that nothing outlives it)."""
    out: list[SuiteReport] = []
    problem: list[BaseException] = []

    def body() -> None:
        try:
            with runner:
                out.append(runner.run(cases))
        except BaseException as exc:  # reported below
            problem.append(exc)

    t0 = time.monotonic()
    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(bound)
    elapsed = time.monotonic() - t0
    if thread.is_alive():
        for pid in recorded(pids_file):
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the run was still going after {bound:.1f} s: the runner is held "
                    f"hostage by the adapter")
    if problem:
        raise problem[0]
    assert_nothing_left(runner, pids_file)
    return out[0], elapsed


def assert_nothing_left(runner: Runner, pids_file: Path) -> None:
    pids = recorded(pids_file)
    groups = getattr(runner, "adapter_pids", [])
    end = time.monotonic() + 3.0  # an orphan is reaped by init a moment after it dies
    while time.monotonic() < end:
        left = [p for p in pids if alive(p)] + [m for g in groups for m in group_members(g)]
        if not left:
            break
        time.sleep(0.05)
    for pid in left:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    assert not left, f"adapter processes left after the run: {sorted(set(left))}"


def small_cases(catalogue: Catalogue, count: int) -> list[Case]:
    """``count`` cases that need only what the blind fakes declare."""
    have = ("actor", "spot.user.per_actor", "spot.user.spot_wide", "session")
    return [c for c in catalogue.cases if not c.missing(have)][:count]


# ----------------------------------------------------------------- never held hostage

def test_an_adapter_that_never_reads_stdin_is_a_hung_case_not_a_hung_run(
    catalogue: Catalogue, tmp_path: Path,
) -> None:
    """The blind fake answers each command without reading it: the runner's commands
    fill its stdin pipe, and the write that cannot finish is bounded by the case timeout
    like a read: that case errors, the adapter is killed and restarted."""
    pids = tmp_path / "pids"
    cases = small_cases(catalogue, 12)
    timeout, handshake = 1.0, 5.0
    runner = Runner(fake("blind"), env=child_env(FAKE_PIDS=str(pids)), timeout=timeout,
                    handshake_timeout=handshake)
    report, _ = bounded_run(runner, cases, run_bound(len(cases), timeout, handshake),
                            pids)
    stuck = [r for r in report.results if r.status == "error"
             and "did not read its stdin within the case timeout" in r.messages[0]]
    assert stuck, [r.messages[:1] for r in report.results]
    assert all(timeout <= r.seconds < timeout + KILL + 1 for r in stuck)
    assert report.restarts >= 1 and len(recorded(pids)) == report.restarts + 1


def test_an_adapter_behind_a_wrapper_is_ended_with_its_whole_process_group(
    catalogue: Catalogue, tmp_path: Path,
) -> None:
    """``sh -c 'python fake; exit 0'``: the runner's child is the shell, the adapter its
    child, and the adapter ignores SIGTERM. Each hung case ends the whole group, so no
    adapter outlives its case, and the run ends within its bound."""
    pids = tmp_path / "pids"
    script = FAKES / "greets_then_silent.py"
    argv = ["sh", "-c", f"'{sys.executable}' '{script}'; exit 0"]
    cases = select(catalogue, THREE)
    timeout, handshake = 0.5, 5.0
    runner = Runner(argv, env=child_env(FAKE_PIDS=str(pids)), timeout=timeout,
                    handshake_timeout=handshake)
    report, _ = bounded_run(runner, cases, run_bound(len(cases), timeout, handshake),
                            pids)
    assert [r.status for r in report.results] == ["error"] * 3
    assert all("no answer within the case timeout" in r.messages[0] for r in report.results)
    assert len(recorded(pids)) == 3  # one adapter per case, each ended with its case
    assert len(runner.adapter_pids) == 3
    assert all(pid not in runner.adapter_pids for pid in recorded(pids))  # grandchildren


# -------------------------------------------------------------------------- restarts

def test_one_failed_restart_errors_every_remaining_case_at_once(
    catalogue: Catalogue, tmp_path: Path,
) -> None:
    """The adapter crashes in case 1 and its restart never greets: case 2 is an error
    naming the failed restart after one handshake timeout, and the remaining cases are
    errors at once with the reason, instead of each waiting the handshake timeout."""
    pids = tmp_path / "pids"
    cases = select(catalogue, THREE)
    cases.append(next(c for c in small_cases(catalogue, 80) if c.id not in THREE))
    timeout, handshake = 5.0, 1.5
    runner = Runner(fake("misbehaving"),
                    env=child_env(FAKE_FAULT="crash", FAKE_CASE="1", FAKE_PIDS=str(pids),
                                  FAKE_ONCE=str(tmp_path / "once")),
                    timeout=timeout, handshake_timeout=handshake)
    report, _ = bounded_run(runner, cases, run_bound(len(cases), timeout, handshake),
                            pids)
    results = report.results
    assert [r.status for r in results] == ["error"] * 4
    assert "exited with status 3" in results[0].messages[0]
    assert results[1].messages[0].startswith("could not restart the adapter: handshake "
                                             "failed: no answer within the handshake timeout")
    for later in results[2:]:
        assert later.messages == [
            "not run: the adapter could not be restarted after an earlier case ended it: "
            "handshake failed: no answer within the handshake timeout while waiting for the "
            "reply to hello"]
        assert later.seconds < 0.1
    assert report.restarts == 1


@pytest.mark.parametrize(("fault", "seen"), [
    ("double_reply", "a second reply to command 13 ('settle', answered at line"),
    ("double_reset_reply", "('reset', answered at line"),
    ("trailing_line", "adapter fault [AP-6] 1 event(s) of this case came after the reply to "
                      "the reset that ends it (finished:a)"),
    ("stale_reply", "a second reply to command 13 ('settle') of this case, written after "
                    "the case had ended"),
])
def test_AP_2_AP_6_a_second_reply_or_a_stale_line_is_charged_to_the_case_that_wrote_it(
    catalogue: Catalogue, fault: str, seen: str,
) -> None:
    """A reply written twice (to a settle of the case, to the reset that ends it, or
    again once the next case has begun) and a line written after the confirming settle
    that closes a case are adapter faults of that case, never a runtime verdict and never
    an error of the next, innocent case."""
    cases = select(catalogue, THREE)
    # The trailing line follows the confirmation's reply at once, but on a loaded machine
    # it can reach the runner after the next case began: only the strict mode's quiet
    # period after the confirmation makes its attribution certain.
    strict = 0.3 if fault == "trailing_line" else 0.0
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT=fault), timeout=10,
                strict_settle=strict) as runner:
        report = runner.run(cases)
    assert [r.status for r in report.results] == ["passed", "error", "passed"], \
        [r.messages for r in report.results]
    broken = report.results[1]
    rule = "AP-6" if fault == "trailing_line" else "AP-2"
    assert broken.messages[0].startswith(f"adapter fault [{rule}] "), broken.messages
    assert seen in broken.messages[0], broken.messages
    assert f"protocol rule {rule}: " in broken.messages[0]
    assert broken.divergence is None


def test_AP_6_a_strict_runner_waits_after_the_closing_confirmation_for_a_late_line(
    catalogue: Catalogue,
) -> None:
    """A line written 0.15 s after the confirming settle that closes case 2 (by a thread
    of the adapter) would reach a default runner while case 3 runs, and be judged as
    case 3's; ``--strict-settle`` waits its quiet period after that confirmation too, so
    the fault is case 2's and case 3 passes."""
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT="trailing_line_late"),
                timeout=10, strict_settle=0.4) as runner:
        report = runner.run(select(catalogue, THREE))
    assert [r.status for r in report.results] == ["passed", "error", "passed"], \
        [r.messages for r in report.results]
    assert report.results[1].messages[0].startswith("adapter fault [AP-6] 1 event(s) of "
                                                    "this case came after the reply to the "
                                                    "reset that ends it")


def test_AP_2_a_verdict_revised_after_its_console_line_is_printed_again(
    catalogue: Catalogue,
) -> None:
    """The stale reply of case 2 is found only when case 3 begins, after case 2's line
    said ``pass``: the console prints case 2 again as an error, marked revised, so it
    never keeps a verdict the reports contradict."""
    out = io.StringIO()
    reporter = ConsoleReporter(out)
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT="stale_reply"),
                timeout=10) as runner:
        report = runner.run(select(catalogue, THREE), reporter)
    reporter.revisit()
    assert [r.status for r in report.results] == ["passed", "error", "passed"]
    lines = out.getvalue().splitlines()
    second = report.results[1].case.id
    printed = [line for line in lines if f"] {second} ... " in line]
    assert len(printed) == 2, lines
    assert " ... pass (" in printed[0]
    assert " ... ERROR (" in printed[1] and "(revised: printed pass before" in printed[1]
    assert lines.index(printed[1]) < next(
        i for i, line in enumerate(lines) if f"] {report.results[2].case.id} ... " in line)


# ------------------------------------------------------------------------ durations

@pytest.mark.parametrize("option", ["timeout", "handshake_timeout", "strict_settle"])
@pytest.mark.parametrize("value", [-1.0, math.nan, math.inf, 0.0])
def test_a_duration_that_is_not_a_positive_finite_number_is_refused(
    option: str, value: float,
) -> None:
    flag = "--" + option.replace("_", "-")
    if option == "strict_settle" and value == 0.0:
        Runner(["adapter"], strict_settle=0.0)  # zero turns the quiet period off
        return
    with pytest.raises(InvalidDurationError, match=f"^{flag} must be ") as err:
        Runner(["adapter"], **{option: value})  # type: ignore[arg-type]
    assert err.value.option == flag


@pytest.mark.parametrize(("argv", "flag"), [
    (["run", "--timeout", "-1"], "--timeout"),
    (["run", "--timeout", "0"], "--timeout"),
    (["run", "--timeout", "nan"], "--timeout"),
    (["run", "--handshake-timeout", "inf"], "--handshake-timeout"),
    (["run", "--strict-settle", "-0.5"], "--strict-settle"),
    (["resend", "r.json", "--timeout", "-1"], "--timeout"),
])
def test_the_cli_refuses_a_bad_duration_naming_the_option(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_:
        kit_main([*argv, "--adapter", "x"])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}: must be " in err and "finite number of seconds" in err, err


# ----------------------------------------------------------------------------- fuzz

FUZZ_TIMEOUT, FUZZ_HANDSHAKE = 1.0, 5.0


def _fault_at_second(expect: Callable[[str], bool]) -> Callable[[SuiteReport], None]:
    def check(report: SuiteReport) -> None:
        before, struck, after = report.results
        assert struck.status == "error" and expect(struck.messages[0]), struck.messages
        assert before.status == after.status == "passed", (before.messages, after.messages)
    return check


def _hung_with_abridged_stderr(report: SuiteReport) -> None:
    """A stderr flood neither blocks the adapter nor fills the report: the case is hung
    (its settle never answered) and every kept stderr line is cut short."""
    _fault_at_second(lambda m: "no answer within the case timeout" in m)(report)
    tail = report.results[1].stderr_tail
    assert tail and all(len(line) <= STDERR_LINE_CHARS + 40 for line in tail), \
        [len(line) for line in tail]


def _ap(rule: str, text: str = "") -> Callable[[str], bool]:
    return lambda m: m.startswith(f"adapter fault [{rule}] ") and text in m


FUZZ = {
    "garbage": _fault_at_second(_ap("AP-1", "not JSON")),
    "not_utf8": _fault_at_second(_ap("AP-1", "not UTF-8")),
    "huge_line": _fault_at_second(_ap("AP-1", "line longer than 1048576 bytes")),
    "wrong_reply": _fault_at_second(_ap("AP-2", "which the runner never sent")),
    "double_reply": _fault_at_second(_ap("AP-2", "a second reply")),
    # valid events without end and no reply: the deadline holds however many lines come
    "flood": _fault_at_second(lambda m: "no answer within the case timeout" in m),
    "hang": _fault_at_second(lambda m: "no answer within the case timeout" in m),
    "random_lines:1": _fault_at_second(lambda m: m.startswith(("adapter fault [AP-1] ",
                                                              "adapter fault [AP-2] "))),
    "stderr_flood": _hung_with_abridged_stderr,
}


@pytest.mark.parametrize("mode", list(FUZZ))
def test_hostile_adapters_end_within_their_bound_on_the_right_case(
    catalogue: Catalogue, tmp_path: Path, mode: str,
) -> None:
    """Hostile output strikes in the second of three cases (the reference runtime behind
    it is correct): the run ends within the bound its timeouts give, the fault is the
    second case's, with its AP rule where it breaks one, the cases around it pass (the
    third on a fresh adapter), and no adapter process is left."""
    fault, _, seed = mode.partition(":")
    pids = tmp_path / "pids"
    cases = select(catalogue, THREE)
    runner = Runner(fake("misbehaving"),
                    env=child_env(FAKE_FAULT=fault, FAKE_SEED=seed or "0",
                                  FAKE_PIDS=str(pids)),
                    timeout=FUZZ_TIMEOUT, handshake_timeout=FUZZ_HANDSHAKE)
    bound = run_bound(len(cases), FUZZ_TIMEOUT, FUZZ_HANDSHAKE)
    report, elapsed = bounded_run(runner, cases, bound, pids)
    FUZZ[mode](report)
    assert elapsed < bound


def test_the_time_the_runner_spends_judging_is_not_the_adapter_s(
        catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch) -> None:
    """The model's replay of a long log can take longer than the case's bound (seen in
    a soak: several seconds on a Spot scenario with timers and a disposal). That time is
    the runner's: the reset that ends the case still gets what was left of the bound
    when the judging began, and the adapter is not called hung for it. (Before, the
    reset was sent with the case's deadline already past: "no answer within the case
    timeout while waiting for the reply to 'reset'", an error charged to the runtime.)"""
    from zlink_conformance.oracle.log import CaseLog
    from zlink_conformance.oracle.model import ModelVerdict, check_model

    def slow_judge(log: CaseLog, *, single_resource: bool = False) -> ModelVerdict:
        time.sleep(1.5)
        return check_model(log, single_resource=single_resource)

    monkeypatch.setattr(suite, "check_model", slow_judge)
    case = next(c for c in catalogue.cases
                if c.id == "required_D_12_session_final_on_an_idle_session_runs_at_once")
    with Runner(reference_adapter_command(), env=child_env(), timeout=1.0) as runner:
        runner.start()
        result = runner.run_case(case)
    assert (result.status, result.messages) == ("passed", [])


def test_AP_2_a_long_run_keeps_what_tells_a_second_reply_for_a_bounded_window(
    catalogue: Catalogue, monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A long run (an exploration of hours) keeps the answered commands and the cases
    that sent them for the last ``ANSWERED_WINDOW`` commands only, so its memory stays
    flat; within the window a stale second reply is still charged to its own case."""
    window = 40
    monkeypatch.setattr(process, "ANSWERED_WINDOW", window)
    cases = select(catalogue, THREE) * 12
    with Runner(reference_adapter_command(), env=child_env(), timeout=20) as runner:
        report = runner.run(cases)
        adapter = runner._adapter
        assert adapter is not None
        sent = adapter.next_id
        longest = max(len(r.case.steps) for r in report.results) * 2 + 4  # settles, reset
        assert len(adapter._answered) <= window + longest, (
            f"AP-2: {len(adapter._answered)} answered commands kept after {sent} sent; "
            f"the window is {window}")
        assert len(runner._cases_by_id) <= window // 2 + 2, len(runner._cases_by_id)
        # every command still told apart has its case kept: the one that sent the
        # window's first id, too
        assert runner._cases_by_id[0][0] <= min(adapter._answered), (
            f"AP-2: the first case kept starts at id {runner._cases_by_id[0][0]}, after "
            f"the first answered id {min(adapter._answered)} it should own")
    assert all(r.status == "passed" for r in report.results), \
        [r.messages for r in report.results if r.status != "passed"]
    # within the window, the stale reply of case 2 is case 2's, as without one
    with Runner(fake("misbehaving"), env=child_env(FAKE_FAULT="stale_reply"),
                timeout=10) as runner:
        report = runner.run(select(catalogue, THREE))
    assert [r.status for r in report.results] == ["passed", "error", "passed"]
    assert "written after the case had ended" in report.results[1].messages[0]


def test_AP_6_a_look_for_lines_left_behind_ends_while_the_adapter_writes_without_end(
) -> None:
    """``drain`` (what a case left behind, read at its end and at the next one's start)
    reads a bounded amount, so an adapter that writes lines faster than the runner parses
    them cannot keep the runner there; what it read is returned (AP-6 for the case)."""
    line = '{"event":"finished","work":"a","owner":"S"}'
    adapter = process.AdapterProcess(["sh", "-c", f"exec yes '{line}'"])
    adapter.start()
    box: list[list[object]] = []
    try:
        time.sleep(0.2)  # the pipe is full
        worker = threading.Thread(target=lambda: box.append(adapter.drain()), daemon=True)
        worker.start()
        worker.join(60)
        assert not worker.is_alive(), "AP-6: drain did not return while the adapter wrote"
    finally:
        adapter.kill()
    got = box[0]
    assert got and len(got) * (len(line) + 1) <= 4 * process.MAX_LINE_BYTES + len(line), \
        len(got)
