"""One replay engine (``zlink_model.engine``): ``zlink trace check`` runs it with one world
and no hidden steps, the conformance kit's model oracle with many worlds and hidden
steps; both are the same class and the same ``advance``."""

from __future__ import annotations

import ast
from pathlib import Path
from typing import Any

import pytest

import zlink_conformance.oracle.model as oracle
import zlink_model
from zlink_model import engine as engine_module
from zlink_model.engine import MAX_WORLDS, ReplayEngine, UndecidedError
from zlink_model.errors import ZLinkProtocolError
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import QueueConfig, QueueCore, WorkRecord
from zlink_model.replay import QueueReplayer, QueueWorld, check_trace
from zlink_model.rules import Source
from zlink_model.trace import TraceEvent


class Counter:
    """A toy world: a number; hidden steps add one up to a bound."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.copies = 0

    def copy(self) -> Counter:
        self.copies += 1
        return Counter(self.n)

    def key(self) -> int:
        return self.n


def add_one(w: Counter) -> None:
    w.n += 1


def must_be(n: int) -> Any:
    def step(w: Counter) -> None:
        if w.n != n:
            raise ZLinkProtocolError("step", "SE-0", f"{w.n} is not {n}")
    return step


def upto(bound: int) -> Any:
    def hidden(w: Counter) -> list[Any]:
        return [add_one] if w.n < bound else []
    return hidden


def test_one_world_without_hidden_steps_steps_in_place() -> None:
    world = Counter(0)
    engine = ReplayEngine(world, illegal=(ZLinkProtocolError,))
    assert engine.advance(add_one) == []
    assert engine.worlds == [world] and world.n == 1 and world.copies == 0
    failures = engine.advance(must_be(5))
    assert [(w, str(e)) for w, e in failures] == [(world, "step: 1 is not 5 (SE-0)")]
    assert engine.worlds == [world] and engine.peak == 1


def test_many_worlds_keep_those_in_which_a_step_is_legal() -> None:
    engine = ReplayEngine(Counter(0), hidden=upto(3), illegal=(ZLinkProtocolError,))
    assert sorted(w.n for w in engine.closure()) == [0, 1, 2, 3]
    assert engine.advance(must_be(2)) == []
    assert [w.n for w in engine.worlds] == [2]
    # the hidden steps go on from what is left: 2 or 3, never back to 0
    failures = engine.advance(must_be(0))
    assert sorted(w.n for w, _ in failures) == [2, 3]
    assert engine.peak == 4


def test_restrict_filters_without_copying_and_keep_limits_the_closure() -> None:
    engine = ReplayEngine(Counter(0), hidden=upto(3), illegal=(ZLinkProtocolError,))
    assert engine.restrict(must_be(1), keep=lambda w: w.n % 2 == 1) == []
    assert [w.n for w in engine.worlds] == [1]
    failures = engine.restrict(must_be(1), keep=lambda w: w.n == 3)
    assert [w.n for w, _ in failures] == [3]


def test_fork_lets_a_checker_try_alternatives_from_the_same_worlds() -> None:
    world = Counter(0)
    engine = ReplayEngine(world, illegal=(ZLinkProtocolError,))
    start = engine.fork()
    engine.advance(add_one)
    assert world.n == 1 and start[0].n == 0
    engine.replace(start)
    assert engine.worlds[0].n == 0


def test_past_max_worlds_the_engine_stops_judging() -> None:
    engine = ReplayEngine(Counter(0), hidden=upto(10**6), illegal=(ZLinkProtocolError,),
                          max_worlds=50)
    with pytest.raises(UndecidedError, match="more than 50 possible states"):
        engine.advance(add_one)
    assert MAX_WORLDS == oracle.MAX_WORLDS


def test_an_error_that_is_not_illegal_propagates() -> None:
    def broken(w: Counter) -> None:
        raise KeyError("bug")
    engine = ReplayEngine(Counter(0), illegal=(ZLinkProtocolError,))
    with pytest.raises(KeyError):
        engine.advance(broken)


# ------------------------------------------------- the two users: one class, one path
def test_trace_replay_and_model_oracle_run_the_same_engine(
        monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[int, bool]] = []
    advance = ReplayEngine.advance

    def spy(self: ReplayEngine[Any], step: Any) -> Any:
        calls.append((len(self.worlds), self.hidden is not None))
        return advance(self, step)

    monkeypatch.setattr(ReplayEngine, "advance", spy)
    replayer = QueueReplayer("q", ZLinkExecutionLanePolicy())
    assert type(replayer.engine) is ReplayEngine and replayer.engine.hidden is None
    report = check_trace([
        TraceEvent(0, "q", "admit", {"work": 0, "pos": 0, "lane": "application",
                                     "barrier": False, "bytes": 256, "wake": True}),
        TraceEvent(1, "q", "enter_drain", {"now": 0}),
    ])
    assert report.ok
    assert calls == [(1, False), (1, False)]  # one world, nothing hidden
    calls.clear()
    replay = oracle._Replay([])
    assert type(replay.engine) is ReplayEngine and replay.engine.hidden is not None
    entries: list[tuple[str, dict[str, Any]]] = [
        ("sent", {"cmd": "reset"}),
        ("sent", {"cmd": "create", "target": "q", "type": "queue"}),
        ("sent", {"cmd": "submit", "work": "a", "target": "q", "entry": "enqueue"}),
        ("received", {"event": "accepted", "work": "a", "owner": "q"}),
        ("received", {"event": "started", "work": "a", "owner": "q"}),
        ("received", {"event": "finished", "work": "a", "owner": "q"}),
    ]
    verdict = oracle.replay_entries(entries)
    assert verdict.divergence is None and verdict.undecided is None
    assert calls == [(1, True)] * 3  # the same method, with hidden steps


def test_queue_world_copies_and_keys_like_a_world() -> None:
    core: QueueCore[WorkRecord] = QueueCore(QueueConfig(ZLinkExecutionLanePolicy()), "q")
    world = QueueWorld(core)
    rec = WorkRecord()
    core.admit(rec)
    world.records[rec.wid] = rec
    copy = world.copy()
    assert copy.key() == world.key()
    assert copy.records[rec.wid] is copy.core.line(Source.APPLICATION)[0]
    assert copy.records[rec.wid] is not rec
    copy.core.enter_drain(0)
    assert copy.key() != world.key()


# ---------------------------------------------- the oracle uses the model's public API
ORACLE = Path(oracle.__file__)


def _model_private_names() -> set[str]:
    """Every underscore name the model package defines (functions, classes, methods,
    attributes assigned on self)."""
    names: set[str] = set()
    for path in Path(zlink_model.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.add(node.name)
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.Name):
                names.add(node.id)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


def test_the_oracle_forges_no_core_and_needs_no_type_ignore() -> None:
    source = ORACLE.read_text()
    assert "type: ignore" not in source
    tree = ast.parse(source)
    attrs = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
    assert "__new__" not in attrs and "__new__" not in source
    assert "drain_scheduled" not in attrs  # the drain is entered, never forced


def test_the_oracle_touches_no_underscore_name_of_the_model() -> None:
    tree = ast.parse(ORACLE.read_text())
    private = _model_private_names()
    assert {"_place", "_release", "_reject", "_unsuspend", "_cancel_live"} <= private
    own = {n.name for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef))}
    own |= {t.attr for n in ast.walk(tree) if isinstance(n, ast.Assign)
            for t in n.targets if isinstance(t, ast.Attribute)}
    own |= {n.target.attr for n in ast.walk(tree)
            if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Attribute)}
    touched = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)
               and n.attr.startswith("_") and not n.attr.startswith("__")}
    assert touched & private - own == set(), "private model attributes used"
    assert touched - own == set(), "an underscore attribute the oracle does not define"
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("zlink_model"):
            assert not [a.name for a in node.names if a.name.startswith("_")]
        if isinstance(node, ast.Import):
            assert not [a.name for a in node.names if "._" in a.name]


def test_the_engine_module_is_part_of_the_model() -> None:
    assert engine_module.__name__ == "zlink_model.engine"
    assert set(engine_module.__all__) >= {"ReplayEngine", "UndecidedError", "MAX_WORLDS"}
