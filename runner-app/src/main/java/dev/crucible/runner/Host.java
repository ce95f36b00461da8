package dev.crucible.runner;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.scoring.ScorerProvider;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.runner.backends.BackendProber;
import dev.crucible.runner.backends.BackendResolver;
import dev.crucible.runner.backends.ProbedBackend;
import dev.crucible.runner.backends.SpiVersion;
import dev.crucible.runner.plugins.Discovered;
import dev.crucible.runner.plugins.PluginHost;
import java.time.Duration;
import java.util.List;
import java.util.function.Consumer;

/**
 * The runner's view of its plugins: discovered once per process, probed once, closed at exit.
 */
public final class Host implements AutoCloseable {
    private final RunnerEnvironment environment;
    private final PluginHost plugins;
    private List<ProbedBackend> probed;
    private final Consumer<String> notes;
    private final java.util.Set<String> noted = java.util.concurrent.ConcurrentHashMap.newKeySet();

    /** A host that keeps its plugin problems to itself ({@link PluginHost#problems()}). */
    public Host(RunnerEnvironment environment, ClassLoader classpath) {
        this(environment, classpath, problem -> { });
    }

    /** @param warnings told each plugin problem (a jar skipped, a provider that failed), one line, as it is found */
    public Host(RunnerEnvironment environment, ClassLoader classpath, Consumer<String> warnings) {
        this(environment, classpath, warnings, note -> { });
    }

    /** @param notes told each {@link #noteOnce} line the first time it is noted (the runner prints them on stderr) */
    public Host(RunnerEnvironment environment, ClassLoader classpath, Consumer<String> warnings, Consumer<String> notes) {
        this.environment = environment;
        this.notes = notes;
        this.plugins = PluginHost.open(classpath, environment.pluginsDir(), warnings);
    }

    /** Tells the user {@code line} once per run, however often the run meets what it describes. */
    public void noteOnce(String line) {
        if (noted.add(line)) {
            notes.accept(line);
        }
    }

    public RunnerEnvironment environment() {
        return environment;
    }

    public PluginHost plugins() {
        return plugins;
    }

    /** Every backend with its probe, highest priority first; detection runs on first call only. */
    public synchronized List<ProbedBackend> backends() {
        if (probed == null) {
            List<Discovered<HardwareBackend<?, ?>>> found = plugins.discover(backendType(), HardwareBackend::id,
                    SpiVersion::refusal);
            probed = BackendProber.probeAll(found, probeTimeout());
        }
        return probed;
    }

    /** {@code HardwareBackend<?, ?>} as a class literal, which Java has no syntax for. */
    @SuppressWarnings("unchecked")
    private static Class<HardwareBackend<?, ?>> backendType() {
        return (Class<HardwareBackend<?, ?>>) (Class<?>) HardwareBackend.class;
    }

    /** The backend {@code --device} selects (see {@link BackendResolver}); the user's mistake exits 2. */
    public ProbedBackend resolve(DeviceRequest request) {
        return new BackendResolver(backends()).resolve(request, environment.get("CRUCIBLE_DEVICE_PRIORITY"));
    }

    public List<Discovered<ScorerProvider>> scorers() {
        return plugins.discover(ScorerProvider.class, ScorerProvider::name);
    }

    private Duration probeTimeout() {
        return environment.get("CRUCIBLE_PROBE_TIMEOUT_MS").map(ms -> {
            try {
                return Duration.ofMillis(Long.parseLong(ms.trim()));
            } catch (NumberFormatException e) {
                throw new UserInputException("CRUCIBLE_PROBE_TIMEOUT_MS must be a number of milliseconds, got '" + ms + "'");
            }
        }).orElse(BackendProber.DEFAULT_TIMEOUT);
    }

    @Override
    public void close() {
        plugins.close();
    }
}
