package zlink.executor;

import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * An Actor's registration as one message sees it (SE-7.1): read in one state-lane turn
 * when the message's work starts and never changed afterwards, so a message cannot see a
 * mix of old and new values (SE-7.2).
 */
public final class ZLinkActorStateSnapshot {
    private final String actorId;
    private final boolean registered;
    private final String actorType;
    private final Map<String, Object> values;
    private final long version;

    ZLinkActorStateSnapshot(String actorId, boolean registered, String actorType,
                            Map<String, Object> values, long version) {
        this.actorId = actorId;
        this.registered = registered;
        this.actorType = actorType;
        this.values = Collections.unmodifiableMap(new LinkedHashMap<>(values));
        this.version = version;
    }

    static ZLinkActorStateSnapshot unregistered(String actorId) {
        return new ZLinkActorStateSnapshot(actorId, false, null, Map.of(), 0);
    }

    public String actorId() { return actorId; }
    public boolean registered() { return registered; }
    public String actorType() { return actorType; }
    /** The registered values, read-only. */
    public Map<String, Object> values() { return values; }
    /** Bumps on every change of the registration. */
    public long version() { return version; }

    /** The next snapshot after {@code changes} were applied (one lane turn). */
    ZLinkActorStateSnapshot with(Map<String, Object> changes) {
        Map<String, Object> merged = new LinkedHashMap<>(values);
        merged.putAll(changes);
        return new ZLinkActorStateSnapshot(actorId, true, actorType, merged, version + 1);
    }
}
