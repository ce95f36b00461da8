package dev.crucible.runner;

import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;

/**
 * Where the runner lives and what the environment says, passed around instead of read from globals so tests
 * can state both.
 *
 * @param env         environment variables
 * @param distHome    the distribution folder ({@code lib/} and {@code plugins/}), empty when run from classes
 * @param terminal    the person at the keyboard, or {@link Terminal#NONE}
 */
public record RunnerEnvironment(Map<String, String> env, Optional<Path> distHome, Terminal terminal) {
    public RunnerEnvironment {
        env = Map.copyOf(env);
        java.util.Objects.requireNonNull(terminal, "terminal is null");
    }

    /** An environment without a terminal, as scripts and CI have. */
    public RunnerEnvironment(Map<String, String> env, Optional<Path> distHome) {
        this(env, distHome, Terminal.NONE);
    }

    public static RunnerEnvironment system() {
        Map<String, String> env = System.getenv();
        return new RunnerEnvironment(env, locateDistribution(), Terminal.system(env));
    }

    public Optional<String> get(String name) {
        return Optional.ofNullable(env.get(name)).filter(v -> !v.isBlank());
    }

    /** {@code CRUCIBLE_PLUGINS_DIR}, else {@code plugins/} beside the distribution's {@code lib/}. */
    public Optional<Path> pluginsDir() {
        Optional<Path> configured = get("CRUCIBLE_PLUGINS_DIR").map(Path::of);
        return configured.isPresent() ? configured : distHome.map(home -> home.resolve("plugins"));
    }

    /** The distribution is the parent of the {@code lib/} folder holding the runner jar. */
    private static Optional<Path> locateDistribution() {
        try {
            var source = RunnerEnvironment.class.getProtectionDomain().getCodeSource();
            if (source == null) {
                return Optional.empty();
            }
            Path jar = Path.of(source.getLocation().toURI());
            Path lib = jar.getParent();
            if (Files.isRegularFile(jar) && lib != null && lib.getFileName().toString().equals("lib") && lib.getParent() != null) {
                return Optional.of(lib.getParent());
            }
        } catch (URISyntaxException | RuntimeException e) {
            // fall through: not run from a distribution
        }
        return Optional.empty();
    }
}
