----------------------------- MODULE MCDisposal -----------------------------
(***************************************************************************)
(* Bounds for Disposal.tla: three works submitted in order; works 1 and 3  *)
(* may yield once (so a work can be suspended or requeued when the scope   *)
(* is disposed), work 2 runs in one go. Every disposal call is allowed.    *)
(*                                                                         *)
(* The end of the module holds the deliberately broken variants: named     *)
(* <Operator>Bug<Name>, it replaces <Operator> of Disposal.tla in the      *)
(* configuration MCDisposal_<name>.cfg (Operator <- ...), which must       *)
(* violate the invariant manifest.json names for it.                       *)
(***************************************************************************)
EXTENDS Disposal

ThreeWorks == 1..3
YieldFirstAndLast == <<1, 0, 1>>
TwoWorks == 1..2
YieldFirst == <<1, 0>>
AllDisposals == {"dispose", "safely", "timeout"}
\* The deep run (MCDisposalDeep.cfg): five works, each may yield once.
FiveWorks == 1..5
YieldEach == <<1, 1, 1, 1, 1>>

-----------------------------------------------------------------------------
(* Deliberately broken variant.                                            *)

\* dispose_safely_counts_zombies: dispose-safely marks the zombies but leaves
\* them in the active count, so AwaitCompletion waits for them. Must violate
\* AwaitCompletionIgnoresZombies.
MarkZombiesBugDisposeSafelyCountsZombies ==
    LET k == Cardinality(ActiveWorks) IN
    /\ zombie' = zombie \cup Live
    /\ active' = active
    /\ zombies' = zombies + k

\* survivor_stays_active: a work that catches its cancellation and waits again
\* stays active (the behaviour before SD-3a was applied), so AwaitCompletion
\* and the runtime end wait for it. Must violate SurvivorsAreZombies.
MarkSurvivorBugSurvivorStaysActive(w) ==
    UNCHANGED <<zombie, active, zombies>>
=============================================================================
