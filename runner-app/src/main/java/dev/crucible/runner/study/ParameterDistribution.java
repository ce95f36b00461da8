package dev.crucible.runner.study;

import java.util.List;
import java.util.Objects;

/**
 * The range a trial draws one named parameter from. Values have an external form (what the experiment sees:
 * {@code Double}, {@code Long} or {@code String}) and an internal form (a {@code double}: the value itself, or the
 * index of a categorical choice) that the samplers work with.
 */
public sealed interface ParameterDistribution {

    /** The internal form of an external value; throws when the value is not inside this distribution. */
    double toInternal(Object value);

    /** The external form of an internal value. */
    Object toExternal(double internal);

    /** True when there is only one possible value, so there is nothing to sample. */
    boolean isSingleValue();

    /** A real number in {@code [low, high]}; {@code log} samples uniformly in log space (then {@code low > 0}). */
    record FloatRange(double low, double high, boolean log) implements ParameterDistribution {
        public FloatRange {
            if (!Double.isFinite(low) || !Double.isFinite(high) || low > high) {
                throw new IllegalArgumentException("float range needs finite low <= high, got [" + low + ", " + high + "]");
            }
            if (log && low <= 0) {
                throw new IllegalArgumentException("log float range needs low > 0, got " + low);
            }
        }

        @Override
        public double toInternal(Object value) {
            if (!(value instanceof Number number)) {
                throw new IllegalArgumentException("expected a number for " + this + ", got " + value);
            }
            double v = number.doubleValue();
            if (!(v >= low && v <= high)) {
                throw new IllegalArgumentException(v + " is outside " + this);
            }
            return v;
        }

        @Override
        public Object toExternal(double internal) {
            // Kernels are truncated to [low, high], but exp(log(x)) may round a hair outside.
            return Math.clamp(internal, low, high);
        }

        @Override
        public boolean isSingleValue() {
            return low == high;
        }
    }

    /** An integer in {@code [low, high]}, both inclusive. */
    record IntRange(long low, long high) implements ParameterDistribution {
        /** Samplers work in doubles, which hold every integer up to 2^53 exactly. */
        static final long LIMIT = 1L << 53;

        public IntRange {
            if (low > high) {
                throw new IllegalArgumentException("int range needs low <= high, got [" + low + ", " + high + "]");
            }
            if (low < -LIMIT || high > LIMIT) {
                throw new IllegalArgumentException("int range must lie within +-2^53, got [" + low + ", " + high + "]");
            }
        }

        @Override
        public double toInternal(Object value) {
            if (!(value instanceof Integer || value instanceof Long)) {
                throw new IllegalArgumentException("expected an integer for " + this + ", got " + value);
            }
            long v = ((Number) value).longValue();
            if (v < low || v > high) {
                throw new IllegalArgumentException(v + " is outside " + this);
            }
            return v;
        }

        @Override
        public Object toExternal(double internal) {
            return Math.clamp(Math.round(internal), low, high);
        }

        @Override
        public boolean isSingleValue() {
            return low == high;
        }
    }

    /** One of a list of named choices, e.g. {@code [global, per_layer]}. */
    record Categorical(List<String> choices) implements ParameterDistribution {
        public Categorical {
            Objects.requireNonNull(choices, "choices is null");
            choices = List.copyOf(choices);
            if (choices.isEmpty()) {
                throw new IllegalArgumentException("a categorical parameter needs at least one choice");
            }
            if (choices.stream().distinct().count() != choices.size()) {
                throw new IllegalArgumentException("categorical choices must be distinct: " + choices);
            }
        }

        @Override
        public double toInternal(Object value) {
            int index = choices.indexOf(value);
            if (index < 0) {
                throw new IllegalArgumentException(value + " is not one of " + choices);
            }
            return index;
        }

        @Override
        public Object toExternal(double internal) {
            return choices.get((int) internal);
        }

        @Override
        public boolean isSingleValue() {
            return choices.size() == 1;
        }
    }
}
