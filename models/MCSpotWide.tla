----------------------------- MODULE MCSpotWide -----------------------------
(***************************************************************************)
(* Bounds for SpotWide.tla.                                                *)
(*                                                                         *)
(*   item  what               actor  payload  may yield  submitted by      *)
(*   1     Actor record       a1     1        once       u1 (first)        *)
(*   2     Actor record       a1     0        never      u1 (second)       *)
(*   3     Actor record       a2     1        never      u2 (first)        *)
(*   4     execute_spot work  -      0        once       u2 (second)       *)
(*   5     timer callback     -      0        never      u2 (third)        *)
(*                                                                         *)
(* Record 1 yields while a1's record 2 waits behind it (the claim, SE-4.6);*)
(* records 1 and 3 carry payload, so a payload counted in the Spot queue   *)
(* shows. With SpotCountCap = 2 the Spot queue can be full by count, and   *)
(* transfers still go through (D-6). PerActor runs use the same items with *)
(* item 5 as a plain Spot work (timer queues are not modelled there).      *)
(*                                                                         *)
(* The end of the module holds the deliberately broken variants: each is   *)
(* named <Operator>Bug<Name> and replaces <Operator> of SpotWide.tla in    *)
(* the configuration MCSpotWide_<name>.cfg (Operator <- ...), which must   *)
(* violate the invariant manifest.json names for it.                       *)
(***************************************************************************)
EXTENDS SpotWide

TwoActors == {"a1", "a2"}
ThreeRecords == {1, 2, 3}
OwnerOf == [r \in ThreeRecords |-> IF r = 3 THEN "a2" ELSE "a1"]
SpotAndTimer == {4, 5}
KindSpotWide == [w \in SpotAndTimer |-> IF w = 4 THEN "spot" ELSE "timer"]
KindPerActor == [w \in SpotAndTimer |-> "spot"]
ItemPayload == [i \in 1..5 |-> IF i \in {1, 3} THEN 1 ELSE 0]
ItemYields == [i \in 1..5 |-> IF i \in {1, 4} THEN 1 ELSE 0]
SubmitterPair == {"u1", "u2"}
ScriptAll == [s \in SubmitterPair |-> IF s = "u1" THEN <<1, 2>> ELSE <<3, 4, 5>>]

\* A smaller set for the liveness run: no timer callback.
SpotOnly == {4}
KindSpotOnly == [w \in SpotOnly |-> "spot"]
ItemPayloadSmall == [i \in 1..4 |-> ItemPayload[i]]
ItemYieldsSmall == [i \in 1..4 |-> ItemYields[i]]
ScriptSmall == [s \in SubmitterPair |-> IF s = "u1" THEN <<1, 2>> ELSE <<3, 4>>]

\* For the deep run: every item may yield three times.
ItemYieldsThrice == [i \in 1..5 |-> 3]

-----------------------------------------------------------------------------
(* Deliberately broken variants.                                           *)

\* payload_reserved_twice: a transferred turn reserves the record's payload
\* in the Spot queue too, not only FixedCost. Must violate
\* PayloadReservedOnce.
SpotShareBugPayloadReservedTwice(i) == Reservation(i)

\* spotwide_releases_claim_on_yield: a yielding Actor record gives back its
\* Actor's claim with the Spot gate, so the Actor's next record can start.
\* Must violate YieldedActorKeepsClaim.
YieldReleasesClaimBugSpotwideReleasesClaimOnYield(i) == i \in Records
=============================================================================
