package dev.crucible.api.io;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileSystemException;
import java.nio.file.FileVisitResult;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.SimpleFileVisitor;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.BasicFileAttributes;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Writes a whole output folder (an export, a new model, an adapter) beside its target and moves it into place only
 * when complete, so a failure or a kill never leaves a half-written folder under the user's name. An existing
 * target is refused unless the user passed {@code --force}; then it is replaced only after the new one is complete,
 * so a failed write keeps it intact.
 *
 * <p>The location is checked before anything is written ({@link OutputLocation#checkNewFolder}); a failure while
 * writing (a full disk, a read-only folder) becomes one {@link WriteFailure} that names the folder the user gave
 * and the size the whole folder needs. Folders are created with the user's umask, like {@code mkdir}.
 */
public final class StagedFolder {
    private static final SecureRandom RANDOM = new SecureRandom();

    /** What goes into the folder; it writes into {@code folder}, the staging folder, which it may fill as it likes. */
    @FunctionalInterface
    public interface Contents {
        void writeInto(Path folder) throws IOException;
    }

    private StagedFolder() {
    }

    /**
     * Checks the location, writes {@code contents} into a staging folder beside {@code target} and moves it into
     * place. On any failure the staging folder is removed and an existing {@code target} is left as it was.
     *
     * @param bytesNeeded what the finished folder takes on disk, when known (0 = unknown): checked against the free
     *                    space first, and named when the disk fills up anyway
     */
    public static void write(Path target, boolean force, long bytesNeeded, Contents contents) {
        OutputLocation.checkNewFolder(target, force, bytesNeeded);
        Path absolute = target.toAbsolutePath().normalize();
        Path staging = createSibling(target, absolute, ".partial-");
        WriteFailure failure = null;
        boolean committed = false;
        try {
            contents.writeInto(staging);
            commit(target, absolute, staging, force);
            committed = true;
        } catch (WriteFailure e) {
            failure = e;
        } catch (IOException e) {
            Path file = e instanceof FileSystemException fs && fs.getFile() != null ? Path.of(fs.getFile()) : staging;
            RuntimeException translated = WriteFailure.of(file, e);
            if (!(translated instanceof WriteFailure writeFailure)) {
                throw translated;
            }
            failure = writeFailure;
        } finally {
            if (!committed) {
                deleteQuietly(staging);
            }
        }
        if (failure != null) {
            // Said after the staging folder is gone, so the free space it names is what the user has now.
            throw failure.restated(shown(target, staging, failure.path()), failure.outOfSpace() ? bytesNeeded : 0);
        }
    }

    /** A hidden, empty folder beside the target, made with the umask's permissions (createTempDirectory makes 0700). */
    private static Path createSibling(Path target, Path absolute, String kind) {
        Path parent = absolute.getParent();
        try {
            Files.createDirectories(parent);
            for (int attempt = 0; ; attempt++) {
                byte[] suffix = new byte[6];
                RANDOM.nextBytes(suffix);
                Path candidate = parent.resolve("." + absolute.getFileName() + kind + HexFormat.of().formatHex(suffix));
                try {
                    return Files.createDirectory(candidate);
                } catch (FileAlreadyExistsException e) {
                    if (attempt >= 10) {
                        throw e;
                    }
                }
            }
        } catch (IOException e) {
            throw WriteFailure.of(target, e);
        }
    }

    /** Moves the finished folder into place; a forced replacement moves the old one aside first and deletes it last. */
    private static void commit(Path target, Path absolute, Path staging, boolean force) throws IOException {
        if (!Files.exists(absolute)) {
            move(staging, absolute);
            return;
        }
        if (!force) {
            throw new UserInputException(target + " appeared while writing; pass --force to replace it");
        }
        Path old = createSibling(target, absolute, ".old-");
        Files.delete(old);
        Files.move(absolute, old, StandardCopyOption.ATOMIC_MOVE);
        try {
            move(staging, absolute);
        } catch (IOException e) {
            Files.move(old, absolute, StandardCopyOption.ATOMIC_MOVE);
            throw e;
        }
        deleteQuietly(old);
    }

    /** The file a failure names, as the user knows it: inside the target rather than inside the hidden staging folder. */
    private static Path shown(Path target, Path staging, Path file) {
        Path absolute = file.toAbsolutePath().normalize();
        return absolute.startsWith(staging) ? target.resolve(staging.relativize(absolute)) : target;
    }

    private static void move(Path from, Path to) throws IOException {
        try {
            Files.move(from, to, StandardCopyOption.ATOMIC_MOVE);
        } catch (AtomicMoveNotSupportedException e) {
            Files.move(from, to);
        }
    }

    /** Best effort: the failure being reported matters more than a hidden leftover folder. */
    private static void deleteQuietly(Path folder) {
        try {
            deleteRecursively(folder);
        } catch (IOException ignored) {
            // A hidden .partial or .old folder is all that can remain.
        }
    }

    private static void deleteRecursively(Path root) throws IOException {
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
