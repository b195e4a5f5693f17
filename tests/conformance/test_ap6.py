"""AP-6 has one definition (``specs/adapter-protocol.md``, section Session): everything
of a case is written before the reply to the reset that ends it, nothing after. A case
that stopped without a settle is judged on that reply alone."""

from __future__ import annotations

from pathlib import Path

from scripted_kit import ev, run_scripted_cases

GATED = [{"op": "gate", "gate": "g"}]


def test_AP_6_a_threaded_work_that_ends_between_a_refused_command_and_the_reset_is_no_fault(
        tmp_path: Path) -> None:
    """A multi-threaded runtime's accepted work finishes on its own thread after a command
    was refused (so the runner sent no settle) and before the reply to the reset that
    ends the case: that event is the case's own, written in time. The case is an error
    for the refusal only, the adapter is not restarted and the next case passes."""
    first = {"id": "required_SE_1_1_a_refused", "rules": ["SE-1.1"],
             "steps": [{"cmd": "create", "target": "A", "type": "actor"},
                       {"cmd": "submit", "work": "a", "target": "A", "entry": "execute_actor",
                        "script": GATED},
                       {"cmd": "settle"}, {"cmd": "open", "gate": "g"}]}
    second = {"id": "required_SE_1_1_b_next", "rules": ["SE-1.1"],
              "steps": [{"cmd": "create", "target": "A", "type": "actor"},
                        {"cmd": "submit", "work": "a", "target": "A", "entry": "execute_actor",
                         "script": []}]}
    steps = [
        {"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A"),
                                                   ev("started", "a", "A")]},
        {"cmd": "open", "error": {"kind": "unsupported", "message": "no gates here"},
         "thread": {"delay": 0.05, "events": [ev("finished", "a", "A")]}},
        {"cmd": "reset", "delay": 0.5},
        {"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A"),
                                                   ev("started", "a", "A"),
                                                   ev("finished", "a", "A")]},
    ]
    report = run_scripted_cases(tmp_path, [first, second], steps)
    refused, nxt = report.results
    assert refused.status == "error", refused.messages
    assert refused.messages == ["steps[3] open: the adapter refused it: unsupported: "
                                "no gates here"]
    assert refused.log is not None and refused.log.names("a")[-1] == "finished"
    assert nxt.status == "passed", nxt.messages
    assert report.restarts == 0


def test_AP_5_an_event_after_the_cases_last_settle_and_before_the_reset_reply(
        tmp_path: Path) -> None:
    """The same late event after a settle that answered breaks that settle's AP-5, an
    adapter fault of the case; the next case runs on a fresh adapter."""
    case = {"id": "required_SE_1_1_a_settled", "rules": ["SE-1.1"],
            "steps": [{"cmd": "create", "target": "A", "type": "actor"},
                      {"cmd": "submit", "work": "a", "target": "A", "entry": "execute_actor",
                       "script": []}]}
    steps = [
        {"cmd": "submit", "work": "a", "events": [ev("accepted", "a", "A"),
                                                   ev("started", "a", "A"),
                                                   ev("finished", "a", "A")]},
        {"cmd": "reset", "events": [ev("finished", "a", "A")]},
    ]
    result = run_scripted_cases(tmp_path, [case], steps).results[0]
    assert result.status == "error"
    assert result.messages[0].startswith(
        "adapter fault [AP-5] 1 event(s) came after the reply to the case's last settle, "
        "before the reply to the reset that ends it (finished:a)"), result.messages
