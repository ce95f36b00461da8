package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.SegmentAllocator;
import java.lang.foreign.ValueLayout;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * One C struct of the PJRT C API, laid out the way a C compiler on x86-64 and aarch64 Linux lays it out: each
 * field at the next multiple of its own size. Argument structs begin with {@code size_t struct_size} and
 * {@code PJRT_Extension_Base* extension_start}; {@link #size()} is what the header's {@code PJRT_STRUCT_SIZE}
 * computes (the end of the last field, without tail padding), which is the number a plugin compares with the
 * {@code struct_size} we pass.
 *
 * <p>Fields are looked up by the header's names, so a layout reads like the header it was written from (read for
 * facts; nothing is generated from it) and a misspelt name fails on first use instead of writing to a wrong
 * offset.
 */
final class Struct {
    private final String name;
    private final Map<String, Field> fields;
    private final long size;

    private record Field(long offset, int width) { }

    private Struct(String name, Map<String, Field> fields, long size) {
        this.name = name;
        this.fields = fields;
        this.size = size;
    }

    /** An argument struct: {@code struct_size} and {@code extension_start} come first. */
    static Builder args(String name) {
        return new Builder(name).word("struct_size").word("extension_start");
    }

    /** A struct with no standard header (PJRT_Api itself is read through {@link PjrtApi}). */
    static Builder plain(String name) {
        return new Builder(name);
    }

    String name() {
        return name;
    }

    /** {@code PJRT_STRUCT_SIZE}: the end of the last field. */
    long size() {
        return size;
    }

    /** Bytes one element takes in an array of these structs (the size rounded up to 8). */
    long stride() {
        return (size + 7) & ~7L;
    }

    long offset(String field) {
        return field(field).offset;
    }

    /** A zeroed instance with {@code struct_size} filled in (when the struct has one). */
    MemorySegment allocate(SegmentAllocator allocator) {
        MemorySegment segment = allocator.allocate(stride(), 8);
        if (fields.containsKey("struct_size")) {
            segment.set(ValueLayout.JAVA_LONG, 0, size);
        }
        return segment;
    }

    /** A zeroed array of {@code count} instances, each with its {@code struct_size}. */
    MemorySegment allocateArray(SegmentAllocator allocator, int count) {
        MemorySegment array = allocator.allocate(stride() * Math.max(1, count), 8);
        if (fields.containsKey("struct_size")) {
            for (int i = 0; i < count; i++) {
                array.set(ValueLayout.JAVA_LONG, i * stride(), size);
            }
        }
        return array;
    }

    MemorySegment element(MemorySegment array, int index) {
        return array.asSlice(index * stride(), stride());
    }

    void set(MemorySegment s, String field, long value) {
        Field f = field(field);
        switch (f.width) {
            case 8 -> s.set(ValueLayout.JAVA_LONG, f.offset, value);
            case 4 -> s.set(ValueLayout.JAVA_INT, f.offset, Math.toIntExact(value));
            case 1 -> s.set(ValueLayout.JAVA_BYTE, f.offset, (byte) value);
            default -> throw new IllegalStateException(name + "." + field + " is " + f.width + " bytes wide");
        }
    }

    void set(MemorySegment s, String field, boolean value) {
        set(s, field, value ? 1 : 0);
    }

    void set(MemorySegment s, String field, MemorySegment address) {
        s.set(ValueLayout.ADDRESS, word(field), address);
    }

    void setFloat(MemorySegment s, String field, float value) {
        s.set(ValueLayout.JAVA_FLOAT, field(field).offset, value);
    }

    long getLong(MemorySegment s, String field) {
        Field f = field(field);
        return switch (f.width) {
            case 8 -> s.get(ValueLayout.JAVA_LONG, f.offset);
            case 4 -> s.get(ValueLayout.JAVA_INT, f.offset);
            case 1 -> s.get(ValueLayout.JAVA_BYTE, f.offset);
            default -> throw new IllegalStateException(name + "." + field + " is " + f.width + " bytes wide");
        };
    }

    int getInt(MemorySegment s, String field) {
        return Math.toIntExact(getLong(s, field));
    }

    boolean getBool(MemorySegment s, String field) {
        return getLong(s, field) != 0;
    }

    float getFloat(MemorySegment s, String field) {
        return s.get(ValueLayout.JAVA_FLOAT, field(field).offset);
    }

    MemorySegment getAddress(MemorySegment s, String field) {
        return s.get(ValueLayout.ADDRESS, word(field));
    }

    private long word(String field) {
        Field f = field(field);
        if (f.width != 8) {
            throw new IllegalStateException(name + "." + field + " is not a pointer");
        }
        return f.offset;
    }

    private Field field(String field) {
        Field f = fields.get(field);
        if (f == null) {
            throw new IllegalArgumentException(name + " has no field " + field);
        }
        return f;
    }

    /** Appends fields in header order; each lands at the next multiple of its width. */
    static final class Builder {
        private final String name;
        private final Map<String, Field> fields = new LinkedHashMap<>();
        private long end;

        private Builder(String name) {
            this.name = name;
        }

        /** A pointer, {@code size_t} or {@code int64_t}. */
        Builder word(String field) {
            return add(field, 8);
        }

        /** An {@code int}, {@code int32_t}, {@code float} or enum. */
        Builder int32(String field) {
            return add(field, 4);
        }

        Builder bool(String field) {
            return add(field, 1);
        }

        private Builder add(String field, int width) {
            long offset = (end + width - 1) / width * width;
            if (fields.put(field, new Field(offset, width)) != null) {
                throw new IllegalArgumentException(name + "." + field + " declared twice");
            }
            end = offset + width;
            return this;
        }

        Struct build() {
            return new Struct(name, Map.copyOf(fields), end);
        }
    }
}
