"""The Node.js example adapter (`conformance/examples/node/`) against the suite: it
declares every capability of the protocol, every case passes and none is skipped, the
CLI exits 0 without `--allow-skips`, repeated runs agree, its member listing really
looks at the members, no handle or turn of its runtime hands out a queue, its README and
the guide's section on it say what the code does (every number in the README is checked
here against a real run or the code), and bad input gets protocol replies, not a crash."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from zlink_conformance.catalog import Catalogue, load_catalogue
from zlink_conformance.protocol.wire import CAPABILITIES
from zlink_conformance.runner import Runner, SuiteReport
from zlink_tool.cli.main import main

from kit_helpers import child_env

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "conformance" / "examples" / "node"
MIN_NODE = 18
MEMBERS_CASE = "optional_SE_2_5_no_public_member_hands_out_a_queue"


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


def adapter_argv(*node_options: str) -> list[str]:
    assert NODE is not None
    return [NODE, *node_options, str(EXAMPLE / "adapter.js")]


def run_node(script: str) -> subprocess.CompletedProcess[str]:
    """Run an ES module snippet next to executor.js."""
    assert NODE is not None
    return subprocess.run([NODE, "--input-type=module", "-e", script], cwd=EXAMPLE,
                          capture_output=True, text=True, timeout=30)


# Its module-scoped fixture runs once per pytest-xdist worker that gets one of its tests:
# every test of the module goes to the same worker (verify and ./dev test: --dist loadgroup).
pytestmark = pytest.mark.xdist_group("node_adapter")


@pytest.fixture(scope="module")
def node_run(catalogue: Catalogue) -> SuiteReport:
    with Runner(adapter_argv()) as runner:
        return runner.run(catalogue.cases)


def declared(report: SuiteReport) -> set[str]:
    assert report.handshake is not None
    return set(report.handshake.capabilities)


@needs_node
def test_the_node_adapter_declares_every_capability(node_run: SuiteReport,
                                                    catalogue: Catalogue) -> None:
    # every capability but held_steps, which the examples need not offer (the walk of
    # a runtime driven from outside is theirs: docs/conformance.md, "Held steps")
    assert declared(node_run) == set(CAPABILITIES) - {"held_steps"}
    assert node_run.handshake is not None and node_run.handshake.unknown_capabilities == ()
    needed = {cap for case in catalogue.cases for cap in case.capabilities}
    assert needed <= declared(node_run)


@needs_node
def test_every_case_passes_and_none_is_skipped(node_run: SuiteReport,
                                               catalogue: Catalogue) -> None:
    assert [r.case.id for r in node_run.results] == [c.id for c in catalogue.cases]
    assert [(r.case.id, r.status, r.messages) for r in node_run.results
            if r.status != "passed"] == []
    assert node_run.restarts == 0
    assert node_run.success()  # without allow_skips
    # Each declared capability is exercised by at least one case that ran.
    exercised = {cap for r in node_run.results for cap in r.case.capabilities}
    assert declared(node_run) <= exercised


@needs_node
def test_the_whole_run_is_fast(node_run: SuiteReport) -> None:
    """A guard, not a verdict: the suite takes well under a second."""
    assert node_run.seconds < 15
    assert max(r.seconds for r in node_run.results) < 5


@needs_node
def test_cli_exits_0_without_allow_skips_and_repeated_runs_agree(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])
    args = ["conformance", "run", "--adapter", shlex.join(adapter_argv()), "-q"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "conformance: every required case passed" in out
    assert "NOT CONFORMING" not in out and "NOT RUN" not in out
    # A few fresh adapters on the cases whose events depend most on timing: disposal,
    # the runtime end, racing threads, time slices.
    repeat = ["--repeat", "3", "--only", "SD", "--only", "D-22", "--only", "SE-6.3",
              "--only", "SE-10.10"]
    assert main([*args, *repeat]) == 0
    assert "verdicts identical across 3 runs" in capsys.readouterr().out


@needs_node
def test_the_member_listing_finds_a_member_that_hands_out_a_queue(
    tmp_path: Path, catalogue: Catalogue,
) -> None:
    """The listing is computed from the members, not written down: a method added to the
    Actor executor that returns a queue (only when given an id) fails the SE-2.5 case."""
    assert NODE is not None
    probe = subprocess.run([NODE, "--import", "data:text/javascript,", "-e", ""],
                           capture_output=True, timeout=30)
    if probe.returncode != 0:
        pytest.skip("this node has no --import to preload a module")
    leak = tmp_path / "leak.mjs"
    executor = (EXAMPLE / "executor.js").as_uri()
    leak.write_text(
        f"import {{ lanePolicy, ZLinkActorSerialExecutor, ZLinkRuntime, "
        f"ZLinkSerialExecutionQueue }} from '{executor}';\n"
        "ZLinkActorSerialExecutor.prototype.queueFor = function queueFor(id) {\n"
        "  if (typeof id !== 'string') throw new TypeError('needs an id');\n"
        "  return [new ZLinkSerialExecutionQueue(id, lanePolicy(), new ZLinkRuntime())];\n"
        "};\n")
    with Runner(adapter_argv("--import", leak.as_uri())) as runner:
        report = runner.run([c for c in catalogue.cases if c.id == MEMBERS_CASE])
    (result,) = report.results
    assert result.status == "failed"
    assert any("actor.queueFor hands out a queue" in m for m in result.messages), result.messages


@needs_node
def test_no_handle_turn_or_report_of_the_runtime_hands_out_a_queue() -> None:
    """SE-10.1 in process: everything the application gets back from a coordinator (the
    handles of every entry, the turn and snapshot a work receives, statistics, zombie
    lists) is searched, own and inherited public members alike, for a queue."""
    done = run_node("""
import { ZLinkActorSerialExecutor, ZLinkRuntime, ZLinkSerialExecutionQueue,
  ZLinkSessionSerialExecutor, ZLinkSpotSerialExecutor } from './executor.js';
const runtime = new ZLinkRuntime({ onError: () => {} });
const found = [];
const seen = new Set();
const search = (value, path, depth = 0) => {
  if (value instanceof ZLinkSerialExecutionQueue) { found.push(path); return; }
  if (value === null || typeof value !== 'object' || seen.has(value) || depth > 3) return;
  seen.add(value);
  const names = new Set(Object.keys(value));
  for (let p = Object.getPrototypeOf(value); p && p !== Object.prototype;
       p = Object.getPrototypeOf(p)) {
    for (const [name, d] of Object.entries(Object.getOwnPropertyDescriptors(p))) {
      if (d.get) names.add(name);
    }
  }
  for (const name of names) {
    if (name.startsWith('_')) continue;
    let inner;
    try { inner = value[name]; } catch { continue; }
    search(inner, `${path}.${name}`, depth + 1);
  }
  if (value instanceof Map || value instanceof Set || Array.isArray(value)) {
    [...value.values()].forEach((v, i) => search(v, `${path}[${i}]`, depth + 1));
  }
};
const turns = [];
const work = (turn) => { turns.push(turn); };
const coordinators = {
  perActor: new ZLinkSpotSerialExecutor('P', { mode: 'per_actor', runtime }),
  spotWide: new ZLinkSpotSerialExecutor('W', { mode: 'spot_wide', runtime }),
  actor: new ZLinkActorSerialExecutor('A', { runtime }),
  session: new ZLinkSessionSerialExecutor('s', { runtime }),
};
const handles = [];
for (const spot of [coordinators.perActor, coordinators.spotWide]) {
  spot.registerActor('x', 'npc', { hp: 1 });
  handles.push(spot.executeSpot(work), spot.executeLifecycle(work), spot.executeActor('x', work, 8),
    spot.executeTimer('t', work));
}
handles.push(coordinators.actor.executeActor(work), coordinators.actor.executeLifecycle(work));
const s = coordinators.session;
handles.push(s.executeApplication(work), s.executeControl(work), s.executeInfrastructure(work),
  s.executeFinal(work));
await new Promise((resolve) => setTimeout(resolve, 50));
handles.forEach((h, i) => search(h, `handle${i}`));
turns.forEach((t, i) => search(t, `turn${i}`));
for (const [name, c] of Object.entries(coordinators)) {
  search(c.statistics(), `${name}.statistics()`);
  c.disposeSafely();
  search(c.zombies(), `${name}.zombies()`);
}
console.log(JSON.stringify({ found, handles: handles.length, turns: turns.length }));
""")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["found"] == []
    # every work ran, so every turn was searched too
    assert report["turns"] == report["handles"] > 0


# ------------------------------------------------------------------------- README


def readme() -> str:
    return (EXAMPLE / "README.md").read_text()


def readme_numbers(text: str) -> list[str]:
    """Every number in the README's prose: code blocks (run by a test of their own) and
    rule IDs (SE-6.7, D-13) left out."""
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    prose = re.sub(r"\b(?:SE|SD|D)-\d+(?:\.\d+)*", "", prose)
    return re.findall(r"\d[\d,]*\d|\d", prose)


@needs_node
def test_every_number_in_the_readme_is_true(node_run: SuiteReport) -> None:
    text = readme()
    checked: list[str] = []

    counts = re.search(r"the run reports (\d+) cases: (\d+) passed \((\d+)\s+required and "
                       r"(\d+) optional\), (\d+) failed, (\d+) skipped", text)
    assert counts is not None, "the README must state the run's counts in the checked form"
    cases, passed, required, optional, failed, skipped = map(int, counts.groups())
    assert cases == len(node_run.results)
    assert passed == node_run.count("passed")
    assert required == node_run.count("passed", required=True)
    assert optional == node_run.count("passed", required=False)
    assert failed == node_run.count("failed") + node_run.count("error")
    assert skipped == node_run.count("skipped")
    checked += counts.groups()

    node = re.search(r"Node (\d+) or newer", text)
    assert node is not None and int(node.group(1)) == MIN_NODE
    checked.append(node.group(1))

    exits = re.search(r"exits (\d),\s+without `--allow-skips`", text)
    assert exits is not None and int(exits.group(1)) == 0  # held by the CLI test above
    checked.append(exits.group(1))

    bound = re.search(r"After ([\d,]+) macrotasks", text)
    source = re.search(r"const SETTLE_TURNS = ([\d_]+);", (EXAMPLE / "adapter.js").read_text())
    assert bound is not None and source is not None
    assert int(bound.group(1).replace(",", "")) == int(source.group(1).replace("_", ""))
    checked.append(bound.group(1))

    assert sorted(readme_numbers(text)) == sorted(checked), \
        "a number in the README that no test checks: check it here or remove it"


@needs_node
def test_the_readme_lists_exactly_the_declared_capabilities(node_run: SuiteReport) -> None:
    paragraph = readme().split("Declared capabilities:", 1)[1].split("\n\n", 1)[0]
    assert set(re.findall(r"`([a-z_.]+)`", paragraph)) == declared(node_run)


@needs_node
def test_the_readme_example_runs() -> None:
    (block,) = re.findall(r"```js\n(.*?)```", readme(), re.S)
    done = run_node(block)
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
         "script": [{"op": "teleport"}]},
        {"id": 8, "cmd": "dispose", "target": "q", "mode": "vaporize"},
        {"id": 9, "cmd": "dispose", "target": "q", "mode": "dispose_after_timeout",
         "timeout_ms": -1},
        {"id": 10, "cmd": "await", "target": "q", "waiter": "v", "mode": "forever"},
        {"id": 11, "cmd": "submit_concurrent", "submissions": [
            {"work": "c1", "target": "q", "entry": "enqueue"}]},
        {"id": 12, "cmd": "register", "target": "q", "values": {"a": 1}},
        {"id": 13, "cmd": "settle"},
        {"id": 14, "cmd": "shutdown"},
    ]
    stdin = "".join((line if isinstance(line, str) else json.dumps(line)) + "\n"
                    for line in lines)
    done = subprocess.run(adapter_argv(), input=stdin, capture_output=True, text=True,
                          timeout=30)
    assert done.returncode == 0, done.stderr
    replies = {m["re"]: m for m in map(json.loads, done.stdout.splitlines()) if "re" in m}
    kinds = {n: r["error"]["kind"] for n, r in replies.items() if not r["ok"]}
    assert kinds == {0: "bad_command", 2: "bad_command", 3: "unknown_target",
                     4: "unknown_target", 5: "bad_command", 7: "bad_command",
                     8: "bad_command", 9: "bad_command", 10: "bad_command",
                     11: "bad_command", 12: "bad_command"}
    assert "no_such_field" in replies[5]["error"]["message"]
    assert "teleport" in replies[7]["error"]["message"]
    assert "timeoutMs" in replies[9]["error"]["message"]
    assert all(replies[n]["ok"] for n in (1, 6, 13, 14))
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


@needs_node
def test_SE_6_5_a_drain_run_inside_the_submit_call_fails_every_case_of_the_family(
        catalogue: Catalogue) -> None:
    """A single-threaded runtime whose submit runs an idle queue's work synchronously
    (ZLINK_NODE_BUG=drain_on_submitter_stack) fails each submitter-stack case on SE-6.5,
    never as an adapter fault."""
    cases = [c for c in catalogue.cases if "submitter_stack" in c.capabilities]
    assert cases
    with Runner(adapter_argv(), env={"ZLINK_NODE_BUG": "drain_on_submitter_stack"}) as runner:
        report = runner.run(cases)
    for result in report.results:
        seen = (result.case.id, result.status, result.messages[:2])
        assert result.status == "failed", seen
        assert any(m.startswith("[SE-6.5 OffSubmitterStack]") for m in result.messages), seen
        assert not any("adapter fault" in m for m in result.messages), seen


@needs_node
def test_SE_8_2_a_scope_wait_that_waits_for_itself_fails_every_await_scope_case(
        catalogue: Catalogue) -> None:
    """A runtime whose awaitQuiescence, awaitCompletion and awaitAfterCancellation never
    ask who calls (ZLINK_NODE_BUG=scope_wait_hangs) fails each await_scope case on
    SE-8.2, never as an adapter fault, and passes every other reentrancy case."""
    cases = [c for c in catalogue.cases
             if "scope_wait" in c.capabilities or "synchronous_wait" in c.capabilities
             or "reentrancy_detection" in c.capabilities]
    with Runner(adapter_argv(), env={"ZLINK_NODE_BUG": "scope_wait_hangs"}) as runner:
        report = runner.run(cases)
    for result in report.results:
        seen = (result.case.id, result.status, result.messages[:2])
        if "scope_wait" in result.case.capabilities:
            assert result.status == "failed", seen
            assert result.messages[0].startswith("[SE-8.2] expect[0] errors"), seen
            assert not any("adapter fault" in m for m in result.messages), seen
        else:
            assert result.status == "passed", seen


@needs_node
def test_SE_8_2_a_zombie_s_wrapped_wait_for_itself_is_no_fault() -> None:
    """Found by explore against this example (seed 1, scenario 629): a zombie's wrapped
    wait for itself, raced against its already-aborted cancellation, left the wait's own
    promise unobserved, and its refusal (SE-8.2) came back as an unhandled rejection, a
    fault (SE-1.1 NoFault). The shrunk case replays it; it failed before the fix in
    ``cancellable``."""
    found = load_catalogue(Path(__file__).parent / "found")
    case = found.case("found_SE_8_2_a_zombie_s_wrapped_wait_for_itself_s1_n629")
    with Runner(adapter_argv()) as runner:
        report = runner.run([case])
    assert [(r.status, r.messages) for r in report.results] == [("passed", [])]
