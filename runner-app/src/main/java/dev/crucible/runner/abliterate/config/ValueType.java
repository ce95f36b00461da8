package dev.crucible.runner.abliterate.config;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.units.ByteSize;
import java.math.BigInteger;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * The type of one setting and how a raw value becomes it. Config files are typed (TOML numbers must be numbers);
 * environment variables and command-line strings are text and are parsed. Errors name the key and the type.
 */
sealed interface ValueType {

    /** Where a raw value came from: a typed TOML file or text (environment, command line). */
    enum Origin { FILE, TEXT }

    /**
     * @param where the key as the user wrote it, e.g. {@code n_trials in config.toml} or {@code CRUCIBLE_SEED}
     */
    Object convert(Object raw, Origin origin, String where);

    static UserInputException mismatch(String where, String expected, Object raw) {
        String shown = raw instanceof String text ? "'" + text + "'" : raw instanceof List<?> ? "a list"
                : raw instanceof java.util.Map<?, ?> ? "a table" : String.valueOf(raw);
        return new UserInputException(where + " must be " + expected + ", got " + shown);
    }

    record Int(int min) implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            String expected = "a whole number" + (min == 0 ? " (0 or more)" : min == 1 ? " (1 or more)" : "");
            long value;
            if (raw instanceof Integer || raw instanceof Long || raw instanceof Short) {
                value = ((Number) raw).longValue();
            } else if (raw instanceof String text && origin == Origin.TEXT) {
                try {
                    value = Long.parseLong(text.strip());
                } catch (NumberFormatException e) {
                    throw mismatch(where, expected, raw);
                }
            } else {
                throw mismatch(where, expected, raw);
            }
            if (value < min || value > Integer.MAX_VALUE) {
                throw mismatch(where, expected, raw);
            }
            return (int) value;
        }
    }

    record Whole() implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof Integer || raw instanceof Long || raw instanceof Short) {
                return ((Number) raw).longValue();
            }
            if (raw instanceof String text && origin == Origin.TEXT) {
                try {
                    return Long.parseLong(text.strip());
                } catch (NumberFormatException e) {
                    throw mismatch(where, "a whole number", raw);
                }
            }
            if (raw instanceof BigInteger) {
                throw mismatch(where, "a whole number within 64 bits", raw);
            }
            throw mismatch(where, "a whole number", raw);
        }
    }

    /** A finite number in {@code (low, high]} (or {@code [low, high]} when {@code lowInclusive}). */
    record Decimal(double low, boolean lowInclusive, double high) implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            String expected = "a number " + (high == Double.POSITIVE_INFINITY
                    ? (lowInclusive ? "of at least " : "above ") + format(low)
                    : (lowInclusive ? "from " : "above ") + format(low) + (lowInclusive ? " to " : " and at most ")
                    + format(high));
            double value;
            if (raw instanceof Number number && !(raw instanceof BigInteger)) {
                value = number.doubleValue();
            } else if (raw instanceof String text && origin == Origin.TEXT) {
                try {
                    value = Double.parseDouble(text.strip());
                } catch (NumberFormatException e) {
                    throw mismatch(where, expected, raw);
                }
            } else {
                throw mismatch(where, expected, raw);
            }
            boolean aboveLow = lowInclusive ? value >= low : value > low;
            if (!Double.isFinite(value) || !aboveLow || value > high) {
                throw mismatch(where, expected, raw);
            }
            return value;
        }

        private static String format(double value) {
            return value == Math.rint(value) ? Long.toString((long) value) : Double.toString(value);
        }
    }

    record Bool() implements ValueType {
        private static final Set<String> TRUE = Set.of("true", "1", "yes", "on");
        private static final Set<String> FALSE = Set.of("false", "0", "no", "off");

        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof Boolean value) {
                return value;
            }
            if (raw instanceof String text && origin == Origin.TEXT) {
                String lower = text.strip().toLowerCase(Locale.ROOT);
                if (TRUE.contains(lower)) {
                    return true;
                }
                if (FALSE.contains(lower)) {
                    return false;
                }
            }
            throw mismatch(where, "true or false", raw);
        }
    }

    record Text() implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof String text) {
                return text;
            }
            throw mismatch(where, "a string", raw);
        }
    }

    /** A string from a fixed set, compared without case. */
    record Choice(List<String> values) implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof String text && values.contains(text.strip().toLowerCase(Locale.ROOT))) {
                return text.strip().toLowerCase(Locale.ROOT);
            }
            throw mismatch(where, "one of " + String.join(", ", values), raw);
        }
    }

    /** An enum constant written in lower case, {@code -} or {@code _} between words. */
    record OneOf<E extends Enum<E>>(Class<E> type) implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (type.isInstance(raw)) {
                return raw;
            }
            if (raw instanceof String text) {
                String name = text.strip().replace('-', '_').toUpperCase(Locale.ROOT);
                for (E constant : type.getEnumConstants()) {
                    if (constant.name().equals(name)) {
                        return constant;
                    }
                }
            }
            throw mismatch(where, "one of " + names(type), raw);
        }

        static String names(Class<? extends Enum<?>> type) {
            return Arrays.stream(type.getEnumConstants()).map(ValueType::lower).collect(Collectors.joining(", "));
        }
    }

    /** A non-empty list of enum constants: a TOML array, or comma-separated text. Repeats are dropped. */
    record ListOf<E extends Enum<E>>(Class<E> type) implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            List<?> items;
            if (raw instanceof List<?> list) {
                items = list;
            } else if (raw instanceof String text && origin == Origin.TEXT) {
                items = Arrays.stream(text.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
            } else {
                throw mismatch(where, "a list of " + OneOf.names(type), raw);
            }
            OneOf<E> element = new OneOf<>(type);
            LinkedHashSet<E> values = new LinkedHashSet<>();
            for (Object item : items) {
                values.add(type.cast(element.convert(item, origin, where)));
            }
            if (values.isEmpty()) {
                throw new UserInputException(where + " must name at least one of " + OneOf.names(type));
            }
            return List.copyOf(new ArrayList<>(values));
        }
    }

    record FilePath() implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof Path path) {
                return path;
            }
            if (raw instanceof String text && !text.isBlank()) {
                return Path.of(text.strip());
            }
            throw mismatch(where, "a path", raw);
        }
    }

    record Size() implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof Integer || raw instanceof Long) {
                long bytes = ((Number) raw).longValue();
                if (bytes > 0) {
                    return bytes;
                }
            }
            if (raw instanceof String text) {
                return ByteSize.parse(text, where);
            }
            throw mismatch(where, "a size like 5GB, 500MB or 2GiB", raw);
        }
    }

    /** A list of strings: a TOML array, or comma-separated text; blanks are dropped. */
    record Names() implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            if (raw instanceof List<?> list && list.stream().allMatch(String.class::isInstance)) {
                return list.stream().map(item -> ((String) item).strip()).filter(s -> !s.isEmpty()).toList();
            }
            if (raw instanceof String text) {
                return Arrays.stream(text.split(",")).map(String::strip).filter(s -> !s.isEmpty()).toList();
            }
            throw mismatch(where, "a list of names", raw);
        }
    }

    /** Prompt sets and scorers are merged by the loader itself (tables, partial overrides). */
    record Structured(String expected) implements ValueType {
        @Override
        public Object convert(Object raw, Origin origin, String where) {
            throw new IllegalStateException("structured settings are merged by SettingsLoader");
        }
    }

    static String lower(Enum<?> constant) {
        return constant.name().toLowerCase(Locale.ROOT);
    }
}
