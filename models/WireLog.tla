-------------------------------- MODULE WireLog --------------------------------
(* Written from a conformance transcript by zlink_tool.tla.transcript: one   *)
(* queue's observed events and its lane policy, which TraceWireSerialQueue   *)
(* checks. What is abstracted away: work names (works are 1..N in the order  *)
(* they were accepted or rejected), every field the spec has no use for, and *)
(* the steps the wire does not show (TraceWireSerialQueue leaves them open). *)
EXTENDS Integers

\* The queue's lane policy (ZLinkExecutionLanePolicy), from the create command.
LogAppCountCap == 1024
LogAppByteCap == 67108864
LogLifeCountCap == 128
LogLifeByteCap == 4194304
LogFixedCost == 256
LogBurstLimit == 8

\* Work w's lane ("app", "life" or "barrier"), payload bytes and most yields.
LogLanes == <<"app", "app", "app">>
LogPayloads == <<0, 0, 0>>
LogYields == <<1, 0, 0>>

\* Events of this queue seen before the close command was sent (-1: never sent).
LogCloseAfter == -1

\* The events in order: op is the core event the wire event reports; w the work
\* (0: one this queue never admitted); flag whether a rejection was for a closed
\* queue; ret, for yield_turn, how many events of this queue came before the runner
\* settled the call the work waits on (0: no command did).
Log == <<
    [op |-> "admit", w |-> 1, flag |-> FALSE, ret |-> 0],
    [op |-> "take_next", w |-> 1, flag |-> FALSE, ret |-> 0],
    [op |-> "yield_turn", w |-> 1, flag |-> FALSE, ret |-> 6],
    [op |-> "admit", w |-> 2, flag |-> FALSE, ret |-> 0],
    [op |-> "take_next", w |-> 2, flag |-> FALSE, ret |-> 0],
    [op |-> "admit", w |-> 3, flag |-> FALSE, ret |-> 0],
    [op |-> "finish", w |-> 2, flag |-> FALSE, ret |-> 0],
    [op |-> "take_next", w |-> 3, flag |-> FALSE, ret |-> 0],
    [op |-> "finish", w |-> 3, flag |-> FALSE, ret |-> 0],
    [op |-> "take_next", w |-> 1, flag |-> FALSE, ret |-> 0],
    [op |-> "finish", w |-> 1, flag |-> FALSE, ret |-> 0]
>>
=============================================================================
