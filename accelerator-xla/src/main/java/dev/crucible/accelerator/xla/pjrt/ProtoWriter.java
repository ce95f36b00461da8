package dev.crucible.accelerator.xla.pjrt;

import java.io.ByteArrayOutputStream;

/**
 * The protobuf wire format for the few scalar and nested fields {@link CompileOptions} writes: varints and
 * length-delimited fields, nothing else. protobuf-java's CodedOutputStream would do the same in a 1.8 MB jar this
 * plugin would have to bundle, and without XLA's generated classes (no protoc here) the field numbers would still be
 * written by hand; what matters, the bytes, is checked against jaxlib's own parser in the tests.
 */
final class ProtoWriter {
    private static final int VARINT = 0;
    private static final int LENGTH_DELIMITED = 2;

    private final ByteArrayOutputStream out = new ByteArrayOutputStream();

    ProtoWriter int64(int field, long value) {
        tag(field, VARINT);
        varint(value);
        return this;
    }

    ProtoWriter bool(int field, boolean value) {
        return int64(field, value ? 1 : 0);
    }

    ProtoWriter message(int field, ProtoWriter message) {
        byte[] bytes = message.toByteArray();
        tag(field, LENGTH_DELIMITED);
        varint(bytes.length);
        out.writeBytes(bytes);
        return this;
    }

    /** A packed repeated integer field (proto3's default encoding for repeated scalars). */
    ProtoWriter packed(int field, long... values) {
        ProtoWriter body = new ProtoWriter();
        for (long value : values) {
            body.varint(value);
        }
        byte[] bytes = body.toByteArray();
        tag(field, LENGTH_DELIMITED);
        varint(bytes.length);
        out.writeBytes(bytes);
        return this;
    }

    byte[] toByteArray() {
        return out.toByteArray();
    }

    private void tag(int field, int wireType) {
        varint(((long) field << 3) | wireType);
    }

    /** Negative values take ten bytes, as protobuf encodes int64. */
    private void varint(long value) {
        while ((value & ~0x7FL) != 0) {
            out.write((int) ((value & 0x7F) | 0x80));
            value >>>= 7;
        }
        out.write((int) value);
    }
}
