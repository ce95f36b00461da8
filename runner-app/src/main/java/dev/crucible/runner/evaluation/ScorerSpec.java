package dev.crucible.runner.evaluation;

import dev.crucible.api.UserInputException;
import dev.crucible.api.scoring.Optimization;
import dev.crucible.runner.prompts.Suggestions;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;

/**
 * One {@code [[scorers]]} entry: which scorer plugin, the instance's name (unique in a run), the optimization
 * direction (the plugin's own default when absent) and the plugin's settings table, passed through unread.
 */
public record ScorerSpec(String plugin, String instanceName, Optional<Optimization> optimization,
                         Map<String, Object> settings) {

    public static final List<String> KEYS = List.of("plugin", "instance_name", "optimization", "settings");

    public ScorerSpec {
        Objects.requireNonNull(plugin, "plugin is null");
        Objects.requireNonNull(instanceName, "instanceName is null");
        Objects.requireNonNull(optimization, "optimization is null");
        settings = Collections.unmodifiableMap(new LinkedHashMap<>(Objects.requireNonNull(settings,
                "settings is null")));
    }

    public static ScorerSpec of(String plugin) {
        return new ScorerSpec(plugin, plugin, Optional.empty(), Map.of());
    }

    /**
     * Reads one table of the {@code scorers} array.
     *
     * @param where the entry's name in messages, e.g. {@code scorers[2]}
     */
    @SuppressWarnings("unchecked")
    public static ScorerSpec fromTable(String where, Map<String, ?> table) {
        for (String key : table.keySet()) {
            if (!KEYS.contains(key)) {
                throw new UserInputException("unknown key '" + where + "." + key + "'" + Suggestions.didYouMean(key,
                        KEYS) + " (a scorer has " + String.join(", ", KEYS) + ")");
            }
        }
        Object plugin = table.get("plugin");
        if (!(plugin instanceof String name) || name.isBlank()) {
            throw new UserInputException(where + " needs plugin = \"<name>\", e.g. plugin = \"refusals\"");
        }
        Object instance = table.containsKey("instance_name") ? table.get("instance_name") : name;
        if (!(instance instanceof String instanceName) || instanceName.isBlank()) {
            throw new UserInputException("'" + where + ".instance_name' must be a non-empty string");
        }
        Optional<Optimization> optimization = Optional.empty();
        Object direction = table.get("optimization");
        if (direction instanceof Optimization given) {
            optimization = Optional.of(given);
        } else if (direction instanceof String text) {
            try {
                optimization = Optional.of(Optimization.parse(text));
            } catch (UserInputException e) {
                throw new UserInputException("'" + where + ".optimization' " + e.getMessage());
            }
        } else if (direction != null) {
            throw new UserInputException("'" + where + ".optimization' must be one of minimize, maximize, none");
        }
        Object settings = table.containsKey("settings") ? table.get("settings") : Map.of();
        if (!(settings instanceof Map<?, ?> map)) {
            throw new UserInputException("'" + where + ".settings' must be a table");
        }
        return new ScorerSpec(name.strip(), instanceName.strip(), optimization, (Map<String, Object>) map);
    }

    /** The config.toml form of this entry. */
    public Map<String, Object> toTable() {
        Map<String, Object> table = new LinkedHashMap<>();
        table.put("plugin", plugin);
        table.put("instance_name", instanceName);
        optimization.ifPresent(o -> table.put("optimization", o.name().toLowerCase(java.util.Locale.ROOT)));
        if (!settings.isEmpty()) {
            table.put("settings", settings);
        }
        return table;
    }
}
