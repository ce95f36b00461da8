package dev.crucible.huggingface.hub;

import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.Set;

/**
 * The Hugging Face settings Crucible honours, read the way huggingface_hub reads them, from an injected
 * environment so tests never depend on the machine's.
 *
 * <ul>
 *   <li>cache: {@code HF_HUB_CACHE}, else {@code $HF_HOME/hub}, else {@code $XDG_CACHE_HOME/huggingface/hub},
 *       else {@code ~/.cache/huggingface/hub};</li>
 *   <li>{@code HF_ENDPOINT} (default {@code https://huggingface.co});</li>
 *   <li>{@code HF_HUB_OFFLINE}: 1, true, yes or on (any case) forbids every network request;</li>
 *   <li>{@code HF_TOKEN}: sent as a bearer token, never printed ({@link #toString()} masks it).</li>
 * </ul>
 */
public record HubEnvironment(Path cacheDir, String endpoint, boolean offline, Optional<String> token) {

    public static final String DEFAULT_ENDPOINT = "https://huggingface.co";
    private static final Set<String> TRUE_VALUES = Set.of("1", "ON", "YES", "TRUE");

    public HubEnvironment {
        Objects.requireNonNull(cacheDir, "cacheDir is null");
        Objects.requireNonNull(endpoint, "endpoint is null");
        Objects.requireNonNull(token, "token is null");
    }

    public static HubEnvironment from(Map<String, String> env, Path home) {
        Objects.requireNonNull(env, "env is null");
        Objects.requireNonNull(home, "home is null");
        Path hfHome = value(env, "HF_HOME").map(v -> expandHome(v, home))
                .orElseGet(() -> value(env, "XDG_CACHE_HOME").map(v -> expandHome(v, home))
                        .orElseGet(() -> home.resolve(".cache")).resolve("huggingface"));
        Path cache = value(env, "HF_HUB_CACHE").map(v -> expandHome(v, home)).orElseGet(() -> hfHome.resolve("hub"));
        String endpoint = value(env, "HF_ENDPOINT").orElse(DEFAULT_ENDPOINT).replaceAll("/+$", "");
        boolean offline = value(env, "HF_HUB_OFFLINE")
                .map(v -> TRUE_VALUES.contains(v.trim().toUpperCase(Locale.ROOT))).orElse(false);
        return new HubEnvironment(cache, endpoint, offline, value(env, "HF_TOKEN").map(String::trim));
    }

    public static HubEnvironment fromSystem() {
        return from(System.getenv(), Path.of(System.getProperty("user.home")));
    }

    private static Optional<String> value(Map<String, String> env, String name) {
        return Optional.ofNullable(env.get(name)).filter(v -> !v.isBlank());
    }

    private static Path expandHome(String value, Path home) {
        if (value.equals("~")) {
            return home;
        }
        return value.startsWith("~/") ? home.resolve(value.substring(2)) : Path.of(value);
    }

    @Override
    public String toString() {
        return "HubEnvironment[cacheDir=" + cacheDir + ", endpoint=" + endpoint + ", offline=" + offline
                + ", token=" + (token.isPresent() ? "***" : "none") + "]";
    }
}
