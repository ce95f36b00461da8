package dev.crucible.api.io;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.FileStore;
import java.nio.file.FileSystemException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Optional;

/**
 * Where a command will write, checked before it does anything expensive: a mistake found after an hour of
 * training or a study of 200 trials costs that hour. Failures are one line ({@link UserInputException} or
 * {@link WriteFailure}) naming the path and what it needed.
 */
public final class OutputLocation {
    private OutputLocation() {
    }

    /**
     * Checks that a new folder can be put at {@code target} (as {@link StagedFolder} will): it does not exist
     * unless {@code force}, its nearest existing ancestor is a folder this process may write, and that file system
     * has {@code bytesNeeded} free where it reports its space ({@code bytesNeeded <= 0}: the size is not known).
     * Creates nothing.
     */
    public static void checkNewFolder(Path target, boolean force, long bytesNeeded) {
        Path absolute = target.toAbsolutePath().normalize();
        if (Files.exists(absolute)) {
            if (!Files.isDirectory(absolute)) {
                throw new UserInputException(target + " exists and is not a folder");
            }
            if (!force) {
                throw new UserInputException(target + " already exists; pass --force to replace it, or choose another folder");
            }
        }
        Path existing = existingAncestor(absolute.getParent());
        checkWritableFolder(target, existing);
        checkSpace(target, existing, bytesNeeded);
    }

    /**
     * Checks that a new file can be put at {@code target} (as {@link AtomicFiles} will): it is not a folder, it does
     * not exist unless {@code force}, its nearest existing ancestor is a folder this process may write, and that file
     * system has {@code bytesNeeded} free ({@code bytesNeeded <= 0}: the size is not known). Creates nothing.
     */
    public static void checkNewFile(Path target, boolean force, long bytesNeeded) {
        Path absolute = target.toAbsolutePath().normalize();
        if (Files.isDirectory(absolute)) {
            throw new UserInputException(target + " is a folder; give a file name");
        }
        if (Files.exists(absolute) && !force) {
            throw new UserInputException(target + " already exists; pass --force to replace it, or choose another file");
        }
        Path existing = existingAncestor(absolute.getParent());
        checkWritableFolder(target, existing);
        checkSpace(target, existing, bytesNeeded);
    }

    /** {@code existing}'s file system has {@code bytesNeeded} free for {@code target}, when both are known. */
    private static void checkSpace(Path target, Path existing, long bytesNeeded) {
        if (bytesNeeded > 0) {
            usableSpace(existing).filter(free -> free < bytesNeeded).ifPresent(free -> {
                throw new UserInputException("cannot write " + target + ": not enough space (it needs " + bytes(bytesNeeded)
                        + ", " + existing + " has " + bytes(free) + " free); free some space or choose another folder");
            });
        }
    }

    /**
     * Creates {@code folder} (and its parents) for files that are written in place, such as a study's journal,
     * and checks that this process may write there.
     */
    public static Path createFolder(Path folder) {
        Path existing = existingAncestor(folder.toAbsolutePath().normalize());
        if (!Files.isDirectory(existing)) {
            throw new UserInputException(existing.equals(folder.toAbsolutePath().normalize())
                    ? folder + " is a file; give a folder"
                    : "cannot write " + folder + ": " + existing + " is a file, not a folder");
        }
        checkWritableFolder(folder, existing);
        try {
            Files.createDirectories(folder);
        } catch (FileAlreadyExistsException e) {
            throw new UserInputException(folder + " is a file; give a folder");
        } catch (IOException e) {
            throw WriteFailure.of(folder, e);
        }
        return folder;
    }

    /** Free space for this process on the file system of {@code path}'s nearest existing folder, when it reports one. */
    public static Optional<Long> usableSpace(Path path) {
        try {
            FileStore store = Files.getFileStore(existingAncestor(path.toAbsolutePath().normalize()));
            // Some file systems (and /proc-like ones) report no size at all: then nothing can be said.
            return store.getTotalSpace() > 0 ? Optional.of(store.getUsableSpace()) : Optional.empty();
        } catch (IOException e) {
            return Optional.empty();
        }
    }

    /** A size as people read it, in decimal units as file managers and the Hugging Face hub show them: 3.4 MB. */
    public static String bytes(long bytes) {
        if (bytes < 1000) {
            return bytes + " B";
        }
        String[] units = {"kB", "MB", "GB", "TB", "PB", "EB"};
        double value = bytes;
        int unit = -1;
        while (value >= 999.95 && unit < units.length - 1) {
            value /= 1000;
            unit++;
        }
        return String.format(Locale.ROOT, value < 10 ? "%.1f %s" : "%.0f %s", value, units[unit]);
    }

    private static void checkWritableFolder(Path target, Path existing) {
        if (!Files.isDirectory(existing)) {
            throw new UserInputException("cannot write " + target + ": " + existing + " is a file, not a folder");
        }
        // access(2): false for root too on a read-only mount; where it says yes, the writes still go through
        // WriteFailure, which reports whatever the file system refuses later.
        if (!Files.isWritable(existing)) {
            String reason = readOnly(existing) ? "Read-only file system" : "Permission denied";
            throw WriteFailure.of(target, new FileSystemException(existing.toString(), null, reason));
        }
    }

    private static boolean readOnly(Path folder) {
        try {
            return Files.getFileStore(folder).isReadOnly();
        } catch (IOException e) {
            return false;
        }
    }

    private static Path existingAncestor(Path path) {
        Path p = path;
        while (p.getParent() != null && !Files.exists(p)) {
            p = p.getParent();
        }
        return p;
    }
}
