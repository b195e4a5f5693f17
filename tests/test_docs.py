"""The documents say what the code does: the README example runs, and the trace format
lists exactly the events the core emits."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from zlink_model.queue import EVENTS
from zlink_model.trace import read_trace

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("doc", ["README.md", "docs/quickstart.md"])
def test_documented_examples_run(doc: str) -> None:
    text = (ROOT / doc).read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert blocks, f"{doc} lost its example"
    for block in blocks:
        exec(compile(block, doc, "exec"), {"__name__": "example"})


def test_readme_names_the_two_commands() -> None:
    text = (ROOT / "README.md").read_text()
    assert "./dev verify" in text and "./dev test" in text
    ci = (ROOT / ".ci" / "run").read_text()
    assert "./dev test" in ci, ".ci/run must call the README's test command"


def test_trace_format_lists_exactly_the_core_events() -> None:
    text = (ROOT / "specs" / "trace-format.md").read_text()
    table = text.split("| event | fields |", 1)[1].split("\n\n", 1)[0]
    documented = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert sorted(documented) == sorted(EVENTS)


def test_trace_format_example_parses() -> None:
    text = (ROOT / "specs" / "trace-format.md").read_text()
    example = re.search(r"```json\n(.*?)```", text, re.S)
    assert example is not None
    events = read_trace(example.group(1).splitlines())
    assert [e.event for e in events] == ["admit", "enter_drain", "take_next", "finish",
                                         "exit_drain"]
    assert all(e.event in EVENTS for e in events)
    json.dumps([e.to_json() for e in events])


def test_SE_6_6_design_diagrams_are_generated_from_the_core_tables() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "make_state_diagrams", ROOT / "docs" / "make_state_diagrams.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    text = (ROOT / "docs" / "design.md").read_text()
    assert module.refreshed(text) == text, "run: python docs/make_state_diagrams.py --write"


def test_documented_commands_exist_and_links_resolve() -> None:
    """Every `zlink X` the README and the docs name is a subcommand, the README lists the
    steps `zlink verify` really runs, and every relative link of the docs resolves."""
    from zlink_tool.cli.main import COMMANDS
    from zlink_tool.cli.verify import steps

    commands = {name for name, _, _ in COMMANDS}
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    for doc in docs:
        text = doc.read_text()
        for name in re.findall(r"`(?:\./dev )?zlink ([a-z][a-z-]*)", text):
            assert name in commands, f"{doc.name}: zlink {name} is no subcommand"
        for target in re.findall(r"\]\(([^)#:]+\.md)\)", text):
            assert (doc.parent / target).is_file(), f"{doc.name}: link to {target}"
    readme = (ROOT / "README.md").read_text()
    listed = re.search(r"every check \(([^)]*)\)", readme)
    assert listed is not None
    assert listed.group(1).split(", ") == [s.name for s in steps()]


def _kit_verdict_against_the_reference() -> list[str]:
    """The last two lines of a real run of the kit against the reference adapter."""
    import subprocess
    import sys

    from zlink_reference_adapter import reference_adapter_command

    adapter = " ".join(reference_adapter_command())
    result = subprocess.run([sys.executable, "-m", "zlink_conformance.cli", "run", "-q",
                             "--adapter", adapter], capture_output=True, text=True,
                            timeout=240)
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout.strip().splitlines()[-2:]


def test_the_documented_verdict_is_what_a_run_prints() -> None:
    """docs/conformance.md shows the verdict of a passing run: the lines a run of the kit
    against the reference prints now, not the counts of an older catalogue."""
    text = (ROOT / "docs" / "conformance.md").read_text()
    block = re.search(r"```\n(verdict: PASS:.*?)```", text, re.S)
    assert block is not None, "docs/conformance.md lost its verdict example"
    assert block.group(1).strip().splitlines() == _kit_verdict_against_the_reference()


def test_every_verdict_count_in_the_docs_is_out_of_the_catalogue() -> None:
    """Each ``required N/M`` and ``optional N/M`` the docs quote has the catalogue's M."""
    from zlink_conformance.catalog import load_catalogue

    cases = load_catalogue().cases
    totals = {"required": sum(c.required for c in cases),
              "optional": sum(not c.required for c in cases)}
    quoted = []
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        for strength, total in re.findall(r"\b(required|optional) \d+/(\d+)",
                                          path.read_text()):
            quoted.append((path.name, strength, int(total)))
            assert int(total) == totals[strength], (path.name, strength, total, totals)
    assert quoted, "no verdict counts found in the docs"


def test_java_minimum_is_one_version_everywhere() -> None:
    """Every "Java N or newer" of the docs and the tool's hints names the same N."""
    from zlink_tool.tla import runner

    sources = [ROOT / "README.md", ROOT / "tool" / "README.md", *sorted(
        (ROOT / "docs").rglob("*.md")), Path(runner.__file__)]
    found = {}
    for path in sources:
        for number in re.findall(r"Java(?: runtime,)? (\d+) or newer", path.read_text()):
            found.setdefault(number, []).append(path.name)
    assert len(found) == 1, f"Java minimums differ: {found}"


def test_dev_help_lists_every_dev_command() -> None:
    """``./dev help`` names each command the script's ``case`` accepts."""
    import subprocess

    script = (ROOT / "dev").read_text()
    commands = re.findall(r"^    ([a-z]+)\)", script, re.M)
    assert "compiled" in commands and "dist" in commands
    shown = subprocess.run([str(ROOT / "dev"), "help"], capture_output=True, text=True,
                           timeout=30).stdout
    listed = re.findall(r"^  \./dev ([a-z]+)", shown, re.M)
    for command in commands:
        if command != "help":
            assert command in listed, f"./dev help leaves out {command}"


def test_reading_the_reference_lists_every_room_of_the_shell_in_order() -> None:
    """docs/implementers.md reads the shell in the order the layering test holds."""
    from test_layering import SHELL_ORDER

    text = (ROOT / "docs" / "implementers.md").read_text()
    section = text.split("## Reading the reference", 1)[1].split("\n## ", 1)[0]
    listed = re.findall(r"^\| `([a-z_]+)\.py` \|", section, re.M)
    shell = ROOT / "reference" / "zlink_reference" / "_shell"
    assert listed == [*SHELL_ORDER, "__init__"]
    assert sorted(listed) == sorted(p.stem for p in shell.glob("*.py"))
