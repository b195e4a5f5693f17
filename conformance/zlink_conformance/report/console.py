"""Console output: one progress line per case, the reasons of every case that did not
pass, and a summary by rule that ends in the run's verdict."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

from ..catalog import Case, Catalogue
from ..runner.suite import CaseResult, SuiteReport

__all__ = ["ConsoleReporter", "print_catalogue", "print_summary"]

_MARK = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "skipped": "skip",
         "xfail": "xfail (known failure)", "xpass": "XPASS (listed as a known failure)"}


class ConsoleReporter:
    """Prints ``[ 3/74] case-id ... pass (2 ms)`` as each case ends; with ``quiet`` only
    the cases that did not pass. Reasons and the adapter's stderr tail follow a case that
    failed or errored."""

    def __init__(self, stream: TextIO | None = None, *, quiet: bool = False,
                 verbose: bool = False) -> None:
        self.stream = stream or sys.stdout
        self.quiet = quiet
        self.verbose = verbose

    def __call__(self, index: int, total: int, result: CaseResult) -> None:
        if self.quiet and result.outcome in ("passed", "skipped", "xfail"):
            return
        width = len(str(total))
        ms = result.seconds * 1000
        line = f"[{index:>{width}}/{total}] {result.case.id} ... {_MARK[result.outcome]}"
        if result.status != "skipped":
            line += f" ({ms:.0f} ms)"
        self.stream.write(line + "\n")
        if result.outcome == "xfail":
            self.stream.write(f"      known failure: {result.expected_failure}\n")
        if result.outcome == "xpass":
            self.stream.write(f"      it passes now: remove it from the known failures "
                              f"({result.expected_failure})\n")
        if result.status != "passed" and result.outcome != "xfail" and (
                result.status != "skipped" or self.verbose):
            for message in result.messages:
                self.stream.write(f"      {message}\n")
        div = result.divergence
        if div is not None and result.outcome == "failed":
            self.stream.write(f"      model: the log up to {div.what()}:\n")
            for pos, direction, entry in div.leading:
                arrow = ">" if direction == "sent" else "<"
                self.stream.write(f"      {pos:>4} {arrow} {_short(entry)}\n")
            self.stream.write(f"      {div.position:>4} < {_short(div.event)}   <-- diverges\n")
        if result.stderr_tail:
            self.stream.write("      adapter stderr (last lines):\n")
            for text in result.stderr_tail[-12:]:
                self.stream.write(f"      | {text}\n")
        self.stream.flush()


def _short(message: Mapping[str, Any], limit: int = 110) -> str:
    text = json.dumps(dict(message), separators=(",", ":"))
    return text if len(text) <= limit else text[:limit] + "..."


def print_summary(report: SuiteReport, *, allow_skips: bool | None = None,
                  stream: TextIO | None = None) -> None:
    """The table by rule, the totals and the verdict line."""
    out = stream or sys.stdout
    rows = report.by_rule()
    out.write("\n")
    listed = any(c["xfail"] or c["xpass"] for c in rows.values())
    extra = f" {'xfail':>5s} {'xpass':>5s}" if listed else ""
    out.write(f"{'rule':10s} {'cases':>5s} {'pass':>5s} {'fail':>5s} {'error':>5s} {'skip':>5s}"
              f"{extra}\n")
    out.write(f"{'-' * 10} {'-' * 5} {'-' * 5} {'-' * 5} {'-' * 5} {'-' * 5}"
              f"{' -----' * 2 if listed else ''}\n")
    for rule, counts in rows.items():
        total = sum(counts.values())
        more = f" {counts['xfail']:5d} {counts['xpass']:5d}" if listed else ""
        out.write(f"{rule:10s} {total:5d} {counts['passed']:5d} {counts['failed']:5d} "
                  f"{counts['error']:5d} {counts['skipped']:5d}{more}\n")
    out.write("\n")
    hs = report.handshake
    if hs is not None:
        out.write(f"runtime: {hs.name}; adapter: {' '.join(report.adapter)}\n")
        if hs.unknown_capabilities:
            out.write(f"capabilities this runner does not know (ignored): "
                      f"{', '.join(hs.unknown_capabilities)}\n")
    total = len(report.results)
    parts = [f"{report.count(s)} {s}" for s in ("passed", "failed", "error", "skipped")]
    for outcome, text in (("xfail", "expected failure(s)"), ("xpass", "UNEXPECTED PASS(ES)")):
        if report.count_outcome(outcome):
            parts.append(f"{report.count_outcome(outcome)} {text}")
    out.write(f"{total} cases in {report.seconds:.2f} s: {', '.join(parts)}"
              f"{f'; adapter restarted {report.restarts} time(s)' if report.restarts else ''}\n")
    req = [r for r in report.results if r.case.required]
    skipped_req = [r.case.id for r in req if r.status == "skipped"]
    if skipped_req:
        verb = ("not run (allowed by --allow-skips)" if allow_skips
                else "NOT RUN (counts as not passed)")
        out.write(f"required cases {verb}, for capabilities the adapter did not declare:\n")
        for case_id in skipped_req:
            out.write(f"  {case_id}\n")
    known = [r for r in report.results if r.outcome == "xfail"]
    if known:
        out.write("known failures (--expect-fail), failing as expected:\n")
        for r in known:
            out.write(f"  {r.case.id}: {r.expected_failure}\n")
    stale = [r.case.id for r in report.results if r.outcome == "xpass"]
    if stale:
        out.write("UNEXPECTED PASS: listed as known failures but passing now; remove them "
                  "from the --expect-fail file:\n")
        for case_id in stale:
            out.write(f"  {case_id}\n")
    bad = [r.case.id for r in req if r.outcome in ("failed", "error")]
    if bad:
        out.write("required cases that did not pass:\n")
        for case_id in bad:
            out.write(f"  {case_id}\n")
    bad_optional = [r.case.id for r in report.results
                    if not r.case.required and r.outcome in ("failed", "error")]
    if bad_optional:
        out.write("optional cases that did not pass (they ran because the adapter declared "
                  "their capabilities, so they count):\n")
        for case_id in bad_optional:
            out.write(f"  {case_id}\n")
    verdict = report.verdict(allow_skips=allow_skips)
    out.write(verdict.line() + "\n")
    out.write("conformance: " + verdict.conformance() + "\n")
    out.flush()


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
