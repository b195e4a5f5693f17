------------------------- MODULE TraceWireSerialQueue -------------------------
(***************************************************************************)
(* Trace validation of what a foreign runtime showed on the wire: is one   *)
(* queue's part of a conformance transcript (zlink conformance run         *)
(* --transcripts DIR) a behaviour of SerialQueue.tla? The data is in the   *)
(* module WireLog.tla beside this one, written by zlink_tool.tla.transcript *)
(* from the transcript through the vocabulary table (accepted is admit,    *)
(* started and resumed are take_next, yielded is yield_turn, finished and  *)
(* failed are finish). This module is the same for every transcript.      *)
(*                                                                         *)
(* Unlike TraceSerialQueue.tla, which checks a runtime's own trace where   *)
(* every core step is an event, the wire does not show every step: the    *)
(* drain's own steps (EnterDrain, EndSlice, ExitDrain), the time passing   *)
(* (BudgetExpires), an external call returning (CallReturns) and the      *)
(* resume permit queueing (Requeue) happen at moments no event reports,    *)
(* and Close happens somewhere after the close command was sent. Those are *)
(* left to the model's nondeterminism, as the kit's oracle does with its   *)
(* hidden steps: any of them may happen any number of times between two   *)
(* observed events. An observed event is the spec's own action with the   *)
(* work the event names. So the log is accepted when SOME way of filling  *)
(* in the hidden steps makes it a behaviour of SerialQueue.tla, and        *)
(* refused when none does. What the transcript does say about them holds: *)
(* a suspended work's call returns only once the runner sent the command   *)
(* that settles it (complete or fail; ret of its yield_turn event), and    *)
(* Close only once the close (or disposal) command was sent.               *)
(*                                                                         *)
(* What is abstracted away, beyond SerialQueue.tla's own abstractions:     *)
(*  - Work names. WireLog.tla numbers the queue's submissions 1..N in the  *)
(*    order they were accepted or rejected; one submitter "s" submits      *)
(*    them in that order (the log says which is next).                    *)
(*  - What the wire does not report: sequence numbers and wake flags (the  *)
(*    model computes them), and whether a rejection was for a full lane or *)
(*    a closed queue beyond the reason (a "closed" reason needs Close).    *)
(*                                                                         *)
(* Verdicts (run without deadlock checking):                               *)
(*  - TRACE_MATCHED printed and exit 0: the log is a behaviour of the spec;*)
(*  - exit 0 without it: no way through; the largest TRACE_AT printed is   *)
(*    how many events were matched, so the next one is the first refused; *)
(*  - exit 12: an invariant of the spec broke on the way (named).          *)
(***************************************************************************)
EXTENDS SerialQueue, WireLog, TLC

TraceWorks == 1..Len(LogLanes)
TraceLane == [w \in TraceWorks |-> LogLanes[w]]
TracePayload == [w \in TraceWorks |-> LogPayloads[w]]
TraceYields == [w \in TraceWorks |-> LogYields[w]]
TraceSubmitters == {"s"}
TraceScript == [s \in TraceSubmitters |-> [i \in TraceWorks |-> i]]
\* Close is possible iff the transcript sent a close command for this queue.
TraceCloseAllowed == LogCloseAfter >= 0

VARIABLE l      \* how many events of the log are matched

TraceNextOf(s) ==
    IF l < Len(Log) /\ Log[l + 1].op \in {"admit", "reject"} THEN Log[l + 1].w ELSE NoWork

Ev == Log[l + 1]

(* One observed event: its action, for the work it names. A rejection says  *)
(* whether it was for a closed queue (flag).                               *)
Step ==
    CASE Ev.op = "admit" -> Admit("s")
      [] Ev.op = "reject" -> Reject("s") /\ Ev.flag = closed
      [] Ev.op = "take_next" -> TakeNext /\ current' = Ev.w
      [] Ev.op = "finish" -> Finish(Ev.w)
      [] Ev.op = "yield_turn" -> YieldTurn(Ev.w)

(* How many events of this queue came before the runner settled the call   *)
(* w is suspended on (its latest yield_turn's ret; 0 when no command does). *)
ReturnAfter(w) ==
    LET js == {j \in 1..l : Log[j].op = "yield_turn" /\ Log[j].w = w}
    IN  IF js = {} THEN 0 ELSE Log[CHOOSE j \in js : \A k \in js : k <= j].ret

(* What the wire does not show. Close only once the transcript sent the    *)
(* close command: LogCloseAfter events of this queue came before it.       *)
Hidden ==
    \/ EnterDrain \/ EndSlice \/ ExitDrain \/ BudgetExpires
    \/ \E w \in Works : (CallReturns(w) /\ l >= ReturnAfter(w)) \/ Requeue(w)
    \/ TraceCloseAllowed /\ l >= LogCloseAfter /\ Close

(* The furthest the log got: printed each time a state matches one more    *)
(* event, so a refused log tells its first unmatched event (register 1).  *)
TraceInit == Init /\ l = 0 /\ TLCSet(1, 0)

TraceNext ==
    \/ l < Len(Log) /\ Step /\ l' = l + 1
    \/ l < Len(Log) /\ Hidden /\ UNCHANGED l

Furthest == l <= TLCGet(1) \/ (TLCSet(1, l) /\ PrintT(<<"TRACE_AT", l>>))

Matched == l = Len(Log) => (PrintT(<<"TRACE_MATCHED", l>>) /\ TLCSet("exit", TRUE))
=============================================================================
