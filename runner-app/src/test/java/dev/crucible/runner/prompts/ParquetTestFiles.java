package dev.crucible.runner.prompts;

import io.airlift.compress.Compressor;
import io.airlift.compress.lz4.Lz4Compressor;
import io.airlift.compress.snappy.SnappyCompressor;
import io.airlift.compress.zstd.ZstdCompressor;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Arrays;
import java.util.Map;
import java.util.zip.GZIPOutputStream;

/**
 * A minimal Parquet writer for tests, written from the format specification (parquet-format's Thrift definitions
 * and encodings document): flat schemas of string (BYTE_ARRAY/UTF8) and INT32 columns, required or optional,
 * PLAIN or dictionary encoded, data pages v1 or v2, any of the codecs the prompt loader must read. Definition
 * levels are written as RLE runs and dictionary indices as bit-packed runs, so both halves of the hybrid
 * encoding are exercised.
 */
final class ParquetTestFiles {

    enum Codec {
        UNCOMPRESSED(0), SNAPPY(1), GZIP(2), ZSTD(6), LZ4_RAW(7);

        final int id;

        Codec(int id) {
            this.id = id;
        }

        byte[] compress(byte[] data) {
            try {
                return switch (this) {
                    case UNCOMPRESSED -> data;
                    case SNAPPY -> block(new SnappyCompressor(), data);
                    case ZSTD -> block(new ZstdCompressor(), data);
                    case LZ4_RAW -> block(new Lz4Compressor(), data);
                    case GZIP -> {
                        ByteArrayOutputStream out = new ByteArrayOutputStream();
                        try (GZIPOutputStream gzip = new GZIPOutputStream(out)) {
                            gzip.write(data);
                        }
                        yield out.toByteArray();
                    }
                };
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private static byte[] block(Compressor compressor, byte[] data) {
        byte[] out = new byte[compressor.maxCompressedLength(data.length)];
        return Arrays.copyOf(out, compressor.compress(data, 0, data.length, out, 0, out.length));
    }

    /** A string column; {@code null} values need {@code optional}. */
    record Column(String name, List<String> values, boolean optional, boolean dictionary) {
    }

    /** An INT32 column, to test that non-text columns are refused. */
    record IntColumn(String name, List<Integer> values) {
    }

    record Options(Codec codec, boolean pageV2, int rowsPerGroup) {
        static Options plain() {
            return new Options(Codec.UNCOMPRESSED, false, Integer.MAX_VALUE);
        }
    }

    private static final int TYPE_INT32 = 1;
    private static final int TYPE_BYTE_ARRAY = 6;
    private static final int PLAIN = 0;
    private static final int PLAIN_DICTIONARY = 2;
    private static final int RLE = 3;
    private static final int RLE_DICTIONARY = 8;

    private ParquetTestFiles() {
    }

    static Path write(Path file, Options options, List<Column> columns, List<IntColumn> intColumns) {
        try {
            Files.write(file, bytes(options, columns, intColumns));
            return file;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static byte[] bytes(Options options, List<Column> columns, List<IntColumn> intColumns) {
        int rows = !columns.isEmpty() ? columns.getFirst().values().size() : intColumns.getFirst().values().size();
        ByteArrayOutputStream file = new ByteArrayOutputStream();
        file.writeBytes("PAR1".getBytes(StandardCharsets.US_ASCII));
        List<byte[]> rowGroups = new ArrayList<>();
        for (int first = 0; first < rows; first += options.rowsPerGroup()) {
            int last = (int) Math.min(rows, (long) first + options.rowsPerGroup());
            List<byte[]> chunks = new ArrayList<>();
            long groupBytes = 0;
            for (Column column : columns) {
                Chunk chunk = stringChunk(file, column, column.values().subList(first, last), options);
                chunks.add(chunk.metadata);
                groupBytes += chunk.size;
            }
            for (IntColumn column : intColumns) {
                Chunk chunk = intChunk(file, column, column.values().subList(first, last), options);
                chunks.add(chunk.metadata);
                groupBytes += chunk.size;
            }
            Thrift group = new Thrift();
            group.listOfStructs(1, chunks);
            group.i64(2, groupBytes);
            group.i64(3, last - first);
            rowGroups.add(group.end());
        }
        Thrift meta = new Thrift();
        meta.i32(1, 1);
        List<byte[]> schema = new ArrayList<>();
        Thrift root = new Thrift();
        root.string(4, "schema");
        root.i32(5, columns.size() + intColumns.size());
        schema.add(root.end());
        for (Column column : columns) {
            Thrift element = new Thrift();
            element.i32(1, TYPE_BYTE_ARRAY);
            element.i32(3, column.optional() ? 1 : 0);
            element.string(4, column.name());
            element.i32(6, 0); // UTF8
            schema.add(element.end());
        }
        for (IntColumn column : intColumns) {
            Thrift element = new Thrift();
            element.i32(1, TYPE_INT32);
            element.i32(3, 0);
            element.string(4, column.name());
            schema.add(element.end());
        }
        meta.listOfStructs(2, schema);
        meta.i64(3, rows);
        meta.listOfStructs(4, rowGroups);
        meta.string(6, "crucible test writer");
        byte[] footer = meta.end();
        file.writeBytes(footer);
        file.writeBytes(new byte[] {(byte) footer.length, (byte) (footer.length >>> 8), (byte) (footer.length >>> 16),
                (byte) (footer.length >>> 24)});
        file.writeBytes("PAR1".getBytes(StandardCharsets.US_ASCII));
        return file.toByteArray();
    }

    private record Chunk(byte[] metadata, long size) {
    }

    private static Chunk stringChunk(ByteArrayOutputStream file, Column column, List<String> values, Options options) {
        long start = file.size();
        long uncompressedTotal = 0;
        Long dictionaryOffset = null;
        List<Integer> encodings = new ArrayList<>(List.of(RLE));
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        int encoding;
        if (column.dictionary()) {
            Map<String, Integer> dictionary = new LinkedHashMap<>();
            for (String value : values) {
                if (value != null) {
                    dictionary.putIfAbsent(value, dictionary.size());
                }
            }
            ByteArrayOutputStream plain = new ByteArrayOutputStream();
            dictionary.keySet().forEach(value -> plainString(plain, value));
            dictionaryOffset = (long) file.size();
            byte[] raw = plain.toByteArray();
            byte[] compressed = options.codec().compress(raw);
            Thrift header = new Thrift();
            header.i32(1, 2); // DICTIONARY_PAGE
            header.i32(2, raw.length);
            header.i32(3, compressed.length);
            header.beginStruct(7);
            header.i32(1, dictionary.size());
            header.i32(2, PLAIN_DICTIONARY);
            header.endStruct();
            byte[] headerBytes = header.end();
            file.writeBytes(headerBytes);
            file.writeBytes(compressed);
            uncompressedTotal += headerBytes.length + raw.length;
            int bitWidth = 32 - Integer.numberOfLeadingZeros(Math.max(0, dictionary.size() - 1));
            body.write(bitWidth);
            List<Integer> indices = values.stream().filter(v -> v != null).map(dictionary::get).toList();
            bitPacked(body, indices, bitWidth);
            encoding = options.pageV2() ? RLE_DICTIONARY : PLAIN_DICTIONARY;
            encodings.add(PLAIN_DICTIONARY);
        } else {
            values.stream().filter(v -> v != null).forEach(value -> plainString(body, value));
            encoding = PLAIN;
        }
        encodings.add(encoding);
        long dataOffset = file.size();
        uncompressedTotal += dataPage(file, values.size(), nullCount(values), column.optional(),
                values.stream().map(v -> v != null).toList(), body.toByteArray(), encoding, options);
        Thrift meta = new Thrift();
        meta.i32(1, TYPE_BYTE_ARRAY);
        meta.listOfI32(2, encodings);
        meta.listOfStrings(3, List.of(column.name()));
        meta.i32(4, options.codec().id);
        meta.i64(5, values.size());
        meta.i64(6, uncompressedTotal);
        meta.i64(7, file.size() - start);
        meta.i64(9, dataOffset);
        if (dictionaryOffset != null) {
            meta.i64(11, dictionaryOffset);
        }
        return new Chunk(chunk(start, meta.end()), file.size() - start);
    }

    private static Chunk intChunk(ByteArrayOutputStream file, IntColumn column, List<Integer> values,
                                  Options options) {
        long start = file.size();
        ByteArrayOutputStream body = new ByteArrayOutputStream();
        for (int value : values) {
            body.writeBytes(new byte[] {(byte) value, (byte) (value >>> 8), (byte) (value >>> 16),
                    (byte) (value >>> 24)});
        }
        long uncompressed = dataPage(file, values.size(), 0, false, values.stream().map(v -> true).toList(),
                body.toByteArray(), PLAIN, options);
        Thrift meta = new Thrift();
        meta.i32(1, TYPE_INT32);
        meta.listOfI32(2, List.of(PLAIN, RLE));
        meta.listOfStrings(3, List.of(column.name()));
        meta.i32(4, options.codec().id);
        meta.i64(5, values.size());
        meta.i64(6, uncompressed);
        meta.i64(7, file.size() - start);
        meta.i64(9, start);
        return new Chunk(chunk(start, meta.end()), file.size() - start);
    }

    private static byte[] chunk(long start, byte[] columnMetaData) {
        Thrift chunk = new Thrift();
        chunk.i64(2, start);
        chunk.rawStruct(3, columnMetaData);
        return chunk.end();
    }

    /** Writes one data page; returns its uncompressed size including the header. */
    private static long dataPage(ByteArrayOutputStream file, int numValues, int nulls, boolean optional,
                                 List<Boolean> present, byte[] values, int encoding, Options options) {
        ByteArrayOutputStream levels = new ByteArrayOutputStream();
        if (optional) {
            rleRuns(levels, present.stream().map(p -> p ? 1 : 0).toList());
        }
        byte[] levelBytes = levels.toByteArray();
        Thrift header = new Thrift();
        byte[] raw;
        byte[] stored;
        if (options.pageV2()) {
            byte[] compressedValues = options.codec().compress(values);
            raw = concat(levelBytes, values);
            stored = concat(levelBytes, compressedValues);
            header.i32(1, 3); // DATA_PAGE_V2
            header.i32(2, raw.length);
            header.i32(3, stored.length);
            header.beginStruct(8);
            header.i32(1, numValues);
            header.i32(2, nulls);
            header.i32(3, numValues);
            header.i32(4, encoding);
            header.i32(5, levelBytes.length);
            header.i32(6, 0);
            header.endStruct();
        } else {
            byte[] prefixed = optional ? concat(littleEndian(levelBytes.length), levelBytes) : levelBytes;
            raw = concat(prefixed, values);
            stored = options.codec().compress(raw);
            header.i32(1, 0); // DATA_PAGE
            header.i32(2, raw.length);
            header.i32(3, stored.length);
            header.beginStruct(5);
            header.i32(1, numValues);
            header.i32(2, encoding);
            header.i32(3, RLE);
            header.i32(4, RLE);
            header.endStruct();
        }
        byte[] headerBytes = header.end();
        file.writeBytes(headerBytes);
        file.writeBytes(stored);
        return headerBytes.length + raw.length;
    }

    private static int nullCount(List<String> values) {
        return (int) values.stream().filter(v -> v == null).count();
    }

    private static void plainString(ByteArrayOutputStream out, String value) {
        byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
        out.writeBytes(littleEndian(bytes.length));
        out.writeBytes(bytes);
    }

    /** RLE runs of a 1-bit level stream: header varint (count << 1), then the value in one byte. */
    private static void rleRuns(ByteArrayOutputStream out, List<Integer> levels) {
        int i = 0;
        while (i < levels.size()) {
            int j = i;
            while (j < levels.size() && levels.get(j).equals(levels.get(i))) {
                j++;
            }
            varint(out, (long) (j - i) << 1);
            out.write(levels.get(i));
            i = j;
        }
    }

    /** One bit-packed run: header varint (groups << 1 | 1), then groups of 8 values packed LSB first. */
    private static void bitPacked(ByteArrayOutputStream out, List<Integer> values, int bitWidth) {
        int groups = (values.size() + 7) / 8;
        varint(out, ((long) groups << 1) | 1);
        byte[] packed = new byte[groups * bitWidth];
        for (int i = 0; i < values.size(); i++) {
            for (int bit = 0; bit < bitWidth; bit++) {
                if ((values.get(i) >>> bit & 1) != 0) {
                    int position = i * bitWidth + bit;
                    packed[position / 8] |= (byte) (1 << (position % 8));
                }
            }
        }
        out.writeBytes(packed);
    }

    private static void varint(ByteArrayOutputStream out, long value) {
        while ((value & ~0x7FL) != 0) {
            out.write((int) (value & 0x7F) | 0x80);
            value >>>= 7;
        }
        out.write((int) value);
    }

    private static byte[] littleEndian(int value) {
        return new byte[] {(byte) value, (byte) (value >>> 8), (byte) (value >>> 16), (byte) (value >>> 24)};
    }

    private static byte[] concat(byte[] a, byte[] b) {
        byte[] joined = new byte[a.length + b.length];
        System.arraycopy(a, 0, joined, 0, a.length);
        System.arraycopy(b, 0, joined, a.length, b.length);
        return joined;
    }

    /** Thrift compact protocol, just the parts the Parquet footer and page headers use. */
    private static final class Thrift {
        private static final int I32 = 5;
        private static final int I64 = 6;
        private static final int BINARY = 8;
        private static final int LIST = 9;
        private static final int STRUCT = 12;

        private final ByteArrayOutputStream out = new ByteArrayOutputStream();
        private final ArrayList<Integer> lastIds = new ArrayList<>(List.of(0));

        void i32(int id, int value) {
            field(id, I32);
            zigzag(value);
        }

        void i64(int id, long value) {
            field(id, I64);
            zigzag(value);
        }

        void string(int id, String value) {
            field(id, BINARY);
            binary(value);
        }

        void beginStruct(int id) {
            field(id, STRUCT);
            lastIds.add(0);
        }

        void endStruct() {
            out.write(0);
            lastIds.removeLast();
        }

        /** A struct field whose body (ending in its stop byte) was encoded separately. */
        void rawStruct(int id, byte[] body) {
            field(id, STRUCT);
            out.writeBytes(body);
        }

        void listOfStructs(int id, List<byte[]> bodies) {
            listHeader(id, STRUCT, bodies.size());
            bodies.forEach(out::writeBytes);
        }

        void listOfI32(int id, List<Integer> values) {
            listHeader(id, I32, values.size());
            values.forEach(this::zigzag);
        }

        void listOfStrings(int id, List<String> values) {
            listHeader(id, BINARY, values.size());
            values.forEach(this::binary);
        }

        /** The encoded struct, closed with its stop byte. */
        byte[] end() {
            out.write(0);
            return out.toByteArray();
        }

        private void listHeader(int id, int elementType, int size) {
            field(id, LIST);
            if (size < 15) {
                out.write(size << 4 | elementType);
            } else {
                out.write(0xF0 | elementType);
                varint(out, size);
            }
        }

        private void field(int id, int type) {
            int delta = id - lastIds.getLast();
            if (delta > 0 && delta <= 15) {
                out.write(delta << 4 | type);
            } else {
                out.write(type);
                zigzag(id);
            }
            lastIds.set(lastIds.size() - 1, id);
        }

        private void binary(String value) {
            byte[] bytes = value.getBytes(StandardCharsets.UTF_8);
            varint(out, bytes.length);
            out.writeBytes(bytes);
        }

        private void zigzag(long value) {
            varint(out, (value << 1) ^ (value >> 63));
        }
    }
}
