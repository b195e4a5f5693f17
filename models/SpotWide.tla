------------------------------ MODULE SpotWide ------------------------------
(***************************************************************************)
(* How a User Spot wires its queues (SE-4, SE-5.3, decision D-6).          *)
(*                                                                         *)
(* Mode = "SpotWide": every Actor record is accepted by its Actor queue,   *)
(* which reserves its payload (payload + FixedCost). When the record is at *)
(* the head and its Actor queue has no claim outstanding, the Actor queue  *)
(* moves one execution turn to the Spot queue (Transfer): the turn         *)
(* reserves only FixedCost there and is never refused, not even after      *)
(* Close. The Actor queue keeps its turn (the claim) until that record     *)
(* finishes on the Spot queue. execute_spot works and timer callbacks go   *)
(* straight to the Spot queue (no timer queue, SE-4.4) and are judged      *)
(* against its limits, which count the turns present. When the Spot gate  *)
(* holder yields it gives the gate back; an Actor record keeps its claim,  *)
(* so its Actor's next record cannot start until it finishes (SE-4.6).     *)
(*                                                                         *)
(* Mode = "PerActor": each Actor queue runs its own records and the Spot   *)
(* queue runs the Spot works, independently (SE-4.2); a yield gives the    *)
(* owning queue's turn back. This mode exists to show, with the invariant  *)
(* NoOverlap, that overlap is reachable there (an expected failure).       *)
(*                                                                         *)
(* Actions keep the core's names: Admit, Reject, Transfer, TakeNext,       *)
(* Finish, YieldTurn, Requeue, Close. Environment: CallReturns (the        *)
(* external call of a suspended item returns).                             *)
(*                                                                         *)
(* What is abstracted away, and why:                                       *)
(*  - The drain machinery (drain flags, time slices, lifecycle lane,       *)
(*    barrier line). SerialQueue.tla checks those for one queue; here a    *)
(*    queue's drain is reduced to "when its turn is free and its line is   *)
(*    not empty, the head may get the turn" (TakeNext), which is what      *)
(*    SerialQueue's drain guarantees (NoLostWakeup, AcceptedWorkCompletes).*)
(*  - The Actor queue's own drain in SpotWide: its only choice is to hand  *)
(*    its head to the Spot queue, so take_next and transfer are one step,  *)
(*    Transfer. Likewise a record finishing on the Spot queue ends its     *)
(*    turn in both queues in one step (Finish).                            *)
(*  - Timer queues in PerActor mode: a timer queue behaves like an Actor   *)
(*    queue there, so PerActor runs use no timer works (see ASSUME).       *)
(*  - Sequence numbers: each line is a FIFO sequence, so order is the      *)
(*    position in the sequence.                                            *)
(*                                                                         *)
(* This module states the specification only. The deliberately broken     *)
(* variants live in MCSpotWide.tla and replace SpotShare or                *)
(* YieldReleasesClaim through their .cfg.                                  *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets

CONSTANTS
    Actors,         \* actor ids
    Records,        \* Actor handler works (positive integers)
    Owner,          \* [Records -> Actors]
    SpotWorks,      \* works submitted to the Spot queue directly
    Kind,           \* [SpotWorks -> {"spot", "timer"}]
    Payload,        \* [Records \cup SpotWorks -> Nat]
    MaxYields,      \* [Records \cup SpotWorks -> Nat]
    Submitters,
    Script,         \* [Submitters -> Seq(Records \cup SpotWorks)]
    ActorCountCap, ActorByteCap,   \* each Actor queue's application lane
    SpotCountCap, SpotByteCap,     \* the Spot queue's application lane
    FixedCost,
    Mode,           \* "SpotWide" or "PerActor"
    CloseAllowed

Items == Records \cup SpotWorks
NoItem == 0
SpotQueue == "spot"             \* the Spot queue's name; Actors are the others
Queues == {SpotQueue} \cup Actors

ASSUME /\ Items \subseteq Nat \ {0}
       /\ Records \cap SpotWorks = {}
       /\ SpotQueue \notin Actors
       /\ Owner \in [Records -> Actors]
       /\ Kind \in [SpotWorks -> {"spot", "timer"}]
       /\ Payload \in [Items -> Nat]
       /\ MaxYields \in [Items -> Nat]
       /\ \A s \in Submitters : Script[s] \in Seq(Items)
       /\ \A i \in Items : Cardinality({s \in Submitters :
                                          \E k \in 1..Len(Script[s]) : Script[s][k] = i}) = 1
       /\ \A s \in Submitters : \A k, m \in 1..Len(Script[s]) :
                                    k # m => Script[s][k] # Script[s][m]
       /\ {ActorCountCap, ActorByteCap, SpotCountCap, SpotByteCap} \subseteq Nat \ {0}
       /\ FixedCost \in Nat
       /\ Mode \in {"SpotWide", "PerActor"}
       /\ Mode = "PerActor" => \A w \in SpotWorks : Kind[w] = "spot"
       /\ CloseAllowed \in BOOLEAN

VARIABLES
    aLine,      \* [Actors -> Seq(Items)]: each Actor queue's line
    aCount,     \* [Actors -> Nat]: Actor queue reservations (count)
    aBytes,     \* [Actors -> Nat]: Actor queue reservations (bytes)
    claim,      \* [Actors -> Records \cup {NoItem}]: the record holding the Actor
                \* queue's turn (SpotWide: from Transfer until it finishes)
    sLine,      \* Seq(Items): the Spot queue's line
    sCount,     \* Spot queue reservations (count)
    sBytes,     \* Spot queue reservations (bytes)
    gate,       \* the item holding the Spot queue's turn (the Spot gate), or NoItem
    suspended,  \* items that gave their turn back
    returned,   \* (environment) suspended items whose external call returned
    phase,      \* [Items -> Phases]
    yields,     \* [Items -> Nat] (history)
    resumes,    \* [Items -> Nat]
    closed

vars == <<aLine, aCount, aBytes, claim, sLine, sCount, sBytes, gate, suspended,
          returned, phase, yields, resumes, closed>>

Phases == {"new", "rejected", "queued", "transferred", "running", "suspended",
           "requeued", "done"}
LivePhases == {"queued", "transferred", "running", "suspended", "requeued"}

-----------------------------------------------------------------------------
(* Helpers *)

Reservation(i) == Payload[i] + FixedCost

\* What one item reserves in the Spot queue: a transferred Actor turn only the
\* fixed cost (SE-5.3), a direct submission its full reservation.
SpotShare(i) == IF i \in Records THEN FixedCost ELSE Reservation(i)

RECURSIVE SumReservations(_)
SumReservations(S) ==
    IF S = {} THEN 0
    ELSE LET x == CHOOSE y \in S : TRUE IN Reservation(x) + SumReservations(S \ {x})

RECURSIVE SumActorBytes(_)
SumActorBytes(A) ==
    IF A = {} THEN 0
    ELSE LET a == CHOOSE b \in A : TRUE IN aBytes[a] + SumActorBytes(A \ {a})

LiveRecordsOf(a) == {r \in Records : Owner[r] = a /\ phase[r] \in LivePhases}
LiveSpotWorks == {w \in SpotWorks : phase[w] \in LivePhases}
\* Actor records whose execution turn is on the Spot queue.
TurnsOnSpot == {r \in Records : Mode = "SpotWide" /\
                                phase[r] \in LivePhases \ {"queued"}}

\* Where an item runs: the Spot queue, or (PerActor) its own Actor queue.
RunsOnSpot(i) == i \in SpotWorks \/ Mode = "SpotWide"
Holds(i) == IF RunsOnSpot(i) THEN gate = i ELSE claim[Owner[i]] = i

\* Whether a yield of i gives back its Actor's claim: only when i is an Actor
\* record that runs on its Actor queue (PerActor). In SpotWide the record's
\* turn is on the Spot queue, and the claim stays until it finishes (SE-4.6).
YieldReleasesClaim(i) == i \in Records /\ ~RunsOnSpot(i)

NextOf(s) ==
    LET open == {k \in 1..Len(Script[s]) : phase[Script[s][k]] = "new"}
    IN  IF open = {} THEN NoItem
        ELSE Script[s][CHOOSE k \in open : \A m \in open : k <= m]

Room(i) ==
    IF i \in Records
    THEN /\ aCount[Owner[i]] < ActorCountCap
         /\ aBytes[Owner[i]] + Reservation(i) <= ActorByteCap
    ELSE /\ sCount < SpotCountCap
         /\ sBytes + Reservation(i) <= SpotByteCap

-----------------------------------------------------------------------------
Init ==
    /\ aLine = [a \in Actors |-> << >>]
    /\ aCount = [a \in Actors |-> 0]
    /\ aBytes = [a \in Actors |-> 0]
    /\ claim = [a \in Actors |-> NoItem]
    /\ sLine = << >> /\ sCount = 0 /\ sBytes = 0
    /\ gate = NoItem
    /\ suspended = {} /\ returned = {}
    /\ phase = [i \in Items |-> "new"]
    /\ yields = [i \in Items |-> 0]
    /\ resumes = [i \in Items |-> 0]
    /\ closed = FALSE

(* Admit: an Actor record into its Actor queue, or a Spot work (execute_spot *)
(* or timer) into the Spot queue; one atomic check-and-insert.              *)
Admit(s) ==
    LET i == NextOf(s) IN
    /\ i # NoItem
    /\ ~closed
    /\ Room(i)
    /\ phase' = [phase EXCEPT ![i] = "queued"]
    /\ IF i \in Records
       THEN /\ aLine' = [aLine EXCEPT ![Owner[i]] = Append(@, i)]
            /\ aCount' = [aCount EXCEPT ![Owner[i]] = @ + 1]
            /\ aBytes' = [aBytes EXCEPT ![Owner[i]] = @ + Reservation(i)]
            /\ UNCHANGED <<sLine, sCount, sBytes>>
       ELSE /\ sLine' = Append(sLine, i)
            /\ sCount' = sCount + 1
            /\ sBytes' = sBytes + Reservation(i)
            /\ UNCHANGED <<aLine, aCount, aBytes>>
    /\ UNCHANGED <<claim, gate, suspended, returned, yields, resumes, closed>>

Reject(s) ==
    LET i == NextOf(s) IN
    /\ i # NoItem
    /\ ~(~closed /\ Room(i))        \* closed, or no room: one branch, not two
    /\ phase' = [phase EXCEPT ![i] = "rejected"]
    /\ UNCHANGED <<aLine, aCount, aBytes, claim, sLine, sCount, sBytes, gate,
                   suspended, returned, yields, resumes, closed>>

(* Transfer (SpotWide): the Actor queue's head gets its turn, which becomes  *)
(* the claim, and one execution turn goes to the tail of the Spot queue,     *)
(* reserving FixedCost there. Never refused, not even after Close (D-6).     *)
Transfer(a) ==
    /\ Mode = "SpotWide"
    /\ claim[a] = NoItem
    /\ aLine[a] # << >>
    /\ LET r == Head(aLine[a]) IN
       /\ claim' = [claim EXCEPT ![a] = r]
       /\ aLine' = [aLine EXCEPT ![a] = Tail(@)]
       /\ sLine' = Append(sLine, r)
       /\ sCount' = sCount + 1
       /\ sBytes' = sBytes + SpotShare(r)
       /\ phase' = [phase EXCEPT ![r] = "transferred"]
    /\ UNCHANGED <<aCount, aBytes, gate, suspended, returned, yields, resumes, closed>>

(* TakeNext: the head of a queue's line gets that queue's turn: on the Spot *)
(* queue the Spot gate, on an Actor queue (PerActor only; in SpotWide the   *)
(* Actor queue's turn goes by Transfer) the Actor's claim.                  *)
TakeNext(q) ==
    \/ /\ q = SpotQueue
       /\ gate = NoItem
       /\ sLine # << >>
       /\ gate' = Head(sLine)
       /\ sLine' = Tail(sLine)
       /\ phase' = [phase EXCEPT ![Head(sLine)] = "running"]
       /\ UNCHANGED <<aLine, aCount, aBytes, claim, sCount, sBytes, suspended,
                      returned, yields, resumes, closed>>
    \/ /\ q \in Actors
       /\ Mode = "PerActor"
       /\ claim[q] = NoItem
       /\ aLine[q] # << >>
       /\ claim' = [claim EXCEPT ![q] = Head(aLine[q])]
       /\ aLine' = [aLine EXCEPT ![q] = Tail(@)]
       /\ phase' = [phase EXCEPT ![Head(aLine[q])] = "running"]
       /\ UNCHANGED <<aCount, aBytes, sLine, sCount, sBytes, gate, suspended,
                      returned, yields, resumes, closed>>

(* Finish: the turn holder ended. Its reservations are released where they  *)
(* were made; an Actor record also ends its Actor queue's turn (the claim). *)
Finish(i) ==
    /\ phase[i] = "running"
    /\ Holds(i)
    /\ phase' = [phase EXCEPT ![i] = "done"]
    /\ gate' = IF RunsOnSpot(i) THEN NoItem ELSE gate
    /\ IF RunsOnSpot(i)
       THEN sCount' = sCount - 1 /\ sBytes' = sBytes - SpotShare(i)
       ELSE UNCHANGED <<sCount, sBytes>>
    /\ IF i \in Records
       THEN /\ claim' = [claim EXCEPT ![Owner[i]] = NoItem]
            /\ aCount' = [aCount EXCEPT ![Owner[i]] = @ - 1]
            /\ aBytes' = [aBytes EXCEPT ![Owner[i]] = @ - Reservation(i)]
       ELSE UNCHANGED <<claim, aCount, aBytes>>
    /\ UNCHANGED <<aLine, sLine, suspended, returned, yields, resumes, closed>>

(* YieldTurn: the turn holder waits on an external call and gives back the   *)
(* turn of the queue it runs on. In SpotWide that is the Spot gate; the      *)
(* Actor claim stays (SE-4.6, YieldReleasesClaim).                          *)
YieldTurn(i) ==
    /\ phase[i] = "running"
    /\ Holds(i)
    /\ yields[i] < MaxYields[i]
    /\ phase' = [phase EXCEPT ![i] = "suspended"]
    /\ suspended' = suspended \cup {i}
    /\ yields' = [yields EXCEPT ![i] = @ + 1]
    /\ gate' = IF RunsOnSpot(i) THEN NoItem ELSE gate
    /\ claim' = IF YieldReleasesClaim(i)
                THEN [claim EXCEPT ![Owner[i]] = NoItem]
                ELSE claim
    /\ UNCHANGED <<aLine, aCount, aBytes, sLine, sCount, sBytes, returned,
                   resumes, closed>>

(* Environment: the external call of a suspended item returns.              *)
CallReturns(i) ==
    /\ i \in suspended
    /\ i \notin returned
    /\ returned' = returned \cup {i}
    /\ UNCHANGED <<aLine, aCount, aBytes, claim, sLine, sCount, sBytes, gate,
                   suspended, phase, yields, resumes, closed>>

(* Requeue: the resume permit goes to the tail of the queue the item runs   *)
(* on, with no capacity check and no new reservation (D-1, D-2).            *)
Requeue(i) ==
    /\ i \in returned
    /\ suspended' = suspended \ {i}
    /\ returned' = returned \ {i}
    /\ phase' = [phase EXCEPT ![i] = "requeued"]
    /\ resumes' = [resumes EXCEPT ![i] = @ + 1]
    /\ IF RunsOnSpot(i)
       THEN sLine' = Append(sLine, i) /\ UNCHANGED aLine
       ELSE aLine' = [aLine EXCEPT ![Owner[i]] = Append(@, i)] /\ UNCHANGED sLine
    /\ UNCHANGED <<aCount, aBytes, claim, sCount, sBytes, gate, yields, closed>>

(* Close: the Spot and all its queues take no new submissions.              *)
Close ==
    /\ CloseAllowed
    /\ ~closed
    /\ closed' = TRUE
    /\ UNCHANGED <<aLine, aCount, aBytes, claim, sLine, sCount, sBytes, gate,
                   suspended, returned, phase, yields, resumes>>

Terminated ==
    /\ \A i \in Items : phase[i] \in {"done", "rejected"}
    /\ UNCHANGED vars

Next ==
    \/ \E s \in Submitters : Admit(s) \/ Reject(s)
    \/ \E a \in Actors : Transfer(a)
    \/ \E q \in Queues : TakeNext(q)
    \/ \E i \in Items : Finish(i) \/ YieldTurn(i) \/ CallReturns(i) \/ Requeue(i)
    \/ Close
    \/ Terminated

Fairness ==
    /\ \A a \in Actors : WF_vars(Transfer(a))
    /\ \A q \in Queues : WF_vars(TakeNext(q))
    /\ \A i \in Items : /\ WF_vars(Finish(i) \/ YieldTurn(i))
                        /\ WF_vars(CallReturns(i))
                        /\ WF_vars(Requeue(i))

Spec == Init /\ [][Next]_vars /\ Fairness

-----------------------------------------------------------------------------
(* Invariants *)

TypeOK ==
    /\ aLine \in [Actors -> Seq(Items)]
    /\ aCount \in [Actors -> Nat] /\ aBytes \in [Actors -> Nat]
    /\ claim \in [Actors -> Records \cup {NoItem}]
    /\ sLine \in Seq(Items) /\ sCount \in Nat /\ sBytes \in Nat
    /\ gate \in Items \cup {NoItem}
    /\ suspended \subseteq Items /\ returned \subseteq suspended
    /\ phase \in [Items -> Phases]
    /\ yields \in [Items -> Nat] /\ resumes \in [Items -> Nat]
    /\ closed \in BOOLEAN

(* SE-4.3: the Spot gate is held by exactly the one running item that runs  *)
(* on the Spot queue; in SpotWide that is every running item, so one thing  *)
(* runs at a time.                                                          *)
OneTurnHoldsSpotGate ==
    \A i \in Items : (phase[i] = "running" /\ RunsOnSpot(i)) <=> gate = i

(* SE-4.6: an Actor record whose turn is on the Spot queue, running or      *)
(* yielded, holds its Actor's claim; so no other record of that Actor has   *)
(* started (the claim names one record).                                   *)
YieldedActorKeepsClaim ==
    \A r \in Records :
        phase[r] \in {"transferred", "running", "suspended", "requeued"} /\ Mode = "SpotWide"
            => claim[Owner[r]] = r

(* SE-5.3: the bytes reserved across all queues are each accepted item's    *)
(* reservation once, plus FixedCost per execution turn on the Spot queue:   *)
(* no payload is counted twice.                                             *)
PayloadReservedOnce ==
    SumActorBytes(Actors) + sBytes
        = SumReservations({r \in Records : phase[r] \in LivePhases})
          + FixedCost * Cardinality(TurnsOnSpot)
          + SumReservations(LiveSpotWorks)

(* SE-5.3, SE-10 item 8: the Spot queue holds FixedCost per execution turn  *)
(* and the full reservation of its own submissions, nothing else.           *)
SpotQueueReservesFixedCostOnly ==
    /\ sBytes = FixedCost * Cardinality(TurnsOnSpot) + SumReservations(LiveSpotWorks)
    /\ sCount = Cardinality(TurnsOnSpot) + Cardinality(LiveSpotWorks)

(* Reused queue invariants. *)

(* SE-5.1, D-6: each Actor queue within its limits; the Spot queue's own    *)
(* submissions within its limits, and the turns over them bounded by one    *)
(* per Actor (a transfer is never refused).                                 *)
CapacityRespected ==
    /\ \A a \in Actors : aCount[a] <= ActorCountCap /\ aBytes[a] <= ActorByteCap
    /\ Cardinality(LiveSpotWorks) <= SpotCountCap
    /\ SumReservations(LiveSpotWorks) <= SpotByteCap
    /\ sCount <= SpotCountCap + Cardinality(Actors)
    /\ sBytes <= SpotByteCap + Cardinality(Actors) * FixedCost

(* SE-5.2, D-9: each Actor queue reserves exactly its accepted, unfinished  *)
(* records.                                                                 *)
ReservationsBalanced ==
    \A a \in Actors : /\ aCount[a] = Cardinality(LiveRecordsOf(a))
                      /\ aBytes[a] = SumReservations(LiveRecordsOf(a))

(* SE-6.7: a running item holds the turn of the queue it runs on, and one   *)
(* that yielded runs again only through the resume permit it queued.        *)
NoResumeWithoutRequeue ==
    \A i \in Items : phase[i] = "running" => Holds(i) /\ yields[i] = resumes[i]

(* SE-10 item 4: an Actor's records start in submission order.              *)
FifoWithinLane ==
    \A s \in Submitters : \A k, m \in 1..Len(Script[s]) :
        LET r1 == Script[s][k]  r2 == Script[s][m] IN
        (k < m /\ r1 \in Records /\ r2 \in Records /\ Owner[r1] = Owner[r2]
         /\ phase[r2] \in {"transferred", "running", "suspended", "requeued", "done"})
            => phase[r1] \in {"transferred", "running", "suspended", "requeued",
                              "done", "rejected"}

(* SE-4.2 vs SE-4.3: at most one item runs at a time. True in SpotWide;     *)
(* the PerActor run checks it expecting a violation (overlap reachable).    *)
NoOverlap == Cardinality({i \in Items : phase[i] = "running"}) <= 1

(* Liveness: every accepted item finishes.                                  *)
AcceptedWorkCompletes ==
    \A i \in Items : phase[i] \in LivePhases ~> phase[i] = "done"

=============================================================================
