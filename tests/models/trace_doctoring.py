"""Transcripts of the reference, doctored by hand, for the tests that show TLC's transcript
judge bites: run cases with their transcripts written, read a transcript's records, find
an event in them, and judge honest and doctored queues in one TLC run, each doctored one
refused at the entry it was broken at (``test_trace_disposal``, ``test_trace_final``,
``test_trace_spot_wide``)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from zlink_tool.cli.main import main
from zlink_tool.tla.trace import TlcTraceVerdict
from zlink_tool.tla.transcript import (
    QueueTranscript,
    WireStep,
    check_queues_with_tlc,
    queue_transcripts,
    read_transcript,
)

Records = list[dict[str, Any]]
# A doctored transcript: its records and the position of the broken entry, and the wire
# name of the entry TLC must refuse there.
Doctored = tuple[tuple[Records, int], str]


def write_transcripts(out: Path, cases: Iterable[str]) -> Path:
    """Run ``cases`` against the reference adapter, each transcript into ``out``."""
    args = ["conformance", "run", "--transcripts", str(out), "-q"]
    for case in cases:
        args += ["--only", case]
    assert main(args) == 0
    return out


def records(path: Path) -> Records:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def queues(records: Records) -> list[QueueTranscript]:
    return queue_transcripts(read_transcript(json.dumps(r) for r in records))


def one_queue(records: Records) -> QueueTranscript:
    """The one queue of a transcript that has one (failing if it has another number)."""
    (queue,) = queues(records)
    return queue


def at(records: Records, event: str, work: str) -> int:
    """The position of ``work``'s first ``event`` in ``records``."""
    return next(i for i, r in enumerate(records)
                if isinstance(r.get("message"), dict) and r["message"].get("event") == event
                and r["message"].get("work") == work)


def assert_tlc_matches_honest_and_refuses_doctored(
        honest: Sequence[QueueTranscript], doctored: Sequence[Doctored], models: Path,
) -> list[tuple[QueueTranscript, WireStep]]:
    """One TLC run: every honest queue matched; each doctored transcript (one queue, which
    TLC can check) refused first at the entry it was broken at, by that entry's wire name.
    Returns each doctored queue with the step TLC refused, in order."""
    broken = []
    for (recs, position), _wire in doctored:
        queue = one_queue(recs)
        assert queue.not_checked is None
        broken.append((queue, position))
    verdicts = check_queues_with_tlc([*honest, *(q for q, _ in broken)], models)
    for q, v in zip(honest, verdicts, strict=False):
        assert isinstance(v, TlcTraceVerdict) and v.matched, (q.owner, v)
    out = []
    for (queue, position), (_, wire), v in zip(broken, doctored, verdicts[len(honest):],
                                               strict=True):
        assert isinstance(v, TlcTraceVerdict) and not v.matched, (wire, v)
        assert v.first_unmatched is not None
        refused = queue.steps[v.first_unmatched]
        assert (refused.position, refused.wire) == (position, wire), (wire, refused)
        out.append((queue, refused))
    return out
