package dev.crucible.runner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * The python of the test-oracle venv that {@code scripts/oracle-venv.sh} makes under the repository's
 * {@code target/venv} from the local wheel mirror (the pins are in {@code scripts/oracle-requirements.txt}; the
 * accelerator-xla tests use the same venv through their own copy of this lookup, test trees not being shared
 * between modules). Skips the calling test, with the script's reason, where the venv cannot be made.
 */
public final class OracleVenv {
    private OracleVenv() {
    }

    public static synchronized Path python() {
        Path root = Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
        Path script = root.resolve("scripts/oracle-venv.sh");
        try {
            Process process = new ProcessBuilder("bash", script.toString())
                    .redirectInput(ProcessBuilder.Redirect.from(new java.io.File("/dev/null"))).start();
            // The first build installs the wheels (torch among them: minutes on two cores); later ones check a stamp.
            boolean done = process.waitFor(15, TimeUnit.MINUTES);
            if (!done) {
                process.destroyForcibly();
            }
            Assumptions.assumeTrue(done, "scripts/oracle-venv.sh took longer than 15 minutes");
            String out = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            String err = new String(process.getErrorStream().readAllBytes(), StandardCharsets.UTF_8).strip();
            Assumptions.assumeTrue(process.exitValue() == 0 && Files.isExecutable(Path.of(out)), "no oracle venv: "
                    + (err.isEmpty() ? "scripts/oracle-venv.sh exited " + process.exitValue() : err));
            return Path.of(out);
        } catch (IOException e) {
            Assumptions.abort("no oracle venv: cannot run " + script + ": " + e.getMessage());
            throw new AssertionError(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            Assumptions.abort("interrupted while making the oracle venv");
            throw new AssertionError(e);
        }
    }
}
