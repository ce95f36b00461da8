package dev.crucible.accelerator.xla.testing;

import java.io.IOException;
import java.io.InputStream;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The stand-in PJRT plugin of the test resources ({@code stub_pjrt_plugin.c}), compiled with gcc into this module's
 * target folder once per test JVM; tests that need it are skipped where gcc is missing. It counts the objects it
 * has handed out and not yet been asked to destroy ({@link #liveObjects()}).
 */
public final class StubPjrtPlugin {
    private static Path library;
    private static String reason;
    private static MethodHandle liveObjects;

    private StubPjrtPlugin() {
    }

    /** The compiled plugin, or the test is skipped with why it could not be built. */
    public static synchronized Path require() {
        if (library == null && reason == null) {
            build();
        }
        Assumptions.assumeTrue(library != null, reason);
        return library;
    }

    /** Objects of the stub (errors, events, clients, buffers, executables) not destroyed yet, in this process. */
    public static long liveObjects() {
        try {
            return (long) liveObjects.invokeExact();
        } catch (Throwable t) {
            throw new IllegalStateException(t);
        }
    }

    private static void build() {
        try {
            Path dir = Files.createDirectories(Path.of("target", "stub-pjrt-plugin").toAbsolutePath());
            Path source = dir.resolve("stub_pjrt_plugin.c");
            try (InputStream in = StubPjrtPlugin.class.getResourceAsStream("/stub_pjrt_plugin.c")) {
                Files.copy(in, source, StandardCopyOption.REPLACE_EXISTING);
            }
            Path output = dir.resolve("libstub_pjrt_plugin.so");
            Process gcc;
            try {
                gcc = new ProcessBuilder("gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror", "-o", output.toString(),
                        source.toString()).redirectErrorStream(true).start();
            } catch (IOException e) {
                reason = "gcc is not installed, so the stub PJRT plugin cannot be built: " + e.getMessage();
                return;
            }
            String log = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            if (!gcc.waitFor(2, TimeUnit.MINUTES) || gcc.exitValue() != 0) {
                throw new IllegalStateException("gcc failed on stub_pjrt_plugin.c:\n" + log);
            }
            Linker linker = Linker.nativeLinker();
            liveObjects = linker.downcallHandle(SymbolLookup.libraryLookup(output, Arena.global())
                    .find("stub_live_objects").orElseThrow(), FunctionDescriptor.of(ValueLayout.JAVA_LONG));
            library = output;
        } catch (IOException e) {
            throw new IllegalStateException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
