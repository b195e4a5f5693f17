"""State-space agreement, the tool's half: the SerialQueue runs' bounds read from the
model files (``models/MCSerialQueue.tla`` and a ``.cfg``), their pinned counts from
``models/manifest.json``, and ``python -m zlink_tool.statespace RUN``.

The enumeration itself, and its abstraction function, are the model package's
(``zlink_model.statespace``): the conformance kit walks the same graph in ``explore
--strategy graph`` and must not import the tool. Its names are re-exported here for the
callers that read model files.
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Sequence
from pathlib import Path

from zlink_model.statespace import (
    AgreementError,
    Exploration,
    SerialQueueBounds,
    State,
    abstract,
    concretize,
    explore,
    initial,
    state_of,
)

__all__ = [
    "AgreementError",
    "Exploration",
    "SerialQueueBounds",
    "State",
    "abstract",
    "concretize",
    "explore",
    "initial",
    "load_bounds",
    "manifest_counts",
    "state_of",
]


def _tla_seq(text: str) -> list[str]:
    return [x.strip().strip('"') for x in text.split(",") if x.strip()]


def load_bounds(cfg: Path, harness: Path | None = None, *,
                broken_ok: bool = False) -> SerialQueueBounds:
    """Read a SerialQueue run's constants from its ``.cfg`` and the catalogue of
    ``MCSerialQueue.tla`` (next to it unless given). Only the shapes these files use are
    understood; anything else is an error naming the line, never a guess.

    A broken variant's configuration is refused (the core implements the correct spec
    only) unless ``broken_ok``: its bounds are still the run's, which is what reading
    one of its states into a core (``state_of``, ``concretize``) needs."""
    harness = harness or cfg.with_name("MCSerialQueue.tla")
    mc = harness.read_text(encoding="utf-8")
    values: dict[str, str] = {}
    for raw in cfg.read_text(encoding="utf-8").splitlines():
        line = raw.split("\\*", 1)[0].strip()
        found = re.fullmatch(r"(\w+)\s*(=|<-)\s*(.+)", line)
        if found:
            values[found.group(1)] = found.group(3).strip()
    # A broken variant replaces an operator of the spec (Op <- OpBug...) or brings its
    # own INIT/NEXT; the core implements the correct spec only.
    broken = sorted(k for k, v in values.items() if "Bug" in v)
    if not broken_ok and (
            broken or re.search(r"^\s*(INIT|NEXT)\b", cfg.read_text(encoding="utf-8"), re.M)):
        raise ValueError(f"{cfg.name}: a broken variant ({', '.join(broken) or 'INIT/NEXT'}); "
                         "only the correct model (SPECIFICATION Spec) is enumerated")

    def catalogue(name: str) -> list[str]:
        found = re.search(rf"^{name} == <<(.*?)>>", mc, re.M)
        if not found:
            raise ValueError(f"{harness.name}: no definition {name} == <<...>>")
        return _tla_seq(found.group(1))

    order = re.search(r'^CatalogueOrder == \[s \\in \{(.*?)\} \|-> IF s = "(\w+)" THEN '
                      r"<<(.*?)>> ELSE <<(.*?)>>\]", mc, re.M)
    if not order:
        raise ValueError(f"{harness.name}: CatalogueOrder has an unexpected shape")
    submitters = _tla_seq(order.group(1))
    first = order.group(2)
    if len(submitters) != 2 or first not in submitters:
        raise ValueError(f"{harness.name}: CatalogueOrder names {submitters}")
    second = next(s for s in submitters if s != first)
    seqs = {first: [int(x) for x in _tla_seq(order.group(3))],
            second: [int(x) for x in _tla_seq(order.group(4))]}
    works_ref = values.get("Works", "")
    found_n = re.fullmatch(r"Works(\d+)", works_ref)
    if not found_n:
        raise ValueError(f"{cfg.name}: Works <- {works_ref!r} is not WorksN")
    n = int(found_n.group(1))
    for const, prefix in (("Lane", "Lane"), ("Payload", "Payload"),
                          ("MaxYields", "Yields"), ("Script", "Script")):
        if values.get(const) != f"{prefix}{n}":
            raise ValueError(f"{cfg.name}: {const} <- {values.get(const)}, expected "
                             f"{prefix}{n} like Works")
    if values.get("Submitters") != "TwoSubmitters":
        raise ValueError(f"{cfg.name}: Submitters <- {values.get('Submitters')}")
    lanes, payloads = catalogue("CatalogueLane"), catalogue("CataloguePayload")
    yields = catalogue("CatalogueYields")
    works = tuple(range(1, n + 1))

    def num(name: str) -> int:
        if name not in values:
            raise ValueError(f"{cfg.name}: no value for {name}")
        return int(values[name])

    return SerialQueueBounds(
        works=works,
        lane={w: lanes[w - 1] for w in works},
        payload={w: int(payloads[w - 1]) for w in works},
        max_yields={w: int(yields[w - 1]) for w in works},
        script={s: tuple(w for w in seqs[s] if w <= n) for s in sorted(submitters)},
        app_count_cap=num("AppCountCap"), app_byte_cap=num("AppByteCap"),
        life_count_cap=num("LifeCountCap"), life_byte_cap=num("LifeByteCap"),
        fixed_cost=num("FixedCost"), burst_limit=num("BurstLimit"),
        close_allowed=values.get("CloseAllowed") == "TRUE",
    )


def manifest_counts(models: Path, run: str, profile: str = "ci") -> tuple[Path, int, int]:
    """A run's ``.cfg`` and its pinned distinct and total state counts, from
    ``models/manifest.json`` (the ``ci`` runs, or those of another profile)."""
    manifest = json.loads((models / "manifest.json").read_text(encoding="utf-8"))
    runs = manifest["runs"] if profile == "ci" else manifest["profiles"][profile]["runs"]
    for entry in runs:
        if entry["name"] == run:
            return models / entry["files"]["cfg"], int(entry["distinct"]), int(entry["total"])
    raise KeyError(f"no run {run!r} in profile {profile} of {models / 'manifest.json'}")



def main(argv: Sequence[str] | None = None) -> int:
    """``python -m zlink_tool.statespace [--profile deep] RUN``: enumerate a SerialQueue
    run of the manifest over the core and compare with TLC's pinned counts. For the deep
    runs, which take minutes and are never part of the test suite (docs/models.md,
    "State-space agreement at depth"). Exit 0 when the counts agree and no invariant
    broke, 1 otherwise."""
    p = argparse.ArgumentParser(prog="python -m zlink_tool.statespace",
                                description=main.__doc__)
    p.add_argument("run", help="a SerialQueue run of the manifest (e.g. SerialQueueDeep)")
    p.add_argument("--profile", default="ci", help="its profile (default ci)")
    p.add_argument("--models", type=Path, default=Path(__file__).resolve().parents[2]
                   / "models", help="the models directory (default: the checkout's)")
    p.add_argument("--no-invariants", action="store_true",
                   help="do not check the core invariants on every state (faster)")
    args = p.parse_args(argv)
    cfg, distinct, total = manifest_counts(args.models, args.run, args.profile)
    result = explore(load_bounds(cfg), check_invariants=not args.no_invariants)
    agree = (result.distinct, result.total) == (distinct, total)
    print(f"{args.run}: TLC {distinct:,} distinct / {total:,} total; core enumeration "
          f"{result.distinct:,} / {result.total:,} in {result.seconds:.1f} s "
          f"({result.distinct / max(result.seconds, 1e-9):,.0f} distinct states/s): "
          + ("agree" if agree else "DISAGREE"))
    for v in result.violations:
        print(f"  invariant broken: {v}")
    return 0 if agree and not result.violations and result.deadlocks == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
