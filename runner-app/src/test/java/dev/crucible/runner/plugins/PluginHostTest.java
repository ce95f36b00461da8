package dev.crucible.runner.plugins;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.cpu.CpuBackend;
import dev.crucible.api.backend.HardwareBackend;
import java.io.IOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Enumeration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.jar.Attributes;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.pf4j.PluginClassLoader;

/**
 * The same plugin jar must work from a PF4J plugins folder and from the classpath. The test uses the real
 * packaged accelerator-cpu jar and a host class loader that hides the plugin (its classes and its service file),
 * so the only way to find the backend is through the jar.
 */
class PluginHostTest {

    @TempDir
    Path temp;

    private static Path cpuPluginJar() throws Exception {
        Path location = Path.of(CpuBackend.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        Assumptions.assumeTrue(Files.isRegularFile(location) && location.toString().endsWith(".jar"),
                "needs the packaged accelerator-cpu jar (run the suite with 'mvn verify', as ./run-tests does), found " + location);
        try (JarFile jar = new JarFile(location.toFile())) {
            assertEquals("accelerator-cpu", jar.getManifest().getMainAttributes().getValue("Plugin-Id"), "plugin manifest entries");
        }
        return location;
    }

    @Test
    void loadsABackendJarFromAPluginsFolderInAFreshClassLoader() throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        Files.copy(cpuPluginJar(), plugins.resolve("accelerator-cpu.jar"));
        try (PluginHost host = PluginHost.open(new HidingPlugins(getClass().getClassLoader()), Optional.of(plugins))) {
            List<Discovered<HardwareBackend>> found = host.discover(HardwareBackend.class, HardwareBackend::id);
            assertEquals(1, found.size(), () -> "found " + found + ", problems " + host.problems());
            Discovered<HardwareBackend> cpu = found.getFirst();
            assertEquals("cpu", cpu.service().id());
            assertEquals("accelerator-cpu.jar", cpu.origin());
            assertInstanceOf(PluginClassLoader.class, cpu.service().getClass().getClassLoader());
            assertTrue(cpu.service().detect().available());
            assertEquals(List.of(), host.problems());
            assertEquals(1, host.loadedPlugins().size());
        }
    }

    @Test
    void theSameJarWorksOnTheClasspath() throws Exception {
        ClassLoader hiding = new HidingPlugins(getClass().getClassLoader());
        try (URLClassLoader classpath = new URLClassLoader(new URL[] {cpuPluginJar().toUri().toURL()}, hiding);
             PluginHost host = PluginHost.open(classpath, Optional.empty())) {
            List<Discovered<HardwareBackend>> found = host.discover(HardwareBackend.class, HardwareBackend::id);
            assertEquals(List.of("cpu"), found.stream().map(d -> d.service().id()).toList());
            assertEquals("classpath", found.getFirst().origin());
            assertNotSame(CpuBackend.class, found.getFirst().service().getClass(), "loaded from the jar, not the test classpath");
        }
    }

    /** What the runner does with a plugin built for another SPI version: leaves it out and says which jar it was. */
    @Test
    void aRefusedProviderIsLeftOutAndReportedWithItsJar() throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        Files.copy(cpuPluginJar(), plugins.resolve("accelerator-cpu.jar"));
        try (PluginHost host = PluginHost.open(new HidingPlugins(getClass().getClassLoader()), Optional.of(plugins))) {
            List<Discovered<HardwareBackend>> found = host.discover(HardwareBackend.class, HardwareBackend::id,
                    backend -> Optional.of("backend '" + backend.id() + "' was built for backend SPI 0"));
            assertEquals(List.of(), found);
            assertEquals(List.of("plugin accelerator-cpu.jar: backend 'cpu' was built for backend SPI 0"),
                    host.problems());
        }
    }

    @Test
    void duplicateIdsKeepTheFirstAndReportTheRest() throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        Files.copy(cpuPluginJar(), plugins.resolve("accelerator-cpu.jar"));
        // The test classpath itself carries the cpu backend, so the plugin copy is a duplicate.
        try (PluginHost host = PluginHost.open(getClass().getClassLoader(), Optional.of(plugins))) {
            List<Discovered<HardwareBackend>> found = host.discover(HardwareBackend.class, HardwareBackend::id);
            assertEquals(1, found.stream().filter(d -> d.service().id().equals("cpu")).count());
            assertEquals("classpath", found.stream().filter(d -> d.service().id().equals("cpu")).findFirst().orElseThrow().origin());
            assertTrue(host.problems().contains("duplicate HardwareBackend id 'cpu' from accelerator-cpu.jar ignored; the one from classpath is used"),
                    host.problems()::toString);
        }
    }

    @Test
    void eachJarLoadsInIsolationAndABrokenOneIsNamedWithItsReason() throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        Files.copy(cpuPluginJar(), plugins.resolve("accelerator-cpu.jar"));
        writeJar(plugins.resolve("empty.jar"), null, Map.of());
        Files.writeString(plugins.resolve("garbage.jar"), "this is not a zip file");
        writeJar(plugins.resolve("no-id.jar"), Map.of("Plugin-Version", "1.0"), Map.of("README.txt", "hello".getBytes()));
        writeJar(plugins.resolve("broken-link.jar"), Map.of("Plugin-Id", "broken-link", "Plugin-Version", "1.0"), Map.of(
                "META-INF/services/" + HardwareBackend.class.getName(), "broken.Backend\n".getBytes(),
                "broken/Backend.class", classWithAMissingSuperclass()));
        Files.copy(cpuPluginJar(), plugins.resolve("zz-cpu-again.jar"));
        List<String> warned = new ArrayList<>();
        PluginHost host = PluginHost.open(new HidingPlugins(getClass().getClassLoader()), Optional.of(plugins), warned::add);
        try (host) {
            List<Discovered<HardwareBackend>> found = host.discover(HardwareBackend.class, HardwareBackend::id);
            assertEquals(List.of("cpu accelerator-cpu.jar"), found.stream().map(d -> d.service().id() + " " + d.origin()).toList(),
                    host.problems()::toString);
            assertTrue(found.getFirst().service().detect().available());
            assertEquals(List.of(
                    "plugin empty.jar skipped: it has no META-INF/MANIFEST.MF (an empty jar?), so no Plugin-Id",
                    "plugin garbage.jar skipped: not a jar (zip) file: ZipException: zip END header not found",
                    "plugin no-id.jar skipped: its manifest has no Plugin-Id entry (not a Crucible plugin jar?)",
                    "plugin zz-cpu-again.jar skipped: plugin id 'accelerator-cpu' is already loaded from accelerator-cpu.jar",
                    "HardwareBackend from broken-link.jar cannot be loaded: ClassNotFoundException: broken.Missing"),
                    host.problems());
            assertEquals(host.problems(), warned, "each problem reaches the warning sink once, as it is found");
            assertEquals(List.of("accelerator-cpu 0.1.0 (accelerator-cpu.jar)", "broken-link 1.0 (broken-link.jar)"), host.loadedPlugins());
            host.discover(HardwareBackend.class, HardwareBackend::id);
            assertEquals(5, warned.size(), "a second discovery repeats no warning");
        }
    }

    /** A jar: a manifest with {@code attributes} (none at all when null) and the given entries. */
    static void writeJar(Path path, Map<String, String> attributes, Map<String, byte[]> entries) throws IOException {
        try (JarOutputStream jar = attributes == null ? new JarOutputStream(Files.newOutputStream(path))
                : new JarOutputStream(Files.newOutputStream(path), manifest(attributes))) {
            for (Map.Entry<String, byte[]> entry : new TreeMap<>(entries).entrySet()) {
                jar.putNextEntry(new JarEntry(entry.getKey()));
                jar.write(entry.getValue());
                jar.closeEntry();
            }
        }
    }

    private static Manifest manifest(Map<String, String> attributes) {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        attributes.forEach((k, v) -> manifest.getMainAttributes().putValue(k, v));
        return manifest;
    }

    /** broken.Backend, compiled against a superclass broken.Missing that the jar then leaves out: it cannot link. */
    private static byte[] classWithAMissingSuperclass() throws IOException {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Assumptions.assumeTrue(javac != null, "needs a JDK with javac to compile the broken plugin class");
        Path sources = Files.createTempDirectory("broken-plugin");
        Path dir = Files.createDirectories(sources.resolve("broken"));
        Files.writeString(dir.resolve("Missing.java"), "package broken; public class Missing { }");
        Files.writeString(dir.resolve("Backend.java"), "package broken; public class Backend extends Missing { }");
        int status = javac.run(null, null, null, "-d", sources.toString(), dir.resolve("Missing.java").toString(), dir.resolve("Backend.java").toString());
        assertEquals(0, status, "javac");
        return Files.readAllBytes(dir.resolve("Backend.class"));
    }

    @Test
    void brokenJarsAndMissingFoldersAreReportedNotFatal() throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        Files.writeString(plugins.resolve("garbage.jar"), "this is not a zip file");
        try (PluginHost host = PluginHost.open(new HidingPlugins(getClass().getClassLoader()), Optional.of(plugins))) {
            assertEquals(List.of(), host.discover(HardwareBackend.class, HardwareBackend::id));
            assertTrue(host.problems().stream().anyMatch(p -> p.contains("garbage.jar")), host.problems()::toString);
        }
        try (PluginHost host = PluginHost.open(getClass().getClassLoader(), Optional.of(temp.resolve("nope")))) {
            assertTrue(host.problems().getFirst().contains("does not exist"));
            assertTrue(host.discover(HardwareBackend.class, HardwareBackend::id).size() >= 4, "classpath discovery still works");
        }
    }

    /**
     * The test classpath with the plugins taken out: their classes and their service registrations are invisible,
     * everything else (api, PF4J, JUnit) is shared so class identity holds.
     */
    static final class HidingPlugins extends ClassLoader {
        HidingPlugins(ClassLoader parent) {
            super(parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            if (name.startsWith("dev.crucible.accelerator.") || name.startsWith("dev.crucible.scorers.")) {
                throw new ClassNotFoundException(name);
            }
            return super.loadClass(name, resolve);
        }

        @Override
        public Enumeration<URL> getResources(String name) throws IOException {
            return name.startsWith("META-INF/services/") ? Collections.emptyEnumeration() : super.getResources(name);
        }
    }
}
