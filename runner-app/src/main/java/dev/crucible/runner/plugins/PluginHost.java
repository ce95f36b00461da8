package dev.crucible.runner.plugins;

import java.io.Closeable;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.Function;
import java.util.jar.JarFile;
import java.util.jar.Manifest;
import org.pf4j.JarPluginLoader;
import org.pf4j.JarPluginManager;
import org.pf4j.PluginClassLoader;
import org.pf4j.PluginDescriptor;
import org.pf4j.PluginLoader;
import org.pf4j.PluginManager;
import org.pf4j.PluginState;
import org.pf4j.PluginWrapper;

/**
 * Finds services (backends, scorers) on the classpath with {@link ServiceLoader} and in a PF4J plugins folder.
 * The same jar works both ways: a plugin jar carries a {@code META-INF/services} file and PF4J manifest entries,
 * and depends on api and JavaCPP as {@code provided}.
 *
 * <p>Nothing found here may stop a run: a jar that fails to load or a provider that fails to instantiate becomes
 * a {@link #problems() problem} line, passed to the caller's warning sink as it is found. Each jar is loaded by a
 * PF4J plugin manager of its own, so that nothing about one jar (no manifest, not a zip, a dependency that does not
 * resolve, a class that does not link) can stop another: with one manager for the folder, an empty jar's missing
 * manifest ended PF4J's loading loop with a NullPointerException and no plugin started at all. Duplicate ids keep
 * the first one found (classpath before plugins folder, plugins in file-name order) and report the rest.
 */
public final class PluginHost implements AutoCloseable {
    /**
     * Packages a plugin must always take from the host, never from its own jar: they define class identity. The
     * plugin contract is {@code api} alone; the runner's own modules (the huggingface module's chat templates and
     * Hub client, the CLI) are not part of it and are not listed here.
     */
    private static final List<String> SHARED_PACKAGES = List.of(
            "dev.crucible.api.", "org.bytedeco.", "dev.crucible.torch.", "org.slf4j.");

    /** A started plugin and the manager that owns it (one per jar). */
    private record StartedPlugin(PluginManager manager, PluginWrapper wrapper) {
        String fileName() {
            return wrapper.getPluginPath().getFileName().toString();
        }
    }

    /** Why a jar in the plugins folder is skipped: not a plugin jar, a duplicate id, or PF4J could not start it. */
    private static final class SkippedJar extends Exception {
        SkippedJar(String reason) {
            super(reason);
        }
    }

    private final ClassLoader classpath;
    private final Optional<Path> pluginsDir;
    private final Consumer<String> warnings;
    private final Set<String> problems = new LinkedHashSet<>();
    private final List<String> loadedPlugins = new ArrayList<>();
    private final List<StartedPlugin> started = new ArrayList<>();

    private PluginHost(ClassLoader classpath, Optional<Path> pluginsDir, Consumer<String> warnings) {
        this.classpath = classpath;
        this.pluginsDir = pluginsDir;
        this.warnings = warnings;
        pluginsDir.ifPresent(this::loadFolder);
    }

    /**
     * @param classpath  the loader whose classpath is searched, and the parent of every plugin class loader
     * @param pluginsDir the plugins folder, empty for classpath only; a missing folder is reported, not fatal
     */
    public static PluginHost open(ClassLoader classpath, Optional<Path> pluginsDir) {
        return open(classpath, pluginsDir, problem -> { });
    }

    /** As {@link #open(ClassLoader, Optional)}, telling {@code warnings} each new problem (one line) as it is found. */
    public static PluginHost open(ClassLoader classpath, Optional<Path> pluginsDir, Consumer<String> warnings) {
        return new PluginHost(classpath, pluginsDir, warnings);
    }

    private void problem(String line) {
        if (problems.add(line)) {
            warnings.accept(line);
        }
    }

    private void loadFolder(Path dir) {
        if (!Files.isDirectory(dir)) {
            problem("plugins folder " + dir + " does not exist");
            return;
        }
        List<Path> jars;
        try (var files = Files.list(dir)) {
            jars = files.filter(p -> p.getFileName().toString().endsWith(".jar")).sorted().toList();
        } catch (IOException e) {
            problem("plugins folder " + dir + " cannot be listed: " + oneLine(e));
            return;
        }
        Map<String, String> fileById = new HashMap<>();
        for (Path jar : jars) {
            String file = jar.getFileName().toString();
            try {
                String id = pluginId(jar);
                String first = fileById.get(id);
                if (first != null) {
                    throw new SkippedJar("plugin id '" + id + "' is already loaded from " + first);
                }
                loadJar(dir, jar, id);
                fileById.put(id, file);
            } catch (SkippedJar e) {
                problem("plugin " + file + " skipped: " + e.getMessage());
            }
        }
    }

    /**
     * The jar's {@code Plugin-Id}, or why it is not a plugin jar, in words a user can act on (PF4J's descriptor
     * finder says "Cannot read manifest" for a file that is no zip and throws a NullPointerException for a jar
     * without a manifest).
     */
    private static String pluginId(Path jar) throws SkippedJar {
        Manifest manifest;
        try (JarFile file = new JarFile(jar.toFile())) {
            manifest = file.getManifest();
        } catch (IOException e) {
            throw new SkippedJar("not a jar (zip) file: " + oneLine(e));
        }
        if (manifest == null) {
            throw new SkippedJar("it has no META-INF/MANIFEST.MF (an empty jar?), so no Plugin-Id");
        }
        for (String entry : List.of("Plugin-Id", "Plugin-Version")) {
            String value = manifest.getMainAttributes().getValue(entry);
            if (value == null || value.isBlank()) {
                throw new SkippedJar("its manifest has no " + entry + " entry (not a Crucible plugin jar?)");
            }
        }
        return manifest.getMainAttributes().getValue("Plugin-Id").strip();
    }

    /** Loads and starts one jar with a plugin manager of its own; a failure discards that manager and nothing else. */
    private void loadJar(Path dir, Path jar, String id) throws SkippedJar {
        PluginManager manager = new JarPluginManager(dir) {
            @Override
            protected PluginLoader createPluginLoader() {
                return new SharedPackagesJarLoader(this, classpath);
            }
        };
        try {
            manager.loadPlugin(jar);
            // startPlugins, not startPlugin(id): PF4J's single start would enable a plugin that disabled.txt disables.
            manager.startPlugins();
        } catch (RuntimeException | LinkageError e) {
            discard(manager);
            throw new SkippedJar(oneLine(e));
        }
        PluginWrapper plugin = manager.getPlugin(id);
        if (plugin == null || plugin.getPluginState() != PluginState.STARTED) {
            discard(manager);
            throw new SkippedJar(plugin == null ? "PF4J did not load it"
                    : plugin.getPluginState() == PluginState.DISABLED ? "disabled (enabled.txt or disabled.txt in the plugins folder)"
                    : plugin.getFailedException() == null ? "did not start (" + plugin.getPluginState() + ")"
                    : "did not start: " + oneLine(plugin.getFailedException()));
        }
        started.add(new StartedPlugin(manager, plugin));
        loadedPlugins.add(id + " " + plugin.getDescriptor().getVersion() + " (" + jar.getFileName() + ")");
    }

    /** Closes the class loaders of a manager given up on; its plugins never started, so there is nothing to stop. */
    private static void discard(PluginManager manager) {
        for (PluginWrapper plugin : manager.getPlugins()) {
            if (plugin.getPluginClassLoader() instanceof Closeable loader) {
                try {
                    loader.close();
                } catch (IOException e) {
                    // A loader that cannot close keeps its jar open until the process exits; nothing else depends on it.
                }
            }
        }
    }

    /**
     * Every provider of {@code type}, classpath first, then plugins in file-name order, de-duplicated by
     * {@code idOf}: the first wins and each later duplicate is reported.
     */
    public <T> List<Discovered<T>> discover(Class<T> type, Function<T, String> idOf) {
        return discover(type, idOf, service -> Optional.empty());
    }

    /**
     * The same, leaving out every provider {@code refusal} has a reason against (one that was built for another
     * version of the SPI); each reason becomes a problem line naming where the provider came from.
     */
    public <T> List<Discovered<T>> discover(Class<T> type, Function<T, String> idOf,
                                            Function<T, Optional<String>> refusal) {
        Map<String, Discovered<T>> byId = new LinkedHashMap<>();
        collect(type, ServiceLoader.load(type, classpath), classpath, "classpath", idOf, refusal, byId);
        for (StartedPlugin plugin : started) {
            ClassLoader loader = plugin.wrapper().getPluginClassLoader();
            collect(type, ServiceLoader.load(type, loader), loader, plugin.fileName(), idOf, refusal, byId);
        }
        return List.copyOf(byId.values());
    }

    private <T> void collect(Class<T> type, ServiceLoader<T> loader, ClassLoader owner, String origin,
                             Function<T, String> idOf, Function<T, Optional<String>> refusal,
                             Map<String, Discovered<T>> byId) {
        var iterator = loader.stream().iterator();
        while (true) {
            ServiceLoader.Provider<T> provider;
            try {
                if (!iterator.hasNext()) {
                    return;
                }
                provider = iterator.next();
            } catch (ServiceConfigurationError e) {
                problem(type.getSimpleName() + " from " + origin + " cannot be loaded: " + oneLine(e));
                continue;
            } catch (LinkageError e) {
                // ServiceLoader passes these through unwrapped (a provider whose superclass or interface is missing,
                // a broken class file) and says nothing of the iterator after them: give up this origin's remaining
                // providers rather than risk a loop.
                problem(type.getSimpleName() + " from " + origin + " cannot be loaded: " + oneLine(e));
                return;
            }
            // A plugin loader also sees the host's services through its parent; keep only its own.
            if (provider.type().getClassLoader() != owner) {
                continue;
            }
            T service;
            String id;
            Optional<String> refused;
            try {
                service = provider.get();
                id = idOf.apply(service);
                refused = refusal.apply(service);
            } catch (ServiceConfigurationError | RuntimeException | LinkageError e) {
                problem(provider.type().getName() + " from " + origin + " failed to start: " + oneLine(e));
                continue;
            }
            if (refused.isPresent()) {
                problem((origin.equals("classpath") ? "classpath" : "plugin " + origin) + ": " + refused.get());
                continue;
            }
            Discovered<T> first = byId.get(id);
            if (first != null) {
                problem("duplicate " + type.getSimpleName() + " id '" + id + "' from " + origin
                        + " ignored; the one from " + first.origin() + " is used");
                continue;
            }
            byId.put(id, new Discovered<>(service, origin));
        }
    }

    /** One line each: plugins or providers that failed, duplicates, missing folders. */
    public List<String> problems() {
        return List.copyOf(problems);
    }

    /** The plugins started from the plugins folder, as "id version (file)". */
    public List<String> loadedPlugins() {
        return List.copyOf(loadedPlugins);
    }

    public Optional<Path> pluginsDir() {
        return pluginsDir;
    }

    @Override
    public void close() {
        for (StartedPlugin plugin : started) {
            try {
                plugin.manager().unloadPlugin(plugin.wrapper().getPluginId());
            } catch (RuntimeException | LinkageError e) {
                // The process is ending: a plugin that fails to stop holds nothing that outlives it, and exiting
                // with its stack trace would turn a finished command into a failed one.
            }
        }
        started.clear();
    }

    static String oneLine(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        String message = root.getMessage() == null ? root.getClass().getSimpleName() : root.getClass().getSimpleName() + ": " + root.getMessage();
        return message.replaceAll("\\s*\\R\\s*", " ");
    }

    /** Loads plugin jars with a class loader that always takes the shared packages from the host. */
    private static final class SharedPackagesJarLoader extends JarPluginLoader {
        private final ClassLoader parent;

        SharedPackagesJarLoader(PluginManager manager, ClassLoader parent) {
            super(manager);
            this.parent = parent;
        }

        @Override
        protected PluginClassLoader createPluginClassLoader(Path pluginPath, PluginDescriptor descriptor) {
            return new PluginClassLoader(pluginManager, descriptor, parent) {
                @Override
                protected boolean shouldDelegateToParent(String className) {
                    return super.shouldDelegateToParent(className) || SHARED_PACKAGES.stream().anyMatch(className::startsWith);
                }
            };
        }
    }
}
