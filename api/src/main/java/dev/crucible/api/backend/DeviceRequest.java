package dev.crucible.api.backend;

import dev.crucible.api.UserInputException;
import java.util.Collections;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.TreeMap;

/**
 * What the user asked for with {@code --device}: {@code auto}, a backend name or alias ({@code cpu}, {@code tpu}),
 * optionally with a device index ({@code cuda:1}), and the backend options given beside it.
 *
 * @param options backend options by flag name without its dashes ({@code xla-devices=8}); a backend reads the ones
 *                it knows and ignores the rest, as they may be meant for another
 */
public record DeviceRequest(String name, OptionalInt index, Map<String, String> options) {
    public static final DeviceRequest AUTO = new DeviceRequest("auto", OptionalInt.empty());

    public DeviceRequest {
        Objects.requireNonNull(name, "name is null");
        Objects.requireNonNull(index, "index is null");
        options = Collections.unmodifiableMap(new TreeMap<>(options));
    }

    public DeviceRequest(String name, OptionalInt index) {
        this(name, index, Map.of());
    }

    /** The same request with these backend options (an empty value is dropped). */
    public DeviceRequest withOptions(Map<String, String> given) {
        Map<String, String> kept = new TreeMap<>();
        given.forEach((key, value) -> {
            if (value != null && !value.isBlank()) {
                kept.put(key, value.trim());
            }
        });
        return new DeviceRequest(name, index, kept);
    }

    /** The backend option {@code name}, if given. */
    public Optional<String> option(String name) {
        return Optional.ofNullable(options.get(name));
    }

    public boolean isAuto() {
        return name.equals("auto");
    }

    /** Parses {@code auto}, {@code cpu}, {@code cuda:1}; a malformed value is the user's mistake. */
    public static DeviceRequest parse(String text) {
        String value = text == null ? "" : text.trim().toLowerCase(Locale.ROOT);
        if (value.isEmpty()) {
            throw new UserInputException("--device is empty; use auto, cpu, cuda, cuda:N, xla, tpu, mps or xpu");
        }
        int colon = value.indexOf(':');
        if (colon < 0) {
            return new DeviceRequest(value, OptionalInt.empty());
        }
        String name = value.substring(0, colon);
        String number = value.substring(colon + 1);
        if (name.isEmpty() || !number.matches("\\d{1,4}")) {
            throw new UserInputException("--device '" + text + "' is malformed; expected NAME or NAME:INDEX such as cuda:1");
        }
        return new DeviceRequest(name, OptionalInt.of(Integer.parseInt(number)));
    }

    @Override
    public String toString() {
        return index.isPresent() ? name + ":" + index.getAsInt() : name;
    }
}
