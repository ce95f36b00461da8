package dev.crucible.runner.backends;

import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import java.util.Objects;

/** A backend with the result of its probe and where it was found. */
public record ProbedBackend(HardwareBackend<?, ?> backend, String origin, Probe probe) {
    public ProbedBackend {
        Objects.requireNonNull(backend, "backend is null");
        Objects.requireNonNull(origin, "origin is null");
        Objects.requireNonNull(probe, "probe is null");
    }

    public String id() {
        return backend.id();
    }

    /** "ok" when available, else the reason cut before its explanation, for one-line summaries. */
    public String shortStatus() {
        if (probe.available()) {
            return "ok";
        }
        String reason = probe.reason();
        int cut = reason.length();
        for (String separator : new String[] {": ", " ("}) {
            int at = reason.indexOf(separator);
            if (at > 0) {
                cut = Math.min(cut, at);
            }
        }
        return reason.substring(0, cut);
    }
}
