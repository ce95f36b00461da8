package dev.crucible.runner.prompts.parquet;

import io.airlift.compress.Decompressor;
import io.airlift.compress.MalformedInputException;
import io.airlift.compress.lz4.Lz4Decompressor;
import io.airlift.compress.snappy.SnappyDecompressor;
import io.airlift.compress.zstd.ZstdDecompressor;
import java.io.IOException;

/** Page decompression: the codecs Hugging Face datasets use (Snappy, Zstd, GZIP) plus LZ4_RAW, all in Java. */
final class Codecs {

    static final int UNCOMPRESSED = 0;
    static final int SNAPPY = 1;
    static final int GZIP = 2;
    static final int ZSTD = 6;
    static final int LZ4_RAW = 7;

    private static final String[] NAMES = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD",
            "LZ4_RAW"};

    private Codecs() {
    }

    static String name(int codec) {
        return codec >= 0 && codec < NAMES.length ? NAMES[codec] : "codec " + codec;
    }

    static void requireSupported(int codec) throws ParquetException {
        if (codec != UNCOMPRESSED && codec != SNAPPY && codec != GZIP && codec != ZSTD && codec != LZ4_RAW) {
            throw new ParquetException(name(codec) + " compression is not supported (use UNCOMPRESSED, SNAPPY,"
                    + " GZIP, ZSTD or LZ4_RAW)");
        }
    }

    /**
     * Decompresses {@code length} bytes at {@code offset} into exactly {@code uncompressedSize} bytes; the size
     * comes from the page header and was checked against the reader's limit before this allocation.
     */
    static byte[] decompress(int codec, byte[] data, int offset, int length, int uncompressedSize)
            throws ParquetException {
        if (codec == UNCOMPRESSED) {
            if (length != uncompressedSize) {
                throw new ParquetException("uncompressed page of " + length + " bytes claims " + uncompressedSize);
            }
            return java.util.Arrays.copyOfRange(data, offset, offset + length);
        }
        if (codec == SNAPPY) {
            requireSnappyLength(data, offset, length, uncompressedSize);
        }
        byte[] out = new byte[uncompressedSize];
        int written;
        try {
            written = switch (codec) {
                case SNAPPY -> block(new SnappyDecompressor(), data, offset, length, out);
                case ZSTD -> block(new ZstdDecompressor(), data, offset, length, out);
                case LZ4_RAW -> block(new Lz4Decompressor(), data, offset, length, out);
                case GZIP -> gunzip(data, offset, length, out);
                default -> throw new ParquetException(name(codec) + " compression is not supported");
            };
        } catch (MalformedInputException | IndexOutOfBoundsException | IllegalArgumentException e) {
            throw new ParquetException(name(codec) + " data is damaged", e);
        }
        if (written != uncompressedSize) {
            throw new ParquetException(name(codec) + " page decompressed to " + written + " bytes, header says "
                    + uncompressedSize);
        }
        return out;
    }

    /** Snappy blocks start with their uncompressed length; checking it first avoids allocating a damaged size. */
    private static void requireSnappyLength(byte[] data, int offset, int length, int expected)
            throws ParquetException {
        long value = 0;
        for (int i = 0; i < 5 && i < length; i++) {
            int b = data[offset + i] & 0xFF;
            value |= (long) (b & 0x7F) << (7 * i);
            if ((b & 0x80) == 0) {
                if (value != expected) {
                    throw new ParquetException("SNAPPY page holds " + value + " bytes, its header says " + expected);
                }
                return;
            }
        }
        throw new ParquetException("SNAPPY data is damaged");
    }

    private static int block(Decompressor decompressor, byte[] data, int offset, int length, byte[] out) {
        return decompressor.decompress(data, offset, length, out, 0, out.length);
    }

    /** GZIP members (RFC 1952) through the JDK's inflater; output beyond the expected size is an error. */
    private static int gunzip(byte[] data, int offset, int length, byte[] out) throws ParquetException {
        try (java.io.InputStream in = new java.util.zip.GZIPInputStream(
                new java.io.ByteArrayInputStream(data, offset, length))) {
            int total = 0;
            while (total < out.length) {
                int n = in.read(out, total, out.length - total);
                if (n < 0) {
                    break;
                }
                total += n;
            }
            if (total == out.length && in.read() >= 0) {
                throw new ParquetException("GZIP page decompresses to more than its header says");
            }
            return total;
        } catch (IOException e) {
            throw new ParquetException("GZIP data is damaged (" + e.getMessage() + ")", e);
        }
    }
}
