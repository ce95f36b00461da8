package dev.crucible.runner;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.File;
import java.io.IOException;
import java.lang.ProcessBuilder.Redirect;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The java command line {@code ./runner} starts, run as a separate process the way a user meets it: the JVM options
 * of {@code scripts/runner-jvm.args}, the runner's classpath, and the plugin jars in a plugins folder. The JVM must
 * not print anything of its own (the incubator-module warning was the first line of every command), and the cpu
 * backend's Vector API kernels must still be in use.
 */
class LauncherTest {
    private static final Path ROOT = Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
    private static final Path JVM_ARGS = ROOT.resolve("scripts/runner-jvm.args");

    @TempDir
    static Path temp;

    private static String hostClasspath;
    private static Path plugins;

    record Launched(int exit, String out, String err) {
    }

    /** The test classpath split as the distribution is: plugin jars to a plugins folder, the rest to lib. */
    @BeforeAll
    static void splitClasspath() throws IOException {
        plugins = Files.createDirectories(temp.resolve("plugins"));
        List<String> host = new ArrayList<>();
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        for (String entry : classpath.split(File.pathSeparator)) {
            Path path = Path.of(entry);
            if (Files.isDirectory(path) && (Files.exists(path.resolve("META-INF/services/dev.crucible.api.backend.HardwareBackend"))
                    || Files.exists(path.resolve("META-INF/services/dev.crucible.api.scoring.ScorerProvider")))) {
                Assumptions.abort("needs the packaged plugin jars (run the suite with 'mvn verify', as ./run-tests does), found " + path);
            }
            if (isPluginJar(path)) {
                Files.copy(path, plugins.resolve(path.getFileName()));
            } else {
                host.add(entry);
            }
        }
        hostClasspath = String.join(File.pathSeparator, host);
    }

    private static boolean isPluginJar(Path path) throws IOException {
        if (!Files.isRegularFile(path) || !path.toString().endsWith(".jar")) {
            return false;
        }
        try (JarFile jar = new JarFile(path.toFile())) {
            return jar.getManifest() != null && jar.getManifest().getMainAttributes().getValue("Plugin-Id") != null;
        }
    }

    private static Launched launch(String... args) throws Exception {
        return launch(plugins, args);
    }

    private static Launched launch(Path pluginsDir, String... args) throws Exception {
        List<String> command = new ArrayList<>(List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "@" + JVM_ARGS, "-cp", hostClasspath, Main.class.getName()));
        command.addAll(List.of(args));
        Path out = Files.createTempFile(temp, "out", ".txt");
        Path err = Files.createTempFile(temp, "err", ".txt");
        ProcessBuilder builder = new ProcessBuilder(command).redirectOutput(out.toFile()).redirectError(err.toFile())
                .redirectInput(Redirect.from(new File("/dev/null")));
        builder.environment().put("CRUCIBLE_PLUGINS_DIR", pluginsDir.toString());
        builder.environment().put("CRUCIBLE_THREADS", "1");
        builder.environment().remove("JAVA_TOOL_OPTIONS");
        builder.environment().remove("JDK_JAVA_OPTIONS");
        Process process = builder.start();
        if (!process.waitFor(180, TimeUnit.SECONDS)) {
            process.destroyForcibly();
            throw new AssertionError("runner " + String.join(" ", args) + " did not finish in 180 s");
        }
        return new Launched(process.exitValue(), Files.readString(out), Files.readString(err));
    }

    @Test
    void theLauncherStartsJavaWithTheOptionsFileThisTestUses() throws IOException {
        assertTrue(Files.readString(ROOT.resolve("runner")).contains("\"@$root/scripts/runner-jvm.args\""),
                "./runner must pass scripts/runner-jvm.args to java");
    }

    @Test
    void doctorPrintsNothingOnStderrAndTheVectorKernelsAreInUse() throws Exception {
        Launched doctor = launch("doctor");
        assertEquals(0, doctor.exit(), doctor.err());
        assertEquals("", doctor.err(), "doctor's report is on stdout; nothing else may reach stderr");
        assertTrue(doctor.out().startsWith("crucible "), doctor.out());
        String kernels = doctor.out().lines().filter(line -> line.strip().startsWith("kernels ")).findFirst().orElse("");
        // "vector API kernels for decode steps, ...", or with machine code first where the CPU has AVX512-BF16.
        assertTrue(kernels.contains("vector API kernels for") && kernels.contains("decode steps, libtorch for the rest"),
                doctor.out());
        assertTrue(doctor.out().contains("[accelerator-cpu-"), "the cpu backend came from the plugins folder: " + doctor.out());
        assertTrue(doctor.out().contains("Runtime  cpu:"), doctor.out());
    }

    /** An empty jar among the real ones: it is named and skipped, and every plugin beside it works. */
    @Test
    void anEmptyJarInThePluginsFolderIsSkippedWithAWarningAndTheOtherPluginsWork() throws Exception {
        Path mixed = Files.createDirectories(temp.resolve("mixed-plugins"));
        try (var jars = Files.list(plugins)) {
            for (Path jar : jars.toList()) {
                Files.copy(jar, mixed.resolve(jar.getFileName()));
            }
        }
        new java.util.zip.ZipOutputStream(Files.newOutputStream(mixed.resolve("empty.jar"))).close();
        String warning = "warning: plugin empty.jar skipped: it has no META-INF/MANIFEST.MF (an empty jar?), so no Plugin-Id";

        Launched devices = launch(mixed, "devices", "--device", "cpu");
        assertEquals(0, devices.exit(), devices.err());
        assertTrue(devices.out().startsWith("--device cpu -> cpu:"), devices.out());
        assertEquals(List.of(warning), devices.err().lines().toList());

        Path stories = ROOT.resolve("../shared/fixtures/stories260k").normalize();
        Assumptions.assumeTrue(Files.isDirectory(stories), "fixture " + stories + " is missing (../shared beside the repository)");
        Launched generate = launch(mixed, "generate", "--model", stories.toString(), "--prompt", "Once upon a time",
                "--max-new-tokens", "4", "--json");
        assertEquals(0, generate.exit(), generate.err());
        assertTrue(generate.out().strip().startsWith("{"), generate.out());
        assertEquals(warning, generate.err().lines().findFirst().orElse(""), generate.err());
    }

    @Test
    void aUsageErrorIsTheOnlyLineOnStderr() throws Exception {
        Launched typo = launch("devices", "--jsn");
        assertEquals(2, typo.exit());
        assertEquals("", typo.out());
        List<String> lines = typo.err().lines().toList();
        assertEquals(1, lines.size(), typo.err());
        assertTrue(lines.getFirst().startsWith("error: "), typo.err());
    }
}
