package dev.crucible.accelerator.xla.testing;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;

/**
 * The Python venv of test oracles (jax, jaxlib, libtpu) that {@code scripts/oracle-venv.sh} makes under the
 * repository's {@code target/venv} from the local wheel mirror: made once per build, found ready afterwards, shared
 * by every test JVM. Tests that need it call {@link #require()} and are skipped, with the script's reason, where it
 * cannot be made.
 */
public final class OracleVenv {
    private static Optional<Path> python;
    private static String reason;

    private OracleVenv() {
    }

    /** The venv's python, or the test is skipped with the reason. */
    public static synchronized Path require() {
        if (python == null) {
            make();
        }
        Assumptions.assumeTrue(python.isPresent(), reason);
        return python.get();
    }

    /** {@code libtpu.so} inside the venv (the libtpu wheel), or the test is skipped. */
    public static Path libtpu() {
        Path venv = require().getParent().getParent();
        try (Stream<Path> pythons = Files.list(venv.resolve("lib"))) {
            Optional<Path> library = pythons.map(p -> p.resolve("site-packages/libtpu/libtpu.so")).filter(Files::isRegularFile).findFirst();
            Assumptions.assumeTrue(library.isPresent(), "the oracle venv has no libtpu/libtpu.so");
            return library.get();
        } catch (IOException e) {
            Assumptions.abort("cannot list " + venv + "/lib: " + e.getMessage());
            throw new AssertionError(e);
        }
    }

    public static Path repositoryRoot() {
        return Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
    }

    private static void make() {
        Path script = repositoryRoot().resolve("scripts/oracle-venv.sh");
        try {
            Process process = new ProcessBuilder("bash", script.toString()).redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            // The first build installs about 600 MB of wheels; later ones only check a stamp.
            if (!process.waitFor(15, TimeUnit.MINUTES)) {
                process.destroyForcibly();
                python = Optional.empty();
                reason = "scripts/oracle-venv.sh took longer than 15 minutes";
                return;
            }
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            if (process.exitValue() == 0 && Files.isExecutable(Path.of(out))) {
                python = Optional.of(Path.of(out));
            } else {
                python = Optional.empty();
                reason = "no oracle venv: " + (err.isEmpty() ? "scripts/oracle-venv.sh exited " + process.exitValue() : err);
            }
        } catch (IOException e) {
            python = Optional.empty();
            reason = "no oracle venv: cannot run " + script + ": " + e.getMessage();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            python = Optional.empty();
            reason = "interrupted while making the oracle venv";
        }
    }
}
