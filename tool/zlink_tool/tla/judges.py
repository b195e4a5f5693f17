"""Two judges that share no code: the kit's model oracle and TLC, on the same transcripts.

The oracle (``zlink_conformance.oracle.model``) replays a transcript through the Python
model the reference runs on, so a bug in that model is a bug in the judge, and against
the reference the oracle cannot see it. TLC walks the same transcript, queue by queue
(a SpotWide Spot's queues together), through ``SerialQueue.tla`` with Disposal.tla's and
SpotWide.tla's steps beside it (``transcript``), which shares none of that code. Each
judge's verdict is derived here from the transcript itself, never read from the verdict
the runner wrote after it.

The two must agree. They part when

- TLC refuses a queue's event while the oracle accepted the transcript up to and past
  that event (``tlc refuses``), or
- the oracle refuses an event of a queue TLC covers, and TLC matched every event of
  that queue (``oracle refuses``).

Either is a disagreement, named by the transcript entry where the two part. A refusal
by one judge on something the other does not judge (an event of a queue TLC does not
cover, counted by reason; a rule only the oracle checks) is not a disagreement. All
the checkable queues of all the transcripts go to TLC together
(``check_queues_with_tlc``: a few JVMs, not one a queue).
"""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from zlink_conformance.oracle.model import ModelVerdict, replay_entries

from .trace import TlcTraceVerdict, TraceRangeError
from .transcript import (
    WIRE_STEP_ACTIONS,
    QueueTranscript,
    check_queues_with_tlc,
    queue_transcripts,
    read_transcript,
    refused_as,
)

__all__ = ["Disagreement", "JudgedTranscript", "JudgesReport", "judge_transcripts"]


@dataclasses.dataclass(frozen=True, slots=True)
class Disagreement:
    """Where the two judges part: the transcript entry, and who refused it."""

    transcript: str
    position: int  # the transcript entry (its "pos")
    queue: str
    refused_by: str  # "tlc" or "oracle"
    reason: str

    def message(self) -> str:
        other = "the oracle" if self.refused_by == "tlc" else "TLC"
        judge = "TLC" if self.refused_by == "tlc" else "the oracle"
        return (f"{self.transcript}: the judges part at entry {self.position} (queue "
                f"{self.queue}): {judge} refuses it, {other} accepts it: {self.reason}")


@dataclasses.dataclass(slots=True)
class JudgedTranscript:
    """Both judges' verdicts on one transcript."""

    name: str
    oracle: ModelVerdict
    queues: list[QueueTranscript]
    tlc: dict[str, TlcTraceVerdict | Exception]  # by queue, for the checked queues
    disagreements: list[Disagreement]

    @property
    def tlc_refused(self) -> list[str]:
        return [q for q, v in self.tlc.items()
                if isinstance(v, TlcTraceVerdict) and not v.matched]

    @property
    def tlc_errors(self) -> list[str]:
        return [f"{q}: {v}" for q, v in self.tlc.items()
                if not isinstance(v, TlcTraceVerdict | TraceRangeError)]


@dataclasses.dataclass(slots=True)
class JudgesReport:
    """Every transcript judged, and the counts a report prints."""

    transcripts: list[JudgedTranscript]
    seconds: float = 0.0
    tlc_runs: int = 0

    @property
    def disagreements(self) -> list[Disagreement]:
        return [d for t in self.transcripts for d in t.disagreements]

    def counts(self) -> dict[str, int]:
        # each queue (a SpotWide Spot's queues: one log) with TLC's verdict on it, if any
        judged = [(q, t.tlc.get(q.owner)) for t in self.transcripts for q in t.queues]
        return {
            "transcripts": len(self.transcripts),
            "queues": sum(q.queue_count for q, _ in judged),
            "tlc_checked": sum(q.queue_count for q, v in judged
                               if isinstance(v, TlcTraceVerdict)),
            "tlc_matched": sum(q.queue_count for q, v in judged
                               if isinstance(v, TlcTraceVerdict) and v.matched),
            # as ``unchecked`` lists them: never sent to TLC, or out of its range
            "tlc_not_checked": sum(q.queue_count for q, v in judged
                                   if q.not_checked is not None
                                   or isinstance(v, TraceRangeError)),
            "tlc_errors": sum(len(t.tlc_errors) for t in self.transcripts),
            "oracle_refused": sum(1 for t in self.transcripts
                                  if t.oracle.divergence is not None),
            "oracle_undecided": sum(1 for t in self.transcripts
                                    if t.oracle.undecided is not None),
            "disagreements": len(self.disagreements),
        }

    def not_checked(self) -> dict[str, int]:
        """Why TLC did not check the queues it did not: each reason's kind, counted."""
        out: dict[str, int] = {}
        for t in self.transcripts:
            for q in t.queues:
                if q.not_checked is not None:
                    why = _kind_of(q.not_checked)
                    out[why] = out.get(why, 0) + q.queue_count
        return out

    def unchecked(self) -> list[tuple[str, str, str]]:
        """Each queue TLC did not check: (transcript, queue, why), the reason in full."""
        out = []
        for t in self.transcripts:
            for q in t.queues:
                verdict = t.tlc.get(q.owner)
                if q.not_checked is not None:
                    out.append((t.name, q.owner, q.not_checked))
                elif isinstance(verdict, TraceRangeError):
                    out.append((t.name, q.owner, str(verdict)))
        return out

    def to_json(self) -> dict[str, Any]:
        return {"counts": self.counts(), "not_checked": self.not_checked(),
                "unchecked": [{"transcript": t, "queue": q, "reason": r}
                              for t, q, r in self.unchecked()],
                "seconds": round(self.seconds, 2), "tlc_runs": self.tlc_runs,
                "disagreements": [dataclasses.asdict(d) for d in self.disagreements]}


def _kind_of(reason: str) -> str:
    for word, kind in (("not walk together", "a work moved between queues"),
                       ("final work", "a session's final"),
                       ("Disposal", "a disposal event"), ("never submitted",
                                                          "a work never submitted")):
        if word in reason:
            return kind
    return "other"


def _compare(name: str, oracle: ModelVerdict, queues: Sequence[QueueTranscript],
             tlc: dict[str, TlcTraceVerdict | Exception]) -> list[Disagreement]:
    found: list[Disagreement] = []
    diverged = oracle.divergence.position if oracle.divergence is not None else None
    for q in queues:
        verdict = tlc.get(q.owner)
        if not isinstance(verdict, TlcTraceVerdict):
            continue
        if not verdict.matched:
            if verdict.first_unmatched is None:
                continue
            step = q.steps[verdict.first_unmatched]
            if oracle.undecided is None and (diverged is None or diverged > step.position):
                why = (f"{verdict.broken_invariant} broke" if verdict.broken_invariant
                       else "no step of the trace spec takes it "
                            f"({WIRE_STEP_ACTIONS[refused_as(q, step)][1]})")
                found.append(Disagreement(
                    name, step.position, q.owner, "tlc",
                    f"{step.wire} of {step.work}: {why}; the oracle "
                    + ("found nothing" if diverged is None
                       else f"refused a later entry ({diverged})")))
        elif diverged is not None and any(s.position == diverged and s.op != "sync"
                                          for s in q.steps):
            div = oracle.divergence
            assert div is not None
            found.append(Disagreement(name, diverged, q.owner, "oracle",
                                      f"{div.message()}; TLC matched every event of "
                                      f"{q.owner}"))
    return sorted(found, key=lambda d: d.position)


def judge_transcripts(paths: Sequence[Path], models: Path, timeout: float = 600.0,
                      progress: Callable[[int, int], None] | None = None) -> JudgesReport:
    """Both judges on every transcript in ``paths``: the oracle one by one, TLC on all
    their checkable queues in batches. Raises ``TranscriptError`` for a file that is not
    a transcript and ``ToolMissingError`` when Java or TLC is missing."""
    t0 = time.monotonic()
    read = []
    for path in paths:
        with path.open(encoding="utf-8") as fh:
            entries = read_transcript(fh)
        read.append((path.stem, replay_entries(entries), queue_transcripts(entries)))
    checkable = [(n, q) for n, (_, _, queues) in enumerate(read) for q in queues
                 if q.not_checked is None]
    runs = 0

    def counted(done: int, total: int) -> None:
        nonlocal runs
        runs += 1
        if progress is not None:
            progress(done, total)
    verdicts = check_queues_with_tlc([q for _, q in checkable], models, timeout,
                                     progress=counted) if checkable else []
    by_transcript: list[dict[str, TlcTraceVerdict | Exception]] = [{} for _ in read]
    for (n, q), verdict in zip(checkable, verdicts, strict=True):
        by_transcript[n][q.owner] = verdict if isinstance(verdict, TlcTraceVerdict) \
            else Exception(str(verdict)) if isinstance(verdict, subprocess.TimeoutExpired) \
            else verdict
    judged = [JudgedTranscript(name, oracle, queues, tlc,
                               _compare(name, oracle, queues, tlc))
              for (name, oracle, queues), tlc in zip(read, by_transcript, strict=True)]
    return JudgesReport(judged, time.monotonic() - t0, runs)
