package dev.crucible.runner.prompts.parquet;

import java.util.ArrayList;
import java.util.List;

/**
 * The parts of Parquet's Thrift metadata (parquet-format {@code parquet.thrift}) this reader needs, decoded with
 * {@link CompactReader}; every other field is skipped. Field ids are the specification's.
 */
final class Metadata {

    /** Physical types. */
    static final int BYTE_ARRAY = 6;
    /** Repetition of a schema element. */
    static final int REQUIRED = 0;
    static final int OPTIONAL = 1;
    static final int REPEATED = 2;
    /** Page types. */
    static final int DATA_PAGE = 0;
    static final int DICTIONARY_PAGE = 2;
    static final int DATA_PAGE_V2 = 3;

    private static final int NONE = -1;

    private Metadata() {
    }

    record SchemaElement(int type, int repetition, String name, int numChildren) {
        boolean isGroup() {
            return numChildren > 0 || type == NONE;
        }
    }

    record ColumnMeta(int type, List<String> path, int codec, long numValues, long totalCompressedSize,
                      long dataPageOffset, long dictionaryPageOffset) {
        long start() {
            return dictionaryPageOffset > 0 && dictionaryPageOffset < dataPageOffset ? dictionaryPageOffset
                    : dataPageOffset;
        }
    }

    /** A row group's column chunks; a chunk without metadata (kept in another file, or encrypted) is null. */
    record RowGroup(List<ColumnMeta> columns, long numRows) {
    }

    record Footer(List<SchemaElement> schema, long numRows, List<RowGroup> rowGroups) {
    }

    record DataPage(int numValues, int encoding, int definitionLevelEncoding) {
    }

    record DataPageV2(int numValues, int numNulls, int encoding, int definitionLevelsLength,
                      int repetitionLevelsLength, boolean compressed) {
    }

    record DictionaryPage(int numValues, int encoding) {
    }

    /** One page header; exactly one of the three page bodies is set for the page types we read. */
    record PageHeader(int type, int uncompressedSize, int compressedSize, DataPage dataPage, DataPageV2 dataPageV2,
                      DictionaryPage dictionaryPage) {
    }

    static Footer footer(CompactReader in) throws ParquetException {
        List<SchemaElement> schema = null;
        long numRows = NONE;
        List<RowGroup> rowGroups = null;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            if (f.id() == 2 && f.type() == CompactReader.LIST) {
                CompactReader.ListHeader list = in.readListHeader();
                schema = new ArrayList<>(list.size());
                for (int i = 0; i < list.size(); i++) {
                    schema.add(schemaElement(in));
                }
            } else if (f.id() == 3 && f.type() == CompactReader.I64) {
                numRows = in.readI64();
            } else if (f.id() == 4 && f.type() == CompactReader.LIST) {
                CompactReader.ListHeader list = in.readListHeader();
                rowGroups = new ArrayList<>(list.size());
                for (int i = 0; i < list.size(); i++) {
                    rowGroups.add(rowGroup(in));
                }
            } else {
                in.skip(f.type());
            }
        }
        in.endStruct();
        if (schema == null || schema.isEmpty() || rowGroups == null || numRows < 0) {
            throw new ParquetException("file metadata lacks its schema, row count or row groups");
        }
        return new Footer(List.copyOf(schema), numRows, List.copyOf(rowGroups));
    }

    private static SchemaElement schemaElement(CompactReader in) throws ParquetException {
        int type = NONE;
        int repetition = NONE;
        String name = null;
        int numChildren = 0;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            if (f.id() == 1 && f.type() == CompactReader.I32) {
                type = in.readI32();
            } else if (f.id() == 3 && f.type() == CompactReader.I32) {
                repetition = in.readI32();
            } else if (f.id() == 4 && f.type() == CompactReader.BINARY) {
                name = in.readString();
            } else if (f.id() == 5 && f.type() == CompactReader.I32) {
                numChildren = in.readI32();
            } else {
                in.skip(f.type());
            }
        }
        in.endStruct();
        if (name == null || numChildren < 0) {
            throw new ParquetException("schema element without a name");
        }
        return new SchemaElement(type, repetition, name, numChildren);
    }

    private static RowGroup rowGroup(CompactReader in) throws ParquetException {
        List<ColumnMeta> columns = null;
        long numRows = NONE;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            if (f.id() == 1 && f.type() == CompactReader.LIST) {
                CompactReader.ListHeader list = in.readListHeader();
                columns = new ArrayList<>(list.size());
                for (int i = 0; i < list.size(); i++) {
                    columns.add(columnChunk(in));
                }
            } else if (f.id() == 3 && f.type() == CompactReader.I64) {
                numRows = in.readI64();
            } else {
                in.skip(f.type());
            }
        }
        in.endStruct();
        if (columns == null || numRows < 0) {
            throw new ParquetException("row group without columns or row count");
        }
        return new RowGroup(java.util.Collections.unmodifiableList(columns), numRows);
    }

    private static ColumnMeta columnChunk(CompactReader in) throws ParquetException {
        ColumnMeta meta = null;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            if (f.id() == 3 && f.type() == CompactReader.STRUCT) {
                meta = columnMeta(in);
            } else {
                in.skip(f.type());
            }
        }
        in.endStruct();
        return meta;
    }

    private static ColumnMeta columnMeta(CompactReader in) throws ParquetException {
        int type = NONE;
        List<String> path = List.of();
        int codec = NONE;
        long numValues = NONE;
        long compressed = NONE;
        long dataOffset = NONE;
        long dictionaryOffset = NONE;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            switch (f.id() * 16 + f.type()) {
                case 1 * 16 + CompactReader.I32 -> type = in.readI32();
                case 3 * 16 + CompactReader.LIST -> {
                    CompactReader.ListHeader list = in.readListHeader();
                    List<String> names = new ArrayList<>(list.size());
                    for (int i = 0; i < list.size(); i++) {
                        names.add(in.readString());
                    }
                    path = List.copyOf(names);
                }
                case 4 * 16 + CompactReader.I32 -> codec = in.readI32();
                case 5 * 16 + CompactReader.I64 -> numValues = in.readI64();
                case 7 * 16 + CompactReader.I64 -> compressed = in.readI64();
                case 9 * 16 + CompactReader.I64 -> dataOffset = in.readI64();
                case 11 * 16 + CompactReader.I64 -> dictionaryOffset = in.readI64();
                default -> in.skip(f.type());
            }
        }
        in.endStruct();
        if (type == NONE || codec == NONE || numValues < 0 || compressed < 0 || dataOffset < 0) {
            throw new ParquetException("column metadata lacks a required field");
        }
        return new ColumnMeta(type, path, codec, numValues, compressed, dataOffset, dictionaryOffset);
    }

    static PageHeader pageHeader(CompactReader in) throws ParquetException {
        int type = NONE;
        int uncompressed = NONE;
        int compressed = NONE;
        DataPage dataPage = null;
        DataPageV2 dataPageV2 = null;
        DictionaryPage dictionaryPage = null;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            switch (f.id() * 16 + f.type()) {
                case 1 * 16 + CompactReader.I32 -> type = in.readI32();
                case 2 * 16 + CompactReader.I32 -> uncompressed = in.readI32();
                case 3 * 16 + CompactReader.I32 -> compressed = in.readI32();
                case 5 * 16 + CompactReader.STRUCT -> dataPage = dataPage(in);
                case 7 * 16 + CompactReader.STRUCT -> dictionaryPage = dictionaryPage(in);
                case 8 * 16 + CompactReader.STRUCT -> dataPageV2 = dataPageV2(in);
                default -> in.skip(f.type());
            }
        }
        in.endStruct();
        if (type == NONE || uncompressed < 0 || compressed < 0) {
            throw new ParquetException("page header lacks its type or sizes");
        }
        return new PageHeader(type, uncompressed, compressed, dataPage, dataPageV2, dictionaryPage);
    }

    private static DataPage dataPage(CompactReader in) throws ParquetException {
        int numValues = NONE;
        int encoding = NONE;
        int definitionEncoding = NONE;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            switch (f.id() * 16 + f.type()) {
                case 1 * 16 + CompactReader.I32 -> numValues = in.readI32();
                case 2 * 16 + CompactReader.I32 -> encoding = in.readI32();
                case 3 * 16 + CompactReader.I32 -> definitionEncoding = in.readI32();
                default -> in.skip(f.type());
            }
        }
        in.endStruct();
        if (numValues < 0 || encoding == NONE) {
            throw new ParquetException("data page header lacks its value count or encoding");
        }
        return new DataPage(numValues, encoding, definitionEncoding);
    }

    private static DataPageV2 dataPageV2(CompactReader in) throws ParquetException {
        int numValues = NONE;
        int numNulls = NONE;
        int encoding = NONE;
        int definitionLength = NONE;
        int repetitionLength = NONE;
        boolean compressed = true;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            switch (f.id()) {
                case 1 -> numValues = f.type() == CompactReader.I32 ? in.readI32() : skipped(in, f);
                case 2 -> numNulls = f.type() == CompactReader.I32 ? in.readI32() : skipped(in, f);
                case 4 -> encoding = f.type() == CompactReader.I32 ? in.readI32() : skipped(in, f);
                case 5 -> definitionLength = f.type() == CompactReader.I32 ? in.readI32() : skipped(in, f);
                case 6 -> repetitionLength = f.type() == CompactReader.I32 ? in.readI32() : skipped(in, f);
                case 7 -> {
                    if (f.type() == CompactReader.BOOLEAN_TRUE || f.type() == CompactReader.BOOLEAN_FALSE) {
                        compressed = f.booleanValue();
                    } else {
                        in.skip(f.type());
                    }
                }
                default -> in.skip(f.type());
            }
        }
        in.endStruct();
        if (numValues < 0 || numNulls < 0 || encoding == NONE || definitionLength < 0 || repetitionLength < 0) {
            throw new ParquetException("data page v2 header lacks a required field");
        }
        return new DataPageV2(numValues, numNulls, encoding, definitionLength, repetitionLength, compressed);
    }

    private static DictionaryPage dictionaryPage(CompactReader in) throws ParquetException {
        int numValues = NONE;
        int encoding = NONE;
        in.beginStruct();
        for (CompactReader.Field f = in.readField(); !f.isStop(); f = in.readField()) {
            switch (f.id() * 16 + f.type()) {
                case 1 * 16 + CompactReader.I32 -> numValues = in.readI32();
                case 2 * 16 + CompactReader.I32 -> encoding = in.readI32();
                default -> in.skip(f.type());
            }
        }
        in.endStruct();
        if (numValues < 0 || encoding == NONE) {
            throw new ParquetException("dictionary page header lacks its value count or encoding");
        }
        return new DictionaryPage(numValues, encoding);
    }

    private static int skipped(CompactReader in, CompactReader.Field f) throws ParquetException {
        in.skip(f.type());
        return NONE;
    }
}
