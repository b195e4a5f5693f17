--------------------------- MODULE TraceSerialQueue ---------------------------
(***************************************************************************)
(* Trace validation: is one recorded log of one queue a behaviour of       *)
(* SerialQueue.tla? The log is data, in the module TraceLog.tla beside     *)
(* this one (zlink trace check writes it from a log in the trace format,   *)
(* specs/trace-format.md; models/TraceLog.tla is a small example). This    *)
(* module is the same for every log.                                       *)
(*                                                                         *)
(* Event-constrained style: a cursor l walks the log, and each step is the *)
(* spec's own action named by the event (take_next is TakeNext), with the  *)
(* event's parameters and checks of what the event reported. The          *)
(* invariants of the main model run are checked on every state of the     *)
(* path (TraceSerialQueue.cfg).                                            *)
(*                                                                         *)
(* What is abstracted away, and why:                                       *)
(*  - The environment steps a log cannot show. BudgetExpires is allowed    *)
(*    only right before an end_slice and CallReturns only right before a   *)
(*    requeue, which are the events that need them; so each log position   *)
(*    has a handful of states and a long log checks in seconds.            *)
(*  - Work identities and submitters. TraceLog.tla numbers the works 1..N  *)
(*    (a work that finished or was rejected lends its number to a later    *)
(*    submission of the same lane and payload), and one submitter "s"      *)
(*    submits them; the log itself says which work is submitted next, so  *)
(*    NextOf is replaced by TraceNextOf.                                   *)
(*  - Time. As in SerialQueue.tla: only whether the slice's budget is used.*)
(*                                                                         *)
(* Verdicts (run without deadlock checking: the log ends, the path stops): *)
(*  - TRACE_MATCHED printed and exit 0: the log is a behaviour of the spec;*)
(*  - exit 0 without it: a dead end; the depth TLC reached tells the first *)
(*    event that could not be matched;                                     *)
(*  - exit 12: an invariant of the spec broke on the way (named).          *)
(***************************************************************************)
EXTENDS SerialQueue, TraceLog, TLC

(* The bounds, from the data: works 1..N with the lane, payload and most    *)
(* yields TraceLog.tla gives each; close is possible iff the log closes.    *)
TraceWorks == 1..Len(LogLanes)
TraceLane == [w \in TraceWorks |-> LogLanes[w]]
TracePayload == [w \in TraceWorks |-> LogPayloads[w]]
TraceYields == [w \in TraceWorks |-> LogYields[w]]
TraceSubmitters == {"s"}
TraceScript == [s \in TraceSubmitters |-> [i \in TraceWorks |-> i]]
TraceCloseAllowed == \E i \in 1..Len(Log) : Log[i].op = "close"

VARIABLE l      \* how many events of the log are matched

\* The log says which work is submitted next: no search through the script.
TraceNextOf(s) ==
    IF l < Len(Log) /\ Log[l + 1].op \in {"admit", "reject"} THEN Log[l + 1].w ELSE NoWork

Ev == Log[l + 1]

(* One event: its action, and what the event reported (the admission's      *)
(* sequence number and wake flag, the work taken, the requeue's wake flag,  *)
(* whether the slice's end rescheduled).                                    *)
Step ==
    CASE Ev.op = "admit" -> Admit("s") /\ wid'[Ev.w] = Ev.pos
                           /\ Ev.flag = (~drainScheduled /\ ~draining)
      [] Ev.op = "reject" -> Reject("s")
      [] Ev.op = "enter_drain" -> EnterDrain
      [] Ev.op = "take_next" -> TakeNext /\ current' = Ev.w
      [] Ev.op = "finish" -> Finish(Ev.w)
      [] Ev.op = "yield_turn" -> YieldTurn(Ev.w)
      [] Ev.op = "requeue" -> Requeue(Ev.w) /\ Ev.flag = (~drainScheduled /\ ~draining)
      [] Ev.op = "end_slice" -> EndSlice /\ drainScheduled' = Ev.flag
      [] Ev.op = "exit_drain" -> ExitDrain
      [] Ev.op = "close" -> Close

TraceInit == Init /\ l = 0

TraceNext ==
    \/ l < Len(Log) /\ Step /\ l' = l + 1
    \/ l < Len(Log) /\ Ev.op = "end_slice" /\ BudgetExpires /\ UNCHANGED l
    \/ l < Len(Log) /\ Ev.op = "requeue" /\ CallReturns(Ev.w) /\ UNCHANGED l

(* The whole log matched: say so and stop (an invariant, so it is checked   *)
(* on every state as soon as it is reached).                                *)
Matched == l = Len(Log) => (PrintT(<<"TRACE_MATCHED", l>>) /\ TLCSet("exit", TRUE))
=============================================================================
