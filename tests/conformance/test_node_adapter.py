"""The Node.js example adapter (`conformance/examples/node/`) against the suite: every
case it declares passes, every other case is skipped for a capability it did not
declare, the CLI's exit status follows the documented semantics, its README and the
guide's section on it say what the code does, and bad input gets protocol replies, not
a crash."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from zlink_conformance.catalog import Catalogue
from zlink_conformance.runner import Runner, SuiteReport
from zlink_tool.cli.main import main

from kit_helpers import child_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "conformance" / "examples" / "node"
MIN_NODE = 18


def _node() -> tuple[str | None, str]:
    """The node executable if it is new enough, else None and why not."""
    node = shutil.which("node")
    if node is None:
        return None, "node is not installed (.ci/run installs the nodejs package)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True,
                             timeout=30).stdout.strip()
    major = re.match(r"v(\d+)\.", version)
    if major is None or int(major.group(1)) < MIN_NODE:
        return None, f"node {version or '(unknown version)'} is older than {MIN_NODE}"
    return node, ""


NODE, WHY_NOT = _node()
needs_node = pytest.mark.skipif(
    NODE is None, reason=f"{WHY_NOT}; the Node.js example adapter needs Node {MIN_NODE}+")


def adapter_argv() -> list[str]:
    assert NODE is not None
    return [NODE, str(EXAMPLE / "adapter.js")]


@pytest.fixture(scope="module")
def node_run(catalogue: Catalogue) -> SuiteReport:
    with Runner(adapter_argv()) as runner:
        return runner.run(catalogue.cases)


def declared(report: SuiteReport) -> set[str]:
    assert report.handshake is not None
    return set(report.handshake.capabilities)


@needs_node
def test_every_case_the_node_adapter_declares_passes(node_run: SuiteReport) -> None:
    ran = [r for r in node_run.results if r.status != "skipped"]
    assert [(r.case.id, r.status, r.messages) for r in ran if r.status != "passed"] == []
    assert node_run.restarts == 0
    assert node_run.handshake is not None and node_run.handshake.unknown_capabilities == ()
    # Each declared capability is exercised by at least one case that ran.
    exercised = {cap for r in ran for cap in r.case.capabilities}
    assert declared(node_run) <= exercised


@needs_node
def test_cases_not_run_are_skipped_naming_the_missing_capability(node_run: SuiteReport
                                                                  ) -> None:
    caps = declared(node_run)
    for result in node_run.results:
        missing = result.case.missing(caps)
        if result.status == "skipped":
            assert missing, result.case.id
            for capability in missing:
                assert capability in result.messages[0], (result.case.id, result.messages)
        else:
            assert not missing, result.case.id
    skipped_required = [r for r in node_run.results
                        if r.case.required and r.status == "skipped"]
    assert skipped_required, "the example leaves out disposal, so some required cases skip"
    assert node_run.success(allow_skips=True) and not node_run.success()


@needs_node
def test_the_whole_run_is_fast(node_run: SuiteReport) -> None:
    """A guard, not a verdict: the suite takes about a third of a second."""
    assert node_run.seconds < 15
    assert max(r.seconds for r in node_run.results) < 5


@needs_node
def test_cli_exit_status_fails_on_skipped_required_cases_unless_allowed(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])
    # SE-10.2 runs and passes; the SD-1 cases need disposal, which is not declared.
    args = ["conformance", "run", "--adapter", shlex.join(adapter_argv()), "-q",
            "--only", "SE-10.2", "--only", "SD-1"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "NOT CONFORMING" in out and "required_SD_1_" in out
    assert main([*args, "--allow-skips"]) == 0
    assert "conformance: every required case passed" in capsys.readouterr().out


@needs_node
def test_the_readme_lists_exactly_the_declared_capabilities(node_run: SuiteReport) -> None:
    text = (EXAMPLE / "README.md").read_text()
    paragraph = text.split("Declared capabilities:", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`([a-z_.]+)`", paragraph)) == declared(node_run)


@needs_node
def test_the_readme_example_runs() -> None:
    assert NODE is not None
    text = (EXAMPLE / "README.md").read_text()
    (block,) = re.findall(r"```js\n(.*?)```", text, re.S)
    done = subprocess.run([NODE, "--input-type=module", "-e", block], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "application_count on P/actor:B", "a timer, on the Spot queue", "reply on S",
        "A again, after its first work ended"]


@needs_node
def test_bad_input_gets_protocol_replies_not_a_crash() -> None:
    lines = [
        {"id": 0, "cmd": "reset"},
        {"id": 1, "cmd": "hello", "protocol": 1},
        "this is not JSON",
        {"id": 2, "cmd": "frobnicate"},
        {"id": 3, "cmd": "dispose", "target": "S", "mode": "dispose"},
        {"id": 4, "cmd": "submit", "work": "w", "target": "nowhere", "entry": "enqueue"},
        {"id": 5, "cmd": "create", "target": "q", "type": "queue",
         "policy": {"no_such_field": 1}},
        {"id": 6, "cmd": "create", "target": "q", "type": "queue"},
        {"id": 7, "cmd": "submit", "work": "w", "target": "q", "entry": "enqueue",
         "script": [{"op": "wait_for", "work": "x"}]},
        {"id": 8, "cmd": "settle"},
        {"id": 9, "cmd": "shutdown"},
    ]
    stdin = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                    for line in lines)
    done = subprocess.run(adapter_argv(), input=stdin, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    replies = {m["re"]: m for m in map(json.loads, done.stdout.splitlines())}
    kinds = {n: r["error"]["kind"] for n, r in replies.items() if not r["ok"]}
    assert kinds == {0: "bad_command", 2: "bad_command", 3: "unsupported",
                     4: "unknown_target", 5: "bad_command", 7: "unsupported"}
    assert "disposal" in replies[3]["error"]["message"]
    assert "reentrancy_detection" in replies[7]["error"]["message"]
    assert "no_such_field" in replies[5]["error"]["message"]
    assert replies[1]["ok"] and replies[6]["ok"] and replies[8]["ok"] and replies[9]["ok"]
    assert "not JSON" in done.stderr


def test_the_guides_code_excerpts_are_in_the_example() -> None:
    """The Node.js section of docs/conformance.md quotes the adapter; the quotes must
    stay true (whitespace aside)."""
    guide = (ROOT / "docs" / "conformance.md").read_text()
    section = guide.split("## 11. An adapter in another language: the Node.js example", 1)[1]
    blocks = re.findall(r"```js\n(.*?)```", section, re.S)
    assert blocks
    source = " ".join((EXAMPLE / name).read_text() for name in ("adapter.js", "executor.js"))
    flat = " ".join(source.split())
    for block in blocks:
        assert " ".join(block.split()) in flat, block
