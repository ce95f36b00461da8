package dev.crucible.api.io;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.AccessDeniedException;
import java.nio.file.FileSystemException;
import java.nio.file.NoSuchFileException;
import java.nio.file.NotDirectoryException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Optional;

/**
 * Writing an output failed because of the machine, not because of a bug: a full disk, a read-only or foreign
 * folder, a failing device. The runner prints the message as one line and exits with status 2, like any
 * {@link UserInputException}: it names the path, the reason and what was needed.
 *
 * <p>Only failures the operating system attributes to the environment are translated ({@link #of}); anything else
 * (a name clash among our own files, a closed channel) is ours and stays an {@link UncheckedIOException} with its
 * stack trace, so that a bug is not dressed up as the user's problem.
 */
public final class WriteFailure extends UserInputException {

    /** The machine's reasons, as the JDK reports them on Linux and macOS (strerror texts), and what each asks of the user. */
    private enum Cause {
        NO_SPACE("no space left on device", "free some space or choose another folder"),
        QUOTA("disk quota exceeded", "free some space or choose another folder"),
        READ_ONLY("read-only file system", "choose a folder on a writable file system"),
        PERMISSION("permission denied", "it needs write permission there; choose a folder you can write to"),
        NOT_PERMITTED("operation not permitted", "choose a folder you can write to"),
        NOT_A_FOLDER("not a directory", "a part of the path is a file, not a folder"),
        NO_SUCH_FOLDER("no such file or directory", "a folder of the path disappeared while writing"),
        IO_ERROR("input/output error", "the device reported an error; check the disk"),
        TOO_LARGE("file too large", "the file system or a limit (ulimit -f) does not allow files this large"),
        NAME_TOO_LONG("file name too long", "choose a shorter path");

        private final String text;
        private final String advice;

        Cause(String text, String advice) {
            this.text = text;
            this.advice = advice;
        }
    }

    private final Path path;
    private final Cause cause;
    private final String detail;

    private WriteFailure(Path path, Cause cause, String detail, IOException exception) {
        super("cannot write " + path + ": " + cause.text + "; " + detail, exception);
        this.path = path;
        this.cause = cause;
        this.detail = detail;
    }

    /**
     * The one-line failure for writing {@code path}, or, when the operating system does not blame the
     * environment, an {@link UncheckedIOException} carrying {@code e} (a bug of ours, reported with its trace).
     */
    public static RuntimeException of(Path path, IOException e) {
        return causeOf(e).<RuntimeException>map(cause -> new WriteFailure(path, cause, advice(cause, path, 0), e))
                .orElseGet(() -> new UncheckedIOException("cannot write " + path, e));
    }

    /** The path the failure names. */
    public Path path() {
        return path;
    }

    /** The same failure with what it means for the user's work, e.g. what is kept and how to go on. */
    public WriteFailure with(String consequence) {
        return new WriteFailure(path, cause, detail + "; " + consequence, (IOException) getCause());
    }

    /** True when the file system ran out of space (or quota): the case where the size needed is worth saying. */
    public boolean outOfSpace() {
        return cause == Cause.NO_SPACE || cause == Cause.QUOTA;
    }

    /**
     * The same failure told about {@code shown} (the folder the user named rather than the hidden staging folder
     * it was written in), adding what the whole output needs when that is known ({@code bytesNeeded > 0}).
     */
    WriteFailure restated(Path shown, long bytesNeeded) {
        return new WriteFailure(shown, cause, advice(cause, shown, bytesNeeded), (IOException) getCause());
    }

    private static String advice(Cause cause, Path path, long bytesNeeded) {
        if (cause != Cause.NO_SPACE && cause != Cause.QUOTA) {
            return cause.advice;
        }
        Optional<Long> free = OutputLocation.usableSpace(path);
        if (bytesNeeded > 0 && free.isPresent() && free.get() >= bytesNeeded) {
            // The bytes are there, so what ran out is the file system's room for files (inodes) or the user's quota.
            return "it needs " + OutputLocation.bytes(bytesNeeded) + " and " + OutputLocation.bytes(free.get())
                    + " are free, so the file system is out of inodes or quota; " + cause.advice;
        }
        List<String> sizes = new ArrayList<>();
        if (bytesNeeded > 0) {
            sizes.add("it needs " + OutputLocation.bytes(bytesNeeded));
        }
        free.ifPresent(bytes -> sizes.add(OutputLocation.bytes(bytes) + " free"));
        return (sizes.isEmpty() ? "" : String.join(", ", sizes) + "; ") + cause.advice;
    }

    private static Optional<Cause> causeOf(IOException e) {
        if (e instanceof AccessDeniedException) {
            return Optional.of(Cause.PERMISSION);
        }
        if (e instanceof NotDirectoryException) {
            return Optional.of(Cause.NOT_A_FOLDER);
        }
        if (e instanceof NoSuchFileException) {
            return Optional.of(Cause.NO_SUCH_FOLDER);
        }
        // FileSystemException keeps the OS's text in reason(); plain IOExceptions (a failed write(2)) and
        // FileNotFoundException ("path (Read-only file system)") carry it in the message.
        String text = e instanceof FileSystemException fs && fs.getReason() != null ? fs.getReason() : e.getMessage();
        if (text == null) {
            return Optional.empty();
        }
        String lower = text.toLowerCase(Locale.ROOT);
        for (Cause cause : Cause.values()) {
            if (lower.contains(cause.text)) {
                return Optional.of(cause);
            }
        }
        return Optional.empty();
    }
}
