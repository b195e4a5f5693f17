package zlink.executor;

/** The kinds of Spot (SE-4.1). Only a User Spot chooses an execution mode. */
public enum ZLinkSpotKind {
    USER,
    /** Actor path like PerActor, no Yield. */
    ENTRY,
    /** One gate for the whole Spot, like SpotWide. */
    INSTANCE
}
