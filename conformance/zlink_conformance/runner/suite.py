"""Running cases against an adapter: one process for many cases, a verdict per case.

For each selected case the runner sends ``reset``, then the case's steps in order
(commands, and checks judged on the log so far), then one last ``settle``; it judges the
case's ``expect`` checks, the invariants every log must satisfy (``oracle.invariants``)
and the model oracle (``oracle.model``: the whole log replayed through the reference
protocol core; its first divergence fails the case). A case whose capability the
adapter did not declare is skipped, and says which capability it needed. If the adapter
dies, hangs or breaks the protocol, that case is an error (with the adapter's last
stderr lines) and the next case gets a fresh adapter; if that fresh adapter cannot
complete its handshake, every remaining case is an error at once, with the reason (one
failed restart, never one wait for the handshake timeout per case).

Verdicts: ``passed``; ``failed`` (the runtime behaved differently from the case);
``error`` (the adapter crashed, hung, broke the protocol or refused a command);
``skipped`` (a capability is missing). A run succeeds when every selected required case
passed.
"""

from __future__ import annotations

import bisect
import collections
import dataclasses
import json
import math
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from zlink_model.vocabulary import HELD_STEPS, transition

from ..catalog import Case, Command
from ..identity import SuiteIdentity, identify
from ..oracle.checks import Check, CheckContext, match_reply
from ..oracle.evidence import Failing, lines
from ..oracle.inference import hang_evidence, inline_starts
from ..oracle.invariants import check_invariants, unended_works
from ..oracle.log import CaseLog
from ..oracle.model import Divergence, check_model
from ..oracle.slices import slice_problems
from ..oracle.snapshots import snapshot_problems
from ..oracle.waiters import waiter_problems
from ..protocol.faults import (
    adapter_fault,
    first_events,
    held_step_faults,
    verdict_order_faults,
)
from ..protocol.wire import Event, Reply
from .process import (
    AdapterError,
    AdapterHungError,
    AdapterProcess,
    AdapterProtocolError,
    Handshake,
    WireTap,
)

__all__ = [
    "DEFAULT_HANDSHAKE_TIMEOUT",
    "DEFAULT_TIMEOUT",
    "OUTCOMES",
    "STATUSES",
    "CaseResult",
    "InvalidDurationError",
    "Runner",
    "SuiteAbortedError",
    "SuiteReport",
    "Verdict",
    "check_duration",
    "write_transcript",
]

DEFAULT_TIMEOUT = 10.0
DEFAULT_HANDSHAKE_TIMEOUT = 30.0  # an adapter may start a slow runtime (a JVM, a build)
STATUSES = ("passed", "failed", "error", "skipped")
# What a verdict means once known failures are taken into account: a listed case that
# failed is an expected failure, a listed case that passed an unexpected pass.
OUTCOMES = ("passed", "failed", "error", "skipped", "xfail", "xpass")


class InvalidDurationError(ValueError):
    """A duration option is not a positive, finite number of seconds. ``option`` names it
    as the user wrote it (``--timeout``) so the message points at the argument."""

    def __init__(self, option: str, value: object, *, zero_allowed: bool = False) -> None:
        what = "zero (off) or a positive" if zero_allowed else "a positive"
        self.requirement = f"{what}, finite number of seconds"
        super().__init__(f"{option} must be {self.requirement}, not {value!r}")
        self.option = option
        self.value = value


def check_duration(option: str, value: float, *, zero_allowed: bool = False) -> float:
    """``value`` if it is a usable number of seconds for ``option``, else
    ``InvalidDurationError``: a timeout of -1, 0, NaN or infinity would make every case
    an error (or none ever end), which is a wrong argument, not a verdict."""
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or not math.isfinite(value) or value < 0 or (value == 0 and not zero_allowed):
        raise InvalidDurationError(option, value, zero_allowed=zero_allowed)
    return float(value)


class SuiteAbortedError(Exception):
    """The run cannot go on: the adapter never completed the handshake."""

    def __init__(self, message: str, stderr_tail: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.message = message
        self.stderr_tail = list(stderr_tail)


@dataclasses.dataclass(slots=True)
class CaseResult:
    """The verdict on one case."""

    case: Case
    status: str
    seconds: float
    messages: list[str] = dataclasses.field(default_factory=list)
    stderr_tail: list[str] = dataclasses.field(default_factory=list)
    log: CaseLog | None = None
    divergence: Divergence | None = None  # the model oracle's first divergent event
    model_undecided: str | None = None  # why the model stopped judging this log, if it did
    expected_failure: str | None = None  # the reason, when the case is a known failure

    @property
    def outcome(self) -> str:
        """The status, or ``xfail`` (a known failure failed or errored) or ``xpass`` (a
        known failure passed: the entry is stale)."""
        if self.expected_failure is None:
            return self.status
        if self.status in ("failed", "error"):
            return "xfail"
        return "xpass" if self.status == "passed" else self.status

    def commands(self) -> list[dict[str, Any]]:
        """Every command sent to the adapter for this case, in order, as written on the
        wire (without the ``id`` the adapter process adds): what ``replay`` sends again."""
        if self.log is None:
            return []
        return [dict(m) for d, m in self.log.entries if d == "sent"]

    def to_json(self) -> dict[str, Any]:
        """The result as plain data (``--json``). A case that did not pass carries its
        command sequence, so ``zlink conformance resend`` can send it again."""
        out: dict[str, Any] = {
            "id": self.case.id, "strength": self.case.strength, "rules": list(self.case.rules),
            "status": self.status, "outcome": self.outcome, "time_s": round(self.seconds, 4),
            "messages": self.messages,
        }
        if self.expected_failure is not None:
            out["expected_failure"] = self.expected_failure
        if self.divergence is not None:
            out["divergence"] = self.divergence.to_json()
        if self.model_undecided is not None:
            out["model_undecided"] = self.model_undecided
        if self.stderr_tail:
            out["stderr_tail"] = self.stderr_tail
        if self.status in ("failed", "error") and self.log is not None:
            out["commands"] = self.commands()
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class Verdict:
    """The run's verdict, the one definition every report prints (console, JSON, JUnit,
    HTML, the pytest plugin) and the exit status follows.

    The run passes when no required case failed or errored, no required case was left
    unrun (unless skips are allowed), no optional case that ran failed or errored (an
    optional case runs only when the adapter declares its capabilities, so its failure
    is a defect in something the runtime claims) and no known failure passed. A known
    failure that fails counts as neither passed nor failed."""

    required: int
    required_passed: int
    required_not_run: int
    required_failed: int
    optional: int
    optional_passed: int
    optional_not_run: int
    optional_failed: int
    expected_failures: int
    unexpected_passes: int
    allow_skips: bool = False

    @classmethod
    def of(cls, results: Sequence[CaseResult], *, allow_skips: bool = False) -> Verdict:
        """The verdict on these results."""
        def n(required: bool, *outcomes: str) -> int:
            return sum(1 for r in results if r.case.required == required
                       and r.outcome in outcomes)
        return cls(
            required=sum(1 for r in results if r.case.required),
            required_passed=n(True, "passed"), required_not_run=n(True, "skipped"),
            required_failed=n(True, "failed", "error"),
            optional=sum(1 for r in results if not r.case.required),
            optional_passed=n(False, "passed"), optional_not_run=n(False, "skipped"),
            optional_failed=n(False, "failed", "error"),
            expected_failures=sum(1 for r in results if r.outcome == "xfail"),
            unexpected_passes=sum(1 for r in results if r.outcome == "xpass"),
            allow_skips=allow_skips)

    @property
    def ok(self) -> bool:
        """The run passes (exit status 0)."""
        return (self.required_failed == 0 and self.optional_failed == 0
                and self.unexpected_passes == 0
                and (self.allow_skips or self.required_not_run == 0))

    def counts(self) -> str:
        """Every count, in one fixed order."""
        return (f"required {self.required_passed}/{self.required} passed, "
                f"{self.required_not_run} not run, {self.required_failed} failed; "
                f"optional {self.optional_passed}/{self.optional} passed, "
                f"{self.optional_not_run} not run, {self.optional_failed} failed; "
                f"{self.expected_failures} expected failure(s), "
                f"{self.unexpected_passes} unexpected pass(es)")

    def line(self) -> str:
        """``verdict: PASS: required 69/69 passed, ...``"""
        return f"verdict: {'PASS' if self.ok else 'FAIL'}: {self.counts()}"

    def conformance(self) -> str:
        """What the verdict means for the runtime, in words. "every required case
        passed" only when every required case ran and passed."""
        every = self.required_passed == self.required
        if not self.ok:
            if (self.required_failed == 0 and self.unexpected_passes == 0
                    and (self.allow_skips or self.required_not_run == 0)):
                return (f"NOT CONFORMING: {self.optional_failed} optional case(s) failed "
                        f"(a capability the adapter declared does not work)")
            return "NOT CONFORMING"
        if every:
            return "every required case passed"
        parts = ["no required case failed"]
        if self.required_not_run:
            parts.append(f"{self.required_not_run} required case(s) did not run (allowed by "
                         f"--allow-skips)")
        if self.expected_failures:
            parts.append(f"{self.expected_failures} known failure(s) failed as expected")
        return "; ".join(parts)

    def to_json(self) -> dict[str, Any]:
        """Plain data for the JSON report."""
        data: dict[str, Any] = {f.name: getattr(self, f.name)
                                for f in dataclasses.fields(self)}
        data.update(ok=self.ok, line=self.line(), conformance=self.conformance())
        return data


@dataclasses.dataclass(slots=True)
class SuiteReport:
    """Every verdict of one run."""

    adapter: list[str]
    handshake: Handshake | None
    results: list[CaseResult]
    seconds: float
    restarts: int = 0
    allow_skips: bool = False  # how the run was judged (--allow-skips)
    started_at: float | None = None  # wall clock (time.time()) when the run began
    suite: SuiteIdentity | None = None  # kit and protocol versions, case-set digest

    def count(self, status: str, *, required: bool | None = None) -> int:
        """How many cases ended with ``status`` (only required/optional ones if given)."""
        return sum(1 for r in self.results if r.status == status
                   and (required is None or r.case.required == required))

    def count_outcome(self, outcome: str) -> int:
        """How many cases have this outcome (``xfail``, ``xpass`` or a status)."""
        return sum(1 for r in self.results if r.outcome == outcome)

    def verdicts(self) -> list[tuple[str, str]]:
        """(case ID, status) for every case, in run order: what repeated runs compare."""
        return [(r.case.id, r.status) for r in self.results]

    def verdict(self, *, allow_skips: bool | None = None) -> Verdict:
        """The run's verdict (``Verdict``), by ``allow_skips`` or the report's own."""
        allow = self.allow_skips if allow_skips is None else allow_skips
        return Verdict.of(self.results, allow_skips=allow)

    def success(self, *, allow_skips: bool | None = None) -> bool:
        """The run passes: ``verdict().ok``."""
        return self.verdict(allow_skips=allow_skips).ok

    def by_rule(self) -> dict[str, collections.Counter[str]]:
        """For each rule, how many of its cases ended with each outcome."""
        table: dict[str, collections.Counter[str]] = {}
        for r in self.results:
            for rule in r.case.rules:
                table.setdefault(rule, collections.Counter())[r.outcome] += 1
        return dict(sorted(table.items(), key=lambda kv: _rule_key(kv[0])))

    def to_json(self) -> dict[str, Any]:
        """The whole report as plain data (``--json``)."""
        hs = self.handshake
        return {
            "suite": self.suite.to_json() if self.suite is not None else None,
            "adapter": self.adapter,
            "runtime": dict(hs.runtime) if hs else None,
            "capabilities": list(hs.capabilities) if hs else [],
            "time_s": round(self.seconds, 3),
            "restarts": self.restarts,
            "verdict": self.verdict().to_json(),
            "summary": {s: self.count(s) for s in STATUSES},
            "outcomes": {o: self.count_outcome(o) for o in OUTCOMES},
            "required": {s: self.count(s, required=True) for s in STATUSES},
            "rules": {rule: dict(c) for rule, c in self.by_rule().items()},
            "cases": [r.to_json() for r in self.results],
        }


def _rule_key(rule: str) -> tuple[str, tuple[int, ...]]:
    prefix, _, number = rule.partition("-")
    return prefix, tuple(int(p) for p in number.split(".") if p.isdigit())


Progress = Callable[[int, int, CaseResult], None]


class Runner:
    """Runs cases on one adapter command line, restarting the adapter after a failure.

    ``timeout`` bounds one case (every read and write of it), ``handshake_timeout`` the
    adapter's start and each restart (seconds of wall-clock time; they only tell a hung
    adapter from a slow one). Both must be positive and finite, ``strict_settle`` zero
    (off) or positive and finite (``InvalidDurationError`` otherwise)."""

    def __init__(self, argv: Sequence[str], *, timeout: float = DEFAULT_TIMEOUT,
                 env: Mapping[str, str] | None = None, transcripts: Path | None = None,
                 wire_tap: WireTap | None = None,
                 handshake_timeout: float = DEFAULT_HANDSHAKE_TIMEOUT,
                 known_failures: Mapping[str, str] | None = None,
                 strict_settle: float = 0.0) -> None:
        self.argv = list(argv)
        timeout = check_duration("--timeout", timeout)
        handshake_timeout = check_duration("--handshake-timeout", handshake_timeout)
        self.strict_settle = check_duration("--strict-settle", strict_settle,
                                            zero_allowed=True)
        # The reply to the reset that readied the adapter for the next case (sent at the
        # end of the case before, so what that case leaves is charged to it), or None.
        self._reset_reply: Reply | None = None
        self.known_failures = dict(known_failures or {})
        self.wire_tap = wire_tap
        self.handshake_timeout = handshake_timeout
        self.timeout = timeout
        self.env = dict(env or {})
        self.transcripts = transcripts
        self._adapter: AdapterProcess | None = None
        self.handshake: Handshake | None = None
        self.restarts = 0
        # Why the adapter could not be restarted: once set, every later case is an
        # error at once with this reason (a dead adapter is not retried once per case).
        self.restart_failure: str | None = None
        # The process id (= process group id) of every adapter started, in order: what
        # a test checks is gone after the run.
        self.adapter_pids: list[int] = []
        # The current adapter's cases by the first wire id sent for each: a late second
        # reply to an earlier case's command is charged to that case (AP-2).
        self._cases_by_id: list[tuple[int, CaseResult]] = []
        self._previous: CaseResult | None = None  # the last case run on this adapter
        # Whether the running case's last command was a settle that answered (then an
        # event before the reset that ends the case breaks that settle's AP-5).
        self._settled_last = False

    # --------------------------------------------------------------- adapter
    def start(self) -> Handshake:
        """Start the adapter and complete the handshake (``SuiteAbortedError`` if it cannot)."""
        try:
            return self._launch()
        except AdapterError as exc:
            raise SuiteAbortedError(exc.message, exc.stderr_tail) from None

    def _launch(self) -> Handshake:
        adapter = AdapterProcess(self.argv, env=self.env, wire_tap=self.wire_tap)
        adapter.on_stale = self._stale_reply
        self._adapter = adapter
        self._reset_reply = None
        self._cases_by_id = []
        self._previous = None
        adapter.start()
        if adapter.pid is not None:
            self.adapter_pids.append(adapter.pid)
        try:
            handshake = adapter.hello(time.monotonic() + self.handshake_timeout)
        except AdapterError:
            adapter.kill()
            self._adapter = None
            raise
        self.handshake = handshake
        return handshake

    def stop(self) -> None:
        """Shut the adapter down."""
        if self._adapter is not None:
            self._adapter.stop()
            self._adapter = None

    def __enter__(self) -> Runner:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ready_adapter(self) -> AdapterProcess:
        if self._adapter is None or not self._adapter.alive:
            if self._adapter is not None:
                self._adapter.kill()
            self.restarts += self.handshake is not None
            try:
                self._launch()
            except AdapterError as exc:
                self.restart_failure = exc.message
                raise AdapterError(f"could not restart the adapter: {exc.message}",
                                   exc.stderr_tail) from None
        assert self._adapter is not None
        return self._adapter

    # ----------------------------------------------------------------- cases
    def run(self, cases: Sequence[Case], progress: Progress | None = None) -> SuiteReport:
        """Run every case (starting the adapter if needed) and return the report."""
        t0 = time.monotonic()
        started_at = time.time()
        if self.handshake is None:
            self.start()
        results = []
        for index, case in enumerate(cases, 1):
            result = self.run_case(case)
            results.append(result)
            if progress is not None:
                progress(index, len(cases), result)
        return SuiteReport(self.argv, self.handshake, results, time.monotonic() - t0,
                           self.restarts, started_at=started_at, suite=identify(cases))

    def run_case(self, case: Case) -> CaseResult:
        """Run one case and judge it."""
        t0 = time.monotonic()
        assert self.handshake is not None, "start() first"
        missing = case.missing(self.handshake.capabilities)
        if missing:
            return CaseResult(case, "skipped", 0.0,
                              [f"needs capability {', '.join(missing)}, which the adapter "
                               f"did not declare"],
                              expected_failure=self.known_failures.get(case.id))
        if self.restart_failure is not None:
            return CaseResult(case, "error", 0.0,
                              [f"not run: the adapter could not be restarted after an earlier "
                               f"case ended it: {self.restart_failure}"],
                              expected_failure=self.known_failures.get(case.id))
        log = CaseLog()
        result = CaseResult(case, "error", 0.0, log=log,
                            expected_failure=self.known_failures.get(case.id))
        # A restart is bounded by the handshake timeout; the case's own bound starts
        # once its adapter is ready.
        deadline = t0 + self.timeout
        inferred = False  # judged from what the order of events shows (oracle.inference)
        try:
            adapter = self._ready_adapter()
            adapter = self._begin_case(adapter, result)
            deadline = time.monotonic() + self.timeout
            status, pending = self._execute(adapter, case, log, deadline)
            tail: list[str] = []
            # A held queue's turn taken unasked (AP-8) is the adapter's, and leads
            # whatever it caused (a later step refused, a log off the model).
            unasked = held_step_faults(log.entries)
            if unasked:
                status, pending = "error", [*unasked, *pending]
            elif status in ("passed", "failed"):
                inline = inline_starts(log, single_resource=self._single_resource())
                faults = verdict_order_faults(log.events)
                if inline:
                    # Inferred from the order: the runtime's SE-6.5, not the adapter's
                    # AP-7 (oracle.inference); the model has no step for it.
                    status, pending, inferred = "failed", [*inline, *pending], True
                elif faults:
                    status, pending = "error", list(faults)
        except AdapterError as exc:
            if self._adapter is not None:
                self._adapter.kill()
                self._adapter = None
            status, pending, tail = "error", [exc.message], exc.stderr_tail
            if isinstance(exc, AdapterHungError):
                # A hang the log shows to be the runtime's is a verdict on it; the
                # adapter was ended all the same, and the next case gets a fresh one.
                found = hang_evidence(log, case.works, exc.message,
                                      single_resource=self._single_resource())
                if found is not None:
                    status, pending, inferred = "failed", [found], True
        divergence = undecided = None
        judging = time.monotonic()
        if inferred:
            undecided = "the runtime ran a work inside its submit call or starved; the " \
                        "model has no step for either"
        elif status in ("passed", "failed"):
            verdict = check_model(log, single_resource=self._single_resource())
            divergence, undecided = verdict.divergence, verdict.undecided
            if divergence is not None:
                status = "failed"
                pending.append(divergence.message())
        messages = lines(pending, log, CheckContext(self.handshake.reply), divergence)
        # The time the runner spent judging (the model's replay of a long log can take
        # seconds) is not the adapter's: the reset that ends the case gets what was left
        # of the case's bound when the judging began, or the adapter would be called
        # hung for the runner's own work.
        deadline += time.monotonic() - judging
        if self._adapter is not None:
            late = self._close_case(deadline, log)
            if late is not None and status == "error":
                messages.append(late)
            elif late is not None:
                status, messages, tail = "error", [late], self._adapter_tail()
                divergence = None
        result.status, result.seconds, result.messages = status, time.monotonic() - t0, messages
        result.stderr_tail, result.divergence, result.model_undecided = tail, divergence, undecided
        self._previous = result if self._adapter is not None else None
        if self.transcripts is not None:
            self._write_transcript(result)
        return result

    def _single_resource(self) -> bool:
        """The adapter declared one execution resource for every owner."""
        return self.handshake is not None and \
            "single_execution_resource" in self.handshake.capabilities

    def _begin_case(self, adapter: AdapterProcess, result: CaseResult) -> AdapterProcess:
        """Ready the adapter for a case. A line the adapter wrote after the case before
        ended (after the confirming settle that closed it) is that case's (AP-6, or AP-2
        for a reply): it is charged to it, and this case gets a fresh adapter, since one
        that still writes for an ended case cannot be trusted to start this one clean."""
        stale = adapter.drain()
        if stale and self._previous is None:  # a fresh adapter wrote before any command
            raise AdapterProtocolError(_stale_fault(stale, "before the first reset"),
                                       adapter.stderr_tail())
        if stale and self._previous is not None:
            _charge(self._previous, _stale_fault(stale, "after it had ended, seen before the "
                                                        "next case sent anything"))
            adapter.kill()
            self._adapter = None
            adapter = self._ready_adapter()
        adapter.begin_case()
        cases = self._cases_by_id
        cases.append((adapter.next_id, result))
        # the cases whose commands the adapter process no longer tells apart are let go
        # (ANSWERED_WINDOW): a long exploration does not keep every result it ran
        keep = bisect.bisect_left(cases, adapter.told_apart_from, key=lambda c: c[0])
        if keep > 1:  # the case before ``keep`` may own replies to ids past it
            del cases[:keep - 1]
        return adapter

    def _stale_reply(self, reply: Reply, command: str) -> None:
        """A second reply to a command of an earlier case: that case's AP-2 fault."""
        owner = None
        for first, result in self._cases_by_id:
            if first <= reply.re:
                owner = result
        if owner is None:
            owner = self._previous
        if owner is not None:
            _charge(owner, adapter_fault(
                "AP-2", f"adapter stdout line {reply.line}: a second reply to command "
                        f"{reply.re} ({command!r}) of this case, written after the case had "
                        f"ended"))

    def _adapter_tail(self) -> list[str]:
        return self._adapter.stderr_tail() if self._adapter is not None else []

    def _close_case(self, deadline: float, log: CaseLog) -> str | None:
        """End the case with the ``reset`` that readies the adapter for the next one, and
        a confirming ``settle`` after it, implementing AP-6 exactly: everything written
        before the reset's reply is this case's, nothing may come after it.

        An event before the reset's reply is this case's. If the case's last command was
        a ``settle`` that answered, that settle promised nothing could progress, so the
        event breaks AP-5; a case that stopped without one (a refused command) is judged
        on its reset reply alone, and its events are recorded in its log, no fault (a
        threaded runtime's accepted work may well end meanwhile). Anything before the
        confirmation's reply (a second reply to the reset, an event) and any line already
        read after it is this case's AP-6 (or AP-2) fault. Returns that fault's message,
        or None. After a fault the adapter is ended, so the next case starts on a fresh
        one."""
        adapter = self._adapter
        assert adapter is not None
        late: list[Event] = []
        problem: str | None = None
        try:
            _, reply = adapter.request({"cmd": "reset"}, deadline, late.append)
            if reply.ok:
                stale: list[Reply | Event | str] = []
                adapter.request({"cmd": "settle"}, deadline, stale.append)
                if self.strict_settle > 0:
                    # A line written right after the confirmation's reply may still be
                    # on its way; in strict mode wait for it here, so it is charged to
                    # this case whatever the machine's load (without it, it is caught
                    # when it has arrived by the next case's start).
                    adapter.quiet(min(self.strict_settle, max(deadline - time.monotonic(),
                                                              0.0)), stale.append)
                stale += adapter.drain()
                if stale:
                    problem = _stale_fault(stale, "after the reply to the reset that ends "
                                                  "it")
        except AdapterError as exc:
            adapter.kill()
            self._adapter = None
            if exc.message.startswith("adapter fault"):
                return f"{exc.message} (after the case, at the reset that ends it)"
            return f"after the case, at the reset that ends it: {exc.message}"
        if late and self._settled_last:
            problem = adapter_fault(
                "AP-5", f"{len(late)} event(s) came after the reply to the case's last "
                        f"settle, before the reply to the reset that ends it "
                        f"({first_events(late)}): the settle answered while work could "
                        f"still progress")
        elif late:
            for event in late:  # the case's own, before the reply that ends it (AP-6)
                log.record_event(event)
        if problem is None and not reply.ok:
            problem = f"reset refused: {reply.error_kind}: {reply.error_message}"
        if problem is not None:
            adapter.kill()
            self._adapter = None
            return problem
        self._reset_reply = reply
        return None

    def _settle(self, adapter: AdapterProcess, log: CaseLog, deadline: float, where: str
                ) -> tuple[int, Reply, str | None]:
        """``settle``, then (in strict mode) a quiet period, then a confirming ``settle``:
        an event before the confirmation's reply means the first one answered early
        (AP-5), an adapter fault of this case. The confirmation is not part of the log."""
        log.sent({"cmd": "settle"})
        self._settled_last = False
        ident, reply = adapter.request({"cmd": "settle"}, deadline, log.record_event)
        log.reply(reply)
        if not reply.ok:
            return ident, reply, None
        self._settled_last = True
        early: list[Event] = []
        if self.strict_settle > 0:
            adapter.quiet(min(self.strict_settle, max(deadline - time.monotonic(), 0.0)),
                          early.append)
        adapter.request({"cmd": "settle"}, deadline, early.append)
        if early:
            return ident, reply, adapter_fault(
                "AP-5", f"{where}: {len(early)} event(s) came after the reply to settle@"
                        f"{len(log) - 1} ({first_events(early)}): the settle answered while "
                        f"work could still progress, so the log it closed is not the "
                        f"runtime's settled state")
        return ident, reply, None

    def _execute(self, adapter: AdapterProcess, case: Case, log: CaseLog, deadline: float
                 ) -> tuple[str, list[str | Failing]]:
        assert self.handshake is not None
        ctx = CheckContext(self.handshake.reply)
        ids: dict[int, int] = {}  # case command number -> wire id

        self._settled_last = False

        def send(message: Mapping[str, Any]) -> tuple[int, Any]:
            self._settled_last = False
            log.sent(dict(message))
            ident, reply = adapter.request(message, deadline, log.record_event)
            log.reply(reply)
            return ident, reply

        log.sent({"cmd": "reset"})
        reply = self._reset_reply
        self._reset_reply = None
        if reply is None:  # a fresh adapter: nothing of an earlier case can come now
            stray: list[Event] = []
            _, reply = adapter.request({"cmd": "reset"}, deadline, stray.append)
            if stray:
                log.reply(reply)
                return "error", [adapter_fault(
                    "AP-6", f"{len(stray)} event(s) before the reply to the first reset "
                            f"({first_events(stray)})")]
        log.reply(reply)
        if not reply.ok:
            return "error", [f"reset refused: {reply.error_kind}: {reply.error_message}"]
        number = 0
        for i, step in enumerate(case.steps):
            if isinstance(step, Check):
                if step.evaluate(log, ctx):
                    return "failed", [Failing(f"steps[{i}] {step.kind}", step),
                                      *check_invariants(log, _renumbered(case, ids))]
                continue
            number += 1
            if step.name == "settle":
                ident, reply, early = self._settle(adapter, log, deadline, f"steps[{i}]")
                if early is not None:
                    return "error", [early]
            else:
                ident, reply = send(step.message)
            ids[number] = ident
            if not reply.ok and step.name == "step" and reply.error_kind == "bad_command" \
                    and step.message.get("step") in HELD_STEPS:
                return "failed", [_step_refused(i, step.message, reply)]
            if not reply.ok:
                return "error", [f"steps[{i}] {step.name}: the adapter refused it: "
                                 f"{reply.error_kind}: {reply.error_message}"]
            if isinstance(step, Command) and step.expect is not None:
                problems = match_reply(step.expect, dict(reply.fields), f"{step.name} reply")
                if problems:
                    return "failed", [Failing(f"steps[{i}] {step.name} reply", None,
                                              tuple(problems), step.why, step.case_rules,
                                              step.rule_texts)]
        _, reply, early = self._settle(adapter, log, deadline, "the final settle")
        if not reply.ok:
            return "error", [f"final settle refused: {reply.error_kind}: {reply.error_message}"]
        if early is not None:
            return "error", [early]
        messages: list[str | Failing] = [
            Failing(f"expect[{i}] {check.kind}", check)
            for i, check in enumerate(case.expect) if check.evaluate(log, ctx)]
        messages += check_invariants(log, _renumbered(case, ids))
        if case.strength == "found":  # explore's scenarios release everything they block
            messages += unended_works(log)
            # and expect nothing by hand: their waiters and snapshots are judged by rule
            messages += waiter_problems(log)
            messages += snapshot_problems(log)
            if self._single_resource() and self.handshake is not None and \
                    "virtual_clock" in self.handshake.capabilities:
                messages += slice_problems(log)
        return ("failed" if messages else "passed"), messages

    def _write_transcript(self, result: CaseResult) -> None:
        assert self.transcripts is not None
        write_transcript(result, self.transcripts)


def write_transcript(result: CaseResult, directory: Path) -> Path:
    """Write ``directory/<case id>.jsonl``: what the wire showed in the case (the commands
    sent, the events and replies received, one record a line) and its verdict last."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{result.case.id}.jsonl"
    with path.open("w", encoding="utf-8") as fh:
        if result.log is not None:
            for record in result.log.transcript():
                fh.write(json.dumps(record, separators=(",", ":")) + "\n")
        fh.write(json.dumps({"verdict": result.status, "messages": result.messages}) + "\n")
    return path


def _renumbered(case: Case, ids: Mapping[int, int]) -> dict[str, Any]:
    """The case's works with their submit commands' wire ids (the invariants match
    replies by wire id)."""
    out = {}
    for work, info in case.works.items():
        wire = ids.get(info.command_id) if info.command_id is not None else None
        out[work] = dataclasses.replace(info, command_id=wire)
    return out


def _charge(result: CaseResult, message: str) -> None:
    """Charge an adapter fault found after ``result`` was judged to it: it becomes an
    error naming the fault (its log was not the whole of what the adapter wrote)."""
    if result.status == "error":
        result.messages.append(message)
    else:
        result.status, result.messages, result.divergence = "error", [message], None


def _stale_fault(lines: Sequence[Reply | Event | str], when: str) -> str:
    """One message for the lines a case left behind: AP-1 for a line that is not the
    protocol, else AP-2 for a reply, else AP-6 for events."""
    broken = [line for line in lines if isinstance(line, str)]
    if broken:
        return broken[0]
    replies = [line for line in lines if isinstance(line, Reply)]
    events = [line for line in lines if isinstance(line, Event)]
    if replies:
        first = replies[0]
        return adapter_fault(
            "AP-2", f"adapter stdout line {first.line}: {len(replies)} reply(ies) to command "
                    f"{first.re} and {len(events)} event(s) {when}: a command answered twice "
                    f"or a reply to no command")
    return adapter_fault("AP-6", f"{len(events)} event(s) of this case came {when} "
                                 f"({first_events(events)})")


def _step_refused(i: int, message: Mapping[str, Any], reply: Reply) -> str:
    """A held queue refused a step of its own that the case holds enabled (capability
    held_steps): the runtime's state has parted from the one the case's steps and the
    events so far lead to. Reported under the rules of that step (the vocabulary's
    row: an end of a slice refused is SE-6.4's), never passed; a case that asks for a
    step the rules do not enable there is the case's error to fix."""
    step = str(message.get("step"))
    rules = transition(step).rules
    work = f" of {message['work']}" if "work" in message else ""
    return (f"[{rules[0]}] steps[{i}] step {step}{work}: the held runtime refused its own "
            f"step, which the case's steps and the events so far enable: its state has "
            f"parted from the model's ({reply.error_message}); rules of {step}: "
            f"{', '.join(rules)}")
