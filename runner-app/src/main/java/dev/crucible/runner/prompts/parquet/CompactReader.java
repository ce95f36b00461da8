package dev.crucible.runner.prompts.parquet;

import java.nio.charset.StandardCharsets;

/**
 * A bounds-checked reader of the Thrift compact protocol, the encoding of Parquet's footer and page headers.
 * Every length is checked against the bytes that remain before anything is allocated, and nesting is limited,
 * so damaged input ends in a {@link ParquetException}, never in a huge array or a stack overflow.
 */
final class CompactReader {

    static final int BOOLEAN_TRUE = 1;
    static final int BOOLEAN_FALSE = 2;
    static final int BYTE = 3;
    static final int I16 = 4;
    static final int I32 = 5;
    static final int I64 = 6;
    static final int DOUBLE = 7;
    static final int BINARY = 8;
    static final int LIST = 9;
    static final int SET = 10;
    static final int MAP = 11;
    static final int STRUCT = 12;

    private static final int MAX_DEPTH = 32;

    private final byte[] bytes;
    private final int end;
    private int position;
    private final int[] lastFieldIds = new int[MAX_DEPTH + 1];
    private int depth;

    CompactReader(byte[] bytes, int offset, int end) {
        this.bytes = bytes;
        this.position = offset;
        this.end = end;
    }

    int position() {
        return position;
    }

    /** A field header: its id and compact type, or type 0 at the struct's end. */
    record Field(int id, int type) {
        boolean isStop() {
            return type == 0;
        }

        boolean booleanValue() {
            return type == BOOLEAN_TRUE;
        }
    }

    void beginStruct() throws ParquetException {
        if (depth == MAX_DEPTH) {
            throw new ParquetException("metadata nested deeper than " + MAX_DEPTH + " levels");
        }
        lastFieldIds[++depth] = 0;
    }

    void endStruct() {
        depth--;
    }

    Field readField() throws ParquetException {
        int header = readByte() & 0xFF;
        int type = header & 0x0F;
        if (type == 0) {
            return new Field(0, 0);
        }
        int delta = header >>> 4;
        int id = delta == 0 ? (int) zigzag(readVarint(3)) : lastFieldIds[depth] + delta;
        lastFieldIds[depth] = id;
        return new Field(id, type);
    }

    int readI32() throws ParquetException {
        return (int) zigzag(readVarint(5));
    }

    long readI64() throws ParquetException {
        return zigzag(readVarint(10));
    }

    String readString() throws ParquetException {
        int length = readLength();
        String text = new String(bytes, position, length, StandardCharsets.UTF_8);
        position += length;
        return text;
    }

    /** A list header: element type and count; the count is checked against the bytes left (each takes one or more). */
    record ListHeader(int elementType, int size) {
    }

    ListHeader readListHeader() throws ParquetException {
        int header = readByte() & 0xFF;
        int size = header >>> 4;
        if (size == 15) {
            long large = readVarint(5);
            if (large > Integer.MAX_VALUE) {
                throw new ParquetException("metadata list of " + large + " elements");
            }
            size = (int) large;
        }
        int elementType = header & 0x0F;
        if (size > end - position && elementType != BOOLEAN_TRUE && elementType != BOOLEAN_FALSE) {
            throw new ParquetException("metadata list of " + size + " elements in " + (end - position) + " bytes");
        }
        return new ListHeader(elementType, size);
    }

    /** Skips a value of {@code type}, so fields this reader does not need (statistics, indexes) cost nothing. */
    void skip(int type) throws ParquetException {
        switch (type) {
            case BOOLEAN_TRUE, BOOLEAN_FALSE -> { }
            case BYTE -> readByte();
            case I16, I32, I64 -> readVarint(10);
            case DOUBLE -> advance(8);
            case BINARY -> advance(readLength());
            case LIST, SET -> {
                ListHeader list = readListHeader();
                for (int i = 0; i < list.size(); i++) {
                    skipElement(list.elementType());
                }
            }
            case MAP -> {
                long size = readVarint(5);
                if (size > 0) {
                    int types = readByte() & 0xFF;
                    if (size > end - position) {
                        throw new ParquetException("metadata map of " + size + " entries in " + (end - position)
                                + " bytes");
                    }
                    for (long i = 0; i < size; i++) {
                        skipElement(types >>> 4);
                        skipElement(types & 0x0F);
                    }
                }
            }
            case STRUCT -> {
                beginStruct();
                for (Field field = readField(); !field.isStop(); field = readField()) {
                    skip(field.type());
                }
                endStruct();
            }
            default -> throw new ParquetException("unknown metadata type " + type);
        }
    }

    /** In lists and maps booleans take a byte of their own, unlike in struct fields. */
    private void skipElement(int type) throws ParquetException {
        if (type == BOOLEAN_TRUE || type == BOOLEAN_FALSE) {
            readByte();
        } else {
            skip(type);
        }
    }

    private int readLength() throws ParquetException {
        long length = readVarint(5);
        if (length > end - position) {
            throw new ParquetException("metadata string of " + length + " bytes where " + (end - position)
                    + " remain");
        }
        return (int) length;
    }

    private void advance(int count) throws ParquetException {
        if (count > end - position) {
            throw new ParquetException("metadata ends early");
        }
        position += count;
    }

    private byte readByte() throws ParquetException {
        if (position >= end) {
            throw new ParquetException("metadata ends early");
        }
        return bytes[position++];
    }

    private long readVarint(int maxBytes) throws ParquetException {
        long value = 0;
        for (int i = 0; i < maxBytes; i++) {
            int b = readByte() & 0xFF;
            value |= (long) (b & 0x7F) << (7 * i);
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new ParquetException("malformed variable-length integer in metadata");
    }

    private static long zigzag(long n) {
        return (n >>> 1) ^ -(n & 1);
    }
}
