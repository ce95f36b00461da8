package dev.crucible.runner.finetune;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * A Python venv of test oracles under the repository's {@code target/}, made once from the local wheel mirror
 * (never the internet) and reused while its package list is unchanged. Where it cannot be made (no python3, no
 * mirror, a failed install) the calling test is skipped with the reason: oracles are never a runtime dependency.
 */
final class OracleVenv {
    private static final String INDEX = "/opt/pypi/simple";
    private static final String EXTRA_INDEX = "/opt/pypi-more/simple";
    private static final String WHEELS = "/opt/wheels";

    private OracleVenv() {
    }

    /** The venv's python, with {@code packages} installed; skips the test when that cannot be had. */
    static synchronized Path python(String name, List<String> packages) {
        Path root = Path.of(System.getProperty("crucible.repo.root", "..")).toAbsolutePath().normalize();
        Path venv = root.resolve("target").resolve(name);
        Path python = venv.resolve("bin").resolve("python");
        Path marker = venv.resolve(".crucible-packages");
        String wanted = String.join(" ", packages);
        try {
            if (Files.isExecutable(python) && Files.isRegularFile(marker)
                    && Files.readString(marker, StandardCharsets.UTF_8).equals(wanted)) {
                return python;
            }
            Assumptions.assumeTrue(Files.isDirectory(Path.of(INDEX)), "no local wheel mirror at " + INDEX
                    + ", so no " + wanted + " oracle");
            Files.createDirectories(venv.getParent());
            Path log = venv.getParent().resolve(name + ".log");
            run(log, "python3", "-m", "venv", "--clear", venv.toString());
            List<String> pip = new ArrayList<>(List.of(venv.resolve("bin").resolve("pip").toString(), "install",
                    "--no-input", "--disable-pip-version-check", "--index-url", "file://" + INDEX,
                    "--extra-index-url", "file://" + EXTRA_INDEX, "--find-links", WHEELS));
            pip.addAll(packages);
            run(log, pip.toArray(String[]::new));
            Files.writeString(marker, wanted, StandardCharsets.UTF_8);
            return python;
        } catch (IOException e) {
            Assumptions.abort("cannot make the " + name + " venv: " + e.getMessage());
            throw new AssertionError(e);
        }
    }

    private static void run(Path log, String... command) throws IOException {
        Process process;
        try {
            process = new ProcessBuilder(command).redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile())).start();
        } catch (IOException e) {
            Assumptions.abort(command[0] + " cannot be run (" + e.getMessage() + "), so no Python oracle");
            throw e;
        }
        try {
            boolean done = process.waitFor(15, TimeUnit.MINUTES);
            if (!done) {
                process.destroyForcibly();
            }
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            Assumptions.assumeTrue(done && process.exitValue() == 0, String.join(" ", command).substring(0,
                    Math.min(80, String.join(" ", command).length())) + " failed: "
                    + (lines.isEmpty() ? "" : lines.getLast()) + " (see " + log + ")");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            Assumptions.abort("interrupted while making a Python venv");
        }
    }
}
