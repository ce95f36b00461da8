package dev.crucible.runner.plugins;

import java.util.Objects;

/**
 * A service found by the plugin host, and where it came from.
 *
 * @param service the instance
 * @param origin  "classpath" or the plugin jar's file name
 */
public record Discovered<T>(T service, String origin) {
    public Discovered {
        Objects.requireNonNull(service, "service is null");
        Objects.requireNonNull(origin, "origin is null");
    }
}
