"""The guide's minimum adapter and its advice on policy fields, held to what the runner
does.

* The adapter printed in docs/conformance.md ("The minimum adapter") is run exactly as the
  guide shows it: its handshake (no capability, an empty surface) is accepted, the one
  case that needs no capability passes, every other case is skipped for a capability,
  and the run is NOT CONFORMING unless skips are allowed.
* A policy field the runtime cannot honour: refused with ``unsupported``, the case is an
  ERROR naming the field; ignored, the case FAILS on the rule of the limit (a wrong
  verdict). The runner tells the two apart, which is why the guide says refuse.
* ``single_execution_resource`` has one test, word for word the same in the protocol's
  capability table, the guide and the kit's own capability list.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

from zlink_conformance.catalog import Catalogue
from zlink_conformance.protocol.wire import CAPABILITIES
from zlink_conformance.runner import Runner
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import FAKES, child_env

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "conformance.md"
PROTOCOL = ROOT / "specs" / "adapter-protocol.md"
SURFACE_CASE = "required_SE_10_01_surface_offers_no_queue_choice"


def minimum_adapter(tmp_path: Path) -> Path:
    text = GUIDE.read_text(encoding="utf-8")
    found = re.search(r"<!-- minimum-adapter:begin -->\n```python\n(.*?)```\n"
                      r"<!-- minimum-adapter:end -->", text, re.S)
    assert found, "docs/conformance.md lost the minimum adapter's markers"
    path = tmp_path / "minimum_adapter.py"
    path.write_text(found.group(1), encoding="utf-8")
    return path


def test_the_guides_minimum_adapter_passes_the_one_case_it_can_run(
        tmp_path: Path, catalogue: Catalogue) -> None:
    argv = [sys.executable, str(minimum_adapter(tmp_path))]
    with Runner(argv) as runner:
        report = runner.run(catalogue.cases)
    assert report.handshake is not None and report.handshake.capabilities == ()
    outcomes = {r.case.id: r.status for r in report.results}
    assert outcomes.pop(SURFACE_CASE) == "passed"
    assert set(outcomes.values()) == {"skipped"}
    assert not report.success() and report.success(allow_skips=True)
    assert report.restarts == 0


def test_the_guides_minimum_adapter_refuses_what_it_does_not_implement(
        tmp_path: Path) -> None:
    lines = ['{"id":0,"cmd":"hello","protocol":1}', '{"id":1,"cmd":"reset"}',
             '{"id":2,"cmd":"create","target":"A","type":"actor"}',
             '{"id":3,"cmd":"settle"}', '{"id":4,"cmd":"shutdown"}']
    proc = subprocess.run([sys.executable, str(minimum_adapter(tmp_path))],
                          input="\n".join(lines) + "\n", capture_output=True, text=True,
                          timeout=30, check=True)
    replies = proc.stdout.splitlines()
    assert replies[0] == ('{"re": 0, "ok": true, "protocol": 1, "runtime": {"name": '
                          '"my-runtime"}, "capabilities": [], "surface": {}}')
    assert '"kind": "unsupported"' in replies[2] and '"re": 2' in replies[2]
    assert len(replies) == 5


@pytest.mark.parametrize(("mode", "status", "seen"), [
    ("refuse", "error", "the adapter refused it: unsupported: policy.lifecycle_byte_capacity"),
    ("ignore", "failed", "[SE-5.1]"),
])
def test_SE_6_1_a_policy_field_refused_is_an_error_and_one_ignored_a_wrong_verdict(
        catalogue: Catalogue, mode: str, status: str, seen: str) -> None:
    case = catalogue.case("required_SE_5_1_lifecycle_bytes_rejects_exactly_at_capacity")
    env = child_env(ZLINK_ADAPTER_PRELOAD=str(FAKES / "preload_policy_field.py"),
                    ZLINK_POLICY_FIELD="lifecycle_byte_capacity",
                    ZLINK_POLICY_FIELD_MODE=mode)
    with Runner(reference_adapter_command(), env=env, timeout=5) as runner:
        report = runner.run([case])
    (result,) = report.results
    assert result.status == status, result.messages
    assert any(seen in m for m in result.messages), result.messages


def test_single_execution_resource_has_one_test_in_the_protocol_and_the_guide() -> None:
    test = CAPABILITIES["single_execution_resource"]
    protocol = PROTOCOL.read_text(encoding="utf-8")
    row = re.search(r"^\| `single_execution_resource` \| (.*?) \|$", protocol, re.M)
    assert row is not None and row.group(1) == test
    guide = " ".join(GUIDE.read_text(encoding="utf-8").split())
    assert f"declare it when **{test.split(';')[0]}**" in guide
