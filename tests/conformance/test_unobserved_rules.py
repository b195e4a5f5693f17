"""The rules no case could observe until the protocol showed them, and the list of those
that stay unobservable.

* SE-6.5, "the drain never runs on the submitter's stack": an adapter that declares
  ``submitter_stack`` marks every ``started`` with ``on_submitter_stack``; the family of
  ``required_SE_6_5_*`` cases submits through every entry point into an idle queue, and
  the catalogued mutant ``drain_on_submitter_stack`` (the drain run inside the submit
  call) fails each of them on SE-6.5, never as an adapter fault (AP-7).
* SE-6.2's observers ``is_current`` and ``await_quiescence`` (capability
  ``queue_observation``): a runtime whose observer answers the wrong question fails the
  case written for it.
* Every rule of ``specs/rules.toml`` is observed by some case or listed, with the reason,
  in the guide's table of rules the protocol cannot observe.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from zlink_conformance.catalog import Case, Catalogue
from zlink_conformance.protocol.faults import verdict_order_faults
from zlink_conformance.protocol.wire import ENTRIES, Event
from zlink_conformance.runner import Runner, SuiteReport
from zlink_reference_adapter import PRELOAD_FILE, reference_adapter_command

from kit_helpers import FAKES, child_env

ROOT = Path(__file__).resolve().parents[2]
GUIDE = ROOT / "docs" / "conformance.md"
QUEUE_BUG = FAKES / "preload_queue_observation_bug.py"


def _family(catalogue: Catalogue) -> list[Case]:
    return [c for c in catalogue.cases if "submitter_stack" in c.capabilities]


def _run(cases: list[Case], **env: str) -> SuiteReport:
    with Runner(reference_adapter_command(), env=child_env(**env), timeout=5) as runner:
        return runner.run(cases)


def test_SE_6_5_the_family_submits_through_every_entry_point(catalogue: Catalogue) -> None:
    """Each entry of every coordinator and of the bare queue is submitted to (an idle
    queue, the cases settle in between) and checked by some case of the family, nested
    submissions included."""
    family = _family(catalogue)
    assert len(family) >= 6
    assert all(c.covers("SE-6.5") for c in family)
    seen = {(c.targets[info.target].type, info.entry)
            for c in family for info in c.works.values()}
    wanted = {(type_, entry) for type_, entries in ENTRIES.items() for entry in entries}
    assert wanted <= seen, sorted(wanted - seen)
    assert any(info.command_id is None for c in family for info in c.works.values())
    assert any(c.required for c in family)


def test_SE_6_5_a_drain_on_the_submitters_stack_fails_every_case_of_the_family(
        catalogue: Catalogue) -> None:
    report = _run(_family(catalogue), ZLINK_ADAPTER_PRELOAD=str(PRELOAD_FILE),
                  ZLINK_MUTANT_NAME="drain_on_submitter_stack")
    assert report.results
    for result in report.results:
        seen = (result.case.id, result.status, result.messages[:3])
        assert result.status == "failed", seen
        assert any(m.startswith("[SE-6.5] expect")
                   and "on the submitter's stack" in m for m in result.messages), seen
        assert any(m.startswith("[SE-6.5 OffSubmitterStack]") for m in result.messages), seen
        assert not any("AP-7" in m for m in result.messages), seen


def test_SE_6_5_the_reference_passes_the_family_with_every_start_marked(
        catalogue: Catalogue) -> None:
    report = _run(_family(catalogue))
    assert [(r.case.id, r.status) for r in report.results if r.status != "passed"] == []
    for result in report.results:
        assert result.log is not None
        starts = [e for _, e in result.log.events if e.name == "started"]
        assert starts and all(e.fields.get("on_submitter_stack") is False for e in starts)


def test_SE_6_5_a_start_on_the_submitters_stack_before_its_verdict_is_not_AP_7() -> None:
    """The runtime ran the work inside the submit call, so the adapter could write its
    verdict only afterwards: SE-6.5 judges that, not the adapter's AP-7. An unmarked start
    before the verdict stays an adapter fault."""
    def log(inline: bool) -> list[tuple[int, Event]]:
        return [(5, Event("started", {"work": "a", "owner": "A",
                                      "on_submitter_stack": inline})),
                (6, Event("finished", {"work": "a", "owner": "A"})),
                (7, Event("accepted", {"work": "a", "owner": "A"}))]

    assert verdict_order_faults(log(True)) == []
    faults = verdict_order_faults(log(False))
    assert len(faults) == 1 and faults[0].startswith("adapter fault [AP-7]")


@pytest.mark.parametrize(("bug", "case_id"), [
    ("is_current_any_holder", "optional_SE_6_2_is_current_holds_only_inside_this_queues_turn"),
    ("quiescence_ignores_yielded",
     "optional_SE_6_2_await_quiescence_waits_for_every_accepted_work"),
])
def test_SE_6_2_a_broken_queue_observer_fails_its_case(catalogue: Catalogue, bug: str,
                                                       case_id: str) -> None:
    cases = [c for c in catalogue.cases if "queue_observation" in c.capabilities]
    assert {c.id for c in cases} >= {case_id}
    report = _run(cases, ZLINK_ADAPTER_PRELOAD=str(QUEUE_BUG), ZLINK_QUEUE_BUG=bug)
    verdicts = {r.case.id: r for r in report.results}
    broken = verdicts.pop(case_id)
    assert broken.status == "failed", (broken.status, broken.messages)
    assert all(m.startswith(("[SE-6.2] steps[", "[SE-6.2] expect[")) for m in broken.messages)
    assert all(r.status == "passed" for r in verdicts.values()), \
        [(r.case.id, r.messages) for r in verdicts.values() if r.status != "passed"]


# ------------------------------------------------------------- unobservable rules
def unobservable_rules() -> dict[str, str]:
    """The guide's table of rules the protocol cannot observe: rule -> reason."""
    text = GUIDE.read_text(encoding="utf-8")
    found = re.search(r"<!-- unobservable:begin -->\n(.*?)<!-- unobservable:end -->",
                      text, re.S)
    assert found, "docs/conformance.md lost its unobservable-rules markers"
    rows = {}
    for line in found.group(1).strip().splitlines()[2:]:
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        assert len(cells) == 2, line
        rows[cells[0].strip("`")] = cells[1]
    return rows


def test_every_rule_is_observed_by_a_case_or_listed_as_unobservable(
        catalogue: Catalogue) -> None:
    spec = tomllib.loads((ROOT / "specs" / "rules.toml").read_text(encoding="utf-8"))
    rules = set(spec["rules"])
    observed = {rule for case in catalogue.cases for rule in case.rules}
    listed = unobservable_rules()
    assert set(listed) <= rules, sorted(set(listed) - rules)
    assert rules - observed == set(listed), (
        f"observed by no case and not listed: {sorted(rules - observed - set(listed))}; "
        f"listed but observed by a case: {sorted(set(listed) & observed)}")
    for rule, reason in listed.items():
        assert len(reason.split()) >= 8, f"{rule}: say why no case can observe it"


# ------------------------------------------------------------------------- SD-3a
SURVIVOR_CASE = "required_SD_3_a_work_that_survives_its_cancellation_becomes_a_zombie"


def test_SD_3_a_survivor_of_its_cancellation_is_a_zombie_in_the_reference(
        catalogue: Catalogue) -> None:
    (result,) = _run([catalogue.case(SURVIVOR_CASE)]).results
    assert result.status == "passed", result.messages


def test_SD_3_a_survivor_that_stays_active_fails_the_case(catalogue: Catalogue) -> None:
    """The old behaviour (the survivor stays active, so await_completion never returns and
    the statistics count it active) fails the case on SD-3, never as an error."""
    (result,) = _run([catalogue.case(SURVIVOR_CASE)],
                     ZLINK_ADAPTER_PRELOAD=str(FAKES / "preload_survivor_stays_active.py")
                     ).results
    assert result.status == "failed", result.messages
    assert any(m.startswith("[SD-3] steps[") and "waiter done has not returned" in m
               for m in result.messages), result.messages


# ------------------------------------------------------------------------- SE-8.2
WRAPPED_CASE = "required_SE_10_13_a_wrapped_wait_on_the_same_coordinator_raises_too"


def test_SE_8_2_a_detection_blind_to_wrapped_waits_fails_the_wrapped_case(
        catalogue: Catalogue) -> None:
    """The reference's old detection (it saw a wait only in the waiter's own task) hangs
    on the wrapped wait instead of raising: the wrapped case fails on its rule, while the
    plain SE-10.13 cases still pass."""
    cases = [c for c in catalogue.cases if c.covers("SE-10.13")]
    report = _run(cases, ZLINK_ADAPTER_PRELOAD=str(FAKES / "preload_wrapped_wait_unseen.py"))
    verdicts = {r.case.id: r for r in report.results}
    wrapped = verdicts.pop(WRAPPED_CASE)
    assert wrapped.status == "failed", wrapped.messages
    assert any("[SE-10.13] expect[0] errors: w1: expected errors ['reentrancy'], got []" in m
               for m in wrapped.messages), wrapped.messages
    assert {r.status for r in verdicts.values()} == {"passed"}
