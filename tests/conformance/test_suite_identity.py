"""Every report says which suite ran: the kit version, the protocol version and a digest
over the case files run with their count; ``cases --changes-since`` lists the cases
added, changed and retired since a released version."""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from zlink_conformance.catalog import catalogue_dir, content_digest, load_catalogue
from zlink_conformance.identity import KIT_VERSION, changes_since, identify
from zlink_conformance.protocol.wire import PROTOCOL_VERSION
from zlink_reference_adapter import reference_adapter_command

from kit_helpers import child_env

TWO = ["required_SE_10_02_per_actor_long_work_on_two_actors_overlaps",
       "required_D_12_session_final_on_an_idle_session_runs_at_once"]


def _cases(tmp_path: Path, edit: bool = False) -> Path:
    out = tmp_path / "cases"
    out.mkdir(parents=True)
    shutil.copy(catalogue_dir() / "rules.json", out / "rules.json")
    for case_id in TWO:
        data = json.loads((catalogue_dir() / f"{case_id}.json").read_text())
        if edit and case_id == TWO[0]:
            data["intent"] += " (edited)"
        (out / f"{case_id}.json").write_text(json.dumps(data))
    return out


def test_the_digest_is_over_content_and_selection_not_layout(tmp_path: Path) -> None:
    plain = identify(load_catalogue(_cases(tmp_path / "a")).cases)
    laid_out = _cases(tmp_path / "b")
    for path in laid_out.glob("required_*.json"):
        path.write_text(json.dumps(json.loads(path.read_text()), indent=4))
    assert identify(load_catalogue(laid_out).cases) == plain
    edited = identify(load_catalogue(_cases(tmp_path / "c", edit=True)).cases)
    assert edited.digest != plain.digest and edited.count == plain.count == 2
    one = identify(load_catalogue(_cases(tmp_path / "d")).cases[:1])
    assert one.digest != plain.digest and one.count == 1
    assert plain.digest.startswith("sha256:") and len(plain.digest) == 7 + 64
    assert (plain.kit, plain.protocol) == (KIT_VERSION, PROTOCOL_VERSION)
    assert KIT_VERSION != "unknown"


def test_console_json_junit_and_html_carry_versions_and_the_case_set_digest(
        tmp_path: Path) -> None:
    cases = _cases(tmp_path)
    want = identify(load_catalogue(cases).cases)
    proc = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "run", "--cases", str(cases),
         "--adapter", shlex.join(reference_adapter_command()),
         "--json", str(tmp_path / "r.json"), "--junit", str(tmp_path / "r.xml"),
         "--html", str(tmp_path / "r.html")],
        capture_output=True, text=True, timeout=120, env=child_env(), check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith(f"suite: {want.line()}\n"), proc.stdout[:200]
    assert f"suite: zlink-conformance {KIT_VERSION}; protocol {PROTOCOL_VERSION}; case set " \
           f"{want.digest[:19]} (2 cases)" in proc.stdout
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["suite"] == {"kit_version": KIT_VERSION, "protocol_version": PROTOCOL_VERSION,
                               "case_set_digest": want.digest, "case_count": 2}
    props = {p.get("name"): p.get("value")
             for p in ET.parse(tmp_path / "r.xml").getroot().iter("property")}
    assert props["kit_version"] == KIT_VERSION
    assert props["protocol_version"] == str(PROTOCOL_VERSION)
    assert props["case_set_digest"] == want.digest and props["case_count"] == "2"
    html = (tmp_path / "r.html").read_text()
    assert f"zlink-conformance {KIT_VERSION}; protocol {PROTOCOL_VERSION}" in html
    assert want.digest in html


def test_cases_changes_since_lists_added_changed_and_retired(tmp_path: Path) -> None:
    cases = _cases(tmp_path, edit=True)
    original = {i: content_digest(json.loads((catalogue_dir() / f"{i}.json").read_text()))
                for i in TWO}
    (cases / "releases.json").write_text(json.dumps({"releases": {"1.0.0": {
        TWO[0]: original[TWO[0]], "required_SE_1_1_gone": "0" * 64}}}))
    (cases / "retired.json").write_text(json.dumps(
        {"retired": {"required_SE_1_1_gone": "replaced by required_SE_1_1_new"}}))
    changes = changes_since("1.0.0", load_catalogue(cases),
                            {"1.0.0": {TWO[0]: original[TWO[0]],
                                       "required_SE_1_1_gone": "0" * 64}})
    assert changes.added == (TWO[1],)
    assert changes.changed == (TWO[0],)
    assert changes.retired == (("required_SE_1_1_gone", "replaced by required_SE_1_1_new"),)
    proc = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "cases", "--cases", str(cases),
         "--changes-since", "1.0.0"],
        capture_output=True, text=True, timeout=60, env=child_env(), check=False)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines() == [
        "changes since 1.0.0: 1 added, 1 changed, 1 retired",
        f"  added    {TWO[1]}", f"  changed  {TWO[0]}",
        "  retired  required_SE_1_1_gone (replaced by required_SE_1_1_new)"]
    unknown = subprocess.run(
        [sys.executable, "-m", "zlink_conformance.cli", "cases", "--cases", str(cases),
         "--changes-since", "0.0.1"],
        capture_output=True, text=True, timeout=60, env=child_env(), check=False)
    assert unknown.returncode == 2
    assert "no case set recorded for that version (recorded: 1.0.0)" in unknown.stderr


def test_the_shipped_releases_record_is_readable_and_names_known_cases() -> None:
    from zlink_conformance.identity import load_releases

    releases = load_releases(catalogue_dir())
    assert releases, "cases/releases.json records no release"
    catalogue = load_catalogue()
    known = {c.id for c in catalogue.cases} | set(catalogue.retired)
    for version, cases in releases.items():
        assert set(cases) <= known, (version, set(cases) - known)
