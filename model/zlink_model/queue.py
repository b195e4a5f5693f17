"""The protocol core of one serial execution queue (SE-5, SE-6).

Theory of operation
===================

A serial queue runs the works submitted to one owner one at a time. This module owns
every rule of that: it holds the whole state of one queue and changes it only through
the named transitions below. Each transition checks its guard (raising
``ZLinkProtocolError`` naming the rule when the guard does not hold), changes the state
in one step and reports the event it caused to the observer, if one is attached. Time
is an argument; nothing here reads a clock, starts a thread or touches asyncio. A shell
(``zlink_reference._shell``) calls the transitions in the order its runtime produces
them; the checkers call the same transitions directly.

The transitions, with their TLA+ names (``models/SerialQueue.tla``) and trace events:

=============  ============  ==========================================================
core method    TLA+ action   what happens
=============  ============  ==========================================================
admit          Admit         capacity check, sequence number, insertion and the
                             drain-scheduled flag, as one step (SE-6.3, SE-6.5)
(rejection)    Reject        a refused submission: nothing changes but the event
transfer       Transfer      a SpotWide execution turn placed by an Actor queue; a
                             move of already-accepted work, never refused (SE-4.5)
enter_drain    EnterDrain    the posted drain starts a slice: scheduled -> draining
take_next      TakeNext      the next item gets the turn: barrier-next first, then
                             lifecycle within the burst limit, then application
finish         Finish        the turn holder ended (completed, failed or cancelled
                             on its turn); its reservation is released (SE-5.2)
yield_turn     YieldTurn     the turn holder waits on an external call and gives the
                             turn back; it stays reserved (SE-6.7)
requeue        Requeue       the external call of a suspended work is done: its
                             resume permit queues again at the tail of its lane
cancel         Cancel        a work that does not hold the turn ends without running
                             further (disposal); its reservation is released
end_slice      EndSlice      the time budget is used: leave the drain and, if work
                             is ready, schedule the next slice (SE-6.4, SE-6.6)
exit_drain     ExitDrain     nothing is ready: leave the drain
close          Close         no new submissions; accepted work still finishes
=============  ============  ==========================================================

The plain lane (``vocabulary.PLAIN_TRANSITIONS``). A work submitted without a handle (the
shell's ``post``) gets no record: the work itself waits in the application line. Two
transitions serve it, each the general one restricted to that case and held equal to it
by a property test (``tests/core/test_plain_lane.py``): ``admit_plain`` is ``admit`` of
application work at the fixed reservation (the same capacity rule, sequence number and
drain flag), ``finish_plain`` is ``finish`` of such a work. ``take_next`` and
``next_step`` give the turn to a plain work as to a record; ``next_plain`` is the drain's
step through a run of them (``finish_plain``, then the ``take_next`` of the next plain
work while one heads the application line alone), also held to the general path. They
exist on untraced queues only (``admit_plain`` refuses a queue with an observer), so a
trace, its validation and the TLA+ models only ever see records. Whatever must see records (the
disposals, ``live_records``, ``line``, ``copy``) first needs ``promote_plain``, which
turns every plain work into a record in place (the shell supplies the record), and is
refused while one waits; ``promote_current`` does the same for the turn holder alone (a
posted work that turned out to be a coroutine).

Flags (SE-6.5): ``drain_scheduled`` is set by the step that makes an idle queue busy
(``admit``, ``transfer``, ``requeue``, or ``end_slice`` with work left) and by nothing
else; whoever sets it must post one drain, outside any lock. ``enter_drain`` turns it
into ``draining``. So at most one drain is ever scheduled or running, and ready work is
never left without one (the invariants ``NoDoubleDrain`` and ``NoLostWakeup``).

Lanes (decisions D-1, D-2 in ``specs/decisions.md``): the application lane, the
lifecycle lane, and the barrier-next line, which is application work placed ahead of
the application lane (it reserves in the application lane). A resume permit goes to the
tail of its work's own lane, is never refused and reserves nothing new: the work kept
its reservation while suspended.

Checkers only: ``QueueCore.copy`` (an independent copy of the whole state, for a
checker that follows several possible states, ``zlink_model.engine``) and one model-only
step, ``take_next_ahead_of`` (``take_next`` as it was before admissions a runtime
reported after it). They are no transitions of the protocol: no TLA+ action, no trace
event of their own, and no runtime calls them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable
from typing import Any, Final, Generic, NoReturn, Self, TypeVar, cast

from .errors import RejectReason, ZLinkClosedError, ZLinkProtocolError, ZLinkRejectedError
from .policy import ZLinkExecutionLanePolicy
from .rules import (
    APPLICATION_LANE,
    LIFECYCLE_LANE,
    Source,
    admission_verdict,
    reservation_bytes,
    select_next,
    slice_expired,
)
from .vocabulary import (
    ADMIT,
    CANCEL,
    CLOSE,
    DISPOSE,
    DISPOSE_AFTER_TIMEOUT,
    DISPOSE_SAFELY,
    DRAIN_TRANSITIONS,
    END_SLICE,
    ENTER_DRAIN,
    EXIT_DRAIN,
    EXPIRE_TIMEOUT,
    FINISH,
    OUTCOMES,
    PHASES,
    REJECT,
    REQUEUE,
    SURVIVE_CANCEL,
    TAKE_NEXT,
    TRANSFER,
    WORK_TRANSITIONS,
    YIELD_TURN,
)
from .vocabulary import EVENTS as VOCABULARY_EVENTS

__all__ = [
    "CANCELLED",
    "COMPLETED",
    "DONE",
    "DRAIN_TRANSITIONS",
    "EVENTS",
    "FAILED",
    "LANE_NAMES",
    "MODE_CANCELLED",
    "MODE_NAMES",
    "MODE_OPEN",
    "MODE_SAFELY",
    "MODE_TIMEOUT",
    "OUTCOME_NAMES",
    "PHASE_NAMES",
    "QUEUED",
    "REQUEUED",
    "RUNNING",
    "SOURCE_NAMES",
    "SUSPENDED",
    "WORK_TRANSITIONS",
    "Observer",
    "QueueConfig",
    "QueueCore",
    "R",
    "WorkRecord",
    "drain_state",
    "is_plain",
]

# Phases of a work. A work is live from admission until DONE.
QUEUED: Final = 0  # waiting in a lane, never started
RUNNING: Final = 1  # holds the turn
SUSPENDED: Final = 2  # gave the turn back; its external call is pending
REQUEUED: Final = 3  # its resume permit waits in a lane
DONE: Final = 4
PHASE_NAMES: Final = tuple(p.core for p in PHASES)  # indexed by the constants above

# Outcomes: every accepted work ends in exactly one.
COMPLETED: Final = 0
FAILED: Final = 1
CANCELLED: Final = 2
OUTCOME_NAMES: Final = tuple(o.core for o in OUTCOMES)  # indexed by the constants above

LANE_NAMES: Final = ("application", "lifecycle")
# Every event a core emits: the transitions' names (zlink_model.vocabulary).
EVENTS: Final = VOCABULARY_EVENTS

# Scope modes (SD-1): how the queue, as a scope, was shut.
MODE_OPEN: Final = 0
MODE_SAFELY: Final = 1  # dispose_safely: live works became zombies
MODE_TIMEOUT: Final = 2  # dispose_after_timeout: closed, the timer runs
MODE_CANCELLED: Final = 3  # dispose, or the timeout expired: live works being cancelled
MODE_NAMES: Final = ("open", "safely", "timeout", "cancelled")
SOURCE_NAMES: Final = ("barrier", "lifecycle", "application")

def drain_state(core: QueueCore[Any]) -> str:
    """The drain state of ``core``, as named in ``DRAIN_TRANSITIONS``."""
    if core.draining:
        return "turn" if core.current is not None else "draining"
    return "scheduled" if core.drain_scheduled else "idle"


Observer = Callable[[str, str, dict[str, object]], None]
"""Receives (queue name, event name, fields) for every transition, when attached."""


class WorkRecord:
    """One accepted work as the core sees it. Shells subclass it to carry the callable
    and the result, so an admission allocates one object. The core sets every field
    below when it inserts the record; nothing reads them before.

    The fields are the core's accounting: the core writes them in private slots, and
    the public names are read-only views of those slots. A shell hands its records out
    as handles, so an assignment such as ``handle.lane = 1`` must not reach the counts
    (SE-6.3, D-23): it raises ``AttributeError``. Reading through a view costs a call;
    the core, on the hot path, uses the slots directly."""

    __slots__ = ("_barrier", "_lane", "_nbytes", "_phase", "_resumes", "_seq", "_wid",
                 "_zombie")

    _wid: int  # admission sequence number: the work's identity in this queue
    _seq: int  # sequence number of its current place in line
    _lane: int
    _barrier: bool
    _nbytes: int  # its reservation
    _phase: int
    _resumes: int  # how many resume permits it queued; > 0 means a take is a resume
    _zombie: bool

    def __init__(self) -> None:
        # Subclasses on a hot path may skip this: the core sets every field at
        # insertion, and the guards' messages do not assume them.
        self._wid = self._seq = -1
        self._lane = APPLICATION_LANE
        self._barrier = self._zombie = False
        self._nbytes = self._resumes = 0
        self._phase = QUEUED

    @property
    def wid(self) -> int:
        """Admission sequence number: the work's identity in this queue."""
        return self._wid

    @property
    def seq(self) -> int:
        """Sequence number of its current place in line."""
        return self._seq

    @property
    def lane(self) -> int:
        """The lane it reserves in (application or lifecycle)."""
        return self._lane

    @property
    def barrier(self) -> bool:
        """Whether it was admitted barrier-next."""
        return self._barrier

    @property
    def nbytes(self) -> int:
        """Its reservation, in bytes."""
        return self._nbytes

    @property
    def phase(self) -> int:
        """Where it is: queued, running, suspended, requeued or done."""
        return self._phase

    @property
    def resumes(self) -> int:
        """How many resume permits it queued; above zero, a take is a resume."""
        return self._resumes

    @property
    def zombie(self) -> bool:
        """Whether a disposal left it running as a zombie (SD-3)."""
        return self._zombie

    def copy(self) -> Self:
        """A new record of the same class with the same core fields (for a checker's
        copy of a core, ``QueueCore.copy``). A subclass with fields of its own that a
        copy must keep extends this (``new = super().copy()``, then its fields)."""
        cls = type(self)
        new = cls.__new__(cls)
        new._wid = self._wid
        new._seq = self._seq
        new._lane = self._lane
        new._barrier = self._barrier
        new._nbytes = self._nbytes
        new._phase = self._phase
        new._resumes = self._resumes
        new._zombie = self._zombie
        return new


R = TypeVar("R", bound=WorkRecord)
"""The record type of a core: ``WorkRecord`` or the subclass its user admits (a shell's
handles, a checker's labelled records). A core gives back, in its lines, its turn and
its results, exactly the records it was given."""


def _wid(rec: WorkRecord) -> object:
    return getattr(rec, "wid", "?")


def is_plain(item: object) -> bool:
    """Whether an item of a line (or the turn holder) is a plain work: one admitted by
    ``admit_plain``, which has no record."""
    return not isinstance(item, WorkRecord)


class QueueConfig:
    """What many queues of one owner share: the policy (with the numbers the hot path
    needs, read once), the budget in clock units, whether Yield exists, and the
    observer. Shared so that an idle queue stays small."""

    __slots__ = (
        "app_byte_cap",
        "app_count_cap",
        "budget",
        "burst_limit",
        "fixed_reservation",
        "life_byte_cap",
        "life_count_cap",
        "observer",
        "policy",
        "yield_allowed",
    )

    def __init__(
        self,
        policy: ZLinkExecutionLanePolicy,
        *,
        units_per_ms: float = 1.0,
        yield_allowed: bool = True,
        observer: Observer | None = None,
    ) -> None:
        self.policy = policy
        # The budget in the clock's own units, so comparisons stay exact on an
        # integer virtual clock.
        self.budget: float = policy.owner_time_budget_ms * units_per_ms
        self.yield_allowed = yield_allowed
        self.observer = observer
        self.app_count_cap = policy.application_message_capacity
        self.app_byte_cap = policy.application_byte_capacity
        self.life_count_cap = policy.lifecycle_message_capacity
        self.life_byte_cap = policy.lifecycle_byte_capacity
        self.burst_limit = policy.lifecycle_burst_limit
        self.fixed_reservation = reservation_bytes(0, policy.fixed_work_byte_cost)


class QueueCore(Generic[R]):
    """State and transitions of one serial queue. Not thread-safe by itself: a shell
    that lets several threads submit holds one lock around each transition, which is
    what makes admission one critical section (SE-6.3).

    Lines (``app``, ``life``, ``barrier``) and the suspended set exist only while they
    hold something; an idle queue keeps nothing but counters and flags.

    Generic in its record type ``R`` (``QueueCore[MyRecord]``): what goes in as an
    ``R`` comes out as one. Annotate rather than subscript the constructor call
    (``core: QueueCore[H] = QueueCore(config)``): a subscripted call is slower.

    Besides the transitions, two members serve checkers only, never a runtime:
    ``copy`` and the model-only step ``take_next_ahead_of``.
    """

    __slots__ = (
        "app",
        "app_bytes",
        "app_count",
        "barrier",
        "closed",
        "config",
        "drain_scheduled",
        "draining",
        "life",
        "life_bytes",
        "life_count",
        "mode",
        "name",
        "next_seq",
        "slice_started_at",
        "streak",
        "suspended",
        "turn_holder",
        "zombies",
    )

    def __init__(self, config: QueueConfig, name: str = "queue") -> None:
        # The flags first: a compiled core lays its fields out in the order they are
        # first assigned, and the three one-byte flags then share the word after its
        # header's bitmap instead of taking a padded word each (16 bytes per queue).
        self.drain_scheduled = False
        self.draining = False
        self.closed = False
        self.config = config
        self.name = name
        self.app: deque[R] | None = None
        self.life: deque[R] | None = None
        self.barrier: deque[R] | None = None
        self.app_count = 0
        self.app_bytes = 0
        self.life_count = 0
        self.life_bytes = 0
        self.next_seq = 0
        # The turn holder: an ``R``, or a plain work (``admit_plain``) on an untraced
        # queue; typed Any so that a compiled core does not check it for a record.
        # ``current`` is the typed view of it.
        self.turn_holder: Any = None
        self.slice_started_at: float = 0.0  # meaningful only while draining
        self.streak = 0
        self.suspended: set[R] | None = None
        self.mode = MODE_OPEN  # scope mode (SD-1)
        self.zombies = 0  # live works marked zombie (SD-2)

    @property
    def policy(self) -> ZLinkExecutionLanePolicy:
        """The injected limits (SE-6.1)."""
        return self.config.policy

    @property
    def current(self) -> R | None:
        """The work holding the turn, if any. While a plain work (``admit_plain``) holds
        it, this is that work (no record): read ``turn_holder``, typed Any, where that
        can happen (a compiled core checks this property's type)."""
        return self.turn_holder  # type: ignore[no-any-return]

    @current.setter
    def current(self, rec: R | None) -> None:
        self.turn_holder = rec

    # ------------------------------------------------------------------ queries
    def has_ready(self) -> bool:
        """Some item (new work or resume permit) waits for the turn."""
        return bool(self.barrier or self.life or self.app)

    def is_idle(self) -> bool:
        """No accepted work is unfinished: the queue is quiescent."""
        return self.app_count == 0 and self.life_count == 0

    def live(self) -> int:
        """Accepted, unfinished works (zombies included)."""
        return self.app_count + self.life_count

    def active(self) -> int:
        """Live works that are not zombies: what ``await_completion`` waits for (SD-3)."""
        return self.app_count + self.life_count - self.zombies

    def reserved_of(self, lane: int) -> tuple[int, int]:
        """(count, bytes) reserved in one lane."""
        if lane == LIFECYCLE_LANE:
            return self.life_count, self.life_bytes
        return self.app_count, self.app_bytes

    def line(self, source: Source) -> tuple[R, ...]:
        """The items waiting in one line, head first (records only: refused while a
        plain work is live, see ``promote_plain``)."""
        self._require_records("line")
        found = (self.barrier, self.life, self.app)[source]
        return tuple(found) if found else ()

    def suspended_records(self) -> tuple[R, ...]:
        """Works that gave their turn back and wait on their external call."""
        return tuple(self.suspended) if self.suspended else ()

    def live_records(self) -> list[R]:
        """Every accepted, unfinished work: queued, running, suspended or requeued
        (records only: refused while a plain work is live, see ``promote_plain``)."""
        out = [*self.line(Source.BARRIER), *self.line(Source.LIFECYCLE)]
        out += [*self.line(Source.APPLICATION), *self.suspended_records()]
        if self.turn_holder is not None:
            out.append(self.turn_holder)
        return out

    # ------------------------------------------------------------ checkers only
    def copy(self, records: dict[R, R] | None = None) -> QueueCore[R]:
        """A faithful copy for a checker that follows several possible states at once
        (``zlink_model.engine``): the same counters, flags, scope mode and clock
        reading, and lines, turn and suspended set holding copies of the records
        (``WorkRecord.copy``) in the same order. The two evolve independently; only the
        configuration is shared (it is shared by design, observer included).

        ``records`` maps each original record to its copy, and is filled as records are
        copied: pass one dict to the copies of several cores, and look up there (or add,
        with ``rec.copy()``) the records you keep beside the cores, so that every record
        has exactly one copy."""
        self._require_records("copy")
        if records is None:
            records = {}
        get = records.get

        def rec(r: R) -> R:
            got = get(r)
            if got is None:
                got = records[r] = r.copy()
            return got

        # Through the constructor (a compiled core has no bare __new__), then every
        # field set below.
        new = type(self)(self.config, self.name)
        new.app = None if self.app is None else deque(map(rec, self.app))
        new.life = None if self.life is None else deque(map(rec, self.life))
        new.barrier = None if self.barrier is None else deque(map(rec, self.barrier))
        new.app_count = self.app_count
        new.app_bytes = self.app_bytes
        new.life_count = self.life_count
        new.life_bytes = self.life_bytes
        new.next_seq = self.next_seq
        new.drain_scheduled = self.drain_scheduled
        new.draining = self.draining
        new.turn_holder = None if self.turn_holder is None else rec(self.turn_holder)
        new.slice_started_at = self.slice_started_at
        new.streak = self.streak
        new.closed = self.closed
        new.suspended = None if self.suspended is None else set(map(rec, self.suspended))
        new.mode = self.mode
        new.zombies = self.zombies
        return new

    def take_next_ahead_of(self, later: Iterable[R], now: float) -> R:
        """Model-only step (a checker's, never a runtime's): ``take_next`` as it happened
        before the admission of ``later``. A checker that learns of admissions from
        reports may admit a work into this core before a take that the runtime, in
        fact, made first: a multi-threaded runtime can report the admission after the
        take. This step commutes those admissions past the take: the works of
        ``later`` leave their lines, the take chooses among the others (the ``take_next``
        of that state, with its guards, SE-6.6), and they go back to the tails of their
        lines in their order, each with the fresh sequence number its admission would
        have had then. Their reservations stay (each admission was judged once, and a
        take frees no room in a lane). Observed as ``take_next`` only.

        Each work of ``later`` must be queued, never started, in this core (SE-6.3: only
        a waiting admission can have come later); otherwise, or when ``take_next``
        itself is refused, ``ZLinkProtocolError`` with nothing changed."""
        self._require_records("take_next_ahead_of")
        moved = sorted(later, key=lambda r: r._seq)
        lines = (self.barrier, self.life, self.app)
        for rec in moved:
            source = (Source.BARRIER if rec._barrier else Source.LIFECYCLE
                      if rec._lane == LIFECYCLE_LANE else Source.APPLICATION)
            line = lines[source]
            if rec._phase != QUEUED or line is None or rec not in line:
                raise ZLinkProtocolError(
                    "take_next_ahead_of", "SE-6.3",
                    f"work {_wid(rec)} is not queued in {self.name}: only a work still "
                    f"waiting can have been admitted after the take")
        if not moved:
            return self.take_next(now)
        gone = set(moved)
        kept = tuple(None if line is None else deque(r for r in line if r not in gone)
                     for line in lines)
        self.barrier, self.life, self.app = (line or None for line in kept)
        try:
            taken = self.take_next(now)
        except ZLinkProtocolError:
            self.barrier, self.life, self.app = lines
            raise
        for rec in moved:
            seq = self.next_seq
            self.next_seq = seq + 1
            rec._wid = rec._seq = seq
            if rec._barrier:
                if self.barrier is None:
                    self.barrier = deque()
                self.barrier.append(rec)
            elif rec._lane == LIFECYCLE_LANE:
                if self.life is None:
                    self.life = deque()
                self.life.append(rec)
            else:
                if self.app is None:
                    self.app = deque()
                self.app.append(rec)
        return taken

    # --------------------------------------------------------------- transitions
    def admit(
        self,
        rec: R,
        lane: int = APPLICATION_LANE,
        payload_bytes: int = 0,
        barrier: bool = False,
    ) -> bool:
        """Admit one work, or raise ``ZLinkRejectedError`` with nothing changed.

        Capacity check, sequence number and insertion are this one step (SE-6.3); so is
        the drain-scheduled flag (SE-6.5). Returns True when this admission made the
        queue busy: the caller must then post exactly one drain, outside any lock.
        """
        config = self.config
        nbytes = (
            config.fixed_reservation if not payload_bytes
            else reservation_bytes(payload_bytes, config.policy.fixed_work_byte_cost)
        )
        return self._place(rec, lane, nbytes, barrier, True)

    def transfer(self, rec: R) -> bool:
        """Place a SpotWide execution turn from an Actor queue (SE-4.5, SE-5.3).

        The work was already accepted by its Actor queue, which holds its payload
        reservation; here it reserves only ``fixed_work_byte_cost`` in the application
        lane. A transfer moves accepted work, so it is never refused (decision D-6),
        not even after close. Returns True when the caller must post a drain.
        """
        return self._place(rec, APPLICATION_LANE, self.config.fixed_reservation, False, False)

    def _place(self, rec: R, lane: int, nbytes: int, barrier: bool, judged: bool) -> bool:
        # The capacity test is ``rules.admission_verdict(...) is None`` written out for
        # the hot path; the rule itself names the reason when it fails, and a property
        # test holds the two equal.
        config = self.config
        if lane == LIFECYCLE_LANE:
            if judged and (self.closed or self.life_count >= config.life_count_cap
                           or self.life_bytes + nbytes > config.life_byte_cap):
                self._reject(lane, nbytes, barrier)
            self.life_count += 1
            self.life_bytes += nbytes
            line = self.life
            if line is None:
                line = self.life = deque()
        else:
            if judged and (self.closed or self.app_count >= config.app_count_cap
                           or self.app_bytes + nbytes > config.app_byte_cap):
                self._reject(lane, nbytes, barrier)
            self.app_count += 1
            self.app_bytes += nbytes
            if barrier:
                line = self.barrier
                if line is None:
                    line = self.barrier = deque()
            else:
                line = self.app
                if line is None:
                    line = self.app = deque()
        seq = self.next_seq
        self.next_seq = seq + 1
        rec._wid = rec._seq = seq
        rec._lane = lane
        rec._barrier = barrier
        rec._nbytes = nbytes
        rec._phase = QUEUED
        rec._resumes = 0
        # Accepted work moved into a scope disposed safely (a SpotWide turn, a
        # session's final work) is a zombie there too (SD-2).
        zombie = rec._zombie = self.mode == MODE_SAFELY
        if zombie:
            self.zombies += 1
        line.append(rec)
        wake = not self.draining and not self.drain_scheduled
        if wake:
            self.drain_scheduled = True
        observer = config.observer
        if observer is not None:
            observer(self.name, ADMIT if judged else TRANSFER, {
                "work": seq, "pos": seq, "lane": LANE_NAMES[lane], "barrier": barrier,
                "bytes": nbytes, "wake": wake,
            })
        return wake

    def _reject(self, lane: int, nbytes: int, barrier: bool) -> NoReturn:
        config = self.config
        lifecycle = lane == LIFECYCLE_LANE
        verdict = admission_verdict(
            self.closed, lifecycle,
            self.life_count if lifecycle else self.app_count,
            self.life_bytes if lifecycle else self.app_bytes,
            nbytes,
            config.life_count_cap if lifecycle else config.app_count_cap,
            config.life_byte_cap if lifecycle else config.app_byte_cap,
        )
        if verdict is None:  # pragma: no cover - the property test keeps this unreachable
            raise ZLinkProtocolError(ADMIT, "SE-6.3", "admission rules disagree")
        observer = config.observer
        if observer is not None:
            observer(self.name, REJECT, {
                "lane": LANE_NAMES[lane], "barrier": barrier, "bytes": nbytes,
                "reason": verdict.value,
            })
        if verdict is RejectReason.CLOSED:
            raise ZLinkClosedError(self.name)
        raise ZLinkRejectedError(verdict, self.name)

    def enter_drain(self, now: float) -> None:
        """The posted drain starts a slice (SE-6.6: enter the drain gate)."""
        if not self.drain_scheduled or self.draining:
            raise ZLinkProtocolError(
                ENTER_DRAIN, "SE-6.5", "no drain is scheduled or one is already draining"
            )
        self.drain_scheduled = False
        self.draining = True
        self.slice_started_at = now
        observer = self.config.observer
        if observer is not None:
            observer(self.name, ENTER_DRAIN, {"now": now})

    def next_step(
        self, now: float, prev: Any = None, outcome: int = COMPLETED
    ) -> Any:
        """The drain loop's step after each turn: ``finish`` the previous turn holder
        (if given), then end the slice, leave the drain, or take the next item.
        Returns the item given the turn (an ``R``, or a plain work on an untraced
        queue: typed Any for that), or None when the drain left (after ``end_slice`` or
        ``exit_drain``).

        The branch for "only application work is ready" is ``take_next`` with the
        answer ``rules.select_next`` gives for that case (APPLICATION, streak 0)
        written in; a property test holds the two equal. A plain ``prev`` ends by
        ``finish_plain``, and a plain head gets the turn as ``take_next`` gives it.
        """
        config = self.config
        if prev is not None:
            if isinstance(prev, WorkRecord):
                self.finish(prev, outcome)  # type: ignore[arg-type]
            elif self.turn_holder is prev:
                # finish_plain written out for the hot path (the property test holds
                # next_step to finish_plain's effect).
                self.turn_holder = None
                self.app_count -= 1
                self.app_bytes -= config.fixed_reservation
            else:
                self.finish_plain(prev, outcome)  # refused: not the turn holder
        if now - self.slice_started_at >= config.budget:  # rules.slice_expired
            self.end_slice(now)
            return None
        app: deque[Any] | None = self.app  # Any: it may hold plain works
        if app is not None and self.life is None and self.barrier is None and self.draining \
                and self.turn_holder is None:
            rec = app.popleft()
            if not app:
                self.app = None
            self.streak = 0
            if not isinstance(rec, WorkRecord):  # a plain work: no record, no observer
                self.turn_holder = rec
                return rec
            resume = rec._phase == REQUEUED
            rec._phase = RUNNING
            self.turn_holder = rec
            observer = config.observer
            if observer is not None:
                observer(self.name, TAKE_NEXT, {
                    "work": rec._wid, "pos": rec._seq, "source": "application",
                    "resume": resume, "streak": 0, "now": now,
                })
            return rec
        if app is None and self.life is None and self.barrier is None:
            self.exit_drain(now)
            return None
        return self._take_next(now)

    def take_next(self, now: float) -> R:
        """Give the turn to the next item (SE-6.6). A resume permit gives it back to its
        suspended work (SE-6.7)."""
        return self._take_next(now)  # type: ignore[no-any-return]

    def _take_next(self, now: float) -> Any:
        # take_next, which may also give the turn to a plain work (``next_step`` on an
        # untraced queue): typed Any so that a compiled core does not check for a record.
        if not self.draining or self.turn_holder is not None:
            raise ZLinkProtocolError(TAKE_NEXT, "SE-6.6", "not draining, or a turn is held")
        config = self.config
        if slice_expired(now, self.slice_started_at, config.budget):
            raise ZLinkProtocolError(TAKE_NEXT, "SE-6.4", "the slice's time budget is used")
        app: deque[Any] | None = self.app  # Any: it may hold plain works
        life, barrier = self.life, self.barrier
        source, self.streak = select_next(
            len(barrier) if barrier else 0,
            len(life) if life else 0,
            len(app) if app else 0,
            self.streak,
            config.burst_limit,
        )
        rec: Any
        if source is Source.APPLICATION:
            rec = app.popleft()  # type: ignore[union-attr]
            if not app:
                self.app = None
        elif source is Source.LIFECYCLE:
            rec = life.popleft()  # type: ignore[union-attr]
            if not life:
                self.life = None
        elif source is Source.BARRIER:
            rec = barrier.popleft()  # type: ignore[union-attr]
            if not barrier:
                self.barrier = None
        else:
            raise ZLinkProtocolError(TAKE_NEXT, "SE-6.6", "nothing is ready")
        if is_plain(rec):  # a plain work (untraced queues only)
            self.turn_holder = rec
            return rec
        resume = rec._phase == REQUEUED
        rec._phase = RUNNING
        self.turn_holder = rec
        observer = config.observer
        if observer is not None:
            observer(self.name, TAKE_NEXT, {
                "work": rec._wid, "pos": rec._seq, "source": SOURCE_NAMES[source],
                "resume": resume, "streak": self.streak, "now": now,
            })
        return rec

    def finish(self, rec: R, outcome: int = COMPLETED) -> None:
        """The turn holder ended; release its reservation (SE-5.2)."""
        if self.turn_holder is not rec:
            raise ZLinkProtocolError(
                FINISH, "SE-6.7", f"work {_wid(rec)} ends while it does not hold the turn"
            )
        self.turn_holder = None
        self._release(rec)
        observer = self.config.observer
        if observer is not None:
            observer(self.name, FINISH, {"work": rec._wid, "outcome": OUTCOME_NAMES[outcome]})

    def _release(self, rec: R) -> None:
        rec._phase = DONE
        if rec._zombie:
            self.zombies -= 1  # a finished zombie leaves the scope (SD-2)
        if rec._lane == LIFECYCLE_LANE:
            self.life_count -= 1
            self.life_bytes -= rec._nbytes
        else:
            self.app_count -= 1
            self.app_bytes -= rec._nbytes

    # ------------------------------------------------------------- plain lane
    def admit_plain(self, work: object) -> bool:
        """``admit`` of application work at the fixed reservation, for a work that gets
        no record (the shell's ``post``): the same capacity rule (SE-6.3, SE-5.1, with
        the same rejection), sequence number and drain flag (SE-6.5); the work itself
        waits in the application line. Returns True when the caller must post a drain.

        Refused on a traced queue (an observer is attached), whose every work must be
        a record its trace can name: there the shell admits with ``admit``."""
        config = self.config
        if config.observer is not None or isinstance(work, WorkRecord):
            raise ZLinkProtocolError(
                "admit_plain", "SE-6.3", "a traced queue, or a record, takes admit")
        nbytes = config.fixed_reservation
        # ``rules.admission_verdict(...) is None`` written out, as in ``_place``; the
        # property test holds admit_plain to admit.
        if self.closed or self.app_count >= config.app_count_cap \
                or self.app_bytes + nbytes > config.app_byte_cap:
            self._reject(APPLICATION_LANE, nbytes, False)
        self.app_count += 1
        self.app_bytes += nbytes
        self.next_seq += 1
        line = self.app
        if line is None:
            line = self.app = deque()
        line.append(work)  # type: ignore[arg-type]  # a plain work, see is_plain
        if self.draining or self.drain_scheduled:
            return False
        self.drain_scheduled = True
        return True

    def finish_plain(self, work: object, outcome: int = COMPLETED) -> None:
        """``finish`` of a plain work holding the turn: it gives back the fixed
        reservation of the application lane (SE-5.2). ``outcome`` is the shell's to
        report (a plain work has no handle and no trace event); a plain work is never
        a zombie (the disposals promote plain works first)."""
        if self.turn_holder is not work or isinstance(work, WorkRecord):
            raise ZLinkProtocolError(
                "finish_plain", "SE-6.7", "a plain work ends while it does not hold the turn")
        self.turn_holder = None
        self.app_count -= 1
        self.app_bytes -= self.config.fixed_reservation

    def next_plain(self, now: float, prev: Any) -> Any:
        """The drain's step after a plain work completed, for a run of plain works:
        ``finish_plain`` of ``prev`` (the turn holder), then, when the slice has time
        left and the next item is a plain work at the head of the application line with
        no barrier-next or lifecycle item ready, the ``take_next`` that gives it the turn
        (``rules.select_next``'s answer for that case, as in ``next_step``). Returns that
        work, or None when only the turn was given back: the drain then goes on with
        ``next_step(now)``, which ends the slice, leaves the drain or takes a record.
        Written for the hot path; the property test holds it to ``next_step``."""
        if prev is None or self.turn_holder is not prev or isinstance(prev, WorkRecord):
            raise ZLinkProtocolError(
                "next_plain", "SE-6.7", "a plain work ends while it does not hold the turn")
        config = self.config
        self.app_count -= 1  # finish_plain
        self.app_bytes -= config.fixed_reservation
        app: deque[Any] | None = self.app  # Any: it holds plain works
        # A turn is held only while draining, so the drain is still held here.
        if app is None or self.life is not None or self.barrier is not None \
                or now - self.slice_started_at >= config.budget:  # rules.slice_expired
            self.turn_holder = None
            return None
        work = app[0]
        if isinstance(work, WorkRecord):
            self.turn_holder = None
            return None
        app.popleft()
        if not app:
            self.app = None
        # streak is 0 already: the plain turn holder was taken from the application
        # line, which set it (select_next), and nothing since took a lifecycle item.
        self.turn_holder = work
        return work

    def promote_plain(self, make: Callable[[Any], R]) -> int:
        """Turn every live plain work into a record, in place: the queued ones keep
        their places in the application line and the turn holder keeps the turn.
        ``make(work)`` builds the record (the shell's handle); the core sets its fields
        as ``admit`` would have, with a fresh sequence number. Every place in the line
        is numbered again in line order, so the line stays in sequence order
        (``FifoWithinLane``). Returns how many works were promoted. Nothing about the
        lane's counts changes: each plain work already held its reservation."""
        promoted = 1 if self.promote_current(make) is not None else 0
        app = self.app
        items: deque[Any] | None = app
        if items is None or all(isinstance(r, WorkRecord) for r in items):
            return promoted
        fixed = self.config.fixed_reservation
        line: deque[R] = deque()
        for item in items:
            seq = self.next_seq
            self.next_seq = seq + 1
            if isinstance(item, WorkRecord):
                rec = item
            else:
                rec = make(item)
                rec._wid = seq
                rec._lane = APPLICATION_LANE
                rec._barrier = rec._zombie = False
                rec._nbytes = fixed
                rec._phase = QUEUED
                rec._resumes = 0
                promoted += 1
            rec._seq = seq
            line.append(cast(R, rec))
        self.app = line
        return promoted

    def promote_current(self, make: Callable[[Any], R]) -> R | None:
        """Turn the turn holder into a record if it is a plain work (a posted work that
        returned a coroutine needs a handle to wait on); returns the new record, or
        None when the turn holder is not plain."""
        cur = self.turn_holder
        if cur is None or isinstance(cur, WorkRecord):
            return None
        rec = make(cur)
        seq = self.next_seq
        self.next_seq = seq + 1
        rec._wid = rec._seq = seq
        rec._lane = APPLICATION_LANE
        rec._barrier = rec._zombie = False
        rec._nbytes = self.config.fixed_reservation
        rec._phase = RUNNING
        rec._resumes = 0
        self.turn_holder = rec
        return rec

    def has_plain(self) -> bool:
        """Some plain work is live (queued, or holding the turn)."""
        if self.turn_holder is not None and not isinstance(self.turn_holder, WorkRecord):
            return True
        app = self.app
        items: deque[Any] | None = app
        return items is not None and not all(isinstance(r, WorkRecord) for r in items)

    def _require_records(self, op: str) -> None:
        if self.has_plain():
            raise ZLinkProtocolError(
                op, "SE-6.3", "plain works are live: promote_plain them first")

    def yield_turn(self, rec: R) -> None:
        """The turn holder waits on an external call and gives the turn back (SE-6.7);
        it keeps its reservation (decision D-2)."""
        if self.turn_holder is not rec:
            raise ZLinkProtocolError(
                YIELD_TURN, "SE-6.7", f"work {_wid(rec)} yields a turn it does not hold"
            )
        if not self.config.yield_allowed:
            # The shell checks first and raises the caller's error; a second line here.
            raise ZLinkProtocolError(YIELD_TURN, "SE-4.1", "this owner offers no Yield")
        self.turn_holder = None
        rec._phase = SUSPENDED
        if self.suspended is None:
            self.suspended = set()
        self.suspended.add(rec)
        observer = self.config.observer
        if observer is not None:
            observer(self.name, YIELD_TURN, {"work": rec._wid})

    def _unsuspend(self, rec: R) -> None:
        suspended = self.suspended
        if suspended is not None:
            suspended.discard(rec)
            if not suspended:
                self.suspended = None

    def requeue(self, rec: R) -> bool:
        """A suspended work queues its resume permit (SE-6.7, decision D-1): a fresh
        sequence number at the tail of its own lane, no capacity check, no new
        reservation. Returns True when the caller must post a drain."""
        if rec._phase != SUSPENDED:
            raise ZLinkProtocolError(REQUEUE, "SE-6.7", f"work {_wid(rec)} is not suspended")
        self._unsuspend(rec)
        seq = self.next_seq
        self.next_seq = seq + 1
        rec._seq = seq
        rec._phase = REQUEUED
        rec._resumes += 1
        if rec._lane == LIFECYCLE_LANE:
            if self.life is None:
                self.life = deque()
            self.life.append(rec)
        else:
            if self.app is None:
                self.app = deque()
            self.app.append(rec)
        wake = not self.draining and not self.drain_scheduled
        if wake:
            self.drain_scheduled = True
        observer = self.config.observer
        if observer is not None:
            observer(self.name, REQUEUE, {"work": rec._wid, "pos": seq, "wake": wake})
        return wake

    def cancel(self, rec: R) -> None:
        """End a live work that does not hold the turn: queued, suspended or requeued
        (disposal). Its reservation is released; a queued one never starts."""
        phase = rec._phase
        if phase in (QUEUED, REQUEUED):
            if rec._barrier and phase == QUEUED:
                source = Source.BARRIER
            elif rec._lane == LIFECYCLE_LANE:
                source = Source.LIFECYCLE
            else:
                source = Source.APPLICATION
            line = (self.barrier, self.life, self.app)[source]
            if line is None or rec not in line:
                raise ZLinkProtocolError(CANCEL, "SD-1", f"work {_wid(rec)} is not in its lane")
            line.remove(rec)
            if not line:
                if source is Source.BARRIER:
                    self.barrier = None
                elif source is Source.LIFECYCLE:
                    self.life = None
                else:
                    self.app = None
        elif phase == SUSPENDED:
            self._unsuspend(rec)
        else:
            raise ZLinkProtocolError(
                CANCEL, "SD-1", f"work {_wid(rec)} is {PHASE_NAMES[phase]}, not cancellable here"
            )
        self._release(rec)
        observer = self.config.observer
        if observer is not None:
            observer(self.name, CANCEL, {"work": rec._wid, "phase": PHASE_NAMES[phase]})

    def end_slice(self, now: float) -> None:
        """The time budget is used (SE-6.4): leave the drain; if work is ready, schedule
        the next slice in the same step, so no submitter can schedule a second one."""
        if not self.draining or self.turn_holder is not None:
            raise ZLinkProtocolError(END_SLICE, "SE-6.6", "not draining, or a turn is held")
        if not slice_expired(now, self.slice_started_at, self.config.budget):
            raise ZLinkProtocolError(END_SLICE, "SE-6.4", "the time budget is not used yet")
        self.draining = False
        self.slice_started_at = 0.0
        reschedule = bool(self.barrier or self.life or self.app)
        self.drain_scheduled = reschedule
        observer = self.config.observer
        if observer is not None:
            observer(self.name, END_SLICE, {"now": now, "reschedule": reschedule})

    def exit_drain(self, now: float) -> None:
        """Nothing is ready: leave the drain (SE-6.6)."""
        if not self.draining or self.turn_holder is not None:
            raise ZLinkProtocolError(EXIT_DRAIN, "SE-6.6", "not draining, or a turn is held")
        if self.barrier or self.life or self.app:
            raise ZLinkProtocolError(EXIT_DRAIN, "SE-6.5", "work is ready; leaving would lose it")
        self.draining = False
        self.slice_started_at = 0.0
        observer = self.config.observer
        if observer is not None:
            observer(self.name, EXIT_DRAIN, {"now": now})

    def close(self) -> None:
        """No new submissions; accepted work still finishes (SE-6.2). Idempotent."""
        if self.closed:
            return
        self.closed = True
        observer = self.config.observer
        if observer is not None:
            observer(self.name, CLOSE, {})

    # ------------------------------------------------------------ disposal (SD)
    def dispose_safely(self) -> list[R]:
        """SD-1: close and cancel nothing; every live work becomes a zombie (active -1,
        zombie +1 each, SD-2) and keeps running in order. Returns the works marked now.
        Only an open scope can be disposed safely."""
        if self.mode != MODE_OPEN:
            raise ZLinkProtocolError(DISPOSE_SAFELY, "SD-1", "the scope is already disposed")
        self._require_records(DISPOSE_SAFELY)
        self.closed = True
        self.mode = MODE_SAFELY
        marked = [rec for rec in self.live_records() if not rec._zombie]
        for rec in marked:
            rec._zombie = True
        self.zombies += len(marked)
        observer = self.config.observer
        if observer is not None:
            observer(self.name, DISPOSE_SAFELY, {"zombies": len(marked)})
        return marked

    def dispose(self) -> tuple[list[R], list[R]]:
        """SD-1: close and cancel everything now. Works that never started end here,
        cancelled (``cancel``), and come back first; the live works returned second
        (running, suspended, requeued) are the shell's to cancel, on their own turn
        (D-8). Zombies are cancelled too."""
        if self.mode == MODE_CANCELLED:
            raise ZLinkProtocolError(DISPOSE, "SD-1", "the scope is already cancelled")
        self._require_records(DISPOSE)
        self.closed = True
        self.mode = MODE_CANCELLED
        observer = self.config.observer
        if observer is not None:
            observer(self.name, DISPOSE, {})
        return self._cancel_live()

    def survive_cancel(self, rec: R) -> bool:
        """SD-3a: a live work of a cancelled scope had its cancellation delivered and did
        not end within it (it suspended again). It becomes a zombie (active -1, zombie
        +1, SD-2), so waiting for active work no longer waits for it. Returns whether it
        was marked now (a zombie stays one; a work that ended is left alone)."""
        if self.mode != MODE_CANCELLED:
            raise ZLinkProtocolError(SURVIVE_CANCEL, "SD-1", "the scope was not cancelled")
        if rec._zombie or rec not in self.live_records():
            return False
        rec._zombie = True
        self.zombies += 1
        observer = self.config.observer
        if observer is not None:
            observer(self.name, SURVIVE_CANCEL, {"work": _wid(rec)})
        return True

    def dispose_after_timeout(self) -> None:
        """SD-1: close now; ``expire_timeout`` later cancels what is left. The shell
        owns the timer (none when nothing is live)."""
        if self.mode != MODE_OPEN:
            raise ZLinkProtocolError(
                DISPOSE_AFTER_TIMEOUT, "SD-1", "the scope is already disposed"
            )
        self.closed = True
        self.mode = MODE_TIMEOUT
        observer = self.config.observer
        if observer is not None:
            observer(self.name, DISPOSE_AFTER_TIMEOUT, {})

    def expire_timeout(self) -> tuple[list[R], list[R]]:
        """The timeout of ``dispose_after_timeout`` expired: cancel what is left, as
        ``dispose`` does."""
        if self.mode != MODE_TIMEOUT:
            raise ZLinkProtocolError(EXPIRE_TIMEOUT, "SD-1", "no disposal timeout is running")
        self._require_records(EXPIRE_TIMEOUT)
        self.mode = MODE_CANCELLED
        observer = self.config.observer
        if observer is not None:
            observer(self.name, EXPIRE_TIMEOUT, {})
        return self._cancel_live()

    def _cancel_live(self) -> tuple[list[R], list[R]]:
        ended = []
        for source in (Source.BARRIER, Source.LIFECYCLE, Source.APPLICATION):
            for rec in self.line(source):
                if rec._phase == QUEUED:
                    self.cancel(rec)
                    ended.append(rec)
        return ended, self.live_records()
