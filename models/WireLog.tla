-------------------------------- MODULE WireLog --------------------------------
(* Written from conformance transcripts by zlink_tool.tla.transcript: queues' *)
(* observed events and their lane policies, which TraceWireSerialQueue       *)
(* checks, log i being the i-th entry of every tuple below. What is          *)
(* abstracted away: work names (a queue's works are 1..N in the order they   *)
(* were accepted or rejected), every field the spec has no use for, and the  *)
(* steps the wire does not show (TraceWireSerialQueue leaves them open).     *)
EXTENDS Integers

NLogs == 1

\* Each queue's lane policy (ZLinkExecutionLanePolicy), from the create command.
LogAppCountCap == <<1024>>
LogAppByteCap == <<67108864>>
LogLifeCountCap == <<128>>
LogLifeByteCap == <<4194304>>
LogFixedCost == <<256>>
LogBurstLimit == <<8>>

\* Work w of log i: its lane ("app", "life" or "barrier"), payload bytes and most
\* yields are LogLanes[i][w], LogPayloads[i][w] and LogYields[i][w].
LogLanes == <<<<"app", "app", "app">>>>
LogPayloads == <<<<0, 0, 0>>>>
LogYields == <<<<1, 0, 0>>>>

\* Events of the queue seen before the close command was sent (-1: never sent).
LogCloseAfter == <<-1>>

\* The disposal commands sent to the queue's target, in order: how (dispose,
\* safely, timeout, or end: the runtime's end), after how many events of the
\* queue it was sent, by how many its reply came (-1: it sets no deadline).
LogDisposals == <<<<>>>>

\* A SpotWide Spot's Actor queues (log i's are 1..Len(LogActorCountCap[i])): the one
\* that admitted work w (0: none, a work of the Spot queue or of no Spot), what w
\* reserves there (its payload and the Actor policy's fixed cost), and each Actor
\* queue's count and byte limits (the Actor policy's). The Spot queue holds such a
\* work's execution turn at the fixed cost only (its payload above is 0).
LogActorOf == <<<<0, 0, 0>>>>
LogActorResv == <<<<0, 0, 0>>>>
LogActorCountCap == <<<<>>>>
LogActorByteCap == <<<<>>>>

\* Each log's events in order: op is the core event the wire event reports; w the
\* work (0: one this queue never admitted); flag whether a rejection was for a
\* closed queue, or whether a take was a resume (resumed, not started); ret, for
\* yield_turn, how many events of this queue came before the runner settled the
\* call the work waits on (0: no command did); lo..hi the entries of the racing run
\* (one submit_concurrent's accepted and rejected events) it is in, itself alone
\* if none. An op "sync" is a settle answered: nothing could progress then.
Log == <<
    <<
        [op |-> "admit", w |-> 1, flag |-> FALSE, ret |-> 0, lo |-> 1, hi |-> 1],
        [op |-> "take_next", w |-> 1, flag |-> FALSE, ret |-> 0, lo |-> 2, hi |-> 2],
        [op |-> "yield_turn", w |-> 1, flag |-> FALSE, ret |-> 7, lo |-> 3, hi |-> 3],
        [op |-> "admit", w |-> 2, flag |-> FALSE, ret |-> 0, lo |-> 4, hi |-> 4],
        [op |-> "take_next", w |-> 2, flag |-> FALSE, ret |-> 0, lo |-> 5, hi |-> 5],
        [op |-> "admit", w |-> 3, flag |-> FALSE, ret |-> 0, lo |-> 6, hi |-> 6],
        [op |-> "sync", w |-> 0, flag |-> FALSE, ret |-> 0, lo |-> 7, hi |-> 7],
        [op |-> "finish", w |-> 2, flag |-> FALSE, ret |-> 0, lo |-> 8, hi |-> 8],
        [op |-> "take_next", w |-> 3, flag |-> FALSE, ret |-> 0, lo |-> 9, hi |-> 9],
        [op |-> "finish", w |-> 3, flag |-> FALSE, ret |-> 0, lo |-> 10, hi |-> 10],
        [op |-> "take_next", w |-> 1, flag |-> TRUE, ret |-> 0, lo |-> 11, hi |-> 11],
        [op |-> "finish", w |-> 1, flag |-> FALSE, ret |-> 0, lo |-> 12, hi |-> 12],
        [op |-> "sync", w |-> 0, flag |-> FALSE, ret |-> 0, lo |-> 13, hi |-> 13]
    >>
>>
=============================================================================
