package zlink.executor;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * ZLinkExecutionLanePolicy: the limits of one owner queue (SE-6.1). Injected, never
 * constants, because a Spot, an Actor and a session use different ones. Immutable; build
 * one with {@link #builder()}.
 */
public final class ZLinkExecutionLanePolicy {
    public static final long MIB = 1024L * 1024L;

    private final int applicationMessageCapacity;
    private final long applicationByteCapacity;
    private final int lifecycleMessageCapacity;
    private final long lifecycleByteCapacity;
    private final long fixedWorkByteCost;
    private final int lifecycleBurstLimit;
    private final double ownerTimeBudgetMs;

    private ZLinkExecutionLanePolicy(Builder b) {
        this.applicationMessageCapacity = b.applicationMessageCapacity;
        this.applicationByteCapacity = b.applicationByteCapacity;
        this.lifecycleMessageCapacity = b.lifecycleMessageCapacity;
        this.lifecycleByteCapacity = b.lifecycleByteCapacity;
        this.fixedWorkByteCost = b.fixedWorkByteCost;
        this.lifecycleBurstLimit = b.lifecycleBurstLimit;
        this.ownerTimeBudgetMs = b.ownerTimeBudgetMs;
    }

    /** The seed's defaults (SE-6.1). */
    public static ZLinkExecutionLanePolicy defaults() {
        return builder().build();
    }

    public static Builder builder() {
        return new Builder();
    }

    public int applicationMessageCapacity() { return applicationMessageCapacity; }
    public long applicationByteCapacity() { return applicationByteCapacity; }
    public int lifecycleMessageCapacity() { return lifecycleMessageCapacity; }
    public long lifecycleByteCapacity() { return lifecycleByteCapacity; }
    public long fixedWorkByteCost() { return fixedWorkByteCost; }
    public int lifecycleBurstLimit() { return lifecycleBurstLimit; }
    public double ownerTimeBudgetMs() { return ownerTimeBudgetMs; }

    @Override
    public String toString() {
        Map<String, Object> m = new LinkedHashMap<>();
        m.put("applicationMessageCapacity", applicationMessageCapacity);
        m.put("applicationByteCapacity", applicationByteCapacity);
        m.put("lifecycleMessageCapacity", lifecycleMessageCapacity);
        m.put("lifecycleByteCapacity", lifecycleByteCapacity);
        m.put("fixedWorkByteCost", fixedWorkByteCost);
        m.put("lifecycleBurstLimit", lifecycleBurstLimit);
        m.put("ownerTimeBudgetMs", ownerTimeBudgetMs);
        return "ZLinkExecutionLanePolicy" + m;
    }

    /** Validates each field as it is set, so a bad policy never exists (SE-6.1). */
    public static final class Builder {
        private int applicationMessageCapacity = 1024;
        private long applicationByteCapacity = 64 * MIB;
        private int lifecycleMessageCapacity = 128;
        private long lifecycleByteCapacity = 4 * MIB;
        private long fixedWorkByteCost = 256;
        private int lifecycleBurstLimit = 8;
        private double ownerTimeBudgetMs = 10;

        public Builder applicationMessageCapacity(long v) {
            applicationMessageCapacity = positiveInt("applicationMessageCapacity", v);
            return this;
        }

        public Builder applicationByteCapacity(long v) {
            applicationByteCapacity = positive("applicationByteCapacity", v);
            return this;
        }

        public Builder lifecycleMessageCapacity(long v) {
            lifecycleMessageCapacity = positiveInt("lifecycleMessageCapacity", v);
            return this;
        }

        public Builder lifecycleByteCapacity(long v) {
            lifecycleByteCapacity = positive("lifecycleByteCapacity", v);
            return this;
        }

        public Builder fixedWorkByteCost(long v) {
            if (v < 0) throw new IllegalArgumentException("fixedWorkByteCost must be >= 0, got " + v + " (SE-6.1)");
            fixedWorkByteCost = v;
            return this;
        }

        public Builder lifecycleBurstLimit(long v) {
            lifecycleBurstLimit = positiveInt("lifecycleBurstLimit", v);
            return this;
        }

        public Builder ownerTimeBudgetMs(double v) {
            if (!(v > 0) || Double.isInfinite(v)) {
                throw new IllegalArgumentException("ownerTimeBudgetMs must be > 0, got " + v + " (SE-6.1)");
            }
            ownerTimeBudgetMs = v;
            return this;
        }

        public ZLinkExecutionLanePolicy build() {
            return new ZLinkExecutionLanePolicy(this);
        }

        private static long positive(String name, long v) {
            if (v <= 0) throw new IllegalArgumentException(name + " must be > 0, got " + v + " (SE-6.1)");
            return v;
        }

        private static int positiveInt(String name, long v) {
            positive(name, v);
            if (v > Integer.MAX_VALUE) throw new IllegalArgumentException(name + " is too large: " + v);
            return (int) v;
        }
    }
}
