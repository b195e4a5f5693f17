"""Running one case against the scripted fake adapter (``fakes/scripted.py``): the case
in the shipped format, the log the adapter writes as a script, the runner's verdict."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from zlink_conformance.catalog import load_catalogue
from zlink_conformance.runner import CaseResult, Runner, SuiteReport

from kit_helpers import child_env, fake


def ev(name: str, work: str, owner: str, **fields: Any) -> dict[str, Any]:
    """One event as the adapter writes it."""
    return {"event": name, "work": work, "owner": owner, **fields}


def run_scripted(tmp_path: Path, case: dict[str, Any], steps: list[dict[str, Any]], *,
                 capabilities: list[str] | None = None, surface: dict[str, Any] | None = None,
                 timeout: float = 10.0) -> CaseResult:
    """Run ``case`` (given ``id``, ``rules``, ``steps``; by default it needs ``actor`` and
    expects work ``a`` finished) against an adapter that writes ``steps`` (the scripted
    fake's format)."""
    return run_scripted_cases(tmp_path, [case], steps, capabilities=capabilities,
                              surface=surface, timeout=timeout).results[0]


def run_scripted_cases(tmp_path: Path, cases_: list[dict[str, Any]],
                       steps: list[dict[str, Any]], *, capabilities: list[str] | None = None,
                       surface: dict[str, Any] | None = None,
                       timeout: float = 10.0) -> SuiteReport:
    """Run several cases (in the order of their IDs) on one scripted adapter."""
    cases = tmp_path / "cases"
    cases.mkdir(exist_ok=True)
    for case in cases_:
        raw = {"strength": "required", "capabilities": ["actor"],
               "intent": "a scripted log",
               "expect": [{"check": "status", "works": {"a": "finished"}}], **case}
        (cases / f"{raw['id']}.json").write_text(json.dumps(raw))
    script = tmp_path / "script.json"
    caps = capabilities if capabilities is not None else ["actor"]
    script.write_text(json.dumps({"capabilities": caps, "surface": surface or {},
                                  "steps": steps}))
    catalogue = load_catalogue(cases)
    with Runner(fake("scripted"), env=child_env(FAKE_SCRIPT=str(script)),
                timeout=timeout, handshake_timeout=10.0) as runner:
        return runner.run(list(catalogue.cases))
