package dev.crucible.runner.plugins;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.ServiceConfigurationError;
import java.util.ServiceLoader;
import java.util.function.Function;
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
 * a {@link #problems() problem} line. Duplicate ids keep the first one found (classpath before plugins folder,
 * plugins in file-name order) and report the rest.
 */
public final class PluginHost implements AutoCloseable {
    /** Packages a plugin must always take from the host, never from its own jar: they define class identity. */
    private static final List<String> SHARED_PACKAGES = List.of(
            "dev.crucible.api.", "org.bytedeco.", "dev.crucible.torch.", "org.slf4j.");

    private final ClassLoader classpath;
    private final Optional<Path> pluginsDir;
    private final List<String> problems = new ArrayList<>();
    private final List<String> loadedPlugins = new ArrayList<>();
    private final PluginManager pluginManager;

    private PluginHost(ClassLoader classpath, Optional<Path> pluginsDir) {
        this.classpath = classpath;
        this.pluginsDir = pluginsDir;
        this.pluginManager = pluginsDir.map(this::startPlugins).orElse(null);
    }

    /**
     * @param classpath  the loader whose classpath is searched, and the parent of every plugin class loader
     * @param pluginsDir the plugins folder, empty for classpath only; a missing folder is reported, not fatal
     */
    public static PluginHost open(ClassLoader classpath, Optional<Path> pluginsDir) {
        return new PluginHost(classpath, pluginsDir);
    }

    private PluginManager startPlugins(Path dir) {
        if (!Files.isDirectory(dir)) {
            problems.add("plugins folder " + dir + " does not exist");
            return null;
        }
        PluginManager manager = new JarPluginManager(dir) {
            @Override
            protected PluginLoader createPluginLoader() {
                return new SharedPackagesJarLoader(this, classpath);
            }
        };
        try {
            manager.loadPlugins();
            manager.startPlugins();
        } catch (RuntimeException e) {
            problems.add("plugins folder " + dir + ": " + oneLine(e));
        }
        for (PluginWrapper plugin : manager.getPlugins()) {
            if (plugin.getPluginState() == PluginState.STARTED) {
                loadedPlugins.add(plugin.getPluginId() + " " + plugin.getDescriptor().getVersion() + " (" + plugin.getPluginPath().getFileName() + ")");
            } else {
                String why = plugin.getFailedException() == null ? plugin.getPluginState().toString() : oneLine(plugin.getFailedException());
                problems.add("plugin " + plugin.getPluginPath().getFileName() + " did not start: " + why);
            }
        }
        reportJarsPf4jIgnored(dir, manager);
        return manager;
    }

    /** PF4J silently skips a jar without a plugin descriptor; a user who dropped it there wants to know. */
    private void reportJarsPf4jIgnored(Path dir, PluginManager manager) {
        try (var files = Files.list(dir)) {
            for (Path jar : files.filter(p -> p.toString().endsWith(".jar")).sorted().toList()) {
                boolean known = manager.getPlugins().stream().anyMatch(p -> p.getPluginPath().getFileName().equals(jar.getFileName()));
                if (!known) {
                    problems.add("plugin " + jar.getFileName() + " was not loaded: no Plugin-Id/Plugin-Version in its manifest, or a duplicate plugin id");
                }
            }
        } catch (IOException e) {
            problems.add("plugins folder " + dir + " cannot be listed: " + oneLine(e));
        }
    }

    /**
     * Every provider of {@code type}, classpath first, then plugins in file-name order, de-duplicated by
     * {@code idOf}: the first wins and each later duplicate is reported.
     */
    public <T> List<Discovered<T>> discover(Class<T> type, Function<T, String> idOf) {
        Map<String, Discovered<T>> byId = new LinkedHashMap<>();
        collect(type, ServiceLoader.load(type, classpath), classpath, "classpath", idOf, byId);
        if (pluginManager != null) {
            List<PluginWrapper> started = pluginManager.getStartedPlugins().stream()
                    .sorted((a, b) -> a.getPluginPath().getFileName().toString().compareTo(b.getPluginPath().getFileName().toString()))
                    .toList();
            for (PluginWrapper plugin : started) {
                ClassLoader loader = plugin.getPluginClassLoader();
                collect(type, ServiceLoader.load(type, loader), loader, plugin.getPluginPath().getFileName().toString(), idOf, byId);
            }
        }
        return List.copyOf(byId.values());
    }

    private <T> void collect(Class<T> type, ServiceLoader<T> loader, ClassLoader owner, String origin,
                             Function<T, String> idOf, Map<String, Discovered<T>> byId) {
        var iterator = loader.stream().iterator();
        while (true) {
            ServiceLoader.Provider<T> provider;
            try {
                if (!iterator.hasNext()) {
                    return;
                }
                provider = iterator.next();
            } catch (ServiceConfigurationError e) {
                problems.add(type.getSimpleName() + " from " + origin + " cannot be loaded: " + oneLine(e));
                continue;
            }
            // A plugin loader also sees the host's services through its parent; keep only its own.
            if (provider.type().getClassLoader() != owner) {
                continue;
            }
            T service;
            String id;
            try {
                service = provider.get();
                id = idOf.apply(service);
            } catch (ServiceConfigurationError | RuntimeException | LinkageError e) {
                problems.add(provider.type().getName() + " from " + origin + " failed to start: " + oneLine(e));
                continue;
            }
            Discovered<T> first = byId.get(id);
            if (first != null) {
                problems.add("duplicate " + type.getSimpleName() + " id '" + id + "' from " + origin
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
        if (pluginManager != null) {
            // One by one over a copy: PF4J 3.15's stopPlugins() modifies the list it iterates.
            for (PluginWrapper plugin : List.copyOf(pluginManager.getPlugins())) {
                pluginManager.unloadPlugin(plugin.getPluginId());
            }
        }
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
