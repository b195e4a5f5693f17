"""The model oracle: every case's whole log replayed through the reference protocol core.

Theory of operation
===================

The invariants of ``invariants`` judge a log without a model. This module goes further:
it drives ``QueueCore`` instances of the reference core (``zlink_model``), one
per owner queue the runner knows from its own ``create`` and ``submit`` commands (the
routing table says which queue admits each work and on which queue's turn it runs), and
maps every observed event onto the core transition(s) it implies:

=====================  ====================================================================
event                  transition(s) in the model
=====================  ====================================================================
``accepted``           ``admit`` on the admitting queue (lane, payload, barrier from the
                       entry); the model must not refuse it. A session's final work is
                       recorded and closes the session; it is placed (``transfer``) once
                       every work accepted before it has ended (D-12)
``rejected``           ``reject``: the model's own verdict on the same queue must be this
                       reason
``started``            ``take_next`` on the running queue must give the turn to this work
                       (FIFO per lane, barrier first, lifecycle within the burst limit).
                       A SpotWide Actor work must first have been moved: ``take_next`` on
                       its Actor queue (claim free, FIFO) and ``transfer`` onto the Spot
                       queue (SE-4.5)
``yielded``            ``yield_turn`` (the work must hold the turn; Entry Spots have no
                       Yield); its call must still be pending (a yield before the
                       reply to the ``complete``/``fail`` that settles it may have come
                       first: the runtime progresses while the adapter handles a command)
``resumed``            ``requeue`` (only once the call was settled, or a disposal cut it
                       short) and then ``take_next`` giving the turn to the resume permit
``finished``/``failed``  ``finish``; a SpotWide Actor work also ends its Actor's claim
``cancelled``          a work that never started: ``cancel``, by the model's ``dispose``,
                       ``expire_timeout`` or the expiry of D-27's bound on zombies (or the
                       runtime end); a work on its turn:
                       ``finish`` as cancelled, only after a disposal asked for it; never
                       while it is yielded (D-8)
``zombie``             ``dispose_safely`` (or a cancelling disposal, or the runtime end)
                       must have reached the work's target first (SD-1, SD-2); so must
                       it for ``zombie_warning``
``snapshot``, ``current``, ``error``, ``waited``   the work must hold its turn
=====================  ====================================================================

Commands shape the model too: ``close`` and ``dispose`` close and dispose each queue of
the target, ``complete``/``fail`` settle a call (its work may now requeue), and the reply
to ``settle`` promises that nothing can progress: the model then insists that every
queue with a ready item has a turn holder (``NoLostWakeup``).

Nondeterminism
--------------

The protocol does not show everything the core does. These internal steps happen at a
moment no event reports: a SpotWide Actor queue moving its head onto the Spot queue, a
yielded work queueing its resume permit after its call returned, a session placing its
final work, a disposal timeout expiring, the drain giving a work the turn before its code
reports ``started``/``resumed`` (``take``; none may be left unreported at a settle), and
a SpotWide Actor queue ending its record once the work's turn on the Spot queue ended
(``end_claim``; forced before a settle). The model keeps a set of *worlds* (core
states) and, before each event, adds every world reachable by internal steps; the event
then keeps the worlds in which
it is legal. A runtime diverges when no world is left; it is never failed for a choice
some world allows.

The work is split between the model and this module. The model's replay engine
(``zlink_model.engine.ReplayEngine``, the engine ``zlink trace check`` replays a trace
with, there with one world and no hidden steps) owns the machinery: the set of worlds,
their copies (``QueueCore.copy``), the closure under hidden steps, keeping the worlds in
which a step is legal, and the ``MAX_WORLDS`` limit. This module owns what is particular
to the wire: what a world holds (``_World``: every queue's core, the routing of each work
to its records, the finals not placed yet, the cancellations the model made), which
internal steps are hidden (``_steps``, given to the engine as its hidden steps), how each
wire event maps onto core transitions (the table above: each event is one ``advance`` of
the engine, the reply to ``settle`` one ``restrict``) and how a divergence is explained.
It calls only public transitions of the core, the model-only step
``take_next_ahead_of`` included (below).

Time does not need a world of its own: within one owner, the order of
turns does not depend on where slices end (``end_slice`` keeps the lines and the streak),
so the model runs with the clock at 0 and never cuts a slice; whether slices are cut is
the business of the time-budget cases. The disposal timeout may expire at any moment
after ``dispose_after_timeout`` (the cases check that it waits for its time), and so may
the bound that call sets on the zombies of a queue already disposed safely (D-27: at its
expiry they are cancelled as ``dispose`` cancels). And because
a multi-threaded runtime may write ``accepted`` of one work after another work of the
same owner already took the turn, a take may pass over works whose ``accepted`` came
after that owner's previous turn event (``QueueCore.take_next_ahead_of``: the take as it
was before their admissions, which then queue again behind it).

Very rarely the worlds multiply past ``MAX_WORLDS``; the engine then stops judging that
case (``undecided``) rather than guess.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from typing import Any, Final

from zlink_model.engine import MAX_WORLDS, Failure, ReplayEngine, UndecidedError
from zlink_model.errors import ZLinkProtocolError, ZLinkRejectedError
from zlink_model.policy import ZLinkExecutionLanePolicy
from zlink_model.queue import (
    CANCELLED,
    COMPLETED,
    DONE,
    FAILED,
    MODE_CANCELLED,
    MODE_OPEN,
    MODE_SAFELY,
    MODE_TIMEOUT,
    QUEUED,
    REQUEUED,
    RUNNING,
    SUSPENDED,
    QueueConfig,
    QueueCore,
    WorkRecord,
)
from zlink_model.rules import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    Source,
    admission_verdict,
    reservation_bytes,
)
from zlink_model.vocabulary import (
    DISPOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    REQUEUE,
    TRANSFER,
    TURN_WIRE_EVENTS,
)

from ..protocol.routing import Submission, TargetInfo, submissions
from ..protocol.wire import CLOSE_COMMAND, DISPOSE_COMMAND
from .log import CaseLog

__all__ = ["MAX_WORLDS", "Divergence", "ModelVerdict", "check_model", "replay_entries"]

MAX_RACING: Final = 6  # accepted verdicts of one submit_concurrent tried in every order
MAX_RACING_SETS: Final = 10  # verdicts of one race placed in every order, by their sets
LEADING: Final = 12  # entries of the log shown before a divergent event



@dataclasses.dataclass(frozen=True, slots=True)
class Divergence:
    """The first event the model forbids: where, which rule it breaks, and why."""

    position: int  # position of the event in the case's log
    event: Mapping[str, Any]  # its wire form
    rule: str
    invariant: str | None  # the model invariant's name (as in models/*.tla), if one applies
    explanation: str
    leading: tuple[tuple[int, str, Mapping[str, Any]], ...]  # (position, dir, message)

    def label(self) -> str:
        """``[SE-6.6 model FifoWithinLane]``: the rule first, so the line leads with it."""
        name = f" {self.invariant}" if self.invariant else ""
        return f"[{self.rule} model{name}]"

    def what(self) -> str:
        """``started:b@14`` (or ``settle reply@20``)."""
        name = self.event.get("event")
        if name is None:
            return f"settle reply@{self.position}"
        work = self.event.get("work")
        return f"{name}:{work}@{self.position}" if work else f"{name}@{self.position}"

    def message(self) -> str:
        """One line for reports."""
        return f"{self.label()} {self.what()}: {self.explanation}"

    def to_json(self) -> dict[str, Any]:
        """Plain data for the JSON report."""
        return {
            "position": self.position, "event": dict(self.event), "rule": self.rule,
            "invariant": self.invariant, "explanation": self.explanation,
            "leading": [{"pos": p, "dir": d, "message": dict(m)} for p, d, m in self.leading],
        }


@dataclasses.dataclass(frozen=True, slots=True)
class ModelVerdict:
    """What the model made of a whole log."""

    divergence: Divergence | None
    undecided: str | None = None  # why the model stopped judging, if it did
    max_worlds: int = 1


class _ProblemError(Exception):
    """An event is illegal in one world: the rule, the invariant and why."""

    def __init__(self, rule: str, invariant: str | None, explanation: str) -> None:
        super().__init__(explanation)
        self.rule = rule
        self.invariant = invariant
        self.explanation = explanation


class _UndecidedError(Exception):
    """The model cannot read a command, or too many admissions race."""


class _Rec(WorkRecord):
    """A model work record: the core's fields plus the runner's work name."""

    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        super().__init__()
        self.name = name

    def copy(self) -> _Rec:
        new = super().copy()
        new.name = self.name
        return new


def _lane(info: Submission) -> int:
    return LIFECYCLE_LANE if info.lifecycle else APPLICATION_LANE


class _Shared:
    """What the commands established; the same in every world."""

    def __init__(self) -> None:
        self.targets: dict[str, TargetInfo] = {}
        self.policies: dict[str, dict[str, ZLinkExecutionLanePolicy]] = {}
        self.configs: dict[str, QueueConfig] = {}
        self.works: dict[str, Submission] = {}
        self.settled_calls: set[str] = set()  # complete/fail sent: may have happened
        # complete/fail answered: done for sure, at this position of the log. An event
        # before the reply may come from before the call was settled (an adapter's
        # runtime progresses while it handles a command).
        self.done_calls: dict[str, int] = {}
        # work -> position of its latest started/resumed: its code checked its call
        # (SE-6.7: a call done by then returns at once) at some moment after it.
        self.turn_began: dict[str, int] = {}
        self.closed: set[str] = set()  # targets closed to new work
        self.not_safely: set[str] = set()
        self.ending = False  # runtime_end was sent: zombies may be cancelled
        self.accepted_at: dict[str, int] = {}
        self.last_turn_event: dict[str, int] = {}  # owner -> position
        # Capability held_steps: bare queues created held, whose own steps wait for a
        # ``step`` command, and the works whose requeue a ``step requeue`` granted.
        self.held: set[str] = set()
        self.requeue_granted: set[str] = set()
        # The virtual clock moved by ``advance`` commands alone (``busy`` ops move it too,
        # at moments no event fixes), and, per target, the sum it had when a
        # dispose_after_timeout set its timer, with the timeout: once the advances since
        # then add up to the timeout, the timer is due whatever the busy ops did.
        self.advanced = 0
        self.timers: dict[str, tuple[int, int]] = {}
        self.safely: set[str] = set()  # targets disposed safely (a timer then bounds, D-27)
        self.turn_history: dict[str, list[str]] = {}  # owner -> works started there

    def due(self, target: str) -> bool:
        """The disposal timer of ``target`` (or its bound on zombies, D-27) is due."""
        timer = self.timers.get(target)
        return timer is not None and self.advanced - timer[0] >= timer[1]

    def config(self, owner: str, target: str) -> QueueConfig:
        config = self.configs.get(owner)
        if config is None:
            info = self.targets[target]
            which = "policy"
            if owner.startswith(f"{target}/actor:"):
                which = "actor_policy"
            elif owner.startswith(f"{target}/timer:"):
                which = "timer_policy"
            policy = self.policies[target].get(which) or ZLinkExecutionLanePolicy()
            config = self.configs[owner] = QueueConfig(
                policy, yield_allowed=info.offers_yield)
        return config


class _World:
    """One possible state of every queue of the case."""

    __slots__ = ("bounded", "cores", "delivered", "ending", "finals", "owner_of", "recs",
                 "releasing", "steps", "to_cancel", "turns", "unseen")

    def __init__(self) -> None:
        self.cores: dict[str, QueueCore[_Rec]] = {}
        self.owner_of: dict[str, str] = {}  # core name -> target
        self.recs: dict[str, _Rec] = {}  # work -> record on its admitting queue
        self.turns: dict[str, _Rec] = {}  # SpotWide Actor work -> its turn on the Spot queue
        self.finals: dict[str, _Rec] = {}  # session final work accepted, not yet placed
        self.to_cancel: set[tuple[str, str]] = set()  # (core, work) the model cancelled
        # SpotWide Actor work whose turn on the Spot queue ended, and the outcome its
        # Actor queue's record (the claim) ends with, at a moment no event reports.
        self.ending: dict[str, int] = {}
        # Works given the turn by the hidden step "take" whose started/resumed has not
        # come yet (a settled runtime has written it: no such work at a settle).
        self.unseen: set[str] = set()
        # Queues disposed safely whose zombies a later dispose_after_timeout bounds
        # (D-27): when the bound expires they are cancelled as dispose cancels.
        self.bounded: set[str] = set()
        # Works that wrote their terminal event, which they write while they still hold
        # their turn (so before the queue releases their reservation), and the outcome
        # the queue ends them with at a moment no event reports (forced before a settle).
        self.releasing: dict[str, int] = {}
        # Works whose scope's cancellation has reached them (SD-1, D-8): the turn holder
        # when its queue was cancelled, or a yielded work resumed on a cancelled queue.
        # One that goes on and yields again survived it (SD-3a): a zombie, whose call is
        # waited for as any work's, not cut short a second time.
        self.delivered: set[str] = set()
        self.steps = 0

    def deliver(self, shared: _Shared, core: QueueCore[_Rec]) -> None:
        """``core`` is being cancelled: the work running on its turn meets the
        cancellation where it is (D-8). A SpotWide Actor queue's turn holder is the
        claim of a work that runs on the Spot queue (and may be yielded there, SE-4.6):
        that queue's turn says."""
        holder = core.current
        if holder is not None and shared.works[holder.name].route.run == core.name:
            self.delivered.add(holder.name)

    # ---------------------------------------------------------------- copying
    def copy(self) -> _World:
        """An independent copy: the cores copied (``QueueCore.copy``) with one copy of
        each record, which the routing tables here then point to."""
        new = _World()
        memo: dict[_Rec, _Rec] = {}

        def rec(r: _Rec) -> _Rec:
            got = memo.get(r)
            if got is None:
                got = memo[r] = r.copy()
            return got

        new.cores = {name: core.copy(memo) for name, core in self.cores.items()}
        new.owner_of = dict(self.owner_of)
        new.recs = {k: rec(v) for k, v in self.recs.items()}
        new.turns = {k: rec(v) for k, v in self.turns.items()}
        new.finals = {k: rec(v) for k, v in self.finals.items()}
        new.to_cancel = set(self.to_cancel)
        new.ending = dict(self.ending)
        new.unseen = set(self.unseen)
        new.bounded = set(self.bounded)
        new.releasing = dict(self.releasing)
        new.delivered = set(self.delivered)
        new.steps = self.steps
        return new

    def key(self) -> tuple[Any, ...]:
        """What tells two worlds apart (sequence numbers only by the order they make).

        The hottest function of the oracle (every world of every closure is keyed), so
        it reads the cores' lines, turn and suspended set directly instead of through
        ``QueueCore.line`` and ``suspended_records``, whose guard against plain works
        cannot fire here: the oracle admits records only."""
        parts: list[Any] = []
        cores = self.cores
        for name in sorted(cores):
            c = cores[name]
            barrier, life, app, suspended = c.barrier, c.life, c.app, c.suspended
            holder = c.turn_holder
            parts.append((
                name,
                tuple([r.name for r in barrier]) if barrier else (),
                tuple([r.name for r in life]) if life else (),
                tuple([r.name for r in app]) if app else (),
                None if holder is None else holder.name,
                tuple(sorted([r.name for r in suspended])) if suspended else (),
                c.app_count, c.app_bytes, c.life_count, c.life_bytes, c.streak, c.closed,
                c.mode, c.zombies,
            ))
        parts.append(tuple(sorted(self.turns)))
        parts.append(tuple(sorted(self.finals)))
        parts.append(tuple(sorted(self.to_cancel)))
        parts.append(tuple(sorted(self.ending.items())))
        parts.append(tuple(sorted(self.unseen)))
        parts.append(tuple(sorted(self.bounded)))
        parts.append(tuple(sorted(self.releasing.items())))
        parts.append(tuple(sorted(self.delivered)))
        return tuple(parts)

    # ----------------------------------------------------------------- queues
    def core(self, shared: _Shared, owner: str, target: str) -> QueueCore[_Rec]:
        core = self.cores.get(owner)
        if core is None:
            core = QueueCore(shared.config(owner, target), owner)
            self.cores[owner] = core
            self.owner_of[owner] = target
            if target in shared.closed:
                core.close()
        return core

    def target_cores(self, target: str) -> list[QueueCore[_Rec]]:
        return [c for name, c in self.cores.items() if self.owner_of[name] == target]

    def cancel_finals(self, shared: _Shared, admitted_by: str) -> None:
        """The final works admitted by this queue and not placed yet end cancelled, as
        a disposal's cancellation ends them (D-22)."""
        for work in list(self.finals):
            if shared.works[work].route.admit == admitted_by:
                self.to_cancel.add(("final", work))
                del self.finals[work]


# ------------------------------------------------------------------ core helpers
def _line_of(core: QueueCore[_Rec], rec: _Rec) -> Source | None:
    for source in Source:
        if any(r.name == rec.name for r in core.line(source)):
            return source
    return None


def _take(core: QueueCore[_Rec], later: Sequence[_Rec] = ()) -> _Rec:
    """The core's own choice of the next turn (the posted drain is entered as needed:
    when the drain runs is not observable, only what it takes). With ``later``: the take
    as it was before those works' admissions (``QueueCore.take_next_ahead_of``)."""
    if core.current is not None:
        raise _ProblemError("SE-6.5", "NoDoubleDrain",
                       f"{core.current.name} still holds the turn of "
                       f"{core.name}: a second turn at once means a second drain ran")
    if not core.draining:
        core.enter_drain(0)
    return core.take_next_ahead_of(later, 0) if later else core.take_next(0)


def _leave(core: QueueCore[_Rec]) -> None:
    if core.draining and core.current is None and not core.has_ready():
        core.exit_drain(0)


def _source_name(source: Source | None) -> str:
    return {Source.BARRIER: "barrier-next line", Source.LIFECYCLE: "lifecycle lane",
            Source.APPLICATION: "application lane", None: "no line"}[source]


# ------------------------------------------------------------------ the replay
class _Replay:
    def __init__(self, entries: Sequence[tuple[str, Mapping[str, Any]]], *,
                 single_resource: bool = False) -> None:
        self.single_resource = single_resource
        self.entries = entries
        self.shared = _Shared()
        # What the wire does not show is the engine's hidden steps (see the theory).
        self.engine = ReplayEngine(
            _World(), hidden=self._hidden,
            illegal=(ZLinkProtocolError, ZLinkRejectedError, _ProblemError),
            max_worlds=MAX_WORLDS)
        self.last_command: str | None = None
        self.settling: str | None = None  # the call of a complete/fail not answered yet
        self._closing: set[str] = set()

    @property
    def worlds(self) -> list[_World]:
        return self.engine.worlds

    # ------------------------------------------------------------- commands
    def _release_now(self, keep: str | None = None) -> None:
        """Apply the pending releases (``_World.releasing``) in every world at once,
        but those of queue ``keep``. When a release happened matters only to an
        admission verdict of the same queue (its reservation may still be held); for
        anything else, ending the work right away gives the same verdicts with one world
        where waiting would keep two."""
        for world in self.engine.worlds:
            for work in list(world.releasing):
                if self.shared.works[work].route.run != keep:
                    self._apply_step(world, "release", work)

    def command(self, msg: Mapping[str, Any]) -> None:
        name = msg.get("cmd")
        if name not in ("submit", "submit_concurrent"):  # those are judged at their verdicts
            self._release_now()
        self.last_command = name if isinstance(name, str) else None
        self.settling = None
        sh = self.shared
        if name == "reset":
            self.shared = _Shared()
            self.engine.replace([_World()])
        elif name == "create":
            self._create(msg)
            if msg.get("held") is True:
                sh.held.add(str(msg.get("target")))
        elif name == "step" and msg.get("step") == REQUEUE:
            sh.requeue_granted.add(str(msg.get("work")))
        elif name == "submit":
            self._submission(msg)
        elif name == "submit_concurrent":
            for sub in msg.get("submissions", []):
                if isinstance(sub, dict):
                    self._submission(sub)
        elif name in ("complete", "fail"):
            sh.settled_calls.add(str(msg.get("call")))
            self.settling = str(msg.get("call"))
        elif name == CLOSE_COMMAND:
            target = str(msg.get("target"))
            sh.closed.add(target)
            for world in self.worlds:
                for core in world.target_cores(target):
                    core.close()
        elif name == "as_not_safely":
            sh.not_safely.add(str(msg.get("target")))
        elif name == DISPOSE_COMMAND:
            self._dispose(str(msg.get("target")), str(msg.get("mode")), msg.get("timeout_ms"))
        elif name == "runtime_end":
            sh.ending = True
        elif name == "advance":
            ms = msg.get("ms")
            if isinstance(ms, int) and not isinstance(ms, bool) and ms >= 0:
                sh.advanced += ms

    def _create(self, msg: Mapping[str, Any]) -> None:
        name = str(msg.get("target"))
        type_ = str(msg.get("type"))
        kind = msg.get("kind", "user") if type_ == "spot" else None
        mode = msg.get("mode") if type_ == "spot" else None
        self.shared.targets[name] = TargetInfo(name, type_, kind, mode)
        policies: dict[str, ZLinkExecutionLanePolicy] = {}
        for key in ("policy", "actor_policy", "timer_policy"):
            data = msg.get(key)
            if isinstance(data, dict):
                try:
                    policies[key] = ZLinkExecutionLanePolicy.from_mapping(dict(data))
                except (TypeError, ValueError):
                    raise _UndecidedError(f"create {name}: the model cannot read {key}") from None
        self.shared.policies[name] = policies

    def _submission(self, sub: Mapping[str, Any]) -> None:
        works = self.shared.works
        for info in submissions(sub, self.shared.targets):
            works.setdefault(info.work, info)  # a work's first submission is its own

    def _dispose(self, target: str, mode: str, timeout: Any = None) -> None:
        sh = self.shared
        sh.closed.add(target)
        if mode == DISPOSE_AFTER_TIMEOUT and isinstance(timeout, int) \
                and not isinstance(timeout, bool) and timeout >= 0:
            # The first timer set stays (a later call on a scope in the timeout mode
            # sets none).
            sh.timers.setdefault(target, (sh.advanced, timeout))
        if mode == DISPOSE_SAFELY or (mode == "destroy" and target not in sh.not_safely):
            sh.safely.add(target)
        if mode == "destroy":
            mode = DISPOSE if target in sh.not_safely else DISPOSE_SAFELY
        for world in self.worlds:
            for core in world.target_cores(target):
                if mode == DISPOSE and core.mode != MODE_CANCELLED:
                    world.deliver(sh, core)
                    ended, _live = core.dispose()
                    world.to_cancel |= {(core.name, r.name) for r in ended}
                elif mode == DISPOSE_SAFELY and core.mode == MODE_OPEN:
                    core.dispose_safely()
                elif mode == DISPOSE_AFTER_TIMEOUT and core.mode == MODE_OPEN:
                    core.dispose_after_timeout()
                elif mode == DISPOSE_AFTER_TIMEOUT and core.mode == MODE_SAFELY:
                    # D-27: a bound on the zombies of a scope disposed safely; its
                    # expiry is a hidden step, like the timeout's.
                    world.bounded.add(core.name)
                else:
                    core.close()
            if mode == DISPOSE:
                # a final work not placed yet ends cancelled (D-22)
                for work in list(world.finals):
                    if sh.works[work].target.name == target:
                        world.to_cancel.add(("final", work))
                        del world.finals[work]

    # -------------------------------------------------------- internal steps
    def _steps(self, world: _World, *, forced_only: bool) -> list[tuple[str, str]]:
        """Internal steps enabled in ``world``: (kind, what)."""
        sh = self.shared
        out: list[tuple[str, str]] = []
        for name, core in world.cores.items():
            target = sh.targets[world.owner_of[name]]
            if "/actor:" in name and target.spot_wide_wiring and core.current is None \
                    and core.has_ready():
                out.append((TRANSFER, name))
            for rec in core.suspended_records():
                work = rec.name
                call = self._call_of.get(work)
                cancelling = core.mode == MODE_CANCELLED and work not in world.delivered
                settled = call is not None and call in sh.settled_calls
                if world.owner_of[name] in sh.held:
                    # A held queue requeues on its step (which comes after the call's
                    # return) and then at once: by the settle after the step.
                    settled = work in sh.requeue_granted
                if settled or cancelling or (sh.ending and not forced_only):
                    out.append((REQUEUE, work))
            # A disposal timer may expire at any moment after it was set, and must have
            # once the advances of the clock since then add up to its timeout (SD-1, D-27).
            if core.mode == MODE_TIMEOUT and (
                    not forced_only or sh.due(world.owner_of[name])):
                out.append(("expire", name))
            if core.mode == MODE_SAFELY and name in world.bounded and core.live() and (
                    not forced_only or sh.due(world.owner_of[name])):
                out.append(("expire_bound", name))
            if not forced_only and core.current is None and core.has_ready() and not (
                    "/actor:" in name and target.spot_wide_wiring):
                # The drain gives the next item the turn before the work's code runs
                # and reports ``started`` (or ``resumed``): an admission may come in
                # between, and the take (its lifecycle streak) was as it was before it.
                out.append(("take", name))
        out += [("release", work) for work in world.releasing]
        out += [("end_claim", work) for work in world.ending]
        for work in world.finals:
            info = sh.works[work]
            session = world.cores.get(info.route.admit)
            if session is None or session.live() == 0:
                out.append(("final", work))
        return out

    def _apply_step(self, world: _World, kind: str, what: str) -> None:
        sh = self.shared
        if kind != "take":  # an unseen take is no progress: explain from before it
            world.steps += 1
        if kind == TRANSFER:
            actor = world.cores[what]
            rec = _take(actor)
            info = sh.works[rec.name]
            spot = world.core(sh, info.route.run, info.target.name)
            turn = _Rec(rec.name)
            spot.transfer(turn)
            world.turns[rec.name] = turn
        elif kind == REQUEUE:
            rec = self._turn_rec(world, what)
            core = world.cores[sh.works[what].route.run]
            core.requeue(rec)
        elif kind == "take":
            world.unseen.add(_take(world.cores[what]).name)
        elif kind == "release":
            outcome = world.releasing.pop(what)
            info = sh.works[what]
            core = world.cores[info.route.run]
            core.finish(self._turn_rec(world, what), outcome)
            _leave(core)
            if info.moved:
                world.ending[what] = outcome
        elif kind == "end_claim":
            outcome = world.ending.pop(what)
            actor = world.cores[sh.works[what].route.admit]
            actor.finish(world.recs[what], outcome)
            _leave(actor)
        elif kind == "expire":
            core = world.cores[what]
            world.deliver(sh, core)
            ended, _live = core.expire_timeout()
            world.to_cancel |= {(core.name, r.name) for r in ended}
            world.cancel_finals(sh, core.name)  # as dispose (D-22)
        elif kind == "expire_bound":
            # D-27: the bound set after dispose_safely expired: the zombies left are
            # cancelled as dispose cancels them.
            core = world.cores[what]
            world.bounded.discard(what)
            world.deliver(sh, core)
            ended, _live = core.dispose()
            world.to_cancel |= {(core.name, r.name) for r in ended}
            world.cancel_finals(sh, core.name)  # as dispose (D-22)
        elif kind == "final":
            rec = world.finals.pop(what)
            info = sh.works[what]
            world.core(sh, info.route.admit, info.target.name).transfer(rec)
            world.recs[what] = rec

    def _hidden(self, world: _World) -> Iterator[Callable[[_World], None]]:
        """The engine's hidden steps: every internal step enabled in ``world``."""
        for kind, what in self._steps(world, forced_only=False):
            yield partial(self._apply_step, kind=kind, what=what)

    def _settled(self, world: _World) -> bool:
        """No internal step that must happen before a settle answers is still pending."""
        return not world.unseen and not self._steps(world, forced_only=True)

    # --------------------------------------------------------------- events
    _call_of: dict[str, str]
    _closing: set[str]  # targets the event being applied closes (a final work)

    def run(self) -> ModelVerdict:
        self._call_of = {}
        # The verdicts of one submit_concurrent raced: their events may be written in any
        # order. They are judged at the reply (or the next other event), in every order
        # the runtime may have judged them (``_raced``).
        racing: list[tuple[int, Mapping[str, Any]]] | None = None
        try:
            for pos, (direction, msg) in enumerate(self.entries):
                if direction == "sent":
                    self.command(msg)
                    racing = [] if self.last_command == "submit_concurrent" else None
                    continue
                problem = None
                if racing is not None and msg.get("event") in ("accepted", "rejected"):
                    racing.append((pos, msg))
                    continue
                if racing:
                    problem = self._raced(racing)
                    racing = [] if "re" not in msg else None
                if "re" in msg and self.settling is not None:
                    self.shared.done_calls.setdefault(self.settling, pos)
                    self.settling = None
                if problem is None and "event" in msg:
                    problem = self.event(pos, msg)
                elif problem is None and "re" in msg and self.last_command == "settle" \
                        and msg.get("ok"):
                    problem = self.settled(pos, msg)
                if problem is not None:
                    return ModelVerdict(problem, None, self.engine.peak)
        except (_UndecidedError, UndecidedError) as exc:
            return ModelVerdict(None, str(exc), self.engine.peak)
        return ModelVerdict(None, None, self.engine.peak)

    def _raced(self, verdicts: list[tuple[int, Mapping[str, Any]]]) -> Divergence | None:
        """Judge the verdicts of one ``submit_concurrent`` in every order the runtime may
        have judged them (their events' order says nothing): a refusal's reason depends
        on the admissions judged before it, so refusals are placed among the admissions
        too. Verdicts of different admitting queues do not bear on one another, so each
        queue's are judged apart (``_raced_on_one_queue``), one queue after another."""
        groups: dict[str, list[tuple[int, Mapping[str, Any]]]] = {}
        for pos, msg in verdicts:
            info = self.shared.works.get(str(msg.get("work")))
            key = info.route.admit if info is not None else f"?{pos}"
            groups.setdefault(key, []).append((pos, msg))
        for group in groups.values():
            problem = self._raced_on_one_queue(group)
            if problem is not None:
                return problem
        return None

    def _raced_on_one_queue(self, verdicts: list[tuple[int, Mapping[str, Any]]]
                            ) -> Divergence | None:
        """The verdicts of one queue in a race, in every order. Orders are walked by
        the set of verdicts judged so far, each set's worlds kept once, so ``n``
        verdicts cost ``2**n`` sets, not ``n!`` orders; past ``MAX_RACING_SETS``
        verdicts, the accepted ones in every order, then the refused ones."""
        if len(verdicts) == 1:
            return self.event(*verdicts[0])
        if len(verdicts) > MAX_RACING_SETS:
            return self._raced_accepted_first(verdicts)
        engine = self.engine
        layer: dict[frozenset[int], list[_World]] = {frozenset(): list(engine.worlds)}
        first: Divergence | None = None
        for _ in verdicts:
            following: dict[frozenset[int], dict[tuple[Any, ...], _World]] = {}
            for done, worlds in layer.items():
                for i, (pos, msg) in enumerate(verdicts):
                    if i in done:
                        continue
                    engine.replace([w.copy() for w in worlds])
                    problem = self.event(pos, msg)
                    if problem is not None:
                        first = first or problem
                        continue
                    into = following.setdefault(done | {i}, {})
                    for w in engine.worlds:
                        into.setdefault(w.key(), w)
            layer = {k: list(v.values()) for k, v in following.items()}
            if not layer:
                return first
        engine.replace(next(iter(layer.values())))
        return None

    def _raced_accepted_first(self, verdicts: list[tuple[int, Mapping[str, Any]]]
                              ) -> Divergence | None:
        """The accepted verdicts of a race in every order, then the rejected ones: for
        a race too large to place the refusals among the admissions."""
        accepted = [v for v in verdicts if v[1].get("event") == "accepted"]
        rejected = [v for v in verdicts if v[1].get("event") != "accepted"]
        if len(accepted) > MAX_RACING:
            raise _UndecidedError(f"more than {MAX_RACING} racing admissions")
        engine = self.engine
        start = engine.worlds
        found: dict[tuple[Any, ...], _World] = {}
        first: Divergence | None = None
        orders = list(itertools.permutations(accepted))
        for n, order in enumerate(orders, 1):
            # every order starts from the same worlds (the last may change them)
            engine.replace(start if n == len(orders) else [w.copy() for w in start])
            problem = None
            for pos, msg in order:
                problem = problem or self.event(pos, msg)
            if problem is None:
                for w in engine.worlds:
                    found.setdefault(w.key(), w)
            elif first is None:
                first = problem
        if not found:
            return first
        engine.replace(list(found.values()))
        for pos, msg in rejected:
            problem = self.event(pos, msg)
            if problem is not None:
                return problem
        return None

    def _divergence(self, pos: int, msg: Mapping[str, Any],
                    failures: list[Failure[_World]]) -> Divergence:
        # Explain from the world that got furthest (most internal steps taken): its state
        # is what the runtime should most plausibly have reached; of those, one with no
        # turn given unseen (the plainest reading of the log).
        _world, exc = max(failures, key=lambda wp: (wp[0].steps, -len(wp[0].unseen)))
        problem = _problem(exc)
        start = max(0, pos - LEADING)
        leading = tuple((p, d, m) for p, (d, m) in enumerate(self.entries[start:pos], start))
        return Divergence(pos, dict(msg), problem.rule, problem.invariant, problem.explanation,
                          leading)

    def event(self, pos: int, msg: Mapping[str, Any]) -> Divergence | None:
        name = msg.get("event")
        work = msg.get("work")
        if not isinstance(work, str) or work not in self.shared.works:
            return None  # fault, returned, or unknown works: the invariants report those
        info = self.shared.works[work]
        if name == "started" and msg.get("on_submitter_stack") is True:
            # The work ran inside its submit call, before its verdict could be written:
            # SE-6.5's invariant and checks judge that; the model has no step for it.
            raise _UndecidedError(f"{work} started@{pos} on the submitter's stack (SE-6.5)")
        if name == "accepted":
            self.shared.accepted_at[work] = pos
        if name == "yielded":
            self._call_of[work] = str(msg.get("call"))
        self._closing = set()
        self._release_now(info.route.admit if name in ("accepted", "rejected") else None)
        failures = self.engine.advance(partial(self._apply, name=str(name), info=info, msg=msg))
        self.shared.closed |= self._closing
        if name in TURN_WIRE_EVENTS:
            self.shared.last_turn_event[info.route.run] = pos
        if name in ("started", "resumed"):
            self.shared.turn_began[work] = pos
        if name == "started":
            self.shared.turn_history.setdefault(info.route.run, []).append(work)
        if failures:
            return self._divergence(pos, msg, failures)
        return None

    def settled(self, pos: int, msg: Mapping[str, Any]) -> Divergence | None:
        """The reply to ``settle``: nothing can progress, so every internal step that
        must happen has happened, and every queue with a ready item has a turn holder."""
        failures = self.engine.restrict(self._at_settle, keep=self._settled)
        if failures:
            return self._divergence(pos, msg, failures)
        return None

    def _at_settle(self, world: _World) -> None:
        """What the reply to a settle promises: every cancellation the model made (a
        disposal's, a due timer's) is reported, and no wake-up was lost. Where a
        disposal timer was due by the clock's advances, a work its expiry cancels or
        wakes to be cancelled that is left unreported or waiting is the timer's failure
        (SD-1; D-27 for the bound on a scope disposed safely), said before the lost
        wake-up it also is."""
        sh = self.shared
        late = sorted(world.to_cancel)
        for core in world.cores.values():
            if core.mode == MODE_CANCELLED and core.current is None and core.has_ready():
                late += [(core.name, r.name) for s in Source for r in core.line(s)]
        for name, work in late:
            target = (sh.works[work].target.name if name == "final"
                      else world.owner_of[name])
            if not sh.due(target) and name != "final" and (name, work) not in world.to_cancel:
                continue
            rule = "D-27" if target in sh.safely and sh.due(target) else "SD-1"
            timer = sh.timers.get(target)
            why = (f"{target}'s disposal timer ({timer[1]} ms) was due, the clock having "
                   f"been advanced {sh.advanced - timer[0]} ms since it was set"
                   if timer is not None and sh.due(target) else "it was disposed")
            where = "held back (a session's final work)" if name == "final" else f"on {name}"
            raise _ProblemError(
                rule, "ExpireTimeout",
                f"settle answered and {work}, {where}, was neither reported cancelled nor "
                f"given its turn to be cancelled: {why}, so what was left of it is "
                f"cancelled by now")
        _no_lost_wakeup(world, single_resource=self.single_resource,
                        held=frozenset(sh.held))

    # ------------------------------------------------------- event handlers
    def _turn_rec(self, world: _World, work: str) -> _Rec:
        info = self.shared.works[work]
        if info.moved:
            rec = world.turns.get(work)
            if rec is None:
                raise _ProblemError("SE-4.5", None, f"{work} has no execution turn on "
                                               f"{info.route.run} yet")
            return rec
        rec = world.recs.get(work)
        if rec is None:
            raise _ProblemError("D-11", "EveryAcceptedWorkEndsOnce",
                           f"{work} was never accepted in the model")
        return rec

    def _apply(self, world: _World, *, name: str, info: Submission, msg: Mapping[str, Any]) -> None:
        sh = self.shared
        work = info.work
        if name == "accepted":
            self._accepted(world, info)
        elif name == "rejected":
            self._rejected(world, info, str(msg.get("reason")))
        elif name == "started":
            self._started(world, info, resume=False)
        elif name == "resumed":
            self._started(world, info, resume=True)
        elif name == "yielded":
            rec = self._holder(world, info, "yielded")
            call = str(msg.get("call"))
            # SE-6.7: the work starts its call and yields only if it did not complete at
            # once. That check comes after the work's turn began (its started/resumed);
            # the yielded event is written later, while the work still holds its turn, so
            # a complete answered between the two may precede it (the permit is then
            # queued at once). A call done before the turn began returns at once.
            done = sh.done_calls.get(call)
            if done is not None and done < sh.turn_began.get(work, -1):
                raise _ProblemError("SE-6.7", None, f"{work} yielded on {call}, which was "
                                               f"settled before its turn began: a call "
                                               f"already done returns at once")
            core = world.cores[info.route.run]
            if not core.config.yield_allowed:
                raise _ProblemError("SE-4.1", None, f"{core.name} offers no Yield (an Entry Spot)")
            core.yield_turn(rec)
            _leave(core)
        elif name in ("finished", "failed"):
            # The terminal event is written by the work while it holds its turn; the
            # queue ends it (releases its reservation, SE-5.2) just after: a hidden step.
            self._holder(world, info, name)
            self._end_claim(world, info)
            world.releasing[work] = COMPLETED if name == "finished" else FAILED
        elif name == "cancelled":
            self._cancelled(world, info)
        elif name in ("snapshot", "current", "error", "waited"):
            self._holder(world, info, name)
        elif name in ("zombie", "zombie_warning"):
            target = info.target.name
            if not any(c.mode in (MODE_SAFELY, MODE_CANCELLED)
                       for c in world.target_cores(target)) and not sh.ending:
                raise _ProblemError("SD-1", None, f"{work} was made a zombie, but {target} was "
                                             f"never disposed safely")

    def _accepted(self, world: _World, info: Submission) -> None:
        sh = self.shared
        core = world.core(sh, info.route.admit, info.target.name)
        if info.final:
            if info.target.name in sh.closed:
                raise _ProblemError("D-12", "NoWorkAcceptedAfterClose",
                               f"{info.work} accepted after {info.target.name} was closed")
            rec = _Rec(info.work)
            world.finals[info.work] = rec
            # The target is closed for every world once the event is applied to all of
            # them (``event``): changing the shared state here would make the next
            # world refuse the same acceptance.
            self._closing.add(info.target.name)
            core.close()
            return
        if info.target.name in sh.closed and not core.closed:
            core.close()
        rec = _Rec(info.work)
        try:
            core.admit(rec, _lane(info), info.payload, info.barrier)
        except ZLinkRejectedError as exc:
            if exc.reason.value == "closed":
                raise _ProblemError("SE-6.2", "NoWorkAcceptedAfterClose",
                               f"{info.work} accepted by {core.name}, which is closed") from None
            lane = "lifecycle" if _lane(info) == LIFECYCLE_LANE else "application"
            count, nbytes = core.reserved_of(_lane(info))
            raise _ProblemError("SE-5.1", "CapacityRespected",
                           f"{info.work} accepted by {core.name}, but its {lane} lane holds "
                           f"{count} work(s) and {nbytes} bytes: admitting it breaks "
                           f"{exc.reason.value}") from None
        world.recs[info.work] = rec

    def _rejected(self, world: _World, info: Submission, reason: str) -> None:
        sh = self.shared
        if info.target.name in sh.closed:
            want = "closed"
        else:
            core = world.core(sh, info.route.admit, info.target.name)
            config = core.config
            life = _lane(info) == LIFECYCLE_LANE
            nbytes = reservation_bytes(info.payload, config.policy.fixed_work_byte_cost)
            count, used = core.reserved_of(_lane(info))
            verdict = admission_verdict(
                core.closed, life, count, used, nbytes,
                config.life_count_cap if life else config.app_count_cap,
                config.life_byte_cap if life else config.app_byte_cap)
            want = "accept" if verdict is None else verdict.value
            if want == "accept":
                lane = "lifecycle" if life else "application"
                if reason == "closed":
                    # The bytes are beside the point: what is wrong is the closing.
                    raise _ProblemError("SE-5.1", None,
                                   f"{info.work} rejected as closed by {core.name}, but "
                                   f"nothing the log reports before it closed "
                                   f"{info.target.name} (a close, a disposal, a session's "
                                   f"final work), and its {lane} lane has room for it")
                raise _ProblemError("SE-5.1", None,
                               f"{info.work} rejected ({reason}) by {core.name}, but its "
                               f"{lane} lane holds {count} work(s) and {used} bytes: "
                               f"{nbytes} more bytes fit")
        if want != reason:
            raise _ProblemError("SE-5.1" if want != "closed" else "SE-6.2", None,
                           f"{info.work} rejected for {reason}; the model's reason is {want}")

    def _holder(self, world: _World, info: Submission, what: str) -> _Rec:
        if info.work in world.releasing:
            raise _ProblemError("D-11", "EveryAcceptedWorkEndsOnce",
                           f"{info.work} reported {what} after its terminal event")
        rec = self._turn_rec(world, info.work)
        core = world.cores[info.route.run]
        if core.current is not rec or info.work in world.unseen:
            holder = core.current.name if core.current is not None \
                and info.work not in world.unseen else "nobody"
            raise _ProblemError("SE-1.1", "OneTurnPerOwner",
                           f"{info.work} reported {what} off its turn: {holder} holds the "
                           f"turn of {core.name}")
        return rec

    def _end_claim(self, world: _World, info: Submission) -> None:
        if not info.moved:
            return
        actor = world.cores[info.route.admit]
        rec = world.recs[info.work]
        if actor.current is not rec:
            raise _ProblemError("SE-4.6", "YieldedActorKeepsClaim",
                           f"{info.work} ended without holding its Actor's claim on {actor.name}")
        # The Actor queue's turn ends once it sees the execution turn end: an internal
        # step after the release (forced before a settle answers), so an admission to the
        # Actor queue may still find the work's reservation there just after its
        # ``finished``.

    def _started(self, world: _World, info: Submission, *, resume: bool) -> None:
        sh = self.shared
        work = info.work
        if info.final and work in world.finals:
            core = world.core(sh, info.route.admit, info.target.name)
            raise _ProblemError("D-12", None, f"{work} (the session's final work) started while "
                                         f"{core.live()} work(s) accepted before it had not ended")
        if info.moved and work not in world.turns:
            raise self._not_moved(world, info)
        rec = self._turn_rec(world, work)
        core = world.core(sh, info.route.run, info.target.name)
        if work in world.unseen and core.current is rec and bool(rec.resumes) == resume:
            world.unseen.discard(work)
            return  # it got the turn unseen (the hidden step "take")
        if resume and rec.phase == SUSPENDED:
            call = self._call_of.get(work, "its call")
            raise _ProblemError("SE-6.7", "NoResumeWithoutRequeue",
                           f"{work} resumed on {core.name} while {call} is still pending: "
                           f"no resume permit was queued")
        if not resume and rec.resumes:
            raise _ProblemError("D-11", None, f"{work} started again after it yielded")
        if rec.phase == DONE:
            raise _ProblemError("SD-1" if (core.name, work) in world.to_cancel else "D-11",
                           "EveryAcceptedWorkEndsOnce",
                           f"{work} {'resumed' if resume else 'started'} on {core.name} after "
                           f"the model ended it" + (" (cancelled by the disposal)"
                                                    if (core.name, work) in world.to_cancel
                                                    else ""))
        if rec.phase not in (QUEUED, REQUEUED):
            raise _ProblemError("D-11", None, f"{work} is not waiting for a turn on {core.name}")
        if core.current is not None:
            holder = core.current.name
            if resume and core.mode == MODE_CANCELLED:
                raise _ProblemError("D-8", "CancellationOnOwnTurn",
                               f"{work} resumed (to be cancelled) while {holder} holds the turn "
                               f"of {core.name}: a cancellation reaches a yielded work only on "
                               f"its own turn")
            if resume:
                raise _ProblemError("SE-6.7", "NoResumeWithoutRequeue",
                               f"{work} resumed while {holder} holds the turn of {core.name}: a "
                               f"yielded work continues only when the drain gives its resume "
                               f"permit the turn")
            raise _ProblemError("SE-6.5", "NoDoubleDrain",
                           f"{work} started while {holder} holds the turn of {core.name}: a "
                           f"second turn at once means a second drain ran")
        if resume and core.mode == MODE_CANCELLED:
            world.delivered.add(work)  # resumed to be cancelled (D-8)
        before = self._explain_take(core, rec)
        chosen = _take(core.copy())
        if chosen.name == work:
            taken = _take(core)
            assert taken is rec
            return
        if self._take_passing_late(core, rec):
            return
        raise before(chosen)

    def _take_passing_late(self, core: QueueCore[_Rec], rec: _Rec) -> bool:
        """A multi-threaded runtime may write ``accepted`` of a work after another work
        of the same owner took the turn. Works whose ``accepted`` came after the owner's
        previous turn event may therefore have been admitted after this take: try the
        take as it was before their admissions (``QueueCore.take_next_ahead_of``: without
        them, which then queue again behind it in their order)."""
        sh = self.shared
        since = sh.last_turn_event.get(core.name, -1)
        late = [r for s in Source for r in core.line(s)
                if r.phase == QUEUED and r is not rec
                and sh.accepted_at.get(r.name, -1) > since]
        if not late:
            return False
        late.sort(key=lambda r: r.seq)
        memo: dict[_Rec, _Rec] = {}
        probe = core.copy(memo)
        if _take(probe, [memo[r] for r in late]).name != rec.name:
            return False
        taken = _take(core, late)  # the same in the world itself
        assert taken is rec
        return True

    def _explain_take(self, core: QueueCore[_Rec], rec: _Rec) -> Any:
        """A function that explains why the model's choice ``chosen`` is not ``rec``."""
        streak = core.streak
        limit = core.config.burst_limit
        app_waiting = len(core.line(Source.APPLICATION))
        mine = _line_of(core, rec)

        def explain(chosen: _Rec) -> _ProblemError:
            theirs = _line_of(core, chosen)
            what = f"{'resumed' if rec.resumes else 'started'} {rec.name} on {core.name}"
            tail = (f"the model gives the turn to {chosen.name} "
                    f"({_source_name(theirs)}{', a resume permit' if chosen.resumes else ''})")
            if theirs is Source.BARRIER:
                return _ProblemError("D-4", None,
                                     f"{what}, but barrier-next work goes first: {tail}")
            if theirs is Source.LIFECYCLE and mine is Source.APPLICATION:
                kept = self._streak_across_barrier(core.name)
                if kept >= limit > streak:
                    return _ProblemError(
                        "D-4", "LifecycleBurstBounded",
                        f"{what}, but barrier-next work was taken since the last "
                        f"application work, and taking it counts as taking application "
                        f"work: the lifecycle streak started again there (streak {streak} "
                        f"of {limit}; a streak kept across the barrier would be {kept}, "
                        f"the limit): {tail}")
                return _ProblemError("SE-6.6", None,
                                f"{what}, but lifecycle work overtakes waiting application "
                                f"work (streak {streak} of {limit}): {tail}")
            if theirs is Source.APPLICATION and mine is Source.LIFECYCLE:
                return _ProblemError("SE-6.1", "LifecycleBurstBounded",
                                f"{what} after {streak} lifecycle turn(s) in a row while "
                                f"{app_waiting} application item(s) waited (burst limit "
                                f"{limit}): {tail}")
            rule = "D-1" if rec.resumes or chosen.resumes else "SE-6.6"
            return _ProblemError(rule, "FifoWithinLane",
                            f"{what} out of order in its {_source_name(mine)}: {tail}, "
                            f"which is ahead of it")
        return explain

    def _streak_across_barrier(self, owner: str) -> int:
        """The lifecycle works started on ``owner`` since its last application work,
        when barrier-next work was started among them (else 0): the streak a runtime
        that kept it across barrier-next takes would count (D-4)."""
        works = self.shared.works
        kept = 0
        crossed = False
        for work in reversed(self.shared.turn_history.get(owner, [])):
            if works[work].barrier:
                crossed = True
            elif works[work].lifecycle:
                kept += 1
            else:
                break
        return kept if crossed else 0

    def _not_moved(self, world: _World, info: Submission) -> _ProblemError:
        """Why a SpotWide Actor work cannot have its execution turn yet."""
        actor = world.cores.get(info.route.admit)
        rec = world.recs.get(info.work)
        if actor is None or rec is None:
            return _ProblemError("D-11", "EveryAcceptedWorkEndsOnce",
                            f"{info.work} was never accepted in the model")
        if actor.current is not None and actor.current is not rec:
            holder = actor.current.name
            turn = world.turns.get(holder)
            if turn is not None and turn.phase == QUEUED:
                return _ProblemError(
                    "SE-6.6", "FifoWithinLane",
                    f"{info.work} started before {holder}, which is ahead of it on "
                    f"{actor.name} (its execution turn already waits on {info.route.run})")
            state = "yielded" if turn is not None and turn.phase in (SUSPENDED, REQUEUED) \
                else "in progress"
            return _ProblemError("SE-4.6", "YieldedActorKeepsClaim",
                            f"{info.work} started on {info.route.run} while {holder} of the same "
                            f"Actor is {state}: {actor.name}'s claim is held")
        head = next((r for s in Source for r in actor.line(s)), None)
        if head is not None and head is not rec:
            return _ProblemError("SE-6.6", "FifoWithinLane",
                            f"{info.work} started before {head.name}, "
                            f"which is ahead of it on {actor.name}")
        return _ProblemError("SE-4.5", None, f"{info.work} has no execution turn on "
                                        f"{info.route.run}")

    def _cancelled(self, world: _World, info: Submission) -> None:
        sh = self.shared
        work = info.work
        if info.final and ("final", work) in world.to_cancel:
            world.to_cancel.discard(("final", work))
            return
        if info.final and work in world.finals:
            if sh.ending:
                world.finals.pop(work)
                return
            raise _ProblemError("D-22", None, f"{work} (a final work) cancelled, but its session "
                                         f"was not disposed")
        if info.moved and work not in world.turns:
            core = world.cores[info.route.admit]
            rec = world.recs[work]
        else:
            rec = self._turn_rec(world, work)
            core = world.cores[info.route.run]
        if (core.name, work) in world.to_cancel:
            world.to_cancel.discard((core.name, work))
            self._end_claim_cancelled(world, info)
            return
        allowed = core.mode == MODE_CANCELLED or sh.ending
        if rec.phase in (SUSPENDED, REQUEUED):
            raise _ProblemError("D-8", "CancellationOnOwnTurn",
                           f"{work} cancelled while it was yielded: the cancellation must "
                           f"reach it on its own turn (resumed first)")
        if not allowed:
            raise _ProblemError("SD-1", "EveryAcceptedWorkEndsOnce",
                           f"{work} cancelled, but nothing cancelled {core.name} (no dispose, "
                           f"no expired timeout, no runtime end)")
        if rec.phase == RUNNING:
            if work in world.releasing:
                raise _ProblemError("D-11", "EveryAcceptedWorkEndsOnce", f"{work} ended twice")
            if core.current is not rec:
                raise _ProblemError("SE-1.1", "OneTurnPerOwner", f"{work} cancelled off its turn")
            # written on its turn, like finished: the queue ends it just after
            self._end_claim(world, info)
            world.releasing[work] = CANCELLED
        elif rec.phase == QUEUED:
            core.cancel(rec)
            self._end_claim_cancelled(world, info)
        else:
            raise _ProblemError("D-11", "EveryAcceptedWorkEndsOnce", f"{work} ended twice")

    def _end_claim_cancelled(self, world: _World, info: Submission) -> None:
        """A SpotWide turn that never started was cancelled: its Actor's record ends too
        (one outcome, D-21)."""
        if info.moved and info.work in world.turns:
            actor = world.cores[info.route.admit]
            rec = world.recs[info.work]
            if actor.current is rec:
                actor.finish(rec, CANCELLED)
                _leave(actor)
            elif rec.phase != DONE:
                actor.cancel(rec)


def _problem(exc: BaseException) -> _ProblemError:
    """The explanation of an error that made an event illegal in a world."""
    if isinstance(exc, _ProblemError):
        return exc
    if isinstance(exc, ZLinkProtocolError):
        return _ProblemError(exc.rule, None, str(exc))
    raise exc  # an admission refused outside ``accepted``: a bug of this module


def _no_lost_wakeup(world: _World, *, single_resource: bool = False,
                    held: frozenset[str] = frozenset()) -> None:
    """After a settle: every queue with a ready item has a turn holder (``NoLostWakeup``).

    Which of two failures it was, the log tells by what else held a turn. When no work
    held any turn, nothing could have kept a posted drain from running: no drain was
    posted (SE-6.5, a lost wake-up). When works of other owners held their turns (parked
    at gates, waits or calls), a drain was posted and did not run: those owners kept it
    waiting, although owners are independent (SE-4.2); a runtime that runs works on a
    bounded pool starves here when every thread is held, which is said unless the
    runtime declared one single execution resource (``single_execution_resource``)."""
    # A held queue (capability held_steps) rests wherever its next step waits for its
    # command: its ready items wait for that, not for a lost drain.
    stuck = [c for name, c in world.cores.items()
             if c.has_ready() and c.current is None and world.owner_of[name] not in held]
    if not stuck:
        return
    core = stuck[0]
    waiting = ", ".join(r.name for s in Source for r in core.line(s))
    queued = {r.name for c in world.cores.values() for s in Source for r in c.line(s)}
    # A SpotWide Actor queue's current record whose execution turn still waits on the
    # Spot queue holds a claim, not a thread: it is not a parked work.
    holding = sorted((c.current.name, c.name) for c in world.cores.values()
                     if c.current is not None and c is not core
                     and c.current.name not in queued)
    if not holding:
        raise _ProblemError(
            "SE-6.5", "NoLostWakeup",
            f"settle answered while {waiting} waited on {core.name} and nothing held its "
            f"turn: no drain was posted (no work held any turn, so nothing could have "
            f"kept a posted drain from running)")
    parked = ", ".join(f"{work} on {owner}" for work, owner in holding)
    text = (f"settle answered while {waiting} waited on {core.name} and nothing held its "
            f"turn: a drain was posted and did not run while {parked} held their turns "
            f"(owners are independent: another owner's parked work must not keep this "
            f"one waiting)")
    if not single_resource:
        text += (f"; a runtime that runs works on a bounded pool may starve here: "
                 f"{len(holding)} parked work(s) can hold every thread")
    raise _ProblemError("SE-4.2", "NoLostWakeup", text)


def replay_entries(entries: Sequence[tuple[str, Mapping[str, Any]]], *,
                   single_resource: bool = False) -> ModelVerdict:
    """Replay one case's log entries (``("sent", command)`` and ``("received", event or
    reply)``, in order) through the model. ``single_resource``: the runtime declared one
    execution resource for every owner (it changes only how a lost wake-up is told)."""
    return _Replay(entries, single_resource=single_resource).run()


def check_model(log: CaseLog, *, single_resource: bool = False) -> ModelVerdict:
    """The model's verdict on one case's log."""
    return replay_entries(log.entries, single_resource=single_resource)
