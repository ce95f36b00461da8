package dev.crucible.runner.evaluation;

import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.stream.Collectors;

/** Where an experiment's time goes, by phase, in nanoseconds. */
public final class Timings {
    private final Map<String, Long> nanos = new LinkedHashMap<>();

    public synchronized void add(String phase, long elapsedNanos) {
        nanos.merge(phase, elapsedNanos, Long::sum);
    }

    public synchronized Map<String, Double> seconds() {
        Map<String, Double> out = new LinkedHashMap<>();
        nanos.forEach((k, v) -> out.put(k, v / 1e9));
        return out;
    }

    @Override
    public synchronized String toString() {
        return nanos.entrySet().stream().map(e -> String.format(Locale.ROOT, "%s %.1f s", e.getKey(), e.getValue() / 1e9))
                .collect(Collectors.joining(", "));
    }
}
