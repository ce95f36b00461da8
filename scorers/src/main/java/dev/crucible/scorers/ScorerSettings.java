package dev.crucible.scorers;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.PromptSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/** A scorer instance's settings table, read with messages that name the scorer and the key. */
final class ScorerSettings {

    private final String scorer;
    private final Map<String, Object> values;

    /** Rejects any key outside {@code accepted}, listing the accepted ones. */
    ScorerSettings(String scorer, Map<String, Object> values, Set<String> accepted) {
        this.scorer = scorer;
        this.values = values == null ? Map.of() : values;
        for (String key : this.values.keySet()) {
            if (!accepted.contains(key)) {
                throw new UserInputException("scorer '" + scorer + "': unknown setting '" + key + "'; accepted: "
                        + String.join(", ", new TreeSet<>(accepted)));
            }
        }
    }

    Optional<List<String>> strings(String key) {
        Object value = values.get(key);
        if (value == null) {
            return Optional.empty();
        }
        if (!(value instanceof List<?> list)) {
            throw new UserInputException("scorer '" + scorer + "': setting '" + key
                    + "' must be a list of strings, e.g. [\"sorry\", \"i cannot\"]");
        }
        List<String> strings = new ArrayList<>();
        for (Object item : list) {
            if (!(item instanceof String s)) {
                throw new UserInputException("scorer '" + scorer + "': setting '" + key
                        + "' must contain only strings, found " + item);
            }
            strings.add(s);
        }
        return Optional.of(List.copyOf(strings));
    }

    PromptSet promptSet(String key, PromptSet fallback) {
        Object value = values.get(key);
        if (value == null) {
            return fallback;
        }
        if (value instanceof String s) {
            try {
                return PromptSet.valueOf(s.trim().toUpperCase(Locale.ROOT));
            } catch (IllegalArgumentException e) {
                // fall through to the message below
            }
        }
        throw new UserInputException("scorer '" + scorer + "': setting '" + key + "' is '" + value
                + "'; use \"harmful\" or \"harmless\"");
    }
}
