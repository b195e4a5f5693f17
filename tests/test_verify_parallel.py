"""``zlink verify -j N``: steps at the same time, never more than N cores' worth, the
listed order under ``-j 1``; and the strace log reader the result cache depends on."""

from __future__ import annotations

import dataclasses
import json
import sys
from pathlib import Path

import pytest

from zlink_tool.cli import verify
from zlink_tool.cli.main import main
from zlink_tool.resultcache import ResultCache
from zlink_tool.tracelog import read_trace

ROOT = Path(__file__).resolve().parent.parent


def _sleeper(name: str, log: Path, seconds: float, spread: str = "") -> verify.Step:
    code = ("import json, sys, time; t0 = time.time(); time.sleep(float(sys.argv[2])); "
            "open(sys.argv[1], 'a').write(json.dumps([sys.argv[3], t0, time.time(), "
            "sys.argv[4:]]) + '\\n')")
    return verify.Step(name, f"sleeps {seconds} s",
                       [sys.executable, "-c", code, str(log), str(seconds), name],
                       spread=spread, inputs="none")


def _spans(log: Path) -> list[tuple[str, float, float, list[str]]]:
    return [tuple(json.loads(line)) for line in log.read_text().splitlines()]  # type: ignore[misc]


def _most_at_once(spans: list[tuple[str, float, float, list[str]]],
                  width: dict[str, int]) -> int:
    events = sorted([(t0, width[n]) for n, t0, _, _ in spans] +
                    [(t1, -width[n]) for n, _, t1, _ in spans])
    now = most = 0
    for _, delta in events:
        now += delta
        most = max(most, now)
    return most


@pytest.fixture
def fake_steps(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    log = tmp_path / "spans.jsonl"
    fake = [_sleeper("a", log, 0.6), _sleeper("b", log, 0.6), _sleeper("c", log, 0.6),
            _sleeper("wide", log, 0.6, spread="tlc"), _sleeper("d", log, 0.6)]
    monkeypatch.setattr(verify, "steps", lambda deep=False: fake)
    return log


def test_j1_runs_the_steps_one_after_the_other_in_the_listed_order(
        fake_steps: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["verify", "-j", "1", "--no-cache"]) == 0
    spans = _spans(fake_steps)
    assert [s[0] for s in spans] == ["a", "b", "c", "wide", "d"]
    assert all(spans[i][2] <= spans[i + 1][1] for i in range(len(spans) - 1))
    assert "verify: all checks passed" in capsys.readouterr().out


def test_jN_never_uses_more_than_N_cores_and_does_use_them(
        fake_steps: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # The wide step the longest: it starts first, on every core.
    monkeypatch.setitem(verify.TYPICAL_SECONDS, "wide", 1000.0)
    assert main(["verify", "-j", "3", "--no-cache"]) == 0
    spans = _spans(fake_steps)
    width = {"a": 1, "b": 1, "c": 1, "d": 1, "wide": 3}
    assert _most_at_once(spans, width) == 3
    # The wide step was given every core: --workers 3.
    (wide,) = [s for s in spans if s[0] == "wide"]
    assert wide[3] == ["--workers", "3"]
    out = capsys.readouterr().out
    # One display: a start line and an end line per step, then the same summary table.
    assert out.count("[start]") == 5 and "step         result" in out


def test_a_wide_step_starts_on_the_cores_free_rather_than_leave_one_idle(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "spans.jsonl"
    fake = [_sleeper("long", log, 3.0), _sleeper("wide", log, 0.4, spread="tlc")]
    monkeypatch.setattr(verify, "steps", lambda deep=False: fake)
    monkeypatch.setitem(verify.TYPICAL_SECONDS, "long", 1000.0)
    assert main(["verify", "-j", "2", "--no-cache"]) == 0
    spans = {s[0]: s for s in _spans(log)}
    # The one core "long" leaves goes to "wide" at once, as one worker.
    assert spans["wide"][1] < spans["long"][2] and spans["wide"][3] == ["--workers", "1"]


def test_a_wide_step_waits_a_moment_for_a_step_that_ends_at_once(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # "instant" (one core, first by its cost) ends at once, as a step answered from the
    # cache does: the wide step after it gets both cores, not the one left free.
    log = tmp_path / "spans.jsonl"
    fake = [_sleeper("instant", log, 0.0), _sleeper("wide", log, 0.2, spread="tlc")]
    monkeypatch.setattr(verify, "steps", lambda deep=False: fake)
    monkeypatch.setitem(verify.TYPICAL_SECONDS, "instant", 1000.0)
    assert main(["verify", "-j", "2", "--no-cache"]) == 0
    spans = {s[0]: s for s in _spans(log)}
    assert spans["wide"][3] == ["--workers", "2"]


def test_only_a_whole_run_of_a_step_gives_its_time_for_the_order(tmp_path: Path) -> None:
    cache = ResultCache(tmp_path)
    verify._save_timings(cache, [verify.StepResult("tests", "ok", 300.0)])
    verify._save_timings(cache, [
        verify.StepResult("tests", "ok", 7.0, selected=("tests/test_docs.py",)),
        verify.StepResult("tests", "ok", 9.0, note="ran 2 of 108 test files, 106 cached"),
        verify.StepResult("tests", "ok", 0.0, cached=True),
        verify.StepResult("tests", "FAILED (exit 1)", 20.0)])
    assert verify._timings(cache) == {"tests": 300.0}


def _handing_back(name: str, log: Path, after: float, seconds: float) -> verify.Step:
    """A wide step that says, ``after`` seconds in, that it needs one core less (as a
    pytest step does when one of its workers has nothing left), then runs on."""
    code = ("import json, os, sys, time; t0 = time.time(); time.sleep(float(sys.argv[2])); "
            "freed = os.environ.get('ZLINK_CORES_FREED'); "
            "freed and open(freed, 'a').write('1\\n'); "
            "time.sleep(float(sys.argv[3])); "
            "open(sys.argv[1], 'a').write(json.dumps([sys.argv[4], t0, time.time(), "
            "sys.argv[5:]]) + '\\n')")
    return verify.Step(name, "hands a core back", [sys.executable, "-c", code, str(log),
                                                   str(after), str(seconds), name],
                       spread="tlc", inputs="none")


def test_a_core_a_step_hands_back_goes_to_the_next_step_before_the_step_ends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "spans.jsonl"
    fake = [_handing_back("tail", log, 0.2, 1.5), _sleeper("next", log, 0.3)]
    monkeypatch.setattr(verify, "steps", lambda deep=False: fake)
    monkeypatch.setitem(verify.TYPICAL_SECONDS, "tail", 1000.0)
    assert main(["verify", "-j", "2", "--no-cache"]) == 0
    spans = {s[0]: s for s in _spans(log)}
    assert spans["tail"][3] == ["--workers", "2"]
    # "next" ran on the core "tail" handed back, while "tail" still ran: never more
    # than two cores' worth (tail kept one).
    assert spans["next"][2] < spans["tail"][2], "the core handed back stayed idle"


def _niceness_sleeper(name: str, log: Path, seconds: float) -> verify.Step:
    """A one-process step that may run in the background; it logs its niceness."""
    code = ("import json, os, sys, time; t0 = time.time(); time.sleep(float(sys.argv[2])); "
            "open(sys.argv[1], 'a').write(json.dumps([sys.argv[3], t0, time.time(), "
            "[os.nice(0)]]) + '\\n')")
    return verify.Step(name, "sleeps, then says its niceness",
                       [sys.executable, "-c", code, str(log), str(seconds), name],
                       inputs="none", background=True)


def test_a_background_step_starts_at_the_lowest_priority_while_every_core_is_taken(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    log = tmp_path / "spans.jsonl"
    fake = [_sleeper("wide", log, 1.5, spread="tlc"), _niceness_sleeper("behind", log, 0.3),
            _sleeper("after", log, 0.3)]
    monkeypatch.setattr(verify, "steps", lambda deep=False: fake)
    monkeypatch.setitem(verify.TYPICAL_SECONDS, "wide", 1000.0)
    assert main(["verify", "-j", "2", "--no-cache"]) == 0
    spans = {s[0]: s for s in _spans(log)}
    # "behind" ran while "wide" held both cores, at the lowest priority ...
    assert spans["behind"][2] < spans["wide"][2], "the background step waited for a core"
    assert spans["behind"][3] == [verify.BACKGROUND_NICE]
    # ... and held no core: "after" (one core) waited for "wide"'s, never three at once.
    assert spans["after"][1] >= spans["wide"][2]
    assert "behind: sleeps, then says its niceness in the background (nice 19" in \
        capsys.readouterr().out
    # Under -j 1 it runs in the listed order, as every other step, at the usual priority.
    log.unlink()
    assert main(["verify", "-j", "1", "--no-cache"]) == 0
    spans = {s[0]: s for s in _spans(log)}
    assert spans["behind"][1] >= spans["wide"][2] and spans["behind"][3] == [0]


def test_a_step_output_is_printed_whole_when_it_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    lines = "; ".join(f"print('line {i}')" for i in range(60))
    failing = verify.Step("noisy", "prints then fails",
                          [sys.executable, "-c", f"{lines}; raise SystemExit(3)"],
                          inputs="none")
    monkeypatch.setattr(verify, "steps", lambda deep=False: [failing])
    assert main(["verify", "-j", "2", "--no-cache"]) == 1
    out = capsys.readouterr().out
    assert "    line 0\n" in out and "    line 59\n" in out
    assert "noisy        FAILED (exit 3)" in out


LOG = """\
100 openat(AT_FDCWD</r>, "/r/models/A.tla", O_RDONLY) = 3</r/models/A.tla>
100 clone3({flags=CLONE_VM|CLONE_VFORK, exit_signal=SIGCHLD}, 88 <unfinished ...>
101 openat(AT_FDCWD</r>, "/.zlink-test-file/tests/test_a.py", O_RDONLY) = -1 ENOENT (x)
100 <... clone3 resumed>) = 102
101 openat(AT_FDCWD</r>, "specs/rules.toml", O_RDONLY) = 4</r/specs/rules.toml>
101 clone3({flags=CLONE_VM, exit_signal=SIGCHLD}, 88) = 103
103 openat(AT_FDCWD</tmp/x>, "/r/models/B.cfg", O_RDONLY <unfinished ...>
103 <... openat resumed>) = 5</r/models/B.cfg>
103 openat(AT_FDCWD</tmp/x>, "/opt/tla/tla2tools.jar", O_RDONLY) = 6</opt/tla/tla2tools.jar>
101 openat(AT_FDCWD</r>, "/.zlink-carry/*", O_RDONLY) = -1 ENOENT (x)
101 openat(AT_FDCWD</r>, "model/m/__pycache__/q.cpython-311.pyc", O_RDONLY) = 8
101 openat(AT_FDCWD</r>, "/.zlink-uses/tests::server", O_RDONLY) = -1 ENOENT (x)
101 openat(AT_FDCWD</r>, "/.zlink-carry/f/tests::server", O_RDONLY) = -1 ENOENT (x)
101 openat(AT_FDCWD</r>, "docs/fixture.md", O_RDONLY) = 16</r/docs/fixture.md>
101 clone3({flags=CLONE_VM, exit_signal=SIGCHLD}, 88) = 105
101 openat(AT_FDCWD</r>, "/.zlink-carry/-", O_RDONLY) = -1 ENOENT (x)
101 openat(AT_FDCWD</r>, "/.zlink-test-file/tests/test_b.py", O_RDONLY) = -1 ENOENT (x)
101 openat(AT_FDCWD</r>, "/.zlink-uses/tests::server", O_RDONLY) = -1 ENOENT (x)
105 openat(AT_FDCWD</r>, "docs/served.md", O_RDONLY) = 15</r/docs/served.md>
101 openat(AT_FDCWD</r>, "out/report.txt", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 7</r/out/report.txt>
101 openat(AT_FDCWD</r>, "conformance/cases", O_RDONLY|O_DIRECTORY) = 9</r/conformance/cases>
101 openat(AT_FDCWD</r>, "specs/new.md", O_RDONLY|O_CLOEXEC) = -1 ENOENT (x)
101 openat(AT_FDCWD</r>, ".venv/lib/x.py", O_RDONLY|O_CLOEXEC) = 10</r/.venv/lib/x.py>
101 openat(AT_FDCWD</r>, "tests/test_y.py", O_RDONLY) = 12</r/tests/test_y.py>
101 openat(AT_FDCWD</r>, "/.zlink-test-file/tests/test_d.py", O_RDONLY) = -1 ENOENT (x)
105 openat(AT_FDCWD</r>, "docs/served2.md", O_RDONLY) = 17</r/docs/served2.md>
100 clone3({flags=CLONE_VM, exit_signal=SIGCHLD}, 88) = 104
104 openat(AT_FDCWD</r>, "tests/test_a.py", O_RDONLY) = 13</r/tests/test_a.py>
104 openat(AT_FDCWD</r>, "tests/core", O_RDONLY|O_DIRECTORY) = 14</r/tests/core>
104 openat(AT_FDCWD</r>, "/.zlink-test-file/tests/test_c.py", O_RDONLY) = -1 ENOENT (x)
104 openat(AT_FDCWD</r>, "docs/c.md", O_RDONLY|O_CLOEXEC) = 11</r/docs/c.md>
104 openat(AT_FDCWD</r>, "/tmp/t/tla2tools.jar", O_WRONLY|O_CREAT|O_TRUNC, 0666) = 18
104 openat(AT_FDCWD</r>, "/tmp/t/tla2tools.jar", O_RDONLY) = 19</tmp/t/tla2tools.jar>
"""


def test_the_trace_reader_gives_each_test_file_what_carries_over_and_its_own_reads() -> None:
    # pid 101 (a pytest worker, the child of 100) marks three test files; 103 is its
    # child (TLC), whose reads are 101's; 104 is a second worker. 100 ran no test: its
    # reads count for every file. During test_a, 101 imports a module (its reads carry
    # over to every later file) and sets up a session fixture that test_a and test_b
    # use, not test_d; the fixture reads a file and starts 105 (a server), whose reads
    # are the fixture's.
    trace = read_trace(Path("/r"), LOG)
    a, b = trace.per_file["tests/test_a.py"], trace.per_file["tests/test_b.py"]
    carried = {"models/A.tla", "model/m/q.py"}
    assert a.files == carried | {"specs/rules.toml", "models/B.cfg",
                                 "/opt/tla/tla2tools.jar", "docs/fixture.md"}
    # test_b depends on what carried over, on its fixture's reads (those of the server
    # it started too) and on its own reads (the source a compiled file stands for, a
    # file looked for and not found, a folder listed), not on what test_a's own tests
    # and their child read.
    assert b.files == carried | {"docs/fixture.md", "docs/served.md", "specs/new.md",
                                 "tests/test_y.py"}
    assert b.folders == {"conformance/cases"} and not a.folders
    # test_d uses no fixture: what carried over only.
    assert trace.per_file["tests/test_d.py"].files == carried
    # Another worker's reads are not test_a's, nor test_a's child's reads test_c's; the
    # test modules and test folders collection reads are no other test file's input
    # (a test module read while a test runs is: tests/test_y.py for test_b).
    # A jar the test wrote itself (a stand-in for TLC) is its output, not an input.
    assert trace.per_file["tests/test_c.py"].files == {"models/A.tla", "docs/c.md"}
    # Written files and the environment's are not inputs.
    assert "out/report.txt" not in trace.everything.files
    assert not any(f.startswith(".venv") for f in trace.everything.files)


def test_an_empty_cache_starts_the_longest_step_first_by_its_typical_cost() -> None:
    chosen = verify.steps()
    names = [s.name for s in chosen]
    assert set(verify.TYPICAL_SECONDS) == set(names), "a step without a typical cost"
    empty = [s.name for s in verify.start_order(chosen, {})]
    assert empty[0] == "tests", empty
    assert empty == sorted(names, key=lambda n: -verify.TYPICAL_SECONDS[n])
    # A time the cache kept wins over the typical cost.
    kept = [s.name for s in verify.start_order(chosen, {"lint": 1000.0})]
    assert kept[:2] == ["lint", "tests"]


COPY_LOG = """\
201 openat(AT_FDCWD</r>, "/.zlink-test-file/tests/test_p.py", O_RDONLY) = -1 ENOENT (x)
201 openat(AT_FDCWD</r>, "/.zlink-copy//tmp/c/source", O_RDONLY) = -1 ENOENT (x)
201 openat(AT_FDCWD</r>, "/r", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 3</r>
201 openat(AT_FDCWD</r>, "/r/docs", O_RDONLY|O_CLOEXEC|O_DIRECTORY) = 4</r/docs>
201 openat(AT_FDCWD</r>, "/r/docs/guide.md", O_RDONLY|O_CLOEXEC) = 5</r/docs/guide.md>
201 openat(AT_FDCWD</r>, "/tmp/c/source/docs/guide.md", O_WRONLY|O_CREAT, 0666) = 6</tmp/c/x>
201 openat(AT_FDCWD</r>, "/r/docs/shipped.md", O_RDONLY|O_CLOEXEC) = 5</r/docs/shipped.md>
201 openat(AT_FDCWD</r>, "/r/tool/LICENSE", O_RDONLY|O_CLOEXEC) = 5</r/LICENSE>
201 openat(AT_FDCWD</r>, "/r/tool/m.py", O_RDONLY|O_CLOEXEC) = 5</r/tool/m.py>
201 openat(AT_FDCWD</r>, "/.zlink-copy/", O_RDONLY) = -1 ENOENT (x)
201 clone3({flags=CLONE_VM, exit_signal=SIGCHLD}, 88) = 202
202 openat(AT_FDCWD</tmp/c/source/tool>, "LICENSE", O_RDONLY) = 3</tmp/c/source/tool/LICENSE>
202 openat(AT_FDCWD</tmp/c/source>, "docs/shipped.md", O_RDONLY) = 4</tmp/c/source/docs/shipped.md>
202 openat(AT_FDCWD</tmp/c/source/tool>, "__pycache__/m.cpython-311.pyc", O_RDONLY) = 5
202 openat(AT_FDCWD</tmp/c/source>, "build/lib/m.py", O_RDONLY) = 6</tmp/c/source/build/lib/m.py>
202 openat(AT_FDCWD</tmp/c/source>, "docs", O_RDONLY|O_DIRECTORY) = 7</tmp/c/source/docs>
"""


def test_a_copy_of_the_checkout_stands_for_the_files_read_from_it() -> None:
    # pid 201 copies the checkout into /tmp/c/source (marked), then its child 202 reads
    # from the copy: a file taken through a symlink, a guide, a compiled module, build
    # output the copy did not come with, and a folder.
    files = read_trace(Path("/r"), COPY_LOG).per_file["tests/test_p.py"]
    # What the copy's readers opened, as the checkout's files: not docs/guide.md, only
    # copied; the link by the path the copy named; the source a .pyc stands for.
    assert files.files == {"docs/shipped.md", "tool/LICENSE", "tool/m.py"}
    # The copy's tree is an input (a file added to a copied folder counts).
    assert files.folders == {"docs"}


def test_a_step_with_a_worker_beyond_its_cores_frees_a_core_only_after_that_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # One worker more than its cores (the tests step): the first worker to end leaves
    # the step's two cores to the two still running, so no core is handed back yet.
    log = tmp_path / "spans.jsonl"
    tail = dataclasses.replace(_handing_back("tail", log, 0.2, 1.0), extra_workers=1)
    fake = [tail, _sleeper("next", log, 0.1)]
    monkeypatch.setattr(verify, "steps", lambda deep=False: fake)
    monkeypatch.setitem(verify.TYPICAL_SECONDS, "tail", 1000.0)
    assert main(["verify", "-j", "2", "--no-cache"]) == 0
    spans = {s[0]: s for s in _spans(log)}
    assert spans["next"][1] >= spans["tail"][2], "a core was handed back too soon"
