"""The explore loop: draw a scenario, run it through the adapter, judge it, and for a
failure re-run it, shrink it and write it as a case file.

Each scenario is run exactly as a case is (``Runner.run_case``: reset, the commands, a
settle after every settle to confirm it, the reset that ends it) and judged by what
judges every case: the invariants (``oracle.invariants``) and the model oracle
(``oracle.model``). A generated scenario has no expectations of its own, so nothing in
its verdict was written by hand for it.

Honesty rules. A failure is re-run ``repeat`` times on the same adapter before it is
reported: one that does not fail the same way every time is *flaky*, reported with its
rate, never as a pass and never as a confirmed failure. An adapter fault (an AP rule) is
the scenario's, reported as such. A log the model could not decide (too many worlds) is
counted and shown, and the run is not a pass. An adapter that refuses a policy field
with ``unsupported`` has said it lacks it: the field is dropped from every later scenario
and the refusal listed (a runtime is never failed for a field it declared it lacks, and
never sent it again).
"""

from __future__ import annotations

import dataclasses
import json
import re
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..catalog import Case, load_catalogue, needed_capabilities
from ..protocol.wire import POLICY_FIELDS
from ..runner import CaseResult, Runner, SuiteReport
from ..runner.process import Handshake
from ..runner.suite import write_transcript
from .coverage import Coverage
from .generate import Declared, RandomStrategy
from .graph import GraphCoverage, GraphStrategy
from .scenario import GENERATED_RULE, Scenario, case_id
from .shrink import shrink

__all__ = ["ExploreConfig", "ExploreReport", "Finding", "explore", "signature"]

# A failure line's label: the rule first ("[SE-6.6]", "[SE-4.6 ActorClaimHeld]", "[SE-6.6
# model FifoWithinLane]"), or, in an invariant's own words, the invariant first
# ("[model FifoWithinLane SE-6.6]").
_LABEL = re.compile(
    r"\[(?:(?P<rule>(?:SE|SD|D|AP)-[0-9.]*[0-9])(?: (?:model )?(?P<inv>[A-Za-z]+))?"
    r"|(?:model )?(?:(?P<inv2>[A-Za-z]+) )?(?P<rule2>(?:SE|SD|D|AP)-[0-9.]*[0-9]))\]")
_AP = re.compile(r"adapter fault \[(AP-[0-9]+)\]")


def signature(result: CaseResult) -> tuple[str, str | None] | None:
    """(rule, invariant) of a result's first broken rule: what "the same failure" means
    when a failure is re-run and shrunk. None when it passed (or broke nothing named)."""
    if result.status == "passed":
        return None
    if result.divergence is not None:
        return result.divergence.rule, result.divergence.invariant
    for message in result.messages:
        ap = _AP.search(message)
        if ap:
            return ap.group(1), None
        found = _LABEL.search(message)
        if found:
            return (found["rule"] or found["rule2"]), (found["inv"] or found["inv2"])
    if result.status != "error":
        return "unnamed", None
    text = " ".join(result.messages)
    for word, what in (("refused it", "refused"), ("hung", "hung"), ("crash", "crashed")):
        if word in text:
            return what, None
    return "error", None


@dataclasses.dataclass(slots=True)
class ExploreConfig:
    """How to explore (the CLI's options)."""

    argv: list[str]
    seed: int = 0
    runs: int | None = 200
    budget_s: float | None = None
    max_steps: int = 24
    repeat: int = 3
    out: Path | None = None  # where shrunk cases are written
    keep_going: bool = False
    timeout: float = 10.0
    env: Mapping[str, str] | None = None
    shrink_seconds: float = 60.0
    strategy: str = "random"
    start: int = 0  # the first scenario index (a soak spread over machines)
    transcripts: Path | None = None  # where each scenario's transcript is written


@dataclasses.dataclass(slots=True)
class Finding:
    """One distinct failure: its rule, how often it reproduced, its shrunk case."""

    rule: str
    invariant: str | None
    status: str  # failed | error
    scenario: Scenario
    result: CaseResult
    reproduced: int = 0
    reruns: int = 0
    shrunk: Scenario | None = None
    shrunk_result: CaseResult | None = None
    shrink_runs: int = 0
    shrink_seconds: float = 0.0
    case_file: Path | None = None
    replayed: bool | None = None  # the written case failed again on the same rule
    seen: int = 1  # scenarios that failed with this signature
    parted: str | None = None  # strategy graph: where the log left the model's path

    @property
    def flaky(self) -> bool:
        return self.reproduced < self.reruns

    @property
    def label(self) -> str:
        return f"{self.invariant} {self.rule}" if self.invariant else self.rule

    def to_json(self) -> dict[str, Any]:
        shrunk = self.shrunk or self.scenario
        return {
            "rule": self.rule, "invariant": self.invariant, "status": self.status,
            "flaky": self.flaky, "reproduced": self.reproduced, "reruns": self.reruns,
            "seen": self.seen, "seed": self.scenario.seed, "scenario": self.scenario.index,
            "messages": (self.shrunk_result or self.result).messages,
            "size": {"original": list(self.scenario.size), "shrunk": list(shrunk.size),
                     "steps": len(shrunk.steps())},
            "shrink_runs": self.shrink_runs, "shrink_s": round(self.shrink_seconds, 2),
            "case_file": str(self.case_file) if self.case_file else None,
            "replayed": self.replayed,
            "commands": (self.shrunk_result or self.result).commands(),
            "parted": self.parted,
        }


@dataclasses.dataclass(slots=True)
class ExploreReport:
    """What an explore run did."""

    config: ExploreConfig
    runtime: str
    capabilities: list[str]
    scenarios: int = 0
    passed: int = 0
    seconds: float = 0.0
    undecided: list[tuple[int, str]] = dataclasses.field(default_factory=list)
    refused: dict[str, str] = dataclasses.field(default_factory=dict)
    findings: list[Finding] = dataclasses.field(default_factory=list)
    coverage: Coverage = dataclasses.field(default_factory=Coverage)
    run_seconds: float = 0.0  # time in scenarios run for the search (not re-runs, shrinks)
    handshake: Handshake | None = None
    graph: GraphCoverage | None = None  # strategy graph: the graph's transitions driven

    def suite_report(self) -> SuiteReport:
        """The failures as a run's report (one case each: its shrunk case, else the
        scenario), for the JUnit and HTML writers of ``run``."""
        results = [f.shrunk_result or f.result for f in self.findings]
        return SuiteReport(list(self.config.argv), self.handshake, results, self.seconds)

    @property
    def per_second(self) -> float:
        return self.scenarios / self.run_seconds if self.run_seconds > 0 else 0.0

    @property
    def verdict(self) -> str:
        """PASS, FAIL (a reproduced failure), FLAKY (only failures that did not always
        reproduce) or UNDECIDED (no failure, but logs the model could not judge)."""
        if any(not f.flaky for f in self.findings):
            return "FAIL"
        if self.findings:
            return "FLAKY"
        if self.undecided:
            return "UNDECIDED"
        return "PASS"

    def to_json(self) -> dict[str, Any]:
        return {
            "verdict": self.verdict, "runtime": self.runtime,
            "capabilities": self.capabilities, "strategy": self.config.strategy,
            "seed": self.config.seed, "start": self.config.start,
            "max_steps": self.config.max_steps, "scenarios": self.scenarios,
            "passed": self.passed, "time_s": round(self.seconds, 3),
            "per_second": round(self.per_second, 1),
            "undecided": [{"scenario": i, "why": why} for i, why in self.undecided],
            "refused_policy_fields": self.refused,
            "findings": [f.to_json() for f in self.findings],
            "coverage": self.coverage.report(),
            **({"graph": self.graph.report()} if self.graph is not None else {}),
        }


Say = Callable[[str], None]


def explore(config: ExploreConfig, say: Say = print) -> ExploreReport:
    """Run the exploration ``config`` describes; ``say`` prints progress lines."""
    catalogue = load_catalogue()
    rules = catalogue.rules
    t0 = time.monotonic()
    with Runner(config.argv, env=config.env, timeout=config.timeout) as runner:
        hs = runner.start()
        caps = list(hs.capabilities)
        declared = Declared.of(caps, hs.reply.get("surface"))
        report = ExploreReport(config, hs.name, caps, handshake=hs)
        strategy: RandomStrategy | GraphStrategy = (
            GraphStrategy(declared, config.seed, config.max_steps)
            if config.strategy == "graph" else
            RandomStrategy(declared, config.seed, config.max_steps))
        graph = strategy if isinstance(strategy, GraphStrategy) else None
        if graph is not None:
            report.graph = graph.coverage
            say(f"explore: {len(graph.paths)} path(s) cover the moves of the graph"
                if graph.unavailable is None else f"explore: {graph.unavailable}")
        say(f"explore: {hs.name}, strategy {strategy.name}, seed {config.seed}, "
            f"{_limit(config)}, at most {config.max_steps} steps a scenario")
        if not declared.kinds:
            say("explore: the adapter declares no target (no actor, session, queue or "
                "spot capability): nothing to generate")
        by_signature: dict[tuple[str, str | None], Finding] = {}
        found = _judge_handshake(runner, caps, rules, config, hs.name, say)
        if found is not None:
            by_signature[(found.rule, found.invariant)] = found
            report.findings.append(found)
        index = config.start
        last_note = time.monotonic()
        while declared.kinds and not _done(config, report, t0) and (
                config.keep_going or found is None or found.flaky):
            scenario = strategy.scenario(index)
            if scenario is None:  # strategy graph: every path driven
                break
            index += 1
            case = _case(scenario, rules, caps)
            if case is None:
                continue
            started = time.monotonic()
            result = runner.run_case(case)
            report.run_seconds += time.monotonic() - started
            report.scenarios += 1
            report.coverage.add(scenario, result.log)
            parted = graph.observe(scenario, result.log) if graph is not None else None
            if config.transcripts is not None:
                write_transcript(result, config.transcripts)
            refusal = _refused_field(result)
            if refusal is not None:
                if declared.refuse_field(refusal):
                    report.refused[refusal] = result.messages[0]
                    say(f"  the adapter refuses policy field {refusal}: later scenarios "
                        f"leave it out")
                continue
            if result.model_undecided is not None:
                report.undecided.append((scenario.index, result.model_undecided))
            sig = signature(result)
            if sig is None:
                report.passed += 1
            elif sig in by_signature:
                by_signature[sig].seen += 1
            else:
                finding = _confirm(runner, scenario, case, result, sig, config, say)
                finding.parted = parted
                by_signature[sig] = finding
                report.findings.append(finding)
                if not finding.flaky:
                    _shrink(runner, finding, rules, caps, config, hs.name, say,
                            graph.shorter(scenario) if graph is not None else [])
                if not finding.flaky and not config.keep_going:
                    break
            if time.monotonic() - last_note > 10:
                last_note = time.monotonic()
                say(f"  ... {report.scenarios} scenarios, {report.per_second:.0f}/s, "
                    f"{len(report.findings)} failure(s)")
    report.seconds = time.monotonic() - t0
    return report


HANDSHAKE_CHECK: Mapping[str, Any] = {
    "check": "members",
    "why": "SE-3.1: no caller can choose or keep one of a coordinator's queues (SE-2.5)"}
"""What no scenario's log can show, judged once a run like a case: the members the
handshake lists (capability ``member_listing``)."""


def _judge_handshake(runner: Runner, caps: Sequence[str], rules: Mapping[str, str],
                     config: ExploreConfig, runtime: str, say: Say) -> Finding | None:
    """The handshake's ``members`` judged once, before the first scenario, as a case of
    its own (``scenario -1``): a coordinator member that hands out a queue is a failure
    on SE-3.1, re-run and written as a case file like any other."""
    if "member_listing" not in caps:
        return None
    scenario = Scenario([dict(HANDSHAKE_CHECK)], config.seed, -1, config.strategy)
    case = _case(scenario, rules, caps, rule="SE-3.1")
    if case is None:
        return None
    result = runner.run_case(case)
    sig = signature(result)
    if sig is None:
        return None
    finding = _confirm(runner, scenario, case, result, sig, config, say)
    if not finding.flaky:  # one step: nothing to shrink
        _shrink(runner, finding, rules, caps, config, runtime, say)
    return finding


def _limit(config: ExploreConfig) -> str:
    parts = []
    if config.runs is not None:
        parts.append(f"{config.runs} scenarios")
    if config.budget_s is not None:
        parts.append(f"a budget of {config.budget_s:g} s")
    return " or ".join(parts) or "no limit"


def _done(config: ExploreConfig, report: ExploreReport, t0: float) -> bool:
    if config.runs is not None and report.scenarios >= config.runs:
        return True
    return config.budget_s is not None and time.monotonic() - t0 >= config.budget_s


def _case(scenario: Scenario, rules: Mapping[str, str], caps: Sequence[str],
          **kwargs: Any) -> Case | None:
    if not scenario.well_formed():
        return None
    needs = needed_capabilities(scenario.steps())
    if any(c not in caps for c in needs):
        return None
    case, _ = scenario.case(rules, needs, **kwargs)
    return case


def _refused_field(result: CaseResult) -> str | None:
    """The policy field a refused ``create`` names (``unsupported``), if that is why the
    scenario is an error."""
    if result.status != "error" or not result.messages:
        return None
    message = result.messages[0]
    if " create: the adapter refused it: unsupported" not in message:
        return None
    for field in POLICY_FIELDS:
        if field in message:
            return field
    return None


def _confirm(runner: Runner, scenario: Scenario, case: Case, result: CaseResult,
             sig: tuple[str, str | None], config: ExploreConfig, say: Say) -> Finding:
    """Re-run a failing scenario ``repeat`` times; count how often it fails the same way."""
    finding = Finding(sig[0], sig[1], result.status, scenario, result)
    say(f"  scenario {scenario.index}: {result.status.upper()} [{finding.label}]; "
        f"re-running it {config.repeat} time(s)")
    for _ in range(config.repeat):
        again = runner.run_case(case)
        finding.reruns += 1
        if signature(again) == sig:
            finding.reproduced += 1
    if finding.flaky:
        say(f"  FLAKY: failed the same way in {finding.reproduced} of {finding.reruns} "
            f"re-run(s) (and the first run)")
    return finding


def _shrink(runner: Runner, finding: Finding, rules: Mapping[str, str],
            caps: Sequence[str], config: ExploreConfig, runtime: str, say: Say,
            model_paths: Sequence[Scenario] = ()) -> None:
    sig = (finding.rule, finding.invariant)

    def still_fails(candidate: Scenario) -> bool:
        case = _case(candidate, rules, caps)
        return case is not None and signature(runner.run_case(case)) == sig

    def valid(candidate: Scenario) -> bool:
        return _case(candidate, rules, caps) is not None

    done = shrink(finding.scenario, still_fails, valid, max_seconds=config.shrink_seconds,
                  model_paths=model_paths)
    finding.shrunk, finding.shrink_runs, finding.shrink_seconds = (
        done.scenario, done.runs, done.seconds)
    before, after = finding.scenario.size, done.scenario.size
    say(f"  shrunk in {done.runs} run(s), {done.seconds:.1f} s"
        f"{'' if done.complete else ' (budget spent)'}: {before[0]} -> {after[0]} "
        f"command(s), {before[1]} -> {after[1]} work(s), {before[2]} -> {after[2]} op(s)")
    rule = finding.rule if finding.rule in rules else GENERATED_RULE
    ident = case_id(finding.rule, finding.invariant, done.scenario.seed, done.scenario.index)
    message = ""
    case = _case(done.scenario, rules, caps, rule=rule, violation=finding.label, case=ident)
    if case is not None:
        final = runner.run_case(case)
        finding.shrunk_result = final
        message = final.messages[0] if final.messages else ""
        finding.replayed = signature(final) == sig
    if config.out is not None and case is not None:
        raw = done.scenario.raw_case(case=ident, rule=rule,
                                     violation=message or finding.label,
                                     capabilities=needed_capabilities(done.scenario.steps()),
                                     runtime=runtime)
        config.out.mkdir(parents=True, exist_ok=True)
        path = config.out / f"{ident}.json"
        path.write_text(_case_text(raw), encoding="utf-8")
        finding.case_file = path
        say(f"  wrote {path}")


def _case_text(raw: Mapping[str, Any]) -> str:
    """A case file as the shipped ones are laid out: one step a line."""
    head = {k: v for k, v in raw.items() if k != "steps"}
    lines = ["{"]
    for key, value in head.items():
        lines.append(f"  {json.dumps(key)}: {json.dumps(value)},")
    lines.append('  "steps": [')
    steps = raw["steps"]
    for i, step in enumerate(steps):
        lines.append(f"    {json.dumps(step)}{',' if i < len(steps) - 1 else ''}")
    lines.append("  ]")
    lines.append("}")
    return "\n".join(lines) + "\n"
