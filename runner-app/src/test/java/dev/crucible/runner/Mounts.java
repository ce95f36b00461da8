package dev.crucible.runner;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Assumptions;

/**
 * Real small and read-only file systems for fault-injection tests: a tmpfs mounted with a size or inode limit, or
 * remounted read-only, so that the kernel itself answers ENOSPC and EROFS — for root as well, where chmod stops
 * nothing. Mounting needs CAP_SYS_ADMIN (root on this project's machines); where it is refused the test is skipped
 * with that reason, and the simulated variants of the same faults (api's StagedFolderTest) still run.
 */
public final class Mounts implements AutoCloseable {
    private final Path point;

    private Mounts(Path point) {
        this.point = point;
    }

    /** A tmpfs at {@code point} (created if missing) with mount options such as {@code size=64k} or {@code nr_inodes=8}. */
    public static Mounts tmpfs(Path point, String options) throws IOException {
        Files.createDirectories(point);
        run(List.of("mount", "-t", "tmpfs", "-o", options, "crucible-test", point.toString()), true);
        return new Mounts(point);
    }

    public Path point() {
        return point;
    }

    /** Makes the mounted file system read-only, keeping what was written to it. */
    public void remountReadOnly() throws IOException {
        run(List.of("mount", "-o", "remount,ro", point.toString()), false);
    }

    @Override
    public void close() throws IOException {
        run(List.of("umount", "-l", point.toString()), false);
    }

    private static void run(List<String> command, boolean skipWhenRefused) throws IOException {
        List<String> all = new ArrayList<>(command);
        Process process;
        try {
            process = new ProcessBuilder(all).redirectErrorStream(true).start();
        } catch (IOException e) {
            Assumptions.abort("cannot run " + all.getFirst() + " (" + e.getMessage() + "), so no real file system for this fault");
            return;
        }
        try {
            if (!process.waitFor(30, TimeUnit.SECONDS)) {
                process.destroyForcibly();
                throw new IOException(String.join(" ", all) + " did not finish");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException(e);
        }
        String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8).strip();
        if (process.exitValue() != 0) {
            String why = String.join(" ", all) + " failed: " + output;
            if (skipWhenRefused) {
                Assumptions.abort(why + " (mounting needs root with CAP_SYS_ADMIN)");
            }
            throw new IOException(why);
        }
    }
}
