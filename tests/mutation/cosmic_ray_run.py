"""Independent mutation testing of the model core with cosmic-ray (issue 15, item 3).

The project's own mutant catalogue (``zlink_reference_adapter/mutants.py``) plants bugs
we thought of; cosmic-ray plants the ones nobody thought of (every comparison, operator,
constant and boolean it can change), so a surviving mutant shows a rule the tests do not
pin. Survivors are listed in ``docs/properties.md``, each as equivalent (with the reason)
or fixed (with the test that kills it now).

The run mutates a *copy* of ``model/`` in a temporary directory and puts the copy first
on ``PYTHONPATH``, so the checkout is never edited and other work in it may go on.

    .venv/bin/python tests/mutation/cosmic_ray_run.py policy             # whole module
    .venv/bin/python tests/mutation/cosmic_ray_run.py queue --sample 60  # 60 at random
    .venv/bin/python tests/mutation/cosmic_ray_run.py --deep             # all three, whole

Not part of CI (each mutant costs a pytest start, several seconds on 2 shared cores).
Needs ``pip install cosmic-ray`` (requirements-dev.txt). Exit status 1 when a mutant
survived, so the listing in docs/properties.md must account for each one.
"""

from __future__ import annotations

import argparse
import ast
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
REPORTS = Path(tempfile.gettempdir()) / "zlink-mutation-reports"  # outside the checkout
# Module -> the fast tests that pin it (core tests only: no event loop, no subprocess).
MODULES: dict[str, list[str]] = {
    "policy": ["tests/core/test_policy.py", "tests/core/test_policy_literals.py"],
    "rules": ["tests/core/test_rules_pinned.py", "tests/core/test_core_rules.py",
              "tests/core/test_queue_arithmetic.py"],
    "queue": ["tests/core/test_queue_arithmetic.py", "tests/core/test_core_survivors.py",
              "tests/core/test_rules_pinned.py",
              "tests/core/test_core_rules.py",
              "tests/core/test_core_copy.py", "tests/core/test_state_tables.py"],
}


def run(module: str, sample: int | None, seed: int, work: Path, timeout: float) -> int:
    copy = work / "model"
    shutil.copytree(ROOT / "model", copy, ignore=shutil.ignore_patterns("__pycache__"))
    target = copy / "zlink_model" / f"{module}.py"
    tests = " ".join(MODULES[module])
    cfg = work / f"{module}.toml"
    session = work / f"{module}.sqlite"
    cfg.write_text(
        "[cosmic-ray]\n"
        f'module-path = "{target}"\n'
        f"timeout = {timeout}\n"
        "excluded-modules = []\n"
        f'test-command = "{sys.executable} -m pytest --noconftest -x -q '
        f'-p no:cacheprovider {tests}"\n'
        "[cosmic-ray.distributor]\n"
        'name = "local"\n', encoding="utf-8")
    env = {**os.environ, "PYTHONPATH": str(copy)}
    cr = [str(Path(sys.executable).parent / "cosmic-ray")]
    subprocess.run([*cr, "init", str(cfg), str(session)], check=True, env=env, cwd=ROOT)
    skip(session, target, sample, seed)
    subprocess.run([*cr, "exec", str(cfg), str(session)], check=True, env=env, cwd=ROOT)
    report = subprocess.run(
        [str(Path(sys.executable).parent / "cr-report"), "--show-diff", "--surviving-only",
         str(session)], capture_output=True, text=True, env=env, cwd=ROOT, check=False)
    text = report.stdout.replace(str(copy), "model")
    REPORTS.mkdir(parents=True, exist_ok=True)
    out = REPORTS / f"{module}.txt"
    out.write_text(text, encoding="utf-8")
    tail = text.strip().splitlines()[-3:]
    print(f"== {module}: survivors with their diffs in {out}\n" + "\n".join(tail))
    return 1 if "surviving mutants: 0 " not in text else 0


def annotation_spans(source: str) -> list[tuple[tuple[int, int], tuple[int, int]]]:
    """Where the module's annotations are. Every module of the model starts with
    ``from __future__ import annotations``, so an annotation is never evaluated and a
    mutant inside one (``int | float`` made ``int + float``) is equivalent by
    construction: the run books those as skipped instead of spending a test run on each,
    and counts them (docs/properties.md lists the count)."""
    assert "from __future__ import annotations" in source
    spans = []
    for node in ast.walk(ast.parse(source)):
        notes: list[ast.expr | None] = []
        if isinstance(node, ast.arg):
            notes.append(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            notes.append(node.returns)
        elif isinstance(node, ast.AnnAssign):
            notes.append(node.annotation)
        for note in notes:
            if note is not None:
                spans.append(((note.lineno, note.col_offset),
                              (note.end_lineno or note.lineno, note.end_col_offset or 0)))
    return spans


def skip(session: Path, target: Path, keep: int | None, seed: int) -> None:
    """Book mutants inside annotations as skipped (equivalent, see
    ``annotation_spans``); then, when sampling, all but ``keep`` of the others, chosen
    at random with ``seed``. ``exec`` runs what is left; the report counts only that."""
    from cosmic_ray.work_db import WorkDB, use_db
    from cosmic_ray.work_item import WorkerOutcome, WorkResult

    spans = annotation_spans(target.read_text(encoding="utf-8"))

    def in_annotation(item: object) -> bool:
        return all(any(a <= tuple(m.start_pos) and tuple(m.end_pos) <= b for a, b in spans)
                   for m in item.mutations)  # type: ignore[attr-defined]

    with use_db(str(session), WorkDB.Mode.open) as db:
        items = list(db.pending_work_items)
        notes = sorted(i.job_id for i in items if in_annotation(i))
        ids = sorted(i.job_id for i in items if not in_annotation(i))
        kept = set(ids if keep is None else random.Random(seed).sample(ids, min(keep, len(ids))))
        skipped = notes + [i for i in ids if i not in kept]
        if skipped:
            db.set_multiple_results(skipped, WorkResult(worker_outcome=WorkerOutcome.SKIPPED))
    print(f"{len(items)} mutants: {len(notes)} inside annotations (equivalent, skipped); "
          f"running {len(kept)} of the other {len(ids)} (seed {seed})")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("modules", nargs="*", help=f"of {sorted(MODULES)} (default: all)")
    ap.add_argument("--sample", type=int, help="run this many mutants per module, at random")
    ap.add_argument("--seed", type=int, default=15)
    ap.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant")
    ap.add_argument("--deep", action="store_true", help="every module, every mutant")
    args = ap.parse_args(argv)
    modules = list(MODULES) if args.deep or not args.modules else args.modules
    sample = None if args.deep else args.sample
    status = 0
    with tempfile.TemporaryDirectory(prefix="zlink-mutation-") as tmp:
        for module in modules:
            status |= run(module, sample, args.seed, Path(tmp), args.timeout)
    return status


if __name__ == "__main__":
    sys.exit(main())
