package dev.crucible.api.tensor;

import java.util.Objects;

/**
 * How a weight is stored: dense elements of a dtype, or a quantized format whose parts (packed data, scales, zero
 * points) a {@link QuantizedTensor} carries. Kernels, codecs and memory estimates are chosen by format, not by a
 * dtype alone.
 */
public sealed interface WeightFormat {

    /** Bytes a weight of {@code shape} takes in this format, every part included. */
    long storedBytes(long[] shape);

    /** How a run's first lines name it, e.g. {@code int8 per-channel}, {@code int4 blocks of 32 with zero points}. */
    default String describe() {
        return switch (this) {
            case Int integers -> "int" + integers.bits()
                    + (integers.blockSize() == 0 ? " per-channel" : " blocks of " + integers.blockSize())
                    + (integers.zeroPoints() ? " with zero points" : "");
            case Nf4 nf4 -> "nf4 blocks of " + nf4.blockSize();
            case Dense dense -> dense.dtype().userName();
            case Gguf gguf -> gguf.type().name();
        };
    }

    /** One element per weight in {@code dtype}. */
    record Dense(DType dtype) implements WeightFormat {
        private static final Dense[] BY_DTYPE = java.util.Arrays.stream(DType.values()).map(Dense::new)
                .toArray(Dense[]::new);

        public Dense {
            Objects.requireNonNull(dtype, "dtype is null");
        }

        /** The same value as {@code new Dense(dtype)}, made once (kernels ask for it on every product). */
        public static Dense of(DType dtype) {
            return BY_DTYPE[dtype.ordinal()];
        }

        @Override
        public long storedBytes(long[] shape) {
            return elements(shape) * dtype.byteSize();
        }
    }

    /**
     * 4-bit NormalFloat as QLoRA defines it: each block of {@code blockSize} consecutive weights (row-major) is
     * divided by its largest magnitude, and each result is stored as the index of the nearest of 16 fixed levels,
     * two per byte (first element in the high nibble), with a float32 absmax per block.
     */
    record Nf4(int blockSize) implements WeightFormat {
        /** QLoRA's block of 64. */
        public static final Nf4 QLORA = new Nf4(64);

        public Nf4 {
            if (blockSize < 2 || blockSize % 2 != 0) {
                throw new IllegalArgumentException("NF4 blocks hold an even number of weights, got " + blockSize);
            }
        }

        public long blocks(long[] shape) {
            return (elements(shape) + blockSize - 1) / blockSize;
        }

        @Override
        public long storedBytes(long[] shape) {
            long blocks = blocks(shape);
            return blocks * blockSize / 2 + blocks * 4;
        }
    }

    /**
     * Signed integers of {@code bits} (8, or 4 packed two per byte) with a float32 scale per output row
     * ({@code blockSize} 0: per-channel) or per block of {@code blockSize} consecutive weights of a row, and with
     * {@code zeroPoints} an integer zero point beside each scale (asymmetric): a weight is
     * {@code (q - zeroPoint) · scale}. Rows are packed on their own (a 4-bit row of odd width ends in half a byte),
     * and each zero point takes a byte.
     */
    record Int(int bits, int blockSize, boolean zeroPoints) implements WeightFormat {
        public Int {
            if (bits != 8 && bits != 4) {
                throw new IllegalArgumentException("integer weights have 8 or 4 bits, got " + bits);
            }
            if (blockSize < 0) {
                throw new IllegalArgumentException("block size must be 0 (per channel) or positive, got " + blockSize);
            }
        }

        /** Scales (and zero points) per row of {@code columns} weights. */
        public long groupsPerRow(long columns) {
            return blockSize == 0 ? 1 : (columns + blockSize - 1) / blockSize;
        }

        /** Bytes one packed row of {@code columns} weights takes. */
        public long rowBytes(long columns) {
            return bits == 8 ? columns : (columns + 1) / 2;
        }

        @Override
        public long storedBytes(long[] shape) {
            long columns = shape.length == 0 ? 1 : shape[shape.length - 1];
            long rows = columns == 0 ? 0 : elements(shape) / columns;
            long groups = rows * groupsPerRow(columns);
            return rows * rowBytes(columns) + groups * 4 + (zeroPoints ? groups : 0);
        }
    }

    /** A block format of GGUF files, as llama.cpp (ggml) defines it: weights per block and bytes per block. */
    record Gguf(GgufType type) implements WeightFormat {
        public Gguf {
            Objects.requireNonNull(type, "type is null");
        }

        @Override
        public long storedBytes(long[] shape) {
            return (elements(shape) + type.blockSize() - 1) / type.blockSize() * type.blockBytes();
        }
    }

    /** The ggml block types Crucible knows, with ggml's type id, weights per block and bytes per block. */
    enum GgufType {
        Q4_0(2, 32, 18), Q5_0(6, 32, 22), Q8_0(8, 32, 34), Q4_K(12, 256, 144), Q6_K(14, 256, 210);

        private final int ggmlType;
        private final int blockSize;
        private final int blockBytes;

        GgufType(int ggmlType, int blockSize, int blockBytes) {
            this.ggmlType = ggmlType;
            this.blockSize = blockSize;
            this.blockBytes = blockBytes;
        }

        /** The {@code ggml_type} number a GGUF file stores. */
        public int ggmlType() {
            return ggmlType;
        }

        public int blockSize() {
            return blockSize;
        }

        public int blockBytes() {
            return blockBytes;
        }
    }

    private static long elements(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count = Math.multiplyExact(count, extent);
        }
        return count;
    }
}
