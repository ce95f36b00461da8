package dev.crucible.api.io;

import dev.crucible.api.tensor.HostTensor;

import dev.crucible.api.UserInputException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Map;
import java.util.Objects;

/**
 * One safetensors file, memory-mapped read-only. The header is checked completely on open (see
 * {@link SafetensorsHeader}), so every {@link #tensor(String)} afterwards is a bounds-safe view of the mapping.
 * Files larger than 2 GiB are fine: the whole file is one {@link MemorySegment}.
 */
public final class SafetensorsFile implements AutoCloseable {

    private final Path path;
    private final Arena arena;
    private final boolean ownsArena;
    private final SafetensorsHeader header;
    private final MemorySegment data;

    private SafetensorsFile(Path path, Arena arena, boolean ownsArena, SafetensorsHeader header,
                            MemorySegment data) {
        this.path = path;
        this.arena = arena;
        this.ownsArena = ownsArena;
        this.header = header;
        this.data = data;
    }

    /** Opens and checks {@code path}; closing the result unmaps it. */
    public static SafetensorsFile open(Path path) {
        Arena arena = Arena.ofShared();
        try {
            return open(path, arena, true);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    /**
     * Opens {@code path} with its mapping owned by {@code arena}: closing the result leaves the mapping alone,
     * closing the arena unmaps it. For callers that open many files with one lifetime (a sharded checkpoint).
     */
    public static SafetensorsFile open(Path path, Arena arena) {
        return open(path, arena, false);
    }

    private static SafetensorsFile open(Path path, Arena arena, boolean ownsArena) {
        Objects.requireNonNull(path, "path is null");
        Objects.requireNonNull(arena, "arena is null");
        String label = path.toString();
        if (Files.isDirectory(path)) {
            throw new UserInputException(label + " is a folder, not a safetensors file");
        }
        try (FileChannel channel = FileChannel.open(path, StandardOpenOption.READ)) {
            long size = channel.size();
            if (size < 8) {
                throw SafetensorsHeader.bad(label, "the file has " + size
                        + " bytes, fewer than the 8-byte header length");
            }
            long headerLength = readHeaderLength(channel);
            if (headerLength < 0 || headerLength > SafetensorsHeader.MAX_HEADER_BYTES) {
                throw SafetensorsHeader.bad(label, "header length " + Long.toUnsignedString(headerLength)
                        + " exceeds the " + SafetensorsHeader.MAX_HEADER_BYTES + "-byte limit");
            }
            if (headerLength > size - 8) {
                throw SafetensorsHeader.bad(label, "header length " + headerLength
                        + " is larger than the file (" + size + " bytes; truncated download?)");
            }
            byte[] headerBytes = readFully(channel, 8, (int) headerLength);
            long dataOffset = 8 + headerLength;
            SafetensorsHeader header = SafetensorsHeader.parse(label, headerBytes, size - dataOffset);
            MemorySegment whole = channel.map(FileChannel.MapMode.READ_ONLY, 0, size, arena);
            return new SafetensorsFile(path, arena, ownsArena, header, whole.asSlice(dataOffset).asReadOnly());
        } catch (NoSuchFileException e) {
            throw new UserInputException(label + ": file not found");
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read " + label, e);
        }
    }

    private static long readHeaderLength(FileChannel channel) throws IOException {
        ByteBuffer buffer = ByteBuffer.wrap(readFully(channel, 0, 8)).order(ByteOrder.LITTLE_ENDIAN);
        return buffer.getLong();
    }

    private static byte[] readFully(FileChannel channel, long position, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining()) {
            int read = channel.read(buffer, position + buffer.position());
            if (read < 0) {
                throw new IOException("unexpected end of file");
            }
        }
        return buffer.array();
    }

    public Path path() {
        return path;
    }

    /** Every tensor, in the order of the header. */
    public Map<String, TensorInfo> tensors() {
        return header.tensors();
    }

    /** The {@code __metadata__} strings, empty when the file has none. */
    public Map<String, String> metadata() {
        return header.metadata();
    }

    public boolean contains(String name) {
        return header.tensors().containsKey(name);
    }

    /** The tensor called {@code name}, a read-only view into the mapping; a user error when absent. */
    public HostTensor tensor(String name) {
        TensorInfo info = header.tensors().get(name);
        if (info == null) {
            throw new UserInputException(path + ": no tensor named " + SafetensorsHeader.quote(name));
        }
        if (!arena.scope().isAlive()) {
            throw new IllegalStateException(path + " is closed");
        }
        return new HostTensor(info.name(), info.dtype(), info.shape(),
                data.asSlice(info.dataStart(), info.byteLength()));
    }

    @Override
    public void close() {
        if (ownsArena && arena.scope().isAlive()) {
            arena.close();
        }
    }

    @Override
    public String toString() {
        return "SafetensorsFile[" + path + ", " + header.tensors().size() + " tensors]";
    }
}
