---------------------------- MODULE SerialQueue ----------------------------
(***************************************************************************)
(* One serial execution queue (SE-5, SE-6): admission, two lanes and the   *)
(* barrier-next line, the lifecycle burst, the drain loop with its time    *)
(* slice, the yield protocol and close.                                    *)
(*                                                                         *)
(* The variables are an image of the Python core's state                   *)
(* (model/zlink_model/queue.py, class QueueCore and the                    *)
(* fields of WorkRecord that change), and every action is one core         *)
(* transition with the same name in CamelCase: Admit, Reject, EnterDrain,  *)
(* TakeNext, Finish, YieldTurn, Requeue, EndSlice, ExitDrain, Close.       *)
(* (Transfer and Cancel belong to SpotWide.tla and Disposal.tla.)          *)
(*                                                                         *)
(* What is abstracted away, and why:                                       *)
(*  - Time. The core compares clock readings with ownerTimeBudget only     *)
(*    between works (SE-6.4). Only the answer matters, so a boolean        *)
(*    budgetUsed stands for "the slice's budget is used"; the environment  *)
(*    action BudgetExpires sets it at any moment while draining, and a     *)
(*    slice's start (EnterDrain) and end (EndSlice) clear it.              *)
(*  - Callers. Each submitter submits the works of its script in order;    *)
(*    racing submitters are the interleavings of their Admit steps.        *)
(*  - Threads and the event loop. Each action is one atomic step, as every *)
(*    core transition is one critical section (SE-6.3, decision D-7).      *)
(*    Posting a drain is the flag drainScheduled; the posted callback      *)
(*    running is EnterDrain.                                               *)
(*  - What a work computes. A running work either finishes (completed or   *)
(*    failed: the queue treats both alike) or yields on an external call,  *)
(*    at most MaxYields[w] times. The external call is the environment     *)
(*    action CallReturns.                                                  *)
(*  - Byte sizes. Payloads and FixedCost are small integers: the rules are *)
(*    comparisons, so small numbers exercise every boundary.               *)
(*  - Work records after they finish. The core keeps nothing of a          *)
(*    finished work, so its wid, seq and counters go back to their         *)
(*    initial values here too (only its phase "done" is kept).             *)
(*                                                                         *)
(* Variables that are not core state (model-only):                         *)
(*  - phase values "new" (not yet submitted) and "rejected";              *)
(*  - returned: suspended works whose external call has returned (the      *)
(*    environment's side of the yield);                                    *)
(*  - yields[w]: how many times w yielded (history; equal to resumes[w],   *)
(*    plus one while suspended: NoResumeWithoutRequeue compares the two);  *)
(*  - budgetUsed (time, see above).                                        *)
(*                                                                         *)
(* docs/models.md ("State-space agreement") lists every variable with the  *)
(* core field it mirrors, and every guard, for enumerations of the core.   *)
(*                                                                         *)
(* This module states the specification only. The deliberately broken     *)
(* variants the invariants must catch live in MCSerialQueue.tla: each one  *)
(* replaces one named operator of this module (AdmitSetsDrainFlag,         *)
(* Requeue, SelectNext, Close) through its .cfg, or, for the split         *)
(* admission, adds the state it needs in MCSerialQueueAdmissionSplit.tla.  *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Works,          \* work identities: positive integers
    Lane,           \* [Works -> {"app", "life", "barrier"}]; "barrier" is
                    \* enqueue_barrier_next: barrier line, application lane's
                    \* reservation (decision D-4)
    Payload,        \* [Works -> Nat]: payload bytes
    MaxYields,      \* [Works -> Nat]: how often a work may yield
    Submitters,     \* the racing submitters
    Script,         \* [Submitters -> Seq(Works)]: what each submits, in order;
                    \* every work appears in exactly one script, once
    AppCountCap, AppByteCap,     \* application lane limits (SE-6.1)
    LifeCountCap, LifeByteCap,   \* lifecycle lane limits
    FixedCost,      \* fixedWorkByteCost
    BurstLimit,     \* lifecycleBurstLimit
    CloseAllowed    \* whether the owner may close the queue in this run

NoWork == 0

ASSUME /\ Works \subseteq Nat \ {0}
       /\ Lane \in [Works -> {"app", "life", "barrier"}]
       /\ Payload \in [Works -> Nat]
       /\ MaxYields \in [Works -> Nat]
       /\ \A s \in Submitters : Script[s] \in Seq(Works)
       /\ \A w \in Works : Cardinality({s \in Submitters :
                                           \E i \in 1..Len(Script[s]) : Script[s][i] = w}) = 1
       /\ \A s \in Submitters : \A i, j \in 1..Len(Script[s]) :
                                   i # j => Script[s][i] # Script[s][j]
       /\ {AppCountCap, AppByteCap, LifeCountCap, LifeByteCap, BurstLimit}
              \subseteq Nat \ {0}
       /\ FixedCost \in Nat
       /\ CloseAllowed \in BOOLEAN

VARIABLES
    \* ---- QueueCore ----
    app, life, barrier,      \* the three lines, head first (Seq(Works))
    appCount, appBytes,      \* application lane reservations
    lifeCount, lifeBytes,    \* lifecycle lane reservations
    nextSeq,                 \* next sequence number
    drainScheduled, draining,
    current,                 \* the work holding the turn, or NoWork
    streak,                  \* lifecycle streak (decision D-5)
    closed,
    suspended,               \* works that gave their turn back
    \* ---- WorkRecord fields that change ----
    phase,                   \* [Works -> Phases]
    wid,                     \* admission sequence number (-1 when not live)
    seq,                     \* sequence number of its place in line (-1 when not live)
    resumes,                 \* resume permits it queued
    \* ---- model-only ----
    returned, yields, budgetUsed

core == <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes, nextSeq,
          drainScheduled, draining, current, streak, closed, suspended>>
records == <<phase, wid, seq, resumes>>
model == <<returned, yields, budgetUsed>>
vars == <<core, records, model>>

Phases == {"new", "queued", "running", "suspended", "requeued", "done", "rejected"}
LivePhases == {"queued", "running", "suspended", "requeued"}

-----------------------------------------------------------------------------
(* Helpers *)

ReserveLane(w) == IF Lane[w] = "life" THEN "life" ELSE "app"
Reservation(w) == Payload[w] + FixedCost    \* decision D-3: no metadata bytes

LiveWorks == {w \in Works : phase[w] \in LivePhases}

RECURSIVE SumReservations(_)
SumReservations(S) ==
    IF S = {} THEN 0
    ELSE LET w == CHOOSE x \in S : TRUE
         IN  Reservation(w) + SumReservations(S \ {w})

\* Some item waits in a line. Written as a sum, not a disjunction: TLC explores
\* each true disjunct of an action's guard as a branch of its own, which would
\* count one successor several times in "states generated".
HasReady == Len(app) + Len(life) + Len(barrier) > 0

\* The next work submitter s will submit: the first of its script not yet submitted.
NextOf(s) ==
    LET open == {i \in 1..Len(Script[s]) : phase[Script[s][i]] = "new"}
    IN  IF open = {} THEN NoWork
        ELSE Script[s][CHOOSE i \in open : \A j \in open : i <= j]

\* rules.admission_verdict is None (the closed test is made by the caller).
Room(w) ==
    IF ReserveLane(w) = "life"
    THEN lifeCount < LifeCountCap /\ lifeBytes + Reservation(w) <= LifeByteCap
    ELSE appCount < AppCountCap /\ appBytes + Reservation(w) <= AppByteCap

\* rules.select_next: <<source, streak after the take>>.
SelectNext(nBarrier, nLife, nApp, s) ==
    IF nBarrier > 0 THEN <<"barrier", 0>>
    ELSE IF nLife > 0 /\ (nApp = 0 \/ s < BurstLimit)
         THEN <<"life", IF nApp > 0 THEN s + 1 ELSE 0>>
    ELSE IF nApp > 0 THEN <<"app", 0>>
    ELSE <<"none", s>>

\* The drain flag after a submission (SE-6.5): still set when a drain was
\* scheduled, newly set when the queue was neither draining nor scheduled
\* (the core's `wake`: this submission posted the drain), else left clear.
DrainFlagAfterSubmit == drainScheduled \/ ~draining

\* The drain flag after an admission (SE-6.5): set only through
\* DrainFlagAfterSubmit, so a submission never posts a second drain beside a
\* scheduled or running one.
AdmitSetsDrainFlag == drainScheduled' = DrainFlagAfterSubmit

-----------------------------------------------------------------------------
Init ==
    /\ app = << >> /\ life = << >> /\ barrier = << >>
    /\ appCount = 0 /\ appBytes = 0 /\ lifeCount = 0 /\ lifeBytes = 0
    /\ nextSeq = 0
    /\ drainScheduled = FALSE /\ draining = FALSE
    /\ current = NoWork
    /\ streak = 0
    /\ closed = FALSE
    /\ suspended = {}
    /\ phase = [w \in Works |-> "new"]
    /\ wid = [w \in Works |-> -1]
    /\ seq = [w \in Works |-> -1]
    /\ resumes = [w \in Works |-> 0]
    /\ returned = {}
    /\ yields = [w \in Works |-> 0]
    /\ budgetUsed = FALSE

\* The insertion half of admission: reservation, sequence number, the line and
\* the drain flag.
Insert(w) ==
    /\ IF ReserveLane(w) = "life"
       THEN /\ lifeCount' = lifeCount + 1
            /\ lifeBytes' = lifeBytes + Reservation(w)
            /\ UNCHANGED <<appCount, appBytes>>
       ELSE /\ appCount' = appCount + 1
            /\ appBytes' = appBytes + Reservation(w)
            /\ UNCHANGED <<lifeCount, lifeBytes>>
    /\ app' = IF Lane[w] = "app" THEN Append(app, w) ELSE app
    /\ life' = IF Lane[w] = "life" THEN Append(life, w) ELSE life
    /\ barrier' = IF Lane[w] = "barrier" THEN Append(barrier, w) ELSE barrier
    /\ nextSeq' = nextSeq + 1
    /\ wid' = [wid EXCEPT ![w] = nextSeq]
    /\ seq' = [seq EXCEPT ![w] = nextSeq]
    /\ phase' = [phase EXCEPT ![w] = "queued"]
    /\ AdmitSetsDrainFlag
    /\ UNCHANGED <<draining, current, streak, closed, suspended, resumes>>

(* Admit: capacity check, sequence number, insertion and the drain flag in   *)
(* one step (SE-6.3, SE-6.5).                                               *)
Admit(s) ==
    LET w == NextOf(s) IN
    /\ w # NoWork
    /\ ~closed
    /\ Room(w)
    /\ Insert(w)
    /\ UNCHANGED model

(* Reject: closed, or no room; nothing changes but the work's model phase.  *)
Reject(s) ==
    LET w == NextOf(s) IN
    /\ w # NoWork
    /\ ~(~closed /\ Room(w))        \* closed, or no room (see HasReady on disjunctions)
    /\ phase' = [phase EXCEPT ![w] = "rejected"]
    /\ UNCHANGED <<core, wid, seq, resumes, model>>

(* EnterDrain: the posted drain starts a slice.                             *)
EnterDrain ==
    /\ drainScheduled
    /\ ~draining
    /\ drainScheduled' = FALSE
    /\ draining' = TRUE
    /\ budgetUsed' = FALSE
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, current, streak, closed, suspended, records,
                   returned, yields>>

(* TakeNext: the next item gets the turn, as rules.select_next says.        *)
TakeNext ==
    /\ draining
    /\ current = NoWork
    /\ ~budgetUsed
    /\ HasReady
    /\ LET sel == SelectNext(Len(barrier), Len(life), Len(app), streak)
           w == CASE sel[1] = "barrier" -> Head(barrier)
                  [] sel[1] = "life"    -> Head(life)
                  [] sel[1] = "app"     -> Head(app)
       IN  /\ barrier' = IF sel[1] = "barrier" THEN Tail(barrier) ELSE barrier
           /\ life' = IF sel[1] = "life" THEN Tail(life) ELSE life
           /\ app' = IF sel[1] = "app" THEN Tail(app) ELSE app
           /\ streak' = sel[2]
           /\ current' = w
           /\ phase' = [phase EXCEPT ![w] = "running"]
    /\ UNCHANGED <<appCount, appBytes, lifeCount, lifeBytes, nextSeq,
                   drainScheduled, draining, closed, suspended, wid, seq, resumes,
                   model>>

(* Finish: the turn holder ended (completed or failed); its reservation is   *)
(* released (SE-5.2) and nothing of it stays in the queue.                  *)
Finish(w) ==
    /\ current = w
    /\ current' = NoWork
    /\ IF ReserveLane(w) = "life"
       THEN /\ lifeCount' = lifeCount - 1
            /\ lifeBytes' = lifeBytes - Reservation(w)
            /\ UNCHANGED <<appCount, appBytes>>
       ELSE /\ appCount' = appCount - 1
            /\ appBytes' = appBytes - Reservation(w)
            /\ UNCHANGED <<lifeCount, lifeBytes>>
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ wid' = [wid EXCEPT ![w] = -1]
    /\ seq' = [seq EXCEPT ![w] = -1]
    /\ resumes' = [resumes EXCEPT ![w] = 0]
    /\ yields' = [yields EXCEPT ![w] = 0]
    /\ UNCHANGED <<app, life, barrier, nextSeq, drainScheduled, draining, streak,
                   closed, suspended, returned, budgetUsed>>

(* YieldTurn: the turn holder waits on an external call and gives the turn   *)
(* back; its reservation stays (decision D-2).                              *)
YieldTurn(w) ==
    /\ current = w
    /\ yields[w] < MaxYields[w]
    /\ current' = NoWork
    /\ phase' = [phase EXCEPT ![w] = "suspended"]
    /\ suspended' = suspended \cup {w}
    /\ yields' = [yields EXCEPT ![w] = @ + 1]
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, drainScheduled, draining, streak, closed,
                   wid, seq, resumes, returned, budgetUsed>>

(* Environment: the external call of a suspended work returns.              *)
CallReturns(w) ==
    /\ w \in suspended
    /\ w \notin returned
    /\ returned' = returned \cup {w}
    /\ UNCHANGED <<core, records, yields, budgetUsed>>

(* Requeue: the resume permit goes to the tail of the work's own lane with a *)
(* fresh sequence number, no capacity check and no new reservation          *)
(* (decisions D-1, D-2); allowed after close.                               *)
Requeue(w) ==
    /\ w \in returned
    /\ suspended' = suspended \ {w}
    /\ returned' = returned \ {w}
    /\ phase' = [phase EXCEPT ![w] = "requeued"]
    /\ seq' = [seq EXCEPT ![w] = nextSeq]
    /\ nextSeq' = nextSeq + 1
    /\ resumes' = [resumes EXCEPT ![w] = @ + 1]
    /\ life' = IF Lane[w] = "life" THEN Append(life, w) ELSE life
    /\ app' = IF Lane[w] = "life" THEN app ELSE Append(app, w)
    /\ drainScheduled' = DrainFlagAfterSubmit
    /\ UNCHANGED <<barrier, appCount, appBytes, lifeCount, lifeBytes,
                   draining, current, streak, closed, wid>>
    /\ UNCHANGED <<yields, budgetUsed>>

(* Environment: the slice's time budget is used up (time passes).           *)
BudgetExpires ==
    /\ draining
    /\ ~budgetUsed
    /\ budgetUsed' = TRUE
    /\ UNCHANGED <<core, records, returned, yields>>

(* EndSlice: the budget is used; leave the drain and, in the same step,     *)
(* schedule the next slice iff work is ready (SE-6.4, decision D-10).       *)
EndSlice ==
    /\ draining
    /\ current = NoWork
    /\ budgetUsed
    /\ draining' = FALSE
    /\ drainScheduled' = HasReady
    /\ budgetUsed' = FALSE
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, current, streak, closed, suspended, records,
                   returned, yields>>

(* ExitDrain: nothing is ready (and the budget is not used: the drain loop   *)
(* tests the budget first, QueueCore.next_step); leave the drain.           *)
ExitDrain ==
    /\ draining
    /\ current = NoWork
    /\ ~budgetUsed
    /\ ~HasReady
    /\ draining' = FALSE
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, drainScheduled, current, streak, closed, suspended,
                   records, model>>

(* Close: later admissions are rejected; accepted work still finishes.      *)
Close ==
    /\ CloseAllowed
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, drainScheduled, draining, current, streak, suspended,
                   records, model>>

(* Every submitted work is done or rejected and the queue is idle: the run  *)
(* is over. Stuttering here keeps deadlock checking meaningful: any other   *)
(* state without a successor is a real deadlock.                            *)
Terminated ==
    /\ \A w \in Works : phase[w] \in {"done", "rejected"}
    /\ ~draining
    /\ ~drainScheduled
    /\ UNCHANGED vars

Next ==
    \/ \E s \in Submitters : Admit(s) \/ Reject(s)
    \/ EnterDrain \/ TakeNext \/ EndSlice \/ ExitDrain \/ Close
    \/ \E w \in Works : Finish(w) \/ YieldTurn(w) \/ Requeue(w)
    \/ BudgetExpires
    \/ \E w \in Works : CallReturns(w)
    \/ Terminated

(* Weak fairness for the drain, the works and the environment's external    *)
(* calls; strong fairness for TakeNext, because BudgetExpires may disable   *)
(* it again and again: a real budget is positive, so a slice that can take  *)
(* does take before its budget runs out, sooner or later. Submissions and   *)
(* Close get no fairness: nobody has to submit or close.                    *)
Fairness ==
    /\ WF_vars(EnterDrain)
    /\ SF_vars(TakeNext)
    /\ WF_vars(EndSlice)
    /\ WF_vars(ExitDrain)
    /\ \A w \in Works : /\ WF_vars(Finish(w) \/ YieldTurn(w))
                        /\ WF_vars(CallReturns(w))
                        /\ WF_vars(Requeue(w))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Invariants. Each has a Python predicate of the same name.                *)

TypeOK ==
    /\ \A l \in {app, life, barrier} : l \in Seq(Works)
    /\ {appCount, appBytes, lifeCount, lifeBytes, nextSeq, streak} \subseteq Nat
    /\ drainScheduled \in BOOLEAN /\ draining \in BOOLEAN /\ closed \in BOOLEAN
    /\ current \in Works \cup {NoWork}
    /\ suspended \subseteq Works /\ returned \subseteq suspended
    /\ phase \in [Works -> Phases]
    /\ wid \in [Works -> Int] /\ seq \in [Works -> Int]
    /\ resumes \in [Works -> Nat] /\ yields \in [Works -> Nat]
    /\ budgetUsed \in BOOLEAN

(* SE-6.5: at most one drain is scheduled or running.                      *)
NoDoubleDrain == ~(drainScheduled /\ draining)

(* SE-6.6, D-1: every line is in sequence-number order, so each lane serves *)
(* its items (new work and resume permits alike) first in, first out.      *)
FifoWithinLane ==
    \A l \in {app, life, barrier} :
        \A i, j \in 1..Len(l) : i < j => seq[l[i]] < seq[l[j]]

(* SE-6.1, D-5: the lifecycle streak never passes the burst limit.         *)
LifecycleBurstBounded == streak <= BurstLimit

(* SE-6.7: a running work is the turn holder, and a work that yielded runs  *)
(* again only through a resume permit it queued (as many resumes as yields).*)
NoResumeWithoutRequeue ==
    /\ current # NoWork => phase[current] = "running"
    /\ \A w \in Works : phase[w] = "running" => current = w /\ yields[w] = resumes[w]

(* SE-6.5, D-10: ready work always has a drain scheduled or running.        *)
NoLostWakeup == HasReady => drainScheduled \/ draining

(* SE-5.1, SE-6.3: both lanes stay within their count and byte limits.      *)
CapacityRespected ==
    /\ appCount <= AppCountCap /\ appBytes <= AppByteCap
    /\ lifeCount <= LifeCountCap /\ lifeBytes <= LifeByteCap

(* SE-5.2, D-2, D-9: each lane's count and bytes are exactly those of its   *)
(* accepted, unfinished works (queued, running, suspended, requeued).       *)
ReservationsBalanced ==
    LET inApp == {w \in LiveWorks : ReserveLane(w) = "app"}
        inLife == {w \in LiveWorks : ReserveLane(w) = "life"}
    IN  /\ appCount = Cardinality(inApp) /\ appBytes = SumReservations(inApp)
        /\ lifeCount = Cardinality(inLife) /\ lifeBytes = SumReservations(inLife)

(* Liveness (SE-6.6, D-2): every accepted work finishes, under Fairness.    *)
AcceptedWorkCompletes ==
    \A w \in Works : phase[w] \in LivePhases ~> phase[w] = "done"

=============================================================================
