"""Console output: one progress line per case, the reasons of every case that did not
pass, and a summary by rule that ends in the run's verdict.

Adapter text (reasons quoting it, stderr lines, the runtime's name, capability names)
reaches the terminal only through ``text.display``: a control character from an adapter
is shown, never obeyed, and a huge name or list is cut with a count of what was left
out. Every write also goes through ``put``, so a stream whose encoding lacks a
character (an ASCII pipe) gets its escape rather than ending the run."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..catalog import Case, Catalogue
from ..runner.suite import CaseResult, SuiteReport
from .text import NAME_LIMIT, display, display_list

__all__ = ["ConsoleReporter", "print_catalogue", "print_summary", "put"]

_MARK = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "skip",
         "xfail": "xfail (known failure)", "xpass": "XPASS (listed as a known failure)"}


class ConsoleReporter:
    """Prints ``[ 3/74] case-id ... pass (2 ms)`` as each case ends; with ``quiet`` only
    the cases that did not pass. Reasons and the adapter's stderr tail follow a case that
    failed or errored.

    A case's verdict can change after its line was printed: a line its adapter wrote
    after the case ended is found only when the next case begins, and is charged to it
    (AP-2, AP-6). Such a case is printed again, marked ``revised``, before the next
    line and by ``revisit()`` at the end of the run, so the console never keeps a
    verdict the reports contradict."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False,
                 verbose: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.verbose = verbose
        # Every case reported so far with the outcome its line showed (or, quiet, would
        # have shown), to notice a revision.
        self._seen: list[tuple[int, int, CaseResult, str]] = []

    def _write(self, text: str) -> None:
        put(self.stream, text)

    def revisit(self) -> None:
        """Print again every case reported so far whose outcome changed since."""
        for i, (index, total, result, shown) in enumerate(self._seen):
            if result.outcome != shown:
                self._seen[i] = (index, total, result, result.outcome)
                self._report(index, total, result, revised=shown)

    def __call__(self, index: int, total: int, result: CaseResult) -> None:
        self.revisit()
        self._seen.append((index, total, result, result.outcome))
        self._report(index, total, result)

    def _report(self, index: int, total: int, result: CaseResult, *,
                revised: str | None = None) -> None:
        if self.quiet and result.outcome in ("passed", "skipped", "xfail"):
            return
        width = len(str(total))
        ms = result.seconds * 1000
        line = f"[{index:>{width}}/{total}] {result.case.id} ... {_MARK[result.outcome]}"
        if result.status != "skipped":
            line += f" ({ms:.0f} ms)"
        if revised is not None:
            line += (f" (revised: printed {_MARK[revised]} before a fault of its adapter "
                     f"was found)")
        self._write(line + "\n")
        if result.outcome == "xfail":
            self._write(f"      known failure: {display(result.expected_failure)}\n")
        if result.outcome == "xpass":
            self._write(f"      it passes now: remove it from the known failures "
                        f"({display(result.expected_failure)})\n")
        if result.status != "passed" and result.outcome != "xfail" and (
                result.status != "skipped" or self.verbose):
            for message in result.messages:
                self._write(f"      {display(message)}\n")
        div = result.divergence
        if div is not None and result.outcome == "failed":
            self._write(f"      model: the log up to {div.what()}:\n")
            for pos, direction, entry in div.leading:
                arrow = ">" if direction == "sent" else "<"
                self._write(f"      {pos:>4} {arrow} {_short(entry)}\n")
            self._write(f"      {div.position:>4} < {_short(div.event)}   <-- diverges\n")
        if result.stderr_tail:
            self._write("      adapter stderr (last lines):\n")
            for text in result.stderr_tail[-12:]:
                self._write(f"      | {display(text)}\n")
        self.stream.flush()


def put(stream: TextIO, text: str) -> None:
    """Write ``text`` to ``stream``; a character its encoding cannot take is written as
    its backslash escape instead of raising in the middle of a report."""
    encoding = getattr(stream, "encoding", None)
    if encoding:
        text = text.encode(encoding, "backslashreplace").decode(encoding)
    stream.write(text)


def _short(message: Mapping[str, Any], limit: int = 110) -> str:
    text = display(json.dumps(dict(message), separators=(",", ":")), None)
    return text if len(text) <= limit else text[:limit] + "..."


def print_summary(report: SuiteReport, *, allow_skips: bool | None = None,
                  stream: TextIO | None = None) -> None:
    """The table by rule, the totals and the verdict line."""
    stream = stream or sys.stdout

    def write(text: str) -> None:
        put(stream, text)

    rows = report.by_rule()
    write("\n")
    listed = any(c["xfail"] or c["xpass"] for c in rows.values())
    extra = f" {'xfail':>5s} {'xpass':>5s}" if listed else ""
    write(f"{'rule':10s} {'cases':>5s} {'pass':>5s} {'fail':>5s} {'error':>5s} {'skip':>5s}"
          f"{extra}\n")
    write(f"{'-' * 10} {'-' * 5} {'-' * 5} {'-' * 5} {'-' * 5} {'-' * 5}"
          f"{' -----' * 2 if listed else ''}\n")
    for rule, counts in rows.items():
        total = sum(counts.values())
        more = f" {counts['xfail']:5d} {counts['xpass']:5d}" if listed else ""
        write(f"{rule:10s} {total:5d} {counts['passed']:5d} {counts['failed']:5d} "
              f"{counts['error']:5d} {counts['skipped']:5d}{more}\n")
    write("\n")
    if report.suite is not None:
        write(f"suite: {report.suite.line()}\n")
    hs = report.handshake
    if hs is not None:
        write(f"runtime: {display(hs.name, NAME_LIMIT)}; adapter: "
              f"{display(' '.join(report.adapter))}\n")
        write(f"capabilities declared ({len(hs.capabilities)}): "
              f"{display_list(hs.capabilities)}\n")
        if hs.unknown_capabilities:
            write(f"capabilities this runner does not know (ignored, "
                  f"{len(hs.unknown_capabilities):,}): "
                  f"{display_list(hs.unknown_capabilities)}\n")
    total = len(report.results)
    parts = [f"{report.count(s)} {s}" for s in ("passed", "failed", "error", "skipped")]
    for outcome, text in (("xfail", "expected failure(s)"), ("xpass", "UNEXPECTED PASS(ES)")):
        if report.count_outcome(outcome):
            parts.append(f"{report.count_outcome(outcome)} {text}")
    write(f"{total} cases in {report.seconds:.2f} s: {', '.join(parts)}"
          f"{f'; adapter restarted {report.restarts} time(s)' if report.restarts else ''}\n")
    req = [r for r in report.results if r.case.required]
    skipped_req = [r for r in req if r.status == "skipped"]
    if skipped_req:
        verb = ("not run (allowed by --allow-skips)" if allow_skips
                else "NOT RUN (counts as not passed)")
        write(f"required cases {verb}, for capabilities the adapter did not declare:\n")
        declared = hs.capabilities if hs is not None else ()
        for r in skipped_req:
            needs = ", ".join(r.case.missing(declared)) or ", ".join(r.case.capabilities)
            write(f"  {r.case.id} (needs {needs})\n")
    known = [r for r in report.results if r.outcome == "xfail"]
    if known:
        write("known failures (--expect-fail), failing as expected:\n")
        for r in known:
            write(f"  {r.case.id}: {display(r.expected_failure)}\n")
    stale = [r.case.id for r in report.results if r.outcome == "xpass"]
    if stale:
        write("UNEXPECTED PASS: listed as known failures but passing now; remove them "
              "from the --expect-fail file:\n")
        for case_id in stale:
            write(f"  {case_id}\n")
    bad = [r.case.id for r in req if r.outcome in ("failed", "error")]
    if bad:
        write("required cases that did not pass:\n")
        for case_id in bad:
            write(f"  {case_id}\n")
    bad_optional = [r.case.id for r in report.results
                    if not r.case.required and r.outcome in ("failed", "error")]
    if bad_optional:
        write("optional cases that did not pass (they ran because the adapter declared "
              "their capabilities, so they count):\n")
        for case_id in bad_optional:
            write(f"  {case_id}\n")
    verdict = report.verdict(allow_skips=allow_skips)
    write(verdict.line() + "\n")
    write("conformance: " + verdict.conformance() + "\n")
    stream.flush()


def print_catalogue(catalogue: Catalogue, cases: Sequence[Case], *, stream: TextIO | None = None
                    ) -> None:
    """``zlink conformance list``: each case with strength, rules and capabilities, then
    each rule with the number of cases that check it."""
    out = stream or sys.stdout
    for case in cases:
        caps = ", ".join(case.capabilities) or "-"
        out.write(f"{case.id}\n    {case.strength}; rules {', '.join(case.rules)}; "
                  f"capabilities {caps}\n    {case.intent}\n")
    out.write("\nrules:\n")
    for rule, text in catalogue.rules.items():
        n = sum(1 for c in cases if rule in c.rules)
        out.write(f"  {rule:9s} {n:3d} case(s)  {text}\n")
    if catalogue.retired:
        out.write("\nretired case IDs (never reuse):\n")
        for case_id, why in catalogue.retired.items():
            out.write(f"  {case_id}: {why}\n")
    required = sum(1 for c in cases if c.required)
    out.write(f"\n{len(cases)} cases ({required} required, {len(cases) - required} optional)\n")
    out.flush()
