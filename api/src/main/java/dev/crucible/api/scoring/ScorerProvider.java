package dev.crucible.api.scoring;

import java.util.Map;

/**
 * Entry point of a scorer plugin, found by {@link java.util.ServiceLoader} (classpath or plugins folder).
 * Configured as {@code {plugin = "<name>", optimization = "minimize", instance_name = "..."}} plus a settings table.
 */
public interface ScorerProvider {

    /** The plugin name used in configuration: "refusals", "kl_divergence", or a third party's. */
    String name();

    /**
     * Builds an instance. {@code settings} is the instance's table from the config (TOML values as Java
     * strings, numbers, booleans, lists and maps). Unknown keys are an error naming the key.
     */
    Scorer create(String instanceName, Map<String, Object> settings);
}
