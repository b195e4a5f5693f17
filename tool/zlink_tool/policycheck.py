"""Prove or refute, with z3, what a ``ZLinkExecutionLanePolicy`` promises.

The rules that decide admission and lane selection (``zlink_model/rules.py``) are restated here
as z3 terms: ``z3_admission_verdict`` mirrors ``admission_verdict`` and
``z3_select_next`` mirrors ``select_next`` (a property test holds each mirror equal to
its rule on concrete inputs). For a given policy, each property is stated over those
terms with the policy's numbers as constants and every other quantity free; z3 looks for
a state that breaks it. None found (unsat) is a proof; one found is a counterexample,
reported in the policy's own terms.

Properties:

(a) ``count_binds_first[lane]`` (SE-5.1, SE-10 item 8): in a lane holding only
    fixed-cost items (a Spot queue's execution turns and its own submissions, any
    lifecycle lane), no admission is ever refused for bytes while the count has room.
    So the lane fills at a count of submissions, independent of payload sizes.
(b) ``admits_one[lane]`` (SE-6.1): an empty, open lane admits a fixed-cost item. If not,
    the policy is contradictory: nothing can ever be admitted to that lane.
(c) ``burst_bounded`` (SE-6.1, SE-10 item 9, D-5): over the selection rule, from any
    state where application work waits, the lifecycle streak never passes
    ``lifecycle_burst_limit`` and an application item is taken within ``limit + 1``
    takes, whatever lifecycle work keeps arriving. Proved by induction (one take from any
    state; a streak at the limit forces the application take) and, for limits up to
    ``UNROLL_LIMIT``, also by unrolling ``limit + 1`` takes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import Any, Final

import z3

from zlink_model.policy import PolicyInputError, ZLinkExecutionLanePolicy, load_policy
from zlink_model.rules import Source

__all__ = [
    "ACCEPT",
    "BYTES",
    "CLOSED",
    "COUNT",
    "UNROLL_LIMIT",
    "Finding",
    "PolicyInputError",
    "check_policy",
    "load_policy",
    "z3_admission_verdict",
    "z3_select_next",
]

# Verdict codes of the z3 mirror of admission_verdict (the lane is the caller's).
ACCEPT: Final = 0
CLOSED: Final = 1
COUNT: Final = 2
BYTES: Final = 3
# Source codes of the z3 mirror of select_next: Source values, and NONE.
NONE: Final = -1
UNROLL_LIMIT: Final = 64

SelectFn = Callable[[z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef, z3.ArithRef],
                    tuple[z3.ArithRef, z3.ArithRef]]


def z3_admission_verdict(closed: z3.BoolRef | bool, reserved_count: z3.ArithRef | int,
                         reserved_bytes: z3.ArithRef | int, item_bytes: z3.ArithRef | int,
                         count_capacity: z3.ArithRef | int, byte_capacity: z3.ArithRef | int
                         ) -> z3.ArithRef:
    """``rules.admission_verdict`` as a z3 term: closed wins, then count, then bytes."""
    return z3.If(closed, z3.IntVal(CLOSED),
                 z3.If(reserved_count + 1 > count_capacity, z3.IntVal(COUNT),
                       z3.If(reserved_bytes + item_bytes > byte_capacity, z3.IntVal(BYTES),
                             z3.IntVal(ACCEPT))))


def z3_select_next(barrier: z3.ArithRef, lifecycle: z3.ArithRef, application: z3.ArithRef,
                   streak: z3.ArithRef, limit: z3.ArithRef
                   ) -> tuple[z3.ArithRef, z3.ArithRef]:
    """``rules.select_next`` as z3 terms: (source code, streak after the take)."""
    life_first = z3.And(lifecycle > 0, z3.Or(application == 0, streak < limit))
    source = z3.If(barrier > 0, z3.IntVal(int(Source.BARRIER)),
                   z3.If(life_first, z3.IntVal(int(Source.LIFECYCLE)),
                         z3.If(application > 0, z3.IntVal(int(Source.APPLICATION)),
                               z3.IntVal(NONE))))
    after = z3.If(barrier > 0, z3.IntVal(0),
                  z3.If(life_first, z3.If(application > 0, streak + 1, z3.IntVal(0)),
                        z3.If(application > 0, z3.IntVal(0), streak)))
    return source, after


@dataclasses.dataclass(frozen=True, slots=True)
class Finding:
    """One property for one policy: proved, or refuted with a counterexample."""

    name: str
    rules: str
    claim: str
    proved: bool
    method: str
    counterexample: str | None = None
    contradictory: bool = False  # the refutation means nothing can ever be admitted

    def to_json(self) -> dict[str, Any]:
        """Plain data for ``--json``."""
        return dataclasses.asdict(self)


def _solve(solver: z3.Solver | z3.Optimize) -> z3.ModelRef | None:
    verdict = solver.check()
    if verdict == z3.unsat:
        return None
    if verdict == z3.sat:
        return solver.model()
    raise RuntimeError(f"z3 could not decide ({solver.reason_unknown()})")


_LANES: Final = (
    ("application", "application_message_capacity", "application_byte_capacity"),
    ("lifecycle", "lifecycle_message_capacity", "lifecycle_byte_capacity"),
)


def _count_binds_first(policy: ZLinkExecutionLanePolicy) -> list[Finding]:
    fixed = policy.fixed_work_byte_cost
    out = []
    for lane, count_field, bytes_field in _LANES:
        cap, bcap = getattr(policy, count_field), getattr(policy, bytes_field)
        n = z3.Int("n")
        opt = z3.Optimize()
        # Any state a lane of fixed-cost items can be in (its limits held so far) ...
        opt.add(n >= 0, n <= cap, n * fixed <= bcap)
        # ... where one more fixed-cost item is refused for bytes; the smallest such
        # state is the first refusal a caller would meet.
        opt.add(z3_admission_verdict(False, n, n * fixed, fixed, cap, bcap) == BYTES)
        opt.minimize(n)
        model = _solve(opt)
        claim = (f"{lane} lane: for fixed-cost items the count limit binds before the "
                 f"byte limit ({count_field} * fixed_work_byte_cost <= {bytes_field})")
        if model is None:
            out.append(Finding(f"count_binds_first[{lane}]", "SE-5.1, SE-10 item 8", claim,
                               True, "z3: no state refutes it over admission_verdict"))
            continue
        k = model.eval(n).as_long()
        out.append(Finding(
            f"count_binds_first[{lane}]", "SE-5.1, SE-10 item 8", claim, False,
            "z3: counterexample over admission_verdict",
            f"with {k} fixed-cost item(s) reserved ({k * fixed} bytes), the next one "
            f"({fixed} bytes) is refused for {lane}_bytes although the count has room "
            f"({k} < {cap}): {cap} * {fixed} = {cap * fixed} > {bytes_field} = {bcap}"))
    return out


def _admits_one(policy: ZLinkExecutionLanePolicy) -> list[Finding]:
    fixed = policy.fixed_work_byte_cost
    out = []
    for lane, count_field, bytes_field in _LANES:
        cap, bcap = getattr(policy, count_field), getattr(policy, bytes_field)
        verdict = z3.Int("verdict")
        s = z3.Solver()
        s.add(verdict == z3_admission_verdict(False, 0, 0, fixed, cap, bcap),
              verdict != ACCEPT)
        model = _solve(s)
        claim = f"an empty, open {lane} lane admits a fixed-cost item"
        if model is None:
            out.append(Finding(f"admits_one[{lane}]", "SE-6.1", claim, True,
                               "z3: no verdict but accept over admission_verdict"))
            continue
        reason = {COUNT: "count", BYTES: "bytes"}.get(
            model.eval(verdict).as_long(), "?")
        out.append(Finding(
            f"admits_one[{lane}]", "SE-6.1", claim, False,
            "z3: counterexample over admission_verdict",
            f"an empty {lane} lane refuses a fixed-cost item for {lane}_{reason}: "
            f"fixed_work_byte_cost = {fixed} > {bytes_field} = {bcap}. The policy is "
            f"contradictory: nothing can ever be admitted to the {lane} lane",
            contradictory=True))
    return out


def _burst_bounded(policy: ZLinkExecutionLanePolicy, select: SelectFn) -> Finding:
    limit_value = policy.lifecycle_burst_limit
    limit = z3.IntVal(limit_value)
    claim = (f"an application item waits behind at most lifecycle_burst_limit = "
             f"{limit_value} lifecycle items: the streak stays within the limit and an "
             f"application item is taken within {limit_value + 1} takes")
    name, rules = "burst_bounded", "SE-6.1, SE-10 item 9, D-5"
    b, life, app, s0 = z3.Ints("barrier lifecycle application streak")
    src, s1 = select(b, life, app, s0, limit)
    # 1. The streak stays in 0..limit, whatever is ready.
    solver = z3.Solver()
    solver.add(b >= 0, life >= 0, app >= 0, s0 >= 0, s0 <= limit,
               z3.Or(s1 < 0, s1 > limit))
    model = _solve(solver)
    if model is not None:
        return Finding(name, rules, claim, False, "z3: counterexample (one take)",
                       f"from streak {model.eval(s0)} with {model.eval(b)} barrier, "
                       f"{model.eval(life)} lifecycle and {model.eval(app)} application "
                       f"items ready, one take leaves the streak at {model.eval(s1)}")
    # 2. With application work waiting, a take is the application item or a lifecycle
    #    item that raises the streak by one (the streak is the ranking function) ...
    solver = z3.Solver()
    solver.add(b == 0, life >= 0, app >= 1, s0 >= 0, s0 <= limit,
               z3.Not(z3.Or(src == int(Source.APPLICATION),
                            z3.And(src == int(Source.LIFECYCLE), s1 == s0 + 1))))
    model = _solve(solver)
    if model is not None:
        return Finding(name, rules, claim, False, "z3: counterexample (one take)",
                       f"with {model.eval(life)} lifecycle and {model.eval(app)} "
                       f"application items waiting at streak {model.eval(s0)}, the take "
                       f"is source {model.eval(src)} leaving streak {model.eval(s1)}")
    # 3. ... and at the limit it is the application item.
    solver = z3.Solver()
    solver.add(b == 0, life >= 0, app >= 1, s0 == limit, src != int(Source.APPLICATION))
    model = _solve(solver)
    if model is not None:
        return Finding(name, rules, claim, False, "z3: counterexample (at the limit)",
                       f"at streak {limit_value} with {model.eval(life)} lifecycle items "
                       f"and application work waiting, a lifecycle item is taken again")
    method = "z3: induction over select_next (streak as ranking function)"
    if limit_value <= UNROLL_LIMIT:
        # 4. Unrolled: limit + 1 takes from any streak, lifecycle work arriving freely.
        solver = z3.Solver()
        streak = z3.Int("s_0")
        solver.add(streak >= 0, streak <= limit)
        for i in range(limit_value + 1):
            life_i = z3.Int(f"lifecycle_{i}")
            solver.add(life_i >= 0)
            src_i, streak = select(z3.IntVal(0), life_i, z3.IntVal(1), streak, limit)
            solver.add(src_i != int(Source.APPLICATION))
        model = _solve(solver)
        if model is not None:
            return Finding(name, rules, claim, False, "z3: counterexample (unrolled)",
                           f"{limit_value + 1} takes in a row from streak "
                           f"{model.eval(z3.Int('s_0'))} pass over waiting application "
                           f"work")
        method += f"; unrolled over {limit_value + 1} takes"
    return Finding(name, rules, claim, True, method)


def check_policy(policy: ZLinkExecutionLanePolicy, *,
                 select: SelectFn = z3_select_next) -> list[Finding]:
    """Every property for one policy, in the order (a), (b), (c). ``select`` replaces
    the selection rule's encoding (to show that a broken rule is refuted)."""
    return [*_count_binds_first(policy), *_admits_one(policy),
            _burst_bounded(policy, select)]


def describe(policy: ZLinkExecutionLanePolicy) -> Mapping[str, int | float]:
    """The policy's fields, for printing."""
    return policy.to_mapping()
