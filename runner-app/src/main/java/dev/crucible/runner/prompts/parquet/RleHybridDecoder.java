package dev.crucible.runner.prompts.parquet;

/**
 * Parquet's RLE / bit-packing hybrid encoding, used for definition levels and dictionary indices: a sequence of
 * runs, each a varint header whose low bit says bit-packed (groups of 8 values, least significant bit first) or
 * repeated (one value, repeated header/2 times). Reads stop at the buffer's end; each run consumes at least one
 * byte, so damaged input cannot loop.
 */
final class RleHybridDecoder {

    private final byte[] bytes;
    private final int end;
    private final int bitWidth;
    private int position;

    RleHybridDecoder(byte[] bytes, int offset, int end, int bitWidth) throws ParquetException {
        if (bitWidth < 0 || bitWidth > 32) {
            throw new ParquetException("bit width " + bitWidth + " is outside 0..32");
        }
        this.bytes = bytes;
        this.position = offset;
        this.end = end;
        this.bitWidth = bitWidth;
    }

    /** Decodes exactly {@code count} values into a new array. */
    int[] read(int count) throws ParquetException {
        int[] values = new int[count];
        int filled = 0;
        while (filled < count) {
            long header = readVarint();
            if ((header & 1) == 0) {
                long run = header >>> 1;
                int value = readLittleEndian((bitWidth + 7) / 8);
                int n = (int) Math.min(run, count - filled);
                java.util.Arrays.fill(values, filled, filled + n, value);
                filled += n;
            } else {
                long groups = header >>> 1;
                long bytesNeeded = groups * bitWidth;
                if (bytesNeeded > end - position) {
                    throw new ParquetException("bit-packed run of " + groups + " groups past the end of its page");
                }
                long available = groups * 8;
                int n = (int) Math.min(available, count - filled);
                for (int i = 0; i < n; i++) {
                    values[filled + i] = unpack(position, i);
                }
                position += (int) bytesNeeded;
                filled += n;
            }
        }
        return values;
    }

    /** Position after the values read so far; the hybrid stream is often followed by other data. */
    int position() {
        return position;
    }

    private int unpack(int start, int index) {
        long bit = (long) index * bitWidth;
        int value = 0;
        for (int b = 0; b < bitWidth; b++, bit++) {
            int bite = bytes[start + (int) (bit >>> 3)] & 0xFF;
            value |= ((bite >>> (int) (bit & 7)) & 1) << b;
        }
        return value;
    }

    private int readLittleEndian(int width) throws ParquetException {
        if (width > end - position) {
            throw new ParquetException("run value past the end of its page");
        }
        int value = 0;
        for (int i = 0; i < width; i++) {
            value |= (bytes[position++] & 0xFF) << (8 * i);
        }
        return value;
    }

    private long readVarint() throws ParquetException {
        long value = 0;
        for (int i = 0; i < 5; i++) {
            if (position >= end) {
                throw new ParquetException("levels or indices end before all values are read");
            }
            int b = bytes[position++] & 0xFF;
            value |= (long) (b & 0x7F) << (7 * i);
            if ((b & 0x80) == 0) {
                return value;
            }
        }
        throw new ParquetException("malformed run header");
    }
}
