--------------------- MODULE MCSerialQueueAdmissionSplit ---------------------
(***************************************************************************)
(* The bug admission_split, for MCSerialQueue_admission_split.cfg: the     *)
(* capacity check and the insertion of an admission are two steps, so two  *)
(* submitters can both see the same room and both insert. Must violate     *)
(* CapacityRespected.                                                      *)
(*                                                                         *)
(* Unlike the other broken variants (MCSerialQueue.tla), this one cannot   *)
(* be a replaced operator: between its two steps a submitter remembers     *)
(* the work it saw room for, state SerialQueue.tla does not have. So the   *)
(* variable checked is declared here, and the run uses its own initial     *)
(* predicate and next-state relation: every action of SerialQueue.tla     *)
(* except Admit, in the order of Next, leaving checked alone; Admit is     *)
(* split into AdmitCheck and AdmitInsert; a submitter holding a check      *)
(* neither checks nor is rejected again until it has inserted.            *)
(***************************************************************************)
EXTENDS MCSerialQueue

VARIABLE checked    \* [Submitters -> Works \cup {NoWork}]: the work submitter
                    \* s saw room for and has not inserted yet

InitBugAdmissionSplit ==
    /\ Init
    /\ checked = [s \in Submitters |-> NoWork]

\* The check half of Admit: room is seen, nothing is inserted yet.
AdmitCheck(s) ==
    LET w == NextOf(s) IN
    /\ w # NoWork
    /\ checked[s] = NoWork
    /\ ~closed
    /\ Room(w)
    /\ checked' = [checked EXCEPT ![s] = w]
    /\ UNCHANGED <<core, records, model>>

\* The insertion half, later, without checking again.
AdmitInsert(s) ==
    /\ checked[s] # NoWork
    /\ Insert(checked[s])
    /\ checked' = [checked EXCEPT ![s] = NoWork]
    /\ UNCHANGED <<returned, yields, budgetUsed>>

NextBugAdmissionSplit ==
    \/ \E s \in Submitters :
          \/ AdmitCheck(s)
          \/ AdmitInsert(s)
          \/ checked[s] = NoWork /\ Reject(s) /\ UNCHANGED checked
    \/ /\ \/ EnterDrain \/ TakeNext \/ EndSlice \/ ExitDrain \/ Close
          \/ \E w \in Works : Finish(w) \/ YieldTurn(w) \/ Requeue(w)
          \/ BudgetExpires
          \/ \E w \in Works : CallReturns(w)
          \/ Terminated
       /\ UNCHANGED checked
=============================================================================
