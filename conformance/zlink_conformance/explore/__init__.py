"""``explore``: conformance that finds what no case was written for.

Scenarios are drawn from what an adapter declares in its handshake (``generate``,
strategy ``random``) or walked along the model's bounded state graph (``graph``,
strategy ``graph``), run through the adapter protocol and judged by the invariants and
the model oracle like every case (``engine``); a failure is re-run, shrunk to a smallest
scenario that breaks the same rule (``shrink``) and written as a case file of strength
``found`` that ``run --cases DIR`` replays. Every run reports what its scenarios reached
(``coverage``). docs/conformance.md, section "Explore", is the guide.
"""

from .coverage import Coverage
from .engine import ExploreConfig, ExploreReport, Finding, explore, signature
from .generate import Declared, RandomStrategy, TargetKind
from .graph import GraphCoverage, GraphStrategy
from .scenario import Scenario

__all__ = [
    "Coverage",
    "Declared",
    "ExploreConfig",
    "ExploreReport",
    "Finding",
    "GraphCoverage",
    "GraphStrategy",
    "RandomStrategy",
    "Scenario",
    "TargetKind",
    "explore",
    "signature",
]
