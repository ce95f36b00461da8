package dev.crucible.runner.prompts.parquet;

import dev.crucible.runner.prompts.parquet.Metadata.ColumnMeta;
import dev.crucible.runner.prompts.parquet.Metadata.Footer;
import dev.crucible.runner.prompts.parquet.Metadata.PageHeader;
import dev.crucible.runner.prompts.parquet.Metadata.RowGroup;
import dev.crucible.runner.prompts.parquet.Metadata.SchemaElement;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * Reads top-level string columns of Apache Parquet files, the format of Hugging Face datasets, without Hadoop:
 * footer (FileMetaData) → row groups → column chunks → pages; data pages v1 and v2; PLAIN and dictionary
 * (PLAIN_DICTIONARY, RLE_DICTIONARY) encodings of BYTE_ARRAY; definition levels of optional columns;
 * UNCOMPRESSED, SNAPPY, GZIP, ZSTD and LZ4_RAW pages. Nested columns, DELTA encodings, encryption and
 * LZO/BROTLI/LZ4 are refused with a message that names them.
 *
 * <p>Every size read from the file is checked against the bytes actually there and against fixed limits before
 * anything is allocated, and every loop consumes input, so a damaged file ends in a {@link ParquetException}.
 */
public final class ParquetFile implements AutoCloseable {

    /** The largest footer accepted; real ones are kilobytes to a few megabytes. */
    static final int MAX_FOOTER_BYTES = 64 << 20;
    /**
     * The largest page accepted, compressed or not. Writers aim at about one megabyte; the limit bounds what a
     * damaged header can make us allocate.
     */
    static final int MAX_PAGE_BYTES = 64 << 20;
    /** The most values (rows, for flat columns) one page may claim. */
    static final int MAX_PAGE_VALUES = 1 << 22;

    private static final byte[] MAGIC = "PAR1".getBytes(StandardCharsets.US_ASCII);
    private static final byte[] ENCRYPTED_MAGIC = "PARE".getBytes(StandardCharsets.US_ASCII);
    private static final int PLAIN = 0;
    private static final int PLAIN_DICTIONARY = 2;
    private static final int RLE = 3;
    private static final int RLE_DICTIONARY = 8;
    private static final String[] ENCODINGS = {"PLAIN", "GROUP_VAR_INT", "PLAIN_DICTIONARY", "RLE", "BIT_PACKED",
            "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY", "RLE_DICTIONARY",
            "BYTE_STREAM_SPLIT"};
    private static final String[] TYPES = {"BOOLEAN", "INT32", "INT64", "INT96", "FLOAT", "DOUBLE", "BYTE_ARRAY",
            "FIXED_LEN_BYTE_ARRAY"};

    private final FileChannel channel;
    private final long dataEnd;
    private final Footer footer;
    private final List<Field> fields;

    /** A top-level field of the schema; only primitive BYTE_ARRAY fields that are not repeated can be read. */
    public record Field(String name, String kind, boolean readable, int leafIndex, int maxDefinitionLevel) {
    }

    /** Receives a column's values in order ({@code null} for a missing one); returns false to stop early. */
    @FunctionalInterface
    public interface ValueSink {
        boolean accept(String value);
    }

    private ParquetFile(FileChannel channel, long dataEnd, Footer footer, List<Field> fields) {
        this.channel = channel;
        this.dataEnd = dataEnd;
        this.footer = footer;
        this.fields = fields;
    }

    public static ParquetFile open(Path file) throws IOException {
        FileChannel channel = FileChannel.open(file, StandardOpenOption.READ);
        try {
            long size = channel.size();
            if (size < 12) {
                throw new ParquetException("not a Parquet file (" + size + " bytes)");
            }
            byte[] head = read(channel, 0, 4);
            byte[] tail = read(channel, size - 8, 8);
            if (Arrays.equals(head, ENCRYPTED_MAGIC) || Arrays.equals(Arrays.copyOfRange(tail, 4, 8),
                    ENCRYPTED_MAGIC)) {
                throw new ParquetException("encrypted Parquet files are not supported");
            }
            if (!Arrays.equals(head, MAGIC) || !Arrays.equals(Arrays.copyOfRange(tail, 4, 8), MAGIC)) {
                throw new ParquetException("not a Parquet file (no PAR1 marker"
                        + (Arrays.equals(head, MAGIC) ? " at the end: the file may be cut short)" : ")"));
            }
            long footerLength = ByteBuffer.wrap(tail, 0, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt()
                    & 0xFFFFFFFFL;
            if (footerLength == 0 || footerLength > size - 12 || footerLength > MAX_FOOTER_BYTES) {
                throw new ParquetException("footer length " + footerLength + " does not fit a file of " + size
                        + " bytes");
            }
            long footerStart = size - 8 - footerLength;
            byte[] footerBytes = read(channel, footerStart, (int) footerLength);
            Footer footer = Metadata.footer(new CompactReader(footerBytes, 0, footerBytes.length));
            return new ParquetFile(channel, footerStart, footer, topLevelFields(footer.schema()));
        } catch (IOException | RuntimeException e) {
            channel.close();
            throw e;
        }
    }

    public List<Field> fields() {
        return fields;
    }

    /** Walks the flattened schema (depth first, children counted) to find each top-level field's first leaf. */
    private static List<Field> topLevelFields(List<SchemaElement> schema) throws ParquetException {
        SchemaElement root = schema.getFirst();
        List<Field> fields = new ArrayList<>();
        int index = 1;
        int leaf = 0;
        for (int child = 0; child < root.numChildren(); child++) {
            if (index >= schema.size()) {
                throw new ParquetException("schema lists fewer elements than its groups claim");
            }
            SchemaElement element = schema.get(index);
            int firstLeaf = leaf;
            long pending = 1;
            while (pending > 0) {
                if (index >= schema.size()) {
                    throw new ParquetException("schema lists fewer elements than its groups claim");
                }
                SchemaElement next = schema.get(index++);
                pending += next.numChildren() - 1;
                if (!next.isGroup()) {
                    leaf++;
                }
            }
            String kind;
            boolean readable = false;
            if (element.isGroup()) {
                kind = "a nested value (a list or struct)";
            } else if (element.repetition() == Metadata.REPEATED) {
                kind = "a repeated " + typeName(element.type());
            } else {
                kind = typeName(element.type());
                readable = element.type() == Metadata.BYTE_ARRAY;
            }
            fields.add(new Field(element.name(), kind, readable, firstLeaf,
                    element.repetition() == Metadata.REQUIRED ? 0 : 1));
        }
        return List.copyOf(fields);
    }

    /** Names come from the file; a damaged one must not break the one-line error that shows it. */
    static String printable(String text) {
        StringBuilder out = new StringBuilder(text.length());
        text.codePoints().forEach(c -> {
            if (Character.isISOControl(c)) {
                out.append(String.format("\\u%04x", c));
            } else {
                out.appendCodePoint(c);
            }
        });
        return out.toString();
    }

    private static String typeName(int type) {
        return type >= 0 && type < TYPES.length ? TYPES[type] : "type " + type;
    }

    private static String encodingName(int encoding) {
        return encoding >= 0 && encoding < ENCODINGS.length ? ENCODINGS[encoding] : "encoding " + encoding;
    }

    /**
     * Streams the values of {@code field} (which must be {@link Field#readable()}) to {@code sink}, row group by row
     * group, until the column ends or the sink asks to stop.
     */
    public void read(Field field, ValueSink sink) throws IOException {
        if (!field.readable()) {
            throw new IllegalArgumentException(field.name() + " is not a readable string column");
        }
        for (RowGroup group : footer.rowGroups()) {
            if (field.leafIndex() >= group.columns().size()) {
                throw new ParquetException("a row group lacks column '" + field.name() + "'");
            }
            ColumnMeta chunk = group.columns().get(field.leafIndex());
            if (chunk == null) {
                throw new ParquetException("column '" + field.name() + "' is stored in another file or encrypted");
            }
            if (!chunk.path().isEmpty() && !chunk.path().equals(List.of(field.name()))) {
                throw new ParquetException("column chunk " + printable(String.join(".", chunk.path()))
                        + " stands where '" + printable(field.name()) + "' belongs");
            }
            if (chunk.type() != Metadata.BYTE_ARRAY) {
                throw new ParquetException("column '" + field.name() + "' holds " + typeName(chunk.type())
                        + " in a row group");
            }
            if (!readChunk(chunk, field.maxDefinitionLevel(), sink)) {
                return;
            }
        }
    }

    private boolean readChunk(ColumnMeta chunk, int maxDefinition, ValueSink sink) throws IOException {
        Codecs.requireSupported(chunk.codec());
        long start = chunk.start();
        long length = chunk.totalCompressedSize();
        if (start < MAGIC.length || length > dataEnd - start || length > Integer.MAX_VALUE - 16) {
            throw new ParquetException("column chunk at " + start + " (" + length + " bytes) lies outside the data");
        }
        byte[] bytes = read(channel, start, (int) length);
        String[] dictionary = null;
        long valuesRead = 0;
        int position = 0;
        while (valuesRead < chunk.numValues()) {
            if (position >= bytes.length) {
                throw new ParquetException("column chunk ends after " + valuesRead + " of " + chunk.numValues()
                        + " values");
            }
            CompactReader headerReader = new CompactReader(bytes, position, bytes.length);
            PageHeader header = Metadata.pageHeader(headerReader);
            int body = headerReader.position();
            if (header.compressedSize() > bytes.length - body) {
                throw new ParquetException("page of " + header.compressedSize() + " bytes runs past its column"
                        + " chunk");
            }
            if (header.uncompressedSize() > MAX_PAGE_BYTES || header.compressedSize() > MAX_PAGE_BYTES) {
                throw new ParquetException("page of " + header.uncompressedSize() + " bytes exceeds the "
                        + MAX_PAGE_BYTES + "-byte limit");
            }
            switch (header.type()) {
                case Metadata.DICTIONARY_PAGE -> dictionary = dictionary(header, chunk.codec(), bytes, body);
                case Metadata.DATA_PAGE, Metadata.DATA_PAGE_V2 -> {
                    Page page = header.type() == Metadata.DATA_PAGE
                            ? pageV1(header, chunk.codec(), bytes, body, maxDefinition)
                            : pageV2(header, chunk.codec(), bytes, body, maxDefinition);
                    if (page.levels().length > chunk.numValues() - valuesRead) {
                        throw new ParquetException("pages hold more values than their column chunk ("
                                + chunk.numValues() + ")");
                    }
                    valuesRead += page.levels().length;
                    if (!emit(page, maxDefinition, dictionary, sink)) {
                        return false;
                    }
                }
                default -> { } // index pages and future page types carry no values
            }
            position = body + header.compressedSize();
        }
        return true;
    }

    /** A data page, decoded up to its values: the definition levels and where the encoded values are. */
    private record Page(int[] levels, int encoding, byte[] data, int valuesOffset) {
    }

    private static Page pageV1(PageHeader header, int codec, byte[] bytes, int body, int maxDefinition)
            throws ParquetException {
        Metadata.DataPage dataPage = require(header.dataPage(), "data page");
        int count = checkedCount(dataPage.numValues());
        byte[] data = Codecs.decompress(codec, bytes, body, header.compressedSize(), header.uncompressedSize());
        int offset = 0;
        int[] levels;
        if (maxDefinition > 0) {
            if (dataPage.definitionLevelEncoding() != RLE) {
                throw new ParquetException("definition levels in " + encodingName(dataPage.definitionLevelEncoding())
                        + " encoding are not supported");
            }
            if (data.length < 4) {
                throw new ParquetException("data page too short for its definition levels");
            }
            long length = ByteBuffer.wrap(data, 0, 4).order(java.nio.ByteOrder.LITTLE_ENDIAN).getInt() & 0xFFFFFFFFL;
            if (length > data.length - 4) {
                throw new ParquetException("definition levels run past their page");
            }
            levels = new RleHybridDecoder(data, 4, 4 + (int) length, 1).read(count);
            offset = 4 + (int) length;
        } else {
            levels = new int[count];
        }
        return new Page(levels, dataPage.encoding(), data, offset);
    }

    private static Page pageV2(PageHeader header, int codec, byte[] bytes, int body, int maxDefinition)
            throws ParquetException {
        Metadata.DataPageV2 dataPage = require(header.dataPageV2(), "data page v2");
        int count = checkedCount(dataPage.numValues());
        long levelBytes = (long) dataPage.repetitionLevelsLength() + dataPage.definitionLevelsLength();
        if (levelBytes > header.compressedSize() || levelBytes > header.uncompressedSize()) {
            throw new ParquetException("levels of a v2 data page are larger than the page");
        }
        int levelsStart = body + dataPage.repetitionLevelsLength();
        int[] levels = maxDefinition > 0
                ? new RleHybridDecoder(bytes, levelsStart, levelsStart + dataPage.definitionLevelsLength(), 1)
                .read(count)
                : new int[count];
        int valuesStart = body + (int) levelBytes;
        int storedValues = header.compressedSize() - (int) levelBytes;
        int rawValues = header.uncompressedSize() - (int) levelBytes;
        byte[] data = dataPage.compressed()
                ? Codecs.decompress(codec, bytes, valuesStart, storedValues, rawValues)
                : Codecs.decompress(Codecs.UNCOMPRESSED, bytes, valuesStart, storedValues, rawValues);
        return new Page(levels, dataPage.encoding(), data, 0);
    }

    private static String[] dictionary(PageHeader header, int codec, byte[] bytes, int body) throws ParquetException {
        Metadata.DictionaryPage page = require(header.dictionaryPage(), "dictionary page");
        if (page.encoding() != PLAIN && page.encoding() != PLAIN_DICTIONARY) {
            throw new ParquetException("dictionary in " + encodingName(page.encoding()) + " encoding is not"
                    + " supported");
        }
        byte[] data = Codecs.decompress(codec, bytes, body, header.compressedSize(), header.uncompressedSize());
        if (page.numValues() > data.length / 4) {
            throw new ParquetException("dictionary claims " + page.numValues() + " entries in " + data.length
                    + " bytes");
        }
        String[] entries = new String[page.numValues()];
        int[] position = {0};
        for (int i = 0; i < entries.length; i++) {
            entries[i] = plainString(data, position, data.length);
        }
        return entries;
    }

    private static boolean emit(Page page, int maxDefinition, String[] dictionary, ValueSink sink)
            throws ParquetException {
        int present = 0;
        for (int level : page.levels()) {
            if (level > maxDefinition) {
                throw new ParquetException("definition level " + level + " above the column's maximum "
                        + maxDefinition);
            }
            if (level == maxDefinition) {
                present++;
            }
        }
        byte[] data = page.data();
        int end = data.length;
        String[] values = new String[present];
        switch (page.encoding()) {
            case PLAIN -> {
                int[] position = {page.valuesOffset()};
                for (int i = 0; i < present; i++) {
                    values[i] = plainString(data, position, end);
                }
            }
            case PLAIN_DICTIONARY, RLE_DICTIONARY -> {
                if (dictionary == null) {
                    throw new ParquetException("dictionary-encoded page without a dictionary page");
                }
                if (present > 0) {
                    if (page.valuesOffset() >= end) {
                        throw new ParquetException("dictionary-encoded page without indices");
                    }
                    int bitWidth = data[page.valuesOffset()] & 0xFF;
                    int[] indices = new RleHybridDecoder(data, page.valuesOffset() + 1, end, bitWidth).read(present);
                    for (int i = 0; i < present; i++) {
                        if (indices[i] < 0 || indices[i] >= dictionary.length) {
                            throw new ParquetException("dictionary index " + indices[i] + " outside its "
                                    + dictionary.length + " entries");
                        }
                        values[i] = dictionary[indices[i]];
                    }
                }
            }
            default -> throw new ParquetException(encodingName(page.encoding()) + " encoding of strings is not"
                    + " supported");
        }
        int next = 0;
        for (int level : page.levels()) {
            if (!sink.accept(level == maxDefinition ? values[next++] : null)) {
                return false;
            }
        }
        return true;
    }

    /** PLAIN BYTE_ARRAY: a 4-byte little-endian length, then the bytes. */
    private static String plainString(byte[] data, int[] position, int end) throws ParquetException {
        int at = position[0];
        if (end - at < 4) {
            throw new ParquetException("string values end early");
        }
        long length = (data[at] & 0xFFL) | (data[at + 1] & 0xFFL) << 8 | (data[at + 2] & 0xFFL) << 16
                | (data[at + 3] & 0xFFL) << 24;
        if (length > end - at - 4) {
            throw new ParquetException("string of " + length + " bytes runs past its page");
        }
        position[0] = at + 4 + (int) length;
        return new String(data, at + 4, (int) length, StandardCharsets.UTF_8);
    }

    private static int checkedCount(int count) throws ParquetException {
        if (count > MAX_PAGE_VALUES) {
            throw new ParquetException("page claims " + count + " values, more than the " + MAX_PAGE_VALUES
                    + " this reader accepts");
        }
        return count;
    }

    private static <T> T require(T part, String what) throws ParquetException {
        if (part == null) {
            throw new ParquetException(what + " without its header");
        }
        return part;
    }

    private static byte[] read(FileChannel channel, long position, int length) throws IOException {
        ByteBuffer buffer = ByteBuffer.allocate(length);
        while (buffer.hasRemaining()) {
            if (channel.read(buffer, position + buffer.position()) < 0) {
                throw new ParquetException("file ends early");
            }
        }
        return buffer.array();
    }

    @Override
    public void close() throws IOException {
        channel.close();
    }
}
