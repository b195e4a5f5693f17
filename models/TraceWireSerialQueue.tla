------------------------- MODULE TraceWireSerialQueue -------------------------
(***************************************************************************)
(* Trace validation of what a foreign runtime showed on the wire: is each  *)
(* queue's part of a conformance transcript (zlink conformance run         *)
(* --transcripts DIR) a behaviour of SerialQueue.tla? The data is in the   *)
(* module WireLog.tla beside this one, written by zlink_tool.tla.transcript *)
(* from transcripts through the vocabulary table (accepted is admit,       *)
(* started and resumed are take_next, yielded is yield_turn, finished and  *)
(* failed are finish). This module is the same for every transcript.      *)
(*                                                                         *)
(* One run of TLC judges many queue logs (NLogs of them, from one or many *)
(* transcripts): the variable k says which log a state belongs to, chosen *)
(* once in the initial state, and log k's queue is the instance Q(k) of    *)
(* SerialQueue.tla with that log's works and lane policy. The logs never   *)
(* meet: every state of log k has k in it, so TLC walks NLogs independent *)
(* searches in one JVM, and stops when each log is matched (or one breaks *)
(* an invariant; the caller then runs the rest again without it).         *)
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
(* work the event names. So a log is accepted when SOME way of filling in  *)
(* the hidden steps makes it a behaviour of SerialQueue.tla, and refused   *)
(* when none does. What the transcript does say about them holds: a       *)
(* suspended work's call returns only once the runner sent the command    *)
(* that settles it (complete or fail; ret of its yield_turn event), and    *)
(* Close only once the close (or disposal) command was sent.               *)
(*                                                                         *)
(* Racing submissions (submit_concurrent, SE-6.3): their verdicts are      *)
(* written by as many threads, so the order of their accepted and rejected *)
(* events says nothing about the order the queue admitted them in. A run   *)
(* of such events (entries lo..hi of a log) is matched in any order: each  *)
(* step takes one entry of the run not taken yet (taken), as the oracle    *)
(* judges every order of them.                                             *)
(*                                                                         *)
(* What is abstracted away, beyond SerialQueue.tla's own abstractions:     *)
(*  - Work names. WireLog.tla numbers a queue's submissions 1..N in the    *)
(*    order they were accepted or rejected. Each admission entry j is a   *)
(*    submitter of its own that submits just that work (Script), and the  *)
(*    log says which one submits next.                                     *)
(*  - What the wire does not report: sequence numbers and wake flags (the  *)
(*    model computes them), and whether a rejection was for a full lane or *)
(*    a closed queue beyond the reason (a "closed" reason needs Close).    *)
(*                                                                         *)
(* Disposal (SD-1 .. SD-5, D-8, D-27): a queue whose scope was disposed is  *)
(* checked here too, on SerialQueue.tla's lanes and reservations, with the *)
(* disposal state of Disposal.tla beside them: cancelReq (cancellations    *)
(* pending delivery), zombie (works marked zombies), mode ("open",         *)
(* "safely", "timeout", "cancelled"). Each disposal command the transcript *)
(* sent to the queue's target (LogDisposals) is one hidden step, taken     *)
(* once, after the command was sent and before the first event after its   *)
(* reply (the call had taken effect when it returned): Dispose,            *)
(* DisposeSafely, DisposeAfterTimeout, as Disposal.tla's actions of those  *)
(* names, each closing the queue as well; the runtime's end (SD-5) is      *)
(* RuntimeEnd, which cancels a queue's works once none of them is active.  *)
(* ExpireTimeout (the timer fires) and SurviveCancel (a work catches its    *)
(* cancellation and goes on, a zombie) are hidden steps at any moment they *)
(* are enabled, as time and a work's code are not modelled. Observed:      *)
(*  - cancelled: the turn holder with a pending cancellation ends          *)
(*    cancelled (Finish, D-8: on its own turn), or a queued work that      *)
(*    never started and has one ends without a turn (Cancel: it leaves    *)
(*    its lane and its reservation is released, as the core's cancel);     *)
(*    nothing else may end cancelled (dispose_safely cancels nothing);     *)
(*  - zombie: a live work DisposeSafely marked, reported once;             *)
(*  - a queued work whose cancellation is pending never gets the turn, and *)
(*    a settle is answered only once every such work has ended.            *)
(* Disposal.tla's one FIFO line is SerialQueue.tla's lanes here, so the    *)
(* order of turns stays checked after a disposal.                          *)
(*                                                                         *)
(* SpotWide (SE-4.5, SE-4.6, SE-5.3, D-6): the Actor queues of a SpotWide  *)
(* (or Instance) Spot and its Spot queue are one log, walked together. The *)
(* Spot queue is the instance Q(i); each Actor queue a beside it is        *)
(* SpotWide.tla's: a FIFO line aLine[a] of the records it accepted, their  *)
(* reservations (inActor: accepted and not ended there) judged against the *)
(* Actor policy (LogActorCountCap, LogActorByteCap, LogActorResv), and the *)
(* claim[a]. An Actor record's accepted and rejected are the Actor queue's *)
(* Admit and Reject (ActorAdmit, ActorReject); its started, yielded,       *)
(* resumed and finished the Spot queue's. What the wire does not show:     *)
(*  - ActorTransfer(a), SpotWide.tla's Transfer: when a's claim is free,  *)
(*    its head takes the claim and one execution turn goes to the Spot     *)
(*    queue's application lane (Q(i)!Insert) at the fixed cost only, never *)
(*    refused, not even after Close (SE-5.3, D-6);                         *)
(*  - EndClaim(a): once the record's turn on the Spot queue ended, a's     *)
(*    claim and the record's reservation there end (SpotWide.tla's Finish, *)
(*    in a step of its own, as the runtime does it).                       *)
(* A yield keeps the claim (SE-4.6), so a's next record cannot start before *)
(* the one that holds it ends. A settle answered means no transfer was      *)
(* possible and no claim was left to end. Disposal cancels a record still  *)
(* in its Actor's line there (ActorCancel), and a transferred turn that    *)
(* never started on the Spot queue with its claim (Cancel).                *)
(*                                                                         *)
(* Verdicts (run without deadlock checking), per log k:                    *)
(*  - <<"TRACE_MATCHED", k, n>> printed: log k is a behaviour of the spec; *)
(*  - not printed: no way through; the largest <<"TRACE_AT", k, n>>       *)
(*    printed is how many events were matched, so event n + 1 is the first *)
(*    refused;                                                             *)
(*  - exit 12: an invariant broke on the way (named); the error trace's    *)
(*    states say which log (k).                                            *)
(***************************************************************************)
EXTENDS Integers, Sequences, FiniteSets, TLC, WireLog

VARIABLES
    app, life, barrier, appCount, appBytes, lifeCount, lifeBytes, nextSeq,
    drainScheduled, draining, current, streak, closed, suspended,
    phase, wid, seq, resumes, returned, yields, budgetUsed,
    k,      \* which log this state belongs to
    l,      \* how many events of log k are matched
    taken,  \* entries of the current racing run matched ahead of l
    lag,    \* the turn holder got its turn in a hidden take: its started or
            \* resumed event is still to come
    ending, \* the work whose terminal event was seen, not yet ended by the queue
            \* (its reservation released: a hidden Finish); NoWork if none
    cancelReq, \* works whose cancellation is pending delivery (Disposal.tla's)
    zombie, \* works marked zombies (Disposal.tla's)
    mode,   \* the scope's disposal mode (Disposal.tla's): "open", "safely",
            \* "timeout" (its timer runs) or "cancelled"
    done,   \* the disposal commands of log k taken (indices of LogDisposals[k])
    told,   \* the zombies a zombie event reported
    held,   \* a session's final work accepted and not placed yet (D-12); 0 if none
    aLine,  \* [Actors(k) -> Seq]: each Actor queue's line of accepted records (SpotWide)
    claim,  \* [Actors(k) -> record or 0]: the record holding the Actor queue's turn
    inActor \* records accepted by their Actor queue and not ended there

SQ == <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes, nextSeq,
        drainScheduled, draining, current, streak, closed, suspended,
        phase, wid, seq, resumes, returned, yields, budgetUsed>>
DI == <<cancelReq, zombie, mode, done, told>>
AQ == <<aLine, claim, inActor>>

Logs == 1..NLogs
\* Log i's Actor queues (SpotWide), and the one a work was accepted by (0: a work of
\* the Spot queue, or of a queue of no Spot).
Actors(i) == DOMAIN LogActorCountCap[i]
ActorOf(i, w) == LogActorOf[i][w]
IsRecord(i, w) == w \in DOMAIN LogActorOf[i] /\ LogActorOf[i][w] # 0
Admissions(i) == {j \in DOMAIN Log[i] : Log[i][j].op \in {"admit", "reject"}}

\* The submitter an admission entry is: the work it names (SerialQueue's NextOf,
\* replaced by this through the .cfg).
TraceNextOf(j) ==
    IF k \in Logs /\ j \in DOMAIN Log[k] /\ Log[k][j].op \in {"admit", "reject"}
    THEN Log[k][j].w ELSE 0

Q(i) == INSTANCE SerialQueue WITH
    Works <- 1..Len(LogLanes[i]),
    Lane <- LogLanes[i],
    Payload <- LogPayloads[i],
    MaxYields <- LogYields[i],
    Submitters <- Admissions(i),
    Script <- [j \in Admissions(i) |-> <<Log[i][j].w>>],
    AppCountCap <- LogAppCountCap[i],
    AppByteCap <- LogAppByteCap[i],
    LifeCountCap <- LogLifeCountCap[i],
    LifeByteCap <- LogLifeByteCap[i],
    FixedCost <- LogFixedCost[i],
    BurstLimit <- LogBurstLimit[i],
    CloseAllowed <- LogCloseAfter[i] >= 0

(* SerialQueue.tla's TakeNext, where the work taken is not a queued one    *)
(* whose cancellation is pending (Disposal.tla's TakeNext: it never        *)
(* starts; Cancel ends it).                                                *)
Take(i) ==
    /\ Q(i)!TakeNext
    /\ ~(phase[current'] = "queued" /\ current' \in cancelReq)

(* The disposal state after w's terminal event (Disposal.tla's Finish and   *)
(* Cancel): its cancellation is spent, it is no zombie any more.           *)
Ends(w) ==
    /\ cancelReq' = cancelReq \ {w}
    /\ zombie' = zombie \ {w}
    /\ UNCHANGED <<mode, done, told>>

(* Live(i): the works accepted and not ended, a held final work included    *)
(* (D-22: it is a work from its acceptance on).                            *)
Live(i) == {w \in 1..Len(LogLanes[i]) :
               phase[w] \in Q(i)!LivePhases \/ w = held \/ w \in inActor}

(* A session's final work is due (D-12): every work accepted before it has *)
(* ended, or a disposal cancelled it.                                      *)
FinalDue(i) == held # 0 /\ (held \in cancelReq \/ Live(i) = {held})

(* The records an Actor queue reserves, and its admission check (SpotWide.tla's *)
(* Room, on the Actor policy).                                              *)
RECURSIVE ActorBytes(_, _)
ActorBytes(i, S) ==
    IF S = {} THEN 0
    ELSE LET w == CHOOSE x \in S : TRUE IN LogActorResv[i][w] + ActorBytes(i, S \ {w})
Reserved(i, a) == {r \in inActor : ActorOf(i, r) = a}
ActorRoom(i, w) ==
    /\ Cardinality(Reserved(i, ActorOf(i, w))) < LogActorCountCap[i][ActorOf(i, w)]
    /\ ActorBytes(i, Reserved(i, ActorOf(i, w))) + LogActorResv[i][w]
           <= LogActorByteCap[i][ActorOf(i, w)]

(* Admit and Reject of an Actor record by its Actor queue (SpotWide.tla's).  *)
(* The Spot's Close closes its Actor queues too.                            *)
ActorAdmit(i, w) ==
    LET a == ActorOf(i, w) IN
    /\ phase[w] = "new" /\ w \notin inActor
    /\ ~closed /\ ActorRoom(i, w)
    /\ aLine' = [aLine EXCEPT ![a] = Append(@, w)]
    /\ inActor' = inActor \cup {w}
    /\ UNCHANGED claim /\ UNCHANGED SQ

ActorReject(i, w, flag) ==
    /\ phase[w] = "new" /\ w \notin inActor
    /\ ~(~closed /\ ActorRoom(i, w))
    /\ flag = closed
    /\ phase' = [phase EXCEPT ![w] = "rejected"]
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, drainScheduled, draining, current, streak, closed,
                   suspended, wid, seq, resumes, returned, yields, budgetUsed>>
    /\ UNCHANGED AQ

(* ActorCancel: a record still in its Actor queue's line, whose cancellation *)
(* is pending, leaves it and its reservation there is released.            *)
ActorCancel(i, w) ==
    /\ phase[w] = "new" /\ w \in inActor /\ claim[ActorOf(i, w)] # w
    /\ aLine' = [aLine EXCEPT ![ActorOf(i, w)] = SelectSeq(@, LAMBDA x : x # w)]
    /\ inActor' = inActor \ {w}
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ UNCHANGED claim
    /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount, lifeBytes,
                   nextSeq, drainScheduled, draining, current, streak, closed,
                   suspended, wid, seq, resumes, returned, yields, budgetUsed>>

(* Actor queue a can move its head's turn to the Spot queue (Transfer); a's *)
(* claim holder ended on the Spot queue and its claim is still to end.      *)
TransferReady(i, a) ==
    claim[a] = 0 /\ aLine[a] # << >> /\ Head(aLine[a]) \notin cancelReq
EndClaimReady(a) == claim[a] # 0 /\ phase[claim[a]] = "done"

(* A record's end on its Actor queue: its claim and its reservation there. *)
EndsOnActor(i, w) ==
    /\ claim' = [claim EXCEPT ![ActorOf(i, w)] = 0]
    /\ inActor' = inActor \ {w}
    /\ UNCHANGED aLine

(* Cancel (Disposal.tla's, on SerialQueue.tla's state as the core's cancel  *)
(* does it): a queued work that never started, whose cancellation is       *)
(* pending, leaves its lane and its reservation is released.               *)
Cancel(i, w) ==
    /\ phase[w] = "queued"
    /\ app' = SelectSeq(app, LAMBDA x : x # w)
    /\ life' = SelectSeq(life, LAMBDA x : x # w)
    /\ barrier' = SelectSeq(barrier, LAMBDA x : x # w)
    /\ IF Q(i)!ReserveLane(w) = "life"
       THEN /\ lifeCount' = lifeCount - 1
            /\ lifeBytes' = lifeBytes - Q(i)!Reservation(w)
            /\ UNCHANGED <<appCount, appBytes>>
       ELSE /\ appCount' = appCount - 1
            /\ appBytes' = appBytes - Q(i)!Reservation(w)
            /\ UNCHANGED <<lifeCount, lifeBytes>>
    /\ phase' = [phase EXCEPT ![w] = "done"]
    /\ wid' = [wid EXCEPT ![w] = -1]
    /\ seq' = [seq EXCEPT ![w] = -1]
    /\ UNCHANGED <<nextSeq, drainScheduled, draining, current, streak, closed,
                   suspended, resumes, returned, yields, budgetUsed>>
    \* a transferred turn: its record ends on its Actor queue with it (one outcome)
    /\ IF IsRecord(i, w) THEN EndsOnActor(i, w) ELSE UNCHANGED AQ

(* One observed event of log i, entry j: its action, for the work it names. *)
(* A rejection says whether it was for a closed queue (flag); a take whether *)
(* it was a resume (flag: resumed, not started). A take may have happened   *)
(* unseen before (lag): the drain gives the next item the turn before the   *)
(* work's code runs and reports started or resumed, so other events (an     *)
(* admission) may be written in between; the take was as the queue was then.*)
(* Likewise a terminal event (finished, failed) is written by the work while *)
(* it holds its turn: the queue ends it (Finish: the turn and the           *)
(* reservation released) in a hidden step after it (ending).               *)
Do(i, j) ==
    LET e == Log[i][j] IN
    CASE e.op = "admit" ->
            /\ IF IsRecord(i, e.w) THEN ActorAdmit(i, e.w) ELSE Q(i)!Admit(j) /\ UNCHANGED AQ
            /\ UNCHANGED DI
      \* a session's final work accepted (D-12): held back, the session closes
      [] e.op = "hold" ->
            /\ e.w # 0 /\ held = 0 /\ phase[e.w] = "new"
            /\ Q(i)!Close /\ held' = e.w /\ UNCHANGED DI
      [] e.op = "reject" ->
            /\ IF IsRecord(i, e.w) THEN ActorReject(i, e.w, e.flag)
               ELSE Q(i)!Reject(j) /\ e.flag = closed /\ UNCHANGED AQ
            /\ UNCHANGED DI
      [] e.op = "take_next" ->
            /\ \/ ~lag /\ Take(i) /\ current' = e.w
               \/ lag /\ current = e.w /\ UNCHANGED SQ
            /\ (resumes[e.w] > 0) = e.flag  \* started, or resumed after a yield
            /\ UNCHANGED DI
      [] e.op = "finish" ->
            /\ ~lag /\ ending = 0 /\ current = e.w /\ e.w # 0
            /\ ending' = e.w /\ UNCHANGED SQ
            /\ Ends(e.w)
      \* cancelled: on the work's own turn, or before it ever started
      [] e.op = "cancel" ->
            /\ e.w # 0 /\ e.w \in cancelReq
            /\ \/ ~lag /\ ending = 0 /\ current = e.w /\ ending' = e.w /\ UNCHANGED SQ
                  /\ UNCHANGED held /\ UNCHANGED AQ
               \/ Cancel(i, e.w) /\ UNCHANGED <<ending, held>>
               \/ ActorCancel(i, e.w) /\ UNCHANGED <<ending, held>>
               \* a held final work cancelled before it was placed (D-22)
               \/ /\ e.w = held /\ held' = 0 /\ phase' = [phase EXCEPT ![e.w] = "done"]
                  /\ UNCHANGED <<app, life, barrier, appCount, appBytes, lifeCount,
                                 lifeBytes, nextSeq, drainScheduled, draining, current,
                                 streak, closed, suspended, wid, seq, resumes, returned,
                                 yields, budgetUsed, ending>>
                  /\ UNCHANGED AQ
            /\ Ends(e.w)
      \* zombie: a live work DisposeSafely marked, reported once
      [] e.op = "dispose_safely" ->
            /\ e.w \in zombie \ told /\ e.w \in Live(i)
            /\ told' = told \cup {e.w}
            /\ UNCHANGED <<cancelReq, zombie, mode, done>> /\ UNCHANGED SQ
      [] e.op = "yield_turn" ->
            /\ ~lag /\ ending = 0 /\ e.w \notin cancelReq /\ Q(i)!YieldTurn(e.w)
            /\ UNCHANGED DI
      \* a settle answered: nothing could progress, so every unseen take was
      \* reported, every terminal event's work ended by then, every queued work
      \* whose cancellation is pending was cancelled, and a final work due was
      \* placed
      [] e.op = "sync" ->
            /\ ~lag /\ ending = 0 /\ UNCHANGED SQ /\ UNCHANGED DI
            /\ \A w \in cancelReq : phase[w] # "queued" /\ ~(phase[w] = "new" /\ w \in inActor)
            /\ ~FinalDue(i)
            \* no transfer was possible, no claim was left to end (SpotWide)
            /\ \A a \in Actors(i) : ~TransferReady(i, a) /\ ~EndClaimReady(a)
            \* and no ready work waited for a turn nobody held
            /\ Q(i)!HasReady => current # 0

(* The next event: entry l + 1, or, inside a racing run, any entry of the   *)
(* run not matched yet.                                                    *)
Step(i) ==
    LET e == Log[i][l + 1] IN
    \E j \in (e.lo..e.hi) \ taken :
        /\ Do(i, j)
        /\ taken' = IF l + 1 = e.hi THEN {} ELSE taken \cup {j}
        /\ lag' = (lag /\ e.op # "take_next")
        /\ e.op \notin {"finish", "cancel"} => UNCHANGED ending
        /\ e.op \notin {"hold", "cancel"} => UNCHANGED held
        /\ e.op \notin {"admit", "reject", "cancel"} => UNCHANGED AQ
        \* a disposal whose reply came before this event had taken effect
        /\ \A c \in DOMAIN LogDisposals[i] :
               0 <= LogDisposals[i][c].by /\ LogDisposals[i][c].by <= l => c \in done

(* How many events of log i came before the runner settled the call w is    *)
(* suspended on (its latest yield_turn's ret; 0 when no command does).      *)
ReturnAfter(i, w) ==
    LET js == {j \in 1..l : Log[i][j].op = "yield_turn" /\ Log[i][j].w = w}
    IN  IF js = {} THEN 0 ELSE Log[i][CHOOSE j \in js : \A m \in js : m <= j].ret

(* The disposal steps, Disposal.tla's actions of the same names on this     *)
(* queue's disposal state.                                                 *)

\* Cancelling everything live (Disposal.tla's CancelAll): a suspended work's
\* pending call is cut short (CallReturns no longer waits for the runner).
CancelAll(i) ==
    /\ cancelReq' = cancelReq \cup Live(i)
    /\ mode' = "cancelled"
    /\ UNCHANGED <<zombie, told>>

Dispose(i) ==
    IF mode # "cancelled" THEN CancelAll(i) ELSE UNCHANGED <<cancelReq, zombie, mode, told>>

DisposeSafely(i) ==
    IF mode = "open"
    THEN /\ zombie' = zombie \cup Live(i) /\ mode' = "safely"
         /\ UNCHANGED <<cancelReq, told>>
    ELSE UNCHANGED <<cancelReq, zombie, mode, told>>

\* D-27: after dispose_safely, the call bounds the zombies left (a bound already
\* running stays the one that holds).
DisposeAfterTimeout(i) ==
    IF mode = "open" \/ (mode = "safely" /\ Live(i) # {})
    THEN mode' = "timeout" /\ UNCHANGED <<cancelReq, zombie, told>>
    ELSE UNCHANGED <<cancelReq, zombie, mode, told>>

ExpireTimeout(i) == mode = "timeout" /\ CancelAll(i)

\* SD-5: the runtime ends once no active work is left; the zombies still
\* running are then cancelled.
RuntimeEnd(i) ==
    /\ Live(i) \subseteq zombie
    /\ IF Live(i) # {} THEN CancelAll(i) ELSE UNCHANGED <<cancelReq, zombie, mode, told>>

(* Disposal command c of log i (sent after LogDisposals[i][c].after events  *)
(* of the queue), taken once; every disposal closes the queue too.         *)
DisposalCommand(i, c) ==
    LET d == LogDisposals[i][c] IN
    /\ c \notin done /\ l >= d.after
    /\ done' = done \cup {c}
    /\ CASE d.how = "dispose" -> Dispose(i)
          [] d.how = "safely" -> DisposeSafely(i)
          [] d.how = "timeout" -> DisposeAfterTimeout(i)
          [] d.how = "end" -> RuntimeEnd(i)
    /\ \/ ~closed /\ Q(i)!Close
       \/ closed /\ UNCHANGED SQ

(* SurviveCancel (Disposal.tla's): the turn holder's cancellation is        *)
(* delivered on its turn and it does not end: the delivery is spent and it *)
(* is a zombie.                                                            *)
SurviveCancel(w) ==
    /\ current = w /\ w \in cancelReq
    /\ cancelReq' = cancelReq \ {w}
    /\ zombie' = zombie \cup {w}
    /\ UNCHANGED <<mode, done, told>>

(* Transfer (the core's transfer, as SpotWide.tla's Transfer places a turn):  *)
(* the held final work is placed in the application lane at the fixed cost, *)
(* never refused, the queue being closed (D-6, D-12), once every work       *)
(* accepted before it has ended.                                           *)
Transfer(i) ==
    /\ FinalDue(i) /\ held \notin cancelReq
    /\ Q(i)!Insert(held)
    /\ UNCHANGED <<returned, yields, budgetUsed>>
    /\ held' = 0

(* Transfer (SpotWide.tla's, SE-4.5, SE-5.3, D-6): Actor queue a's claim is *)
(* free, so its head takes it and one execution turn goes to the Spot       *)
(* queue's application lane at the fixed cost (its payload stays reserved  *)
(* on the Actor queue), never refused, the Spot closed or not. A record    *)
(* whose cancellation is pending never moves (ActorCancel ends it).        *)
ActorTransfer(i, a) ==
    /\ TransferReady(i, a)
    /\ LET r == Head(aLine[a]) IN
       /\ claim' = [claim EXCEPT ![a] = r]
       /\ aLine' = [aLine EXCEPT ![a] = Tail(@)]
       /\ Q(i)!Insert(r)
    /\ UNCHANGED <<returned, yields, budgetUsed, inActor>>

(* EndClaim: the record holding a's claim ended on the Spot queue; a's turn *)
(* and the record's reservation there end (SpotWide.tla's Finish, the      *)
(* Actor queue's half, SE-4.6).                                            *)
EndClaim(i, a) ==
    /\ EndClaimReady(a)
    /\ EndsOnActor(i, claim[a])
    /\ UNCHANGED SQ

(* What the wire does not show. Close only once the transcript sent the    *)
(* close command: LogCloseAfter[i] events of the queue came before it. A   *)
(* pending cancellation cuts a suspended work's call short.                *)
QueueHidden(i) ==
    \/ Q(i)!EnterDrain \/ Q(i)!EndSlice \/ Q(i)!ExitDrain \/ Q(i)!BudgetExpires
    \/ \E w \in 1..Len(LogLanes[i]) :
           \/ Q(i)!CallReturns(w) /\ (l >= ReturnAfter(i, w) \/ w \in cancelReq)
           \/ Q(i)!Requeue(w)
    \/ LogCloseAfter[i] >= 0 /\ l >= LogCloseAfter[i] /\ Q(i)!Close

DisposalHidden(i) ==
    \/ \E c \in DOMAIN LogDisposals[i] : DisposalCommand(i, c)
    \/ ExpireTimeout(i) /\ UNCHANGED done /\ UNCHANGED SQ
    \/ \E w \in 1..Len(LogLanes[i]) : SurviveCancel(w) /\ UNCHANGED SQ

Hidden(i) ==
    \/ Transfer(i) /\ UNCHANGED <<lag, ending>> /\ UNCHANGED DI /\ UNCHANGED AQ
    \/ QueueHidden(i) /\ UNCHANGED <<lag, ending, held>> /\ UNCHANGED DI /\ UNCHANGED AQ
    \/ /\ ~lag /\ Take(i) /\ lag' = TRUE /\ UNCHANGED <<ending, held>> /\ UNCHANGED DI
       /\ UNCHANGED AQ
    \/ /\ ending # 0 /\ Q(i)!Finish(ending) /\ ending' = 0
       /\ UNCHANGED <<lag, held>> /\ UNCHANGED DI /\ UNCHANGED AQ
    \/ DisposalHidden(i) /\ UNCHANGED <<lag, ending, held>> /\ UNCHANGED AQ
    \/ \E a \in Actors(i) :
           \/ ActorTransfer(i, a) /\ UNCHANGED <<lag, ending, held>> /\ UNCHANGED DI
           \/ EndClaim(i, a) /\ UNCHANGED <<lag, ending, held>> /\ UNCHANGED DI

(* Register i holds the furthest log i got (-1 once it matched); register  *)
(* NLogs + 1 how many logs matched.                                        *)
TraceInit ==
    /\ k \in Logs
    /\ l = 0
    /\ taken = {}
    /\ lag = FALSE
    /\ ending = 0
    /\ cancelReq = {} /\ zombie = {} /\ mode = "open" /\ done = {} /\ told = {}
    /\ held = 0
    /\ inActor = {}
    /\ \E i \in Logs :
           /\ k = i /\ Q(i)!Init /\ TLCSet(i, 0)
           /\ aLine = [a \in Actors(i) |-> << >>]
           /\ claim = [a \in Actors(i) |-> 0]
    /\ TLCSet(NLogs + 1, 0)

TraceNext ==
    \E i \in Logs :
        /\ k = i
        /\ l < Len(Log[i])
        /\ UNCHANGED k
        /\ \/ Step(i) /\ l' = l + 1
           \/ Hidden(i) /\ UNCHANGED <<l, taken>>

(* A state of a log already matched is not explored further; a state that  *)
(* matches one more event than any before it prints so.                   *)
Furthest ==
    /\ TLCGet(k) >= 0
    /\ l <= TLCGet(k) \/ (TLCSet(k, l) /\ PrintT(<<"TRACE_AT", k, l>>))

Matched ==
    l = Len(Log[k]) =>
        \/ TLCGet(k) < 0
        \/ /\ PrintT(<<"TRACE_MATCHED", k, l>>)
           /\ TLCSet(k, -1)
           /\ TLCSet(NLogs + 1, TLCGet(NLogs + 1) + 1)
           /\ (TLCGet(NLogs + 1) = NLogs => TLCSet("exit", TRUE))

(* SerialQueue.tla's invariants, each on the log a state belongs to. *)
TypeOK == \A i \in Logs : k = i => Q(i)!TypeOK
NoDoubleDrain == \A i \in Logs : k = i => Q(i)!NoDoubleDrain
FifoWithinLane == \A i \in Logs : k = i => Q(i)!FifoWithinLane
LifecycleBurstBounded == \A i \in Logs : k = i => Q(i)!LifecycleBurstBounded
NoResumeWithoutRequeue == \A i \in Logs : k = i => Q(i)!NoResumeWithoutRequeue
NoLostWakeup == \A i \in Logs : k = i => Q(i)!NoLostWakeup
(* SE-5.1, D-6: SerialQueue.tla's, on the admitted works: a session's final *)
(* work is placed by a transfer, which is never refused (it reserves the   *)
(* fixed cost in the application lane on top of the admitted works).       *)
(* Likewise a SpotWide execution turn on the Spot queue (SpotWide.tla's     *)
(* CapacityRespected); each Actor queue within the Actor policy's limits.  *)
Transferred(i) ==
    {w \in {Log[i][j].w : j \in {j \in DOMAIN Log[i] : Log[i][j].op = "hold"}}
             \cup {r \in DOMAIN LogActorOf[i] : IsRecord(i, r)} :
        phase[w] \in Q(i)!LivePhases}
CapacityRespected ==
    \A i \in Logs : k = i =>
        /\ appCount - Cardinality(Transferred(i)) <= LogAppCountCap[i]
        /\ appBytes - Q(i)!SumReservations(Transferred(i)) <= LogAppByteCap[i]
        /\ lifeCount <= LogLifeCountCap[i] /\ lifeBytes <= LogLifeByteCap[i]
        /\ \A a \in Actors(i) :
               /\ Cardinality(Reserved(i, a)) <= LogActorCountCap[i][a]
               /\ ActorBytes(i, Reserved(i, a)) <= LogActorByteCap[i][a]
ReservationsBalanced == \A i \in Logs : k = i => Q(i)!ReservationsBalanced
(* SE-4.6 (SpotWide.tla's): an Actor record whose execution turn is on the *)
(* Spot queue, queued, running or yielded, holds its Actor's claim.        *)
YieldedActorKeepsClaim ==
    \A i \in Logs : k = i =>
        \A r \in DOMAIN LogActorOf[i] :
            IsRecord(i, r) /\ phase[r] \in Q(i)!LivePhases => claim[ActorOf(i, r)] = r
=============================================================================
