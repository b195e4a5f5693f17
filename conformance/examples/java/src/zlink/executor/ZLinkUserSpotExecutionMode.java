package zlink.executor;

/** A User Spot's execution mode, fixed at registration (SE-1.2, SE-4). */
public enum ZLinkUserSpotExecutionMode {
    PER_ACTOR,
    SPOT_WIDE
}
