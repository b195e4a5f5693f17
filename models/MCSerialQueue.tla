--------------------------- MODULE MCSerialQueue ---------------------------
(***************************************************************************)
(* Bounds for SerialQueue.tla. Works are taken from one catalogue, so a    *)
(* run with N works uses works 1..N of it; the .cfg files pick N through   *)
(* the operators below (and the limits directly).                          *)
(*                                                                         *)
(*   work  lane       payload  may yield  submitted by                     *)
(*   1     app        1        once       s1 (first)                       *)
(*   2     life       0        once       s2 (second)                      *)
(*   3     barrier    0        once       s2 (first)                       *)
(*   4     life       0        never      s1 (second)                      *)
(*   5     app        0        never      s1 (third)                       *)
(*   6     app        0        once       s2 (third)                       *)
(*                                                                         *)
(* Work 1 reserves 2 bytes (payload 1 + FixedCost 1), every other work 1.  *)
(* With AppByteCap = 2 and LifeCountCap = 1 the application lane can be    *)
(* full by bytes and the lifecycle lane by count, so both kinds of         *)
(* rejection are reachable, as is the burst limit (BurstLimit = 1: two     *)
(* lifecycle takes while application work waits would pass it). From 3    *)
(* works on, the two submitters race for each lane: works 1 and 3 for the *)
(* application lane's bytes, works 2 and 4 for the lifecycle lane's count. *)
(*                                                                         *)
(* The end of the module holds the deliberately broken variants: each is   *)
(* named <Operator>Bug<Name> and replaces <Operator> of SerialQueue.tla in  *)
(* the configuration MCSerialQueue_<name>.cfg (Operator <- ...), which      *)
(* must violate the invariant or property manifest.json names for it.      *)
(***************************************************************************)
EXTENDS SerialQueue

CatalogueLane == <<"app", "life", "barrier", "life", "app", "app">>
CataloguePayload == <<1, 0, 0, 0, 0, 0>>
CatalogueYields == <<1, 1, 1, 0, 0, 1>>
CatalogueOrder == [s \in {"s1", "s2"} |-> IF s = "s1" THEN <<1, 4, 5>> ELSE <<3, 2, 6>>]

TwoSubmitters == {"s1", "s2"}

\* Works 1..n of the catalogue.
WorksUpTo(n) == 1..n
LaneUpTo(n) == [w \in 1..n |-> CatalogueLane[w]]
PayloadUpTo(n) == [w \in 1..n |-> CataloguePayload[w]]
YieldsUpTo(n) == [w \in 1..n |-> CatalogueYields[w]]
ScriptUpTo(n) == [s \in TwoSubmitters |->
                    SelectSeq(CatalogueOrder[s], LAMBDA w : w <= n)]

Works2 == WorksUpTo(2)
Lane2 == LaneUpTo(2)
Payload2 == PayloadUpTo(2)
Yields2 == YieldsUpTo(2)
Script2 == ScriptUpTo(2)

Works3 == WorksUpTo(3)
Lane3 == LaneUpTo(3)
Payload3 == PayloadUpTo(3)
Yields3 == YieldsUpTo(3)
Script3 == ScriptUpTo(3)

Works4 == WorksUpTo(4)
Lane4 == LaneUpTo(4)
Payload4 == PayloadUpTo(4)
Yields4 == YieldsUpTo(4)
Script4 == ScriptUpTo(4)

Works5 == WorksUpTo(5)
Lane5 == LaneUpTo(5)
Payload5 == PayloadUpTo(5)
Yields5 == YieldsUpTo(5)
Script5 == ScriptUpTo(5)

Works6 == WorksUpTo(6)
Lane6 == LaneUpTo(6)
Payload6 == PayloadUpTo(6)
Yields6 == YieldsUpTo(6)
Script6 == ScriptUpTo(6)

-----------------------------------------------------------------------------
(* Deliberately broken variants.                                           *)

\* drain_without_flag_check: an admission posts a drain without looking at
\* the flags, so a second drain can be scheduled beside a running one.
\* Must violate NoDoubleDrain.
AdmitSetsDrainFlagBugDrainWithoutFlagCheck == drainScheduled' = TRUE

\* resume_skips_requeue: a work whose external call returned goes on running
\* at once, outside any turn, instead of queueing a resume permit.
\* Must violate NoResumeWithoutRequeue.
RequeueBugResumeSkipsRequeue(w) ==
    /\ w \in returned
    /\ suspended' = suspended \ {w}
    /\ returned' = returned \ {w}
    /\ phase' = [phase EXCEPT ![w] = "running"]
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, drainScheduled, draining, current, streak, closed,
                   wid, seq, resumes>>
    /\ UNCHANGED <<yields, budgetUsed>>

\* lifecycle_ignores_burst: lifecycle work is served first whatever the
\* streak. Must violate LifecycleBurstBounded.
SelectNextBugLifecycleIgnoresBurst(nBarrier, nLife, nApp, s) ==
    IF nBarrier > 0 THEN <<"barrier", 0>>
    ELSE IF nLife > 0 THEN <<"life", IF nApp > 0 THEN s + 1 ELSE 0>>
    ELSE IF nApp > 0 THEN <<"app", 0>>
    ELSE <<"none", s>>

\* close_drops_accepted: close empties the lines; their works stay accepted
\* (and reserved) but nothing will ever run them. Every invariant holds;
\* AcceptedWorkCompletes must fail.
CloseBugCloseDropsAccepted ==
    /\ CloseAllowed
    /\ ~closed
    /\ closed' = TRUE
    /\ app' = << >> /\ life' = << >> /\ barrier' = << >>
    /\ UNCHANGED <<appCount, appBytes, lifeCount, lifeBytes, nextSeq,
                   drainScheduled, draining, current, streak, suspended,
                   records, model>>

\* admission_split needs a variable SerialQueue.tla does not have (the room a
\* submitter saw and has not used yet): see MCSerialQueueAdmissionSplit.tla.
=============================================================================
