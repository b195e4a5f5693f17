------------------------------- MODULE TraceLog -------------------------------
(* Written from a recorded log by zlink_tool.tla.trace: the data that        *)
(* TraceSerialQueue.tla checks, the log of one queue and its lane policy.    *)
(* What is abstracted away: work ids (works are 1..N in submission order; a  *)
(* finished or rejected work lends its number to a later one of the same     *)
(* lane and payload), times, and every field the spec has no use for.        *)

\* The lane policy (ZLinkExecutionLanePolicy).
LogAppCountCap == 6
LogAppByteCap == 67108864
LogLifeCountCap == 3
LogLifeByteCap == 4194304
LogFixedCost == 256
LogBurstLimit == 8

\* Work w's lane ("app", "life" or "barrier"), payload bytes (its reservation less
\* the fixed cost) and the most times it yielded in one life.
LogLanes == <<"app", "app", "app", "app", "life", "app", "app", "app", "app", "app", "app">>
LogPayloads == <<0, 0, 8, 19, 0, 68, 43, 20, 13, 0, 36>>
LogYields == <<0, 0, 0, 1, 0, 1, 0, 1, 1, 0, 0>>

\* The events in order: op is the event's name; w the work (0: none); pos the
\* admission's sequence number; flag the wake flag of admit and requeue, or
\* whether end_slice rescheduled.
Log == <<
    [op |-> "admit", w |-> 1, pos |-> 0, flag |-> TRUE],
    [op |-> "admit", w |-> 2, pos |-> 1, flag |-> FALSE],
    [op |-> "admit", w |-> 3, pos |-> 2, flag |-> FALSE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 2, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 2, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 3, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 3, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "admit", w |-> 4, pos |-> 3, flag |-> TRUE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 4, pos |-> 0, flag |-> FALSE],
    [op |-> "yield_turn", w |-> 4, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "admit", w |-> 2, pos |-> 4, flag |-> TRUE],
    [op |-> "admit", w |-> 1, pos |-> 5, flag |-> FALSE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 2, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 2, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "admit", w |-> 1, pos |-> 6, flag |-> TRUE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "admit", w |-> 5, pos |-> 7, flag |-> TRUE],
    [op |-> "admit", w |-> 1, pos |-> 8, flag |-> FALSE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 5, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 5, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "requeue", w |-> 4, pos |-> 0, flag |-> TRUE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 4, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 4, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "admit", w |-> 1, pos |-> 10, flag |-> TRUE],
    [op |-> "admit", w |-> 5, pos |-> 11, flag |-> FALSE],
    [op |-> "admit", w |-> 6, pos |-> 12, flag |-> FALSE],
    [op |-> "admit", w |-> 7, pos |-> 13, flag |-> FALSE],
    [op |-> "admit", w |-> 8, pos |-> 14, flag |-> FALSE],
    [op |-> "admit", w |-> 2, pos |-> 15, flag |-> FALSE],
    [op |-> "admit", w |-> 9, pos |-> 16, flag |-> FALSE],
    [op |-> "reject", w |-> 10, pos |-> 0, flag |-> FALSE],
    [op |-> "reject", w |-> 11, pos |-> 0, flag |-> FALSE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 5, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 5, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 1, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 6, pos |-> 0, flag |-> FALSE],
    [op |-> "yield_turn", w |-> 6, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 7, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 7, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 8, pos |-> 0, flag |-> FALSE],
    [op |-> "yield_turn", w |-> 8, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 2, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 2, pos |-> 0, flag |-> FALSE],
    [op |-> "end_slice", w |-> 0, pos |-> 0, flag |-> TRUE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 9, pos |-> 0, flag |-> FALSE],
    [op |-> "yield_turn", w |-> 9, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "requeue", w |-> 6, pos |-> 0, flag |-> TRUE],
    [op |-> "requeue", w |-> 8, pos |-> 0, flag |-> FALSE],
    [op |-> "requeue", w |-> 9, pos |-> 0, flag |-> FALSE],
    [op |-> "enter_drain", w |-> 0, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 6, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 6, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 8, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 8, pos |-> 0, flag |-> FALSE],
    [op |-> "take_next", w |-> 9, pos |-> 0, flag |-> FALSE],
    [op |-> "finish", w |-> 9, pos |-> 0, flag |-> FALSE],
    [op |-> "exit_drain", w |-> 0, pos |-> 0, flag |-> FALSE]
>>
=============================================================================
