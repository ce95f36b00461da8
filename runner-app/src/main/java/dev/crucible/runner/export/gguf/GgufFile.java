package dev.crucible.runner.export.gguf;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * The GGUF container, version 3, as ggml's gguf.c reads it (little-endian): the magic {@code GGUF}, the version, the
 * tensor and metadata counts, the metadata (typed key/value pairs), each tensor's name, dimensions (innermost
 * first), ggml type and data offset, then the data section at {@link #ALIGNMENT}, each tensor starting on a multiple
 * of it. Tensors are encoded one at a time while the file is written, so a model never sits in memory whole.
 */
final class GgufFile {
    static final int ALIGNMENT = 32;
    private static final int VERSION = 3;

    /** A metadata value with its GGUF type. */
    sealed interface Value {
        record U32(long value) implements Value { }
        record I32(int value) implements Value { }
        record F32(float value) implements Value { }
        record Bool(boolean value) implements Value { }
        record Str(String value) implements Value { }
        record Strings(List<String> values) implements Value { }
        record I32s(int[] values) implements Value { }
        record F32s(float[] values) implements Value { }
    }

    /** One tensor: its name, dimensions innermost first (ggml's {@code ne}), ggml type, bytes, and how to make them. */
    record Tensor(String name, long[] dims, int ggmlType, long bytes, Encoder encoder) {
        Tensor {
            Objects.requireNonNull(name, "name is null");
            dims = dims.clone();
        }
    }

    /** The tensor's bytes, made when the file reaches them. */
    interface Encoder {
        byte[] encode();
    }

    private final Map<String, Value> metadata = new LinkedHashMap<>();
    private final List<Tensor> tensors = new ArrayList<>();

    void put(String key, Value value) {
        metadata.put(key, value);
    }

    void add(Tensor tensor) {
        tensors.add(tensor);
    }

    List<Tensor> tensors() {
        return tensors;
    }

    /** Bytes of the whole file. */
    long size() {
        long header = header().remaining();
        long data = 0;
        for (Tensor tensor : tensors) {
            data = align(data) + tensor.bytes();
        }
        return align(header) + data;
    }

    void writeTo(FileChannel channel) throws IOException {
        ByteBuffer header = header();
        long headerBytes = header.remaining();
        writeFully(channel, header);
        writeFully(channel, ByteBuffer.allocate((int) (align(headerBytes) - headerBytes)));
        long at = 0;
        for (Tensor tensor : tensors) {
            long start = align(at);
            writeFully(channel, ByteBuffer.allocate((int) (start - at)));
            byte[] bytes = tensor.encoder().encode();
            if (bytes.length != tensor.bytes()) {
                throw new IllegalStateException(tensor.name() + ": " + bytes.length + " bytes, declared " + tensor.bytes());
            }
            writeFully(channel, ByteBuffer.wrap(bytes));
            at = start + bytes.length;
        }
    }

    private static void writeFully(FileChannel channel, ByteBuffer buffer) throws IOException {
        while (buffer.hasRemaining()) {
            channel.write(buffer);
        }
    }

    private static long align(long offset) {
        return (offset + ALIGNMENT - 1) / ALIGNMENT * ALIGNMENT;
    }

    private ByteBuffer header() {
        Out out = new Out();
        out.bytes("GGUF".getBytes(StandardCharsets.US_ASCII));
        out.u32(VERSION);
        out.u64(tensors.size());
        out.u64(metadata.size());
        for (Map.Entry<String, Value> entry : metadata.entrySet()) {
            out.string(entry.getKey());
            switch (entry.getValue()) {
                case Value.U32 v -> { out.u32(Type.UINT32); out.u32(v.value()); }
                case Value.I32 v -> { out.u32(Type.INT32); out.u32(v.value()); }
                case Value.F32 v -> { out.u32(Type.FLOAT32); out.f32(v.value()); }
                case Value.Bool v -> { out.u32(Type.BOOL); out.u8(v.value() ? 1 : 0); }
                case Value.Str v -> { out.u32(Type.STRING); out.string(v.value()); }
                case Value.Strings v -> {
                    out.u32(Type.ARRAY);
                    out.u32(Type.STRING);
                    out.u64(v.values().size());
                    v.values().forEach(out::string);
                }
                case Value.I32s v -> {
                    out.u32(Type.ARRAY);
                    out.u32(Type.INT32);
                    out.u64(v.values().length);
                    for (int x : v.values()) {
                        out.u32(x);
                    }
                }
                case Value.F32s v -> {
                    out.u32(Type.ARRAY);
                    out.u32(Type.FLOAT32);
                    out.u64(v.values().length);
                    for (float x : v.values()) {
                        out.f32(x);
                    }
                }
            }
        }
        long offset = 0;
        for (Tensor tensor : tensors) {
            out.string(tensor.name());
            out.u32(tensor.dims().length);
            for (long dim : tensor.dims()) {
                out.u64(dim);
            }
            out.u32(tensor.ggmlType());
            offset = align(offset);
            out.u64(offset);
            offset += tensor.bytes();
        }
        return out.buffer();
    }

    /** gguf_type numbers. */
    private static final class Type {
        static final int UINT32 = 4;
        static final int INT32 = 5;
        static final int FLOAT32 = 6;
        static final int BOOL = 7;
        static final int STRING = 8;
        static final int ARRAY = 9;
    }

    /** A growing little-endian buffer. */
    private static final class Out {
        private ByteBuffer buffer = ByteBuffer.allocate(1 << 16).order(ByteOrder.LITTLE_ENDIAN);

        private void room(int bytes) {
            if (buffer.remaining() < bytes) {
                ByteBuffer bigger = ByteBuffer.allocate(Math.max(buffer.capacity() * 2, buffer.position() + bytes))
                        .order(ByteOrder.LITTLE_ENDIAN);
                buffer.flip();
                bigger.put(buffer);
                buffer = bigger;
            }
        }

        void u8(int value) {
            room(1);
            buffer.put((byte) value);
        }

        void u32(long value) {
            room(4);
            buffer.putInt((int) value);
        }

        void u64(long value) {
            room(8);
            buffer.putLong(value);
        }

        void f32(float value) {
            room(4);
            buffer.putFloat(value);
        }

        void bytes(byte[] bytes) {
            room(bytes.length);
            buffer.put(bytes);
        }

        void string(String text) {
            byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
            u64(utf8.length);
            bytes(utf8);
        }

        ByteBuffer buffer() {
            ByteBuffer copy = buffer.duplicate();
            copy.flip();
            return copy;
        }
    }
}
