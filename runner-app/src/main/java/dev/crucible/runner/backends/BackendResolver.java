package dev.crucible.runner.backends;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;
import java.util.Set;
import java.util.stream.Collectors;

/**
 * Chooses the backend for {@code --device}, exactly as the architecture says: {@code auto} takes the first
 * available backend in priority order (default xla > cuda > xpu > mps > cpu, or the order given by
 * {@code CRUCIBLE_DEVICE_PRIORITY}); a named device must be available or the run stops with status 2 and a line
 * listing what was found. Aliases (such as {@code tpu} for the xla backend on a TPU) are the backend's call.
 */
public final class BackendResolver {
    /** Names the user may always write, whether or not a backend for them is installed. */
    public static final Set<String> KNOWN_NAMES = Set.of("cpu", "cuda", "xla", "tpu", "mps", "xpu");

    private final List<ProbedBackend> probed;

    /** @param probed every backend with its probe, highest priority first */
    public BackendResolver(List<ProbedBackend> probed) {
        this.probed = List.copyOf(probed);
    }

    public ProbedBackend resolve(DeviceRequest request, Optional<String> priorityOverride) {
        if (request.isAuto()) {
            for (ProbedBackend candidate : autoOrder(priorityOverride)) {
                if (candidate.probe().available()) {
                    return candidate;
                }
            }
            throw new UserInputException("no device is available (found: " + found() + ")");
        }
        Optional<ProbedBackend> match = byName(request.name());
        if (match.isEmpty() && !KNOWN_NAMES.contains(request.name())) {
            throw new UserInputException("unknown device '" + request + "'; use auto or one of " + allNames());
        }
        if (match.isEmpty() || !match.get().probe().available()) {
            throw new UserInputException("device '" + request + "' is not available (found: " + found() + ")");
        }
        ProbedBackend chosen = match.get();
        if (request.index().isPresent()) {
            int index = request.index().getAsInt();
            int count = chosen.probe().devices().size();
            if (index >= count) {
                throw new UserInputException("device '" + request + "' is not available (" + chosen.id() + " has "
                        + count + (count == 1 ? " device: " : " devices: ") + chosen.id() + ":0"
                        + (count > 1 ? ".." + chosen.id() + ":" + (count - 1) : "") + ")");
            }
        }
        return chosen;
    }

    /** The order {@code auto} tries: the override's names first (in its order), then the rest by priority. */
    List<ProbedBackend> autoOrder(Optional<String> priorityOverride) {
        List<ProbedBackend> order = new ArrayList<>();
        priorityOverride.filter(s -> !s.isBlank()).ifPresent(text -> {
            for (String name : text.split(",")) {
                byName(name.trim().toLowerCase(Locale.ROOT)).filter(p -> !order.contains(p)).ifPresent(order::add);
            }
        });
        for (ProbedBackend p : probed) {
            if (!order.contains(p)) {
                order.add(p);
            }
        }
        return order;
    }

    private Optional<ProbedBackend> byName(String name) {
        for (ProbedBackend p : probed) {
            if (p.id().equals(name)) {
                return Optional.of(p);
            }
        }
        for (ProbedBackend p : probed) {
            if (p.backend().answersTo(name, p.probe())) {
                return Optional.of(p);
            }
        }
        return Optional.empty();
    }

    /** "cpu(ok), cuda(no NVIDIA driver), ..." in priority order. */
    public String found() {
        return probed.stream().map(p -> p.id() + "(" + p.shortStatus() + ")").collect(Collectors.joining(", "));
    }

    private String allNames() {
        var names = new java.util.TreeSet<>(KNOWN_NAMES);
        probed.forEach(p -> names.add(p.id()));
        return String.join(", ", names);
    }
}
