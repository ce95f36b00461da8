package dev.crucible.api.io;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;

/**
 * Writes a whole output folder (an export, a new model) beside its target and moves it into place only when
 * complete, so a failure or a kill never leaves a half-written folder under the user's name. An existing target
 * is refused unless the user passed {@code --force}; then it is replaced only after the new one is complete.
 */
public final class StagedFolder implements AutoCloseable {
    private final Path target;
    private final Path staging;
    private final boolean force;
    private boolean committed;

    private StagedFolder(Path target, Path staging, boolean force) {
        this.target = target;
        this.staging = staging;
        this.force = force;
    }

    /** Checks the target up front (so a mistake costs nothing) and creates the staging folder beside it. */
    public static StagedFolder begin(Path target, boolean force) {
        Path absolute = target.toAbsolutePath().normalize();
        if (Files.exists(absolute) && !force) {
            throw new UserInputException(target + " already exists; pass --force to replace it");
        }
        if (Files.exists(absolute) && !Files.isDirectory(absolute)) {
            throw new UserInputException(target + " exists and is not a folder");
        }
        Path parent = absolute.getParent();
        try {
            Files.createDirectories(parent);
            Path staging = Files.createTempDirectory(parent, "." + absolute.getFileName() + ".partial-");
            return new StagedFolder(absolute, staging, force);
        } catch (IOException e) {
            throw new UserInputException("cannot write into " + parent + ": " + e.getMessage(), e);
        }
    }

    /** Where to write the files. */
    public Path path() {
        return staging;
    }

    /** Moves the finished folder into place (replacing the old one when forced). */
    public void commit() {
        try {
            if (Files.exists(target)) {
                if (!force) {
                    throw new UserInputException(target + " appeared while writing; pass --force to replace it");
                }
                Path old = Files.createTempDirectory(target.getParent(), "." + target.getFileName() + ".old-");
                Files.delete(old);
                Files.move(target, old, StandardCopyOption.ATOMIC_MOVE);
                move(staging, target);
                deleteRecursively(old);
            } else {
                move(staging, target);
            }
            committed = true;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot move " + staging + " to " + target, e);
        }
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to);
        }
    }

    /** Removes the staging folder unless committed: an aborted write leaves nothing behind. */
    @Override
    public void close() {
        if (!committed) {
            try {
                deleteRecursively(staging);
            } catch (IOException ignored) {
                // best effort: a hidden .partial folder is all that can remain
            }
        }
    }

    public static void deleteRecursively(Path root) throws IOException {
        if (!Files.exists(root)) {
            return;
        }
        Files.walkFileTree(root, new SimpleFileVisitor<>() {
            @Override
            public FileVisitResult visitFile(Path file, BasicFileAttributes attrs) throws IOException {
                Files.delete(file);
                return FileVisitResult.CONTINUE;
            }

            @Override
            public FileVisitResult postVisitDirectory(Path dir, IOException exc) throws IOException {
                Files.delete(dir);
                return FileVisitResult.CONTINUE;
            }
        });
    }
}
