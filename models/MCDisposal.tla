----------------------------- MODULE MCDisposal -----------------------------
(***************************************************************************)
(* Bounds for Disposal.tla: three works submitted in order; works 1 and 3  *)
(* may yield once (so a work can be suspended or requeued when the scope   *)
(* is disposed), work 2 runs in one go. Every disposal call is allowed.    *)
(***************************************************************************)
EXTENDS Disposal

ThreeWorks == 1..3
YieldFirstAndLast == <<1, 0, 1>>
TwoWorks == 1..2
YieldFirst == <<1, 0>>
AllDisposals == {"dispose", "safely", "timeout"}
=============================================================================
