package dev.crucible.api.io;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;

/**
 * Files that appear whole or not at all: content goes to a temporary sibling (same folder, so the rename stays
 * on one file system), is flushed to disk, and is renamed over the target.
 */
public final class AtomicFiles {

    private static final SecureRandom RANDOM = new SecureRandom();

    private AtomicFiles() {
    }

    /** Writes what {@code writer} produces to {@code target}; on any failure the target is left untouched. */
    public interface ChannelWriter {
        void writeTo(FileChannel channel) throws IOException;
    }

    /**
     * @throws WriteFailure when the machine refuses (a full disk, a read-only folder): one line naming {@code target}
     */
    public static void write(Path target, ChannelWriter writer) {
        Path temporary = null;
        try {
            temporary = createTemporarySibling(target);
            try (FileChannel channel = FileChannel.open(temporary, StandardOpenOption.WRITE)) {
                writer.writeTo(channel);
                channel.force(true);
            }
            Files.move(temporary, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            temporary = null;
        } catch (IOException e) {
            throw WriteFailure.of(target, e);
        } finally {
            deleteQuietly(temporary);
        }
    }

    /**
     * An empty, hidden file next to {@code target}. Created with mode 0666 so the umask decides, as for any
     * ordinary file; {@link Files#createTempFile} would make exported weights readable by their owner only.
     */
    public static Path createTemporarySibling(Path target) throws IOException {
        Path directory = target.toAbsolutePath().getParent();
        for (int attempt = 0; ; attempt++) {
            byte[] suffix = new byte[6];
            RANDOM.nextBytes(suffix);
            Path candidate = directory.resolve(
                    "." + target.getFileName() + "." + HexFormat.of().formatHex(suffix) + ".tmp");
            try {
                try {
                    return Files.createFile(candidate,
                            PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-rw-rw-")));
                } catch (UnsupportedOperationException notPosix) {
                    return Files.createFile(candidate);
                }
            } catch (FileAlreadyExistsException e) {
                if (attempt >= 10) {
                    throw e;
                }
            }
        }
    }

    /** Writes {@code bytes} to {@code target}, whole or not at all. */
    public static void write(Path target, byte[] bytes) {
        write(target, channel -> {
            ByteBuffer buffer = ByteBuffer.wrap(bytes);
            while (buffer.hasRemaining()) {
                channel.write(buffer);
            }
        });
    }

    /** Best-effort cleanup after a failure: the original failure matters more than a leftover file. */
    public static void deleteQuietly(Path path) {
        if (path == null) {
            return;
        }
        try {
            Files.deleteIfExists(path);
        } catch (IOException ignored) {
            // Reported by the caller's own exception already.
        }
    }
}
