"""The documents say what the kit does: the example exchange in docs/conformance.md is
what the reference adapter writes, the example case is the shipped file, and the protocol
spec lists exactly the commands, ops, events, capabilities and invariants of the code."""

from __future__ import annotations

import json
import re
from pathlib import Path

from zlink_conformance.catalog import Catalogue, select
from zlink_conformance.oracle import CHECK_FIELDS, INVARIANTS
from zlink_conformance.protocol.commands import CASE_COMMANDS, OP_FIELDS
from zlink_conformance.protocol.wire import CAPABILITIES, EVENT_FIELDS
from zlink_conformance.runner import Runner
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import child_env

ROOT = Path(__file__).resolve().parents[2]
GUIDE = (ROOT / "docs" / "conformance.md").read_text()
SPEC = (ROOT / "specs" / "adapter-protocol.md").read_text()
EXAMPLE = "required_SE_10_11_yielded_spot_wide_actor_holds_only_its_own_next_record"


def test_the_example_exchange_is_what_the_reference_adapter_writes(catalogue: Catalogue
                                                                    ) -> None:
    block = GUIDE.split("### The exchange", 1)[1].split("```", 2)[1]
    documented = block.strip().splitlines()[2:]  # after the handshake
    wire: list[str] = []
    with Runner(reference_adapter_command(), env=child_env(),
                wire_tap=lambda d, line: wire.append(
                    ("> " if d == "sent" else "< ") + line.decode().rstrip())) as runner:
        runner.run(select(catalogue, [EXAMPLE]))
    assert documented == wire[2:]


def test_the_example_case_is_the_shipped_file() -> None:
    block = GUIDE.split("## 4. Case files", 1)[1].split("```json", 1)[1].split("```", 1)[0]
    shipped = ROOT / "conformance" / "zlink_conformance" / "cases"
    data = json.loads(block)
    assert data == json.loads((shipped / f"{data['id']}.json").read_text())


def test_the_spec_lists_every_command_op_and_event() -> None:
    commands = set(re.findall(r"^\| `([a-z_]+)` \|", SPEC.split("## Commands", 1)[1]
                              .split("###", 1)[0], re.M))
    assert commands == set(CASE_COMMANDS)
    ops = set(re.findall(r"^\| `([a-z_]+)` \|", SPEC.split("## Work scripts", 1)[1]
                         .split("## Events", 1)[0], re.M))
    assert ops == set(OP_FIELDS)
    events = set(re.findall(r"^\| `([a-z_]+)` \|", SPEC.split("## Events", 1)[1]
                            .split("What an adapter", 1)[0], re.M))
    assert events == set(EVENT_FIELDS)


def test_the_spec_lists_every_capability_and_invariant() -> None:
    section = SPEC.split("## Capabilities", 1)[1].split("## What the runner", 1)[0]
    listed = set(re.findall(r"`([a-z_.]+)`", section))
    assert set(CAPABILITIES) <= listed
    invariants = SPEC.split("## What the runner checks", 1)[1]
    for name, rule in INVARIANTS.items():
        assert f"`{name}`" in invariants and rule in invariants


def test_the_guide_lists_every_check() -> None:
    section = GUIDE.split("Checks (`why` is optional", 1)[1].split("Write checks", 1)[0]
    assert set(re.findall(r"^\| `([a-z_]+)`", section, re.M)) == set(CHECK_FIELDS)


def test_AP_rules_the_protocol_spec_lists_every_adapter_obligation_the_runner_names() -> None:
    from zlink_conformance.protocol.faults import PROTOCOL_RULES

    table = SPEC.split("## Adapter obligations (AP rules)", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| (AP-\d+) \| (.+?) \|$", table, re.M))
    assert rows == dict(PROTOCOL_RULES)
