------------------------------ MODULE Disposal ------------------------------
(***************************************************************************)
(* Scope disposal and zombie work (SD-1 .. SD-3, decisions D-8, D-11).     *)
(*                                                                         *)
(* A scope is one serial queue and the works it accepted. Each accepted    *)
(* work is queued (never started), running (holds the turn), suspended     *)
(* (gave the turn back while its external call is pending), requeued (its  *)
(* resume permit waits in line) or done, and ends in exactly one outcome:  *)
(* completed, failed or cancelled.                                         *)
(*                                                                         *)
(* The three ways to shut the scope:                                       *)
(*  - Dispose: close and cancel everything now. Queued works never start   *)
(*    (Cancel ends each of them, cancelled). Suspended and requeued works  *)
(*    are marked: their pending external call is cut short, they requeue,  *)
(*    and the cancellation is delivered on their own turn (D-8). A turn    *)
(*    already running ends as it ends (a synchronous turn completes or     *)
(*    fails; one that reaches an await point is cancelled there).          *)
(*  - DisposeSafely: close and cancel nothing; every live work becomes a   *)
(*    zombie (active count -1, zombie count +1 each, SD-2). Zombies keep   *)
(*    running in order; a zombie that ends leaves the scope (zombie count  *)
(*    -1). A later Dispose cancels the zombies too (SD-5).                 *)
(*  - DisposeAfterTimeout: close now; the environment action               *)
(*    ExpireTimeout later cancels whatever is left, as Dispose does.       *)
(*  - SurviveCancel: a work of a cancelled scope had its cancellation      *)
(*    delivered on its own turn and did not end within it (it caught the   *)
(*    cancellation and waits again). It becomes a zombie (SD-3a): active   *)
(*    -1, zombie +1; it keeps running and ends later as any zombie does.   *)
(* Waiting (SD-3):                                                         *)
(*  - AwaitCompletion starts a wait that returns (AwaitCompletionReturns)  *)
(*    once no active work is left: zombies do not count.                   *)
(*  - AwaitAfterCancellation is an error unless the scope was disposed     *)
(*    first (any of the three calls); otherwise it waits for every live    *)
(*    work, zombies included (AwaitAfterCancellationReturns).              *)
(*                                                                         *)
(* Core transitions keep their names: Admit, Reject, TakeNext, Finish,     *)
(* YieldTurn, Requeue, Cancel, SurviveCancel; the core's Close is part of every disposal  *)
(* call (CloseScope). Environment actions: CallReturns (an external call   *)
(* returns) and ExpireTimeout.                                             *)
(*                                                                         *)
(* Precise definitions used by the invariants:                             *)
(*  - accepted: phase is neither "new" nor "rejected";                     *)
(*  - live: accepted and not done;                                         *)
(*  - active: live and not a zombie; the scope's counter `active` must     *)
(*    equal their number (AwaitCompletion reads that counter);             *)
(*  - ends[w]: how many times w ended (history), which must be 1 exactly   *)
(*    when w is done, with its outcome set then and only then.             *)
(*                                                                         *)
(* What is abstracted away, and why:                                       *)
(*  - The drain machinery, lanes and reservations (SerialQueue.tla checks  *)
(*    them): the queue is one FIFO line and one turn.                      *)
(*  - The application's error handler: AwaitAfterCancellation's report of  *)
(*    each zombie's error is the outcome recorded for that work.           *)
(*  - Nested scopes and the inherited dispose-safely flag (SD-4): one      *)
(*    scope shows the rules; inheritance is a constructor default.         *)
(*  - Real time: the timeout is an environment action.                     *)
(*                                                                         *)
(* This module states the specification only. The deliberately broken     *)
(* variants live in MCDisposal.tla and replace MarkZombies or MarkSurvivor *)
(* through their .cfg.                                                     *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Works,          \* work identities (positive integers), submitted in increasing order
    MaxYields,      \* [Works -> Nat]
    Disposals       \* which disposal calls this run may make:
                    \* SUBSET {"dispose", "safely", "timeout"}

NoWork == 0
Outcomes == {"completed", "failed", "cancelled"}

ASSUME /\ Works \subseteq Nat \ {0}
       /\ MaxYields \in [Works -> Nat]
       /\ Disposals \subseteq {"dispose", "safely", "timeout"}

VARIABLES
    line,           \* Seq(Works): queued works and resume permits, head first
    current,        \* the work holding the turn, or NoWork
    phase,          \* [Works -> Phases]
    outcome,        \* [Works -> Outcomes \cup {"none"}]
    cancelReq,      \* works whose cancellation is pending delivery
    zombie,         \* works marked zombie (SD-2)
    active,         \* the scope's active-work counter
    zombies,        \* the scope's zombie counter
    closed,         \* no new work (every disposal closes)
    mode,           \* "open", "safely", "timeout" (timer running), "cancelled"
    returned,       \* (environment) suspended works whose external call returned
    yields,         \* [Works -> Nat] (history)
    ends,           \* [Works -> Nat] (history): ending steps taken by each work
    acceptedAtClose,\* (history) the works accepted when the scope closed
    waitC,          \* AwaitCompletion: "idle", "waiting", "returned"
    waitZ           \* AwaitAfterCancellation: "idle", "waiting", "returned", "error"

vars == <<line, current, phase, outcome, cancelReq, zombie, active, zombies, closed,
          mode, returned, yields, ends, acceptedAtClose, waitC, waitZ>>

Phases == {"new", "rejected", "queued", "running", "suspended", "requeued", "done"}
LivePhases == {"queued", "running", "suspended", "requeued"}

Accepted == {w \in Works : phase[w] \notin {"new", "rejected"}}
Live == {w \in Works : phase[w] \in LivePhases}
ActiveWorks == Live \ zombie

NextWork ==
    LET open == {w \in Works : phase[w] = "new"}
    IN  IF open = {} THEN NoWork ELSE CHOOSE w \in open : \A v \in open : w <= v

Remove(s, x) == SelectSeq(s, LAMBDA y : y # x)

-----------------------------------------------------------------------------
Init ==
    /\ line = << >>
    /\ current = NoWork
    /\ phase = [w \in Works |-> "new"]
    /\ outcome = [w \in Works |-> "none"]
    /\ cancelReq = {}
    /\ zombie = {}
    /\ active = 0
    /\ zombies = 0
    /\ closed = FALSE
    /\ mode = "open"
    /\ returned = {}
    /\ yields = [w \in Works |-> 0]
    /\ ends = [w \in Works |-> 0]
    /\ acceptedAtClose = {}
    /\ waitC = "idle"
    /\ waitZ = "idle"

Admit ==
    LET w == NextWork IN
    /\ w # NoWork
    /\ ~closed
    /\ line' = Append(line, w)
    /\ phase' = [phase EXCEPT ![w] = "queued"]
    /\ active' = active + 1
    /\ UNCHANGED <<current, outcome, cancelReq, zombie, zombies, closed, mode,
                   returned, yields, ends, acceptedAtClose, waitC, waitZ>>

Reject ==
    LET w == NextWork IN
    /\ w # NoWork
    /\ closed
    /\ phase' = [phase EXCEPT ![w] = "rejected"]
    /\ UNCHANGED <<line, current, outcome, cancelReq, zombie, active, zombies,
                   closed, mode, returned, yields, ends, acceptedAtClose, waitC, waitZ>>

(* TakeNext: the head gets the turn. A queued work whose cancellation is    *)
(* pending never starts: Cancel ends it first.                              *)
TakeNext ==
    /\ current = NoWork
    /\ line # << >>
    /\ LET w == Head(line) IN
       /\ ~(phase[w] = "queued" /\ w \in cancelReq)
       /\ current' = w
       /\ line' = Tail(line)
       /\ phase' = [phase EXCEPT ![w] = "running"]
    /\ UNCHANGED <<outcome, cancelReq, zombie, active, zombies, closed, mode,
                   returned, yields, ends, acceptedAtClose, waitC, waitZ>>

\* The counters after w ends: a zombie leaves the zombie count, others the
\* active count.
Leave(w) ==
    /\ active' = IF w \in zombie THEN active ELSE active - 1
    /\ zombies' = IF w \in zombie THEN zombies - 1 ELSE zombies

(* Finish: the turn holder ends. Without a pending cancellation it          *)
(* completes or fails; with one it may also end cancelled (at an await      *)
(* point, on its own turn, D-8).                                            *)
Finish(w, o) ==
    /\ current = w
    /\ o \in IF w \in cancelReq THEN Outcomes ELSE {"completed", "failed"}
    /\ current' = NoWork
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ outcome' = [outcome EXCEPT ![w] = o]
    /\ ends' = [ends EXCEPT ![w] = @ + 1]
    /\ cancelReq' = cancelReq \ {w}
    /\ zombie' = zombie \ {w}
    /\ Leave(w)
    /\ UNCHANGED <<line, closed, mode, returned, yields, acceptedAtClose, waitC, waitZ>>

(* YieldTurn: the turn holder waits on an external call. A work whose       *)
(* cancellation is pending gets CancelledError at that await point instead   *)
(* (Finish with "cancelled").                                               *)
YieldTurn(w) ==
    /\ current = w
    /\ w \notin cancelReq
    /\ yields[w] < MaxYields[w]
    /\ current' = NoWork
    /\ phase' = [phase EXCEPT ![w] = "suspended"]
    /\ yields' = [yields EXCEPT ![w] = @ + 1]
    /\ UNCHANGED <<line, outcome, cancelReq, zombie, active, zombies, closed, mode,
                   returned, ends, acceptedAtClose, waitC, waitZ>>

(* Environment: the external call of a suspended work returns.              *)
CallReturns(w) ==
    /\ phase[w] = "suspended"
    /\ w \notin returned
    /\ returned' = returned \cup {w}
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, zombie, active, zombies,
                   closed, mode, yields, ends, acceptedAtClose, waitC, waitZ>>

(* Requeue: the resume permit queues at the tail; allowed after close.      *)
Requeue(w) ==
    /\ w \in returned
    /\ returned' = returned \ {w}
    /\ phase' = [phase EXCEPT ![w] = "requeued"]
    /\ line' = Append(line, w)
    /\ UNCHANGED <<current, outcome, cancelReq, zombie, active, zombies, closed, mode,
                   yields, ends, acceptedAtClose, waitC, waitZ>>

(* Cancel: a queued work whose cancellation is pending ends without ever    *)
(* starting.                                                                *)
Cancel(w) ==
    /\ phase[w] = "queued"
    /\ w \in cancelReq
    /\ line' = Remove(line, w)
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ outcome' = [outcome EXCEPT ![w] = "cancelled"]
    /\ ends' = [ends EXCEPT ![w] = @ + 1]
    /\ cancelReq' = cancelReq \ {w}
    /\ zombie' = zombie \ {w}
    /\ Leave(w)
    /\ UNCHANGED <<current, closed, mode, returned, yields, acceptedAtClose, waitC, waitZ>>

\* Closing, shared by the disposal calls: the close step remembers what had
\* been accepted, for NoWorkAcceptedAfterClose.
CloseScope ==
    /\ closed' = TRUE
    /\ acceptedAtClose' = IF closed THEN acceptedAtClose ELSE Accepted

\* Cancelling everything live: pending delivery for every live work, and the
\* pending external calls of suspended works are cut short (they requeue).
CancelAll ==
    /\ cancelReq' = cancelReq \cup Live
    /\ returned' = returned \cup {w \in Works : phase[w] = "suspended"}
    /\ mode' = "cancelled"

Dispose ==
    /\ "dispose" \in Disposals
    /\ mode # "cancelled"
    /\ CloseScope
    /\ CancelAll
    /\ UNCHANGED <<line, current, phase, outcome, zombie, active, zombies, yields,
                   ends, waitC, waitZ>>

\* Marking every live work a zombie (SD-2): each active work moves from the
\* active count to the zombie count, so AwaitCompletion no longer waits for it.
MarkZombies ==
    LET k == Cardinality(ActiveWorks) IN
    /\ zombie' = zombie \cup Live
    /\ active' = active - k
    /\ zombies' = zombies + k

DisposeSafely ==
    /\ "safely" \in Disposals
    /\ mode = "open"
    /\ CloseScope
    /\ mode' = "safely"
    /\ MarkZombies
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, returned, yields, ends,
                   waitC, waitZ>>

\* Marking a work that survived its cancellation a zombie (SD-3a): it leaves the
\* active count for the zombie count (a zombie stays one).
MarkSurvivor(w) ==
    /\ zombie' = zombie \cup {w}
    /\ active' = IF w \in zombie THEN active ELSE active - 1
    /\ zombies' = IF w \in zombie THEN zombies ELSE zombies + 1

(* SurviveCancel: the turn holder's cancellation is delivered on its turn   *)
(* and it does not end: it waits again, holding its turn. The delivery is   *)
(* spent (a later disposal may cancel it again); the work is a zombie.      *)
SurviveCancel(w) ==
    /\ current = w
    /\ w \in cancelReq
    /\ cancelReq' = cancelReq \ {w}
    /\ MarkSurvivor(w)
    /\ UNCHANGED <<line, current, phase, outcome, closed, mode, returned, yields, ends,
                   acceptedAtClose, waitC, waitZ>>

DisposeAfterTimeout ==
    /\ "timeout" \in Disposals
    /\ mode = "open"
    /\ CloseScope
    /\ mode' = "timeout"
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, zombie, active, zombies,
                   returned, yields, ends, waitC, waitZ>>

(* Environment: the disposal timeout expires; what is left is cancelled.    *)
ExpireTimeout ==
    /\ mode = "timeout"
    /\ CancelAll
    /\ UNCHANGED <<line, current, phase, outcome, zombie, active, zombies, closed,
                   yields, ends, acceptedAtClose, waitC, waitZ>>

AwaitCompletion ==
    /\ waitC = "idle"
    /\ waitC' = "waiting"
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, zombie, active, zombies,
                   closed, mode, returned, yields, ends, acceptedAtClose, waitZ>>

AwaitCompletionReturns ==
    /\ waitC = "waiting"
    /\ active = 0
    /\ waitC' = "returned"
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, zombie, active, zombies,
                   closed, mode, returned, yields, ends, acceptedAtClose, waitZ>>

AwaitAfterCancellation ==
    /\ waitZ = "idle"
    /\ waitZ' = IF mode # "open" THEN "waiting" ELSE "error"
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, zombie, active, zombies,
                   closed, mode, returned, yields, ends, acceptedAtClose, waitC>>

AwaitAfterCancellationReturns ==
    /\ waitZ = "waiting"
    /\ active = 0
    /\ zombies = 0
    /\ waitZ' = "returned"
    /\ UNCHANGED <<line, current, phase, outcome, cancelReq, zombie, active, zombies,
                   closed, mode, returned, yields, ends, acceptedAtClose, waitC>>

Terminated ==
    /\ \A w \in Works : phase[w] \in {"done", "rejected"}
    /\ UNCHANGED vars

Next ==
    \/ Admit \/ Reject \/ TakeNext
    \/ \E w \in Works : \/ \E o \in Outcomes : Finish(w, o)
                        \/ YieldTurn(w) \/ CallReturns(w) \/ Requeue(w) \/ Cancel(w)
                        \/ SurviveCancel(w)
    \/ Dispose \/ DisposeSafely \/ DisposeAfterTimeout \/ ExpireTimeout
    \/ AwaitCompletion \/ AwaitCompletionReturns
    \/ AwaitAfterCancellation \/ AwaitAfterCancellationReturns
    \/ Terminated

Fairness ==
    /\ WF_vars(TakeNext)
    /\ \A w \in Works : /\ WF_vars(\E o \in Outcomes : Finish(w, o) \/ YieldTurn(w))
                        /\ WF_vars(CallReturns(w))
                        /\ WF_vars(Requeue(w))
                        /\ WF_vars(Cancel(w))
    /\ WF_vars(AwaitCompletionReturns)
    /\ WF_vars(AwaitAfterCancellationReturns)

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Invariants *)

TypeOK ==
    /\ line \in Seq(Works)
    /\ current \in Works \cup {NoWork}
    /\ phase \in [Works -> Phases]
    /\ outcome \in [Works -> Outcomes \cup {"none"}]
    /\ cancelReq \subseteq Works /\ zombie \subseteq Works
    /\ active \in Int /\ zombies \in Int
    /\ closed \in BOOLEAN
    /\ mode \in {"open", "safely", "timeout", "cancelled"}
    /\ returned \subseteq Works
    /\ yields \in [Works -> Nat] /\ ends \in [Works -> Nat]
    /\ acceptedAtClose \subseteq Works
    /\ waitC \in {"idle", "waiting", "returned"}
    /\ waitZ \in {"idle", "waiting", "returned", "error"}

(* SD-1, SE-6.2: once the scope is closed, no work is accepted: the         *)
(* accepted works are those accepted when it closed.                        *)
NoWorkAcceptedAfterClose == closed => Accepted = acceptedAtClose

(* SD-2, SD-3: the counter AwaitCompletion waits on counts exactly the live *)
(* works that are not zombies; so it returns once only zombies are left.    *)
AwaitCompletionIgnoresZombies == active = Cardinality(ActiveWorks)

(* SD-2: the zombie counter counts exactly the live zombies.                *)
ZombiesCounted == zombies = Cardinality(Live \cap zombie)

(* D-11: every accepted work ends at most once, and has an outcome exactly  *)
(* when it has ended; live works have none yet.                             *)
EveryAcceptedWorkEndsOnce ==
    \A w \in Works :
        /\ ends[w] = IF phase[w] = "done" THEN 1 ELSE 0
        /\ (outcome[w] # "none") <=> (phase[w] = "done")

(* SD-3: AwaitAfterCancellation waits only after the scope was disposed,    *)
(* and returns only when nothing is live, zombies included.                 *)
AwaitAfterCancellationWaitsForZombies ==
    /\ waitZ \in {"waiting", "returned"} => mode # "open"
    /\ waitZ = "returned" => Live = {}

(* D-8: a cancellation is delivered only to a work that never started      *)
(* (Cancel) or on the work's own turn (Finish); a live work marked for      *)
(* cancellation is never left suspended with its external call pending.     *)
CancellationOnOwnTurn ==
    \A w \in cancelReq : phase[w] = "suspended" => w \in returned

(* SD-3a: once the scope is cancelled, an active work is one whose         *)
(* cancellation has not been delivered yet; a live work that had it         *)
(* delivered and did not end is a zombie, so AwaitCompletion never waits    *)
(* for it.                                                                  *)
SurvivorsAreZombies == mode = "cancelled" => ActiveWorks \subseteq cancelReq

(* Liveness: every accepted work ends, zombies included, under Fairness.    *)
AcceptedWorkCompletes ==
    \A w \in Works : phase[w] \in LivePhases ~> phase[w] = "done"

=============================================================================
