package dev.crucible.api.io;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

/** Hand-built safetensors bytes, written without {@link SafetensorsWriter} so reader tests stand alone. */
final class TestFiles {
    private TestFiles() {
    }

    static Path write(Path file, String headerJson, byte[] data) {
        return write(file, headerJson.getBytes(StandardCharsets.UTF_8), data);
    }

    static Path write(Path file, byte[] header, byte[] data) {
        ByteBuffer buffer = ByteBuffer.allocate(8 + header.length + data.length).order(ByteOrder.LITTLE_ENDIAN);
        buffer.putLong(header.length).put(header).put(data);
        try {
            Files.write(file, buffer.array());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return file;
    }

    static byte[] floatsLe(float... values) {
        ByteBuffer buffer = ByteBuffer.allocate(values.length * 4).order(ByteOrder.LITTLE_ENDIAN);
        for (float value : values) {
            buffer.putFloat(value);
        }
        return buffer.array();
    }

    static byte[] shortsLe(int... values) {
        ByteBuffer buffer = ByteBuffer.allocate(values.length * 2).order(ByteOrder.LITTLE_ENDIAN);
        for (int value : values) {
            buffer.putShort((short) value);
        }
        return buffer.array();
    }

    static Path fixture(String... parts) {
        return Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures")
                .resolve(String.join("/", parts)).toAbsolutePath().normalize();
    }
}
