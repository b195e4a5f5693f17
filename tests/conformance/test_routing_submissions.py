"""The one reading of a runner's ``submit`` that both judges of a transcript share
(the kit's model oracle and TLC through ``zlink trace check``): SE-3.1 routing, SE-6.2
lanes and reservations."""

from __future__ import annotations

from zlink_conformance.protocol.routing import Route, TargetInfo, submissions

TARGETS = {
    "q": TargetInfo("q", "queue"),
    "s": TargetInfo("s", "spot", "user", "spot_wide"),
    "n": TargetInfo("n", "session"),
}


def test_SE_6_2_a_submission_names_its_lane_payload_and_barrier() -> None:
    [plain] = submissions({"work": "w", "target": "q", "entry": "enqueue"}, TARGETS)
    assert (plain.lifecycle, plain.payload, plain.barrier) == (False, 0, False)
    [paid] = submissions({"work": "w", "target": "q", "entry": "enqueue_with_payload_bytes",
                          "payload_bytes": 40}, TARGETS)
    assert paid.payload == 40
    # payload_bytes of an entry that reserves none is not a reservation
    [unpaid] = submissions({"work": "w", "target": "q", "entry": "enqueue",
                            "payload_bytes": 40}, TARGETS)
    assert unpaid.payload == 0
    [life] = submissions({"work": "w", "target": "q", "entry": "enqueue_lifecycle"}, TARGETS)
    assert life.lifecycle and not life.barrier
    [barrier] = submissions({"work": "w", "target": "q", "entry": "enqueue_barrier_next"},
                            TARGETS)
    assert barrier.barrier and not barrier.lifecycle
    [final] = submissions({"work": "w", "target": "n", "entry": "execute_final"}, TARGETS)
    assert final.final and not final.moved


def test_SE_3_1_a_submission_is_routed_and_its_script_follows_depth_first() -> None:
    sub = {"work": "a", "target": "s", "entry": "execute_actor", "actor_id": "x",
           "script": [{"op": "submit", "work": "b", "target": "q", "entry": "enqueue",
                       "script": [{"op": "submit", "work": "c", "target": "q",
                                   "entry": "enqueue_lifecycle"}]},
                      {"op": "complete"},
                      {"op": "submit", "work": "d", "target": "q", "entry": "enqueue"}]}
    got = list(submissions(sub, TARGETS))
    assert [s.work for s in got] == ["a", "b", "c", "d"]
    assert got[0].route == Route("s/actor:x", "s", "s/actor:x") and got[0].moved
    assert got[1].route == Route("q", "q")


def test_SE_3_1_an_unroutable_submission_is_skipped_with_its_script() -> None:
    script = [{"op": "submit", "work": "b", "target": "q", "entry": "enqueue"}]
    for bad in ({"work": "a", "target": "nowhere", "entry": "enqueue"},
                {"work": "a", "target": "q", "entry": "execute_actor"},  # a queue has none
                {"work": "a", "target": "s", "entry": "execute_actor"},  # no actor id
                {"work": 7, "target": "q", "entry": "enqueue"}):
        assert list(submissions({**bad, "script": script}, TARGETS)) == []
