package dev.crucible.accelerator.cpu.kernels;

import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import jdk.incubator.vector.ByteVector;
import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorShape;
import jdk.incubator.vector.VectorShuffle;
import jdk.incubator.vector.VectorSpecies;

/**
 * Matrix-vector products against integer weights ({@code WeightFormat.Int}) kept as their codes: the codes stream
 * from memory once, a quarter (8 bits) or an eighth (4 bits) of float32's bytes, and widen to float32 in registers
 * ({@code vpmovsxbd} + {@code vcvtdq2ps} on x86), where they meet the input. A decode step is bound by the bytes
 * it reads, so this is what makes a quantized model decode faster, not only fit.
 *
 * <p>Per group g of a row (the whole row when per-channel) {@code y += s_g · Σ_k (q_k - z_g) · x_k}. The group's
 * products accumulate in a vector that is scaled by s_g as a vector, so a row ends in one horizontal sum however
 * many groups it has. 4-bit bytes hold column 2j in the low nibble and 2j + 1 in the high: the input is split into
 * its even and odd columns once per call, so that a byte vector's low nibbles meet the even columns and its high
 * nibbles the odd ones, with no shuffle in the inner loop; the nibble's offset (8, plus the zero point) is taken
 * off as bytes before widening. An 8-bit zero point is taken off the group's sum instead
 * ({@code z_g · Σ_{k∈g} x_k}, the input's group sums made once per call): {@code q - z} does not fit a byte.
 *
 * <p>Codes are loaded 16 bytes at a time and widened to the CPU's widest float vectors, in one part (512 bits) or
 * more. Measured on Zen 4, one thread: 16 bytes to a 512-bit float vector ran at about 0.6-0.7 of a streaming read,
 * while 8 bytes to a 256-bit one ran at a fifth of that (that conversion is not compiled to the two instructions it
 * takes), and 8-bit codes multiplied as shorts after quantizing the input (there is no dot-product instruction in
 * the Vector API, so VNNI cannot be reached from it) at a twentieth.
 */
final class QuantizedMatVec {
    static final VectorSpecies<Float> FLOATS = FloatVector.SPECIES_PREFERRED.vectorBitSize() > 512
            ? FloatVector.SPECIES_512 : FloatVector.SPECIES_PREFERRED;
    private static final int LANES = FLOATS.length();
    /** Codes per load. */
    private static final VectorSpecies<Byte> BYTES = ByteVector.SPECIES_128;
    private static final int STEP = BYTES.length();
    /** Float vectors one load of codes widens to. */
    private static final int PARTS = Math.max(1, STEP / LANES);
    private static final ByteOrder ORDER = ByteOrder.LITTLE_ENDIAN;
    private static final ValueLayout.OfFloat F32 = ValueLayout.JAVA_FLOAT_UNALIGNED;

    private QuantizedMatVec() {
    }

    /**
     * What one call's input looks like to the kernels: float32 rows in native memory, for 4-bit weights split into
     * even and odd columns, and for zero points each row's sums per group.
     *
     * @param x      {@code rows × in} floats; for 4 bits {@code rows × 2·half}: each row's even columns, then its odd
     * @param sums   {@code rows × groups} sums of x per group, or null when no zero point needs them
     * @param half   columns per row of each half (4 bits: {@code ceil(in / 2)})
     */
    record Input(MemorySegment x, MemorySegment sums, int rows, int in, int half, int groups, int block) {
    }

    /**
     * Lays {@code source} ({@code rows × in} floats in native memory) out as {@link Input} wants it in
     * {@code scratch}: as it is for 8 bits, split for 4; group sums after the rows when {@code sums}.
     */
    static Input prepare(MemorySegment source, MemorySegment scratch, int bits, int rows, int in, int block,
                         boolean sums) {
        int groups = (in + block - 1) / block;
        int half = (in + 1) / 2;
        long rowFloats = bits == 8 ? in : 2L * half;
        if (bits == 8) {
            MemorySegment.copy(source, 0, scratch, 0, 4L * rows * in);
        } else {
            for (int r = 0; r < rows; r++) {
                long at = 4L * r * rowFloats;
                for (int j = 0; j < half; j++) {
                    scratch.set(F32, at + 4L * j, source.getAtIndex(F32, (long) r * in + 2L * j));
                    float odd = 2 * j + 1 < in ? source.getAtIndex(F32, (long) r * in + 2L * j + 1) : 0f;
                    scratch.set(F32, at + 4L * (half + j), odd);
                }
            }
        }
        MemorySegment groupSums = null;
        if (sums) {
            groupSums = scratch.asSlice(4L * rows * rowFloats, 4L * rows * groups);
            for (int r = 0; r < rows; r++) {
                for (int g = 0; g < groups; g++) {
                    float sum = 0f;
                    for (int k = g * block; k < Math.min(in, (g + 1) * block); k++) {
                        sum += source.getAtIndex(F32, (long) r * in + k);
                    }
                    groupSums.setAtIndex(F32, (long) r * groups + g, sum);
                }
            }
        }
        return new Input(scratch, groupSums, rows, in, half, groups, block);
    }

    /** Floats {@link #prepare} needs in its scratch. */
    static long scratchFloats(int bits, int rows, int in, int block, boolean sums) {
        int groups = (in + block - 1) / block;
        long rowFloats = bits == 8 ? in : 2L * ((in + 1) / 2);
        return rows * rowFloats + (sums ? (long) rows * groups : 0);
    }

    /**
     * Outputs {@code [from, to)} of every row of 8-bit weights: {@code y[r·out + n]}, each rounded once to the dtype.
     *
     * @param zeros the zero points {@code [out, groups]} as bytes, or null (symmetric)
     */
    static void int8(MemorySegment codes, MemorySegment scales, MemorySegment zeros, Input input, MemorySegment bias,
                     boolean bf16, MemorySegment y, int out, int from, int to) {
        int in = input.in();
        int groups = input.groups();
        int block = input.block();
        for (int n = from; n < to; n++) {
            long row = (long) n * in;
            float add = bias == null ? 0f : MatVec.load(bias, bf16, n);
            for (int r = 0; r < input.rows(); r++) {
                long x = 4L * r * in;
                FloatVector total = FloatVector.zero(FLOATS);
                float correction = 0f;
                float tail = 0f;
                for (int g = 0; g < groups; g++) {
                    int start = g * block;
                    int end = Math.min(in, start + block);
                    float scale = scales.getAtIndex(F32, (long) n * groups + g);
                    FloatVector sum = FloatVector.zero(FLOATS);
                    FloatVector sum2 = FloatVector.zero(FLOATS);
                    int k = start;
                    for (; k + 2 * STEP <= end; k += 2 * STEP) {
                        ByteVector first = ByteVector.fromMemorySegment(BYTES, codes, row + k, ORDER);
                        ByteVector second = ByteVector.fromMemorySegment(BYTES, codes, row + k + STEP, ORDER);
                        for (int part = 0; part < PARTS; part++) {
                            sum = toFloats(first, part).fma(input(input.x(), x + 4L * (k + part * LANES)), sum);
                            sum2 = toFloats(second, part).fma(input(input.x(), x + 4L * (k + STEP + part * LANES)), sum2);
                        }
                    }
                    for (; k + STEP <= end; k += STEP) {
                        ByteVector first = ByteVector.fromMemorySegment(BYTES, codes, row + k, ORDER);
                        for (int part = 0; part < PARTS; part++) {
                            sum = toFloats(first, part).fma(input(input.x(), x + 4L * (k + part * LANES)), sum);
                        }
                    }
                    float rest = 0f;
                    for (; k < end; k++) {
                        rest += codes.get(ValueLayout.JAVA_BYTE, row + k) * input.x().get(F32, x + 4L * k);
                    }
                    total = sum.add(sum2).fma(FloatVector.broadcast(FLOATS, scale), total);
                    tail += rest * scale;
                    if (zeros != null) {
                        correction += zeros.get(ValueLayout.JAVA_BYTE, (long) n * groups + g) * scale
                                * input.sums().getAtIndex(F32, (long) r * groups + g);
                    }
                }
                float dot = total.reduceLanes(VectorOperators.ADD) + tail - correction;
                MatVec.store(y, bf16, (long) r * out + n, dot + add);
            }
        }
    }

    /**
     * Outputs {@code [from, to)} of every row of 4-bit weights ({@code ceil(in / 2)} bytes per weight row, the input
     * split by {@link #prepare}).
     *
     * @param zeros the zero points {@code [out, groups]} as bytes, or null (symmetric)
     */
    static void int4(MemorySegment codes, MemorySegment scales, MemorySegment zeros, Input input, MemorySegment bias,
                     boolean bf16, MemorySegment y, int out, int from, int to) {
        int half = input.half();
        int groups = input.groups();
        int pairsPerGroup = input.block() / 2;
        for (int n = from; n < to; n++) {
            long row = (long) n * half;
            float add = bias == null ? 0f : MatVec.load(bias, bf16, n);
            for (int r = 0; r < input.rows(); r++) {
                long even = 8L * r * half;
                long odd = even + 4L * half;
                FloatVector total = FloatVector.zero(FLOATS);
                float tail = 0f;
                for (int g = 0; g < groups; g++) {
                    int start = g * pairsPerGroup;
                    int end = Math.min(half, start + pairsPerGroup);
                    float scale = scales.getAtIndex(F32, (long) n * groups + g);
                    int offset = 8 + (zeros == null ? 0 : zeros.get(ValueLayout.JAVA_BYTE, (long) n * groups + g));
                    ByteVector offsets = ByteVector.broadcast(BYTES, (byte) offset);
                    FloatVector sum = FloatVector.zero(FLOATS);
                    FloatVector sum2 = FloatVector.zero(FLOATS);
                    int j = start;
                    for (; j + STEP <= end; j += STEP) {
                        ByteVector pairs = ByteVector.fromMemorySegment(BYTES, codes, row + j, ORDER);
                        ByteVector low = pairs.and((byte) 15).sub(offsets);
                        ByteVector high = pairs.lanewise(VectorOperators.LSHR, 4).and((byte) 15).sub(offsets);
                        for (int part = 0; part < PARTS; part++) {
                            sum = toFloats(low, part).fma(input(input.x(), even + 4L * (j + part * LANES)), sum);
                            sum2 = toFloats(high, part).fma(input(input.x(), odd + 4L * (j + part * LANES)), sum2);
                        }
                    }
                    float rest = 0f;
                    for (; j < end; j++) {
                        int pair = codes.get(ValueLayout.JAVA_BYTE, row + j) & 0xff;
                        rest += ((pair & 15) - offset) * input.x().get(F32, even + 4L * j)
                                + ((pair >>> 4) - offset) * input.x().get(F32, odd + 4L * j);
                    }
                    total = sum.add(sum2).fma(FloatVector.broadcast(FLOATS, scale), total);
                    tail += rest * scale;
                }
                MatVec.store(y, bf16, (long) r * out + n, total.reduceLanes(VectorOperators.ADD) + tail + add);
            }
        }
    }

    private static FloatVector toFloats(ByteVector bytes, int part) {
        return (FloatVector) bytes.convertShape(VectorOperators.B2F, FLOATS, part);
    }

    private static FloatVector input(MemorySegment x, long byteOffset) {
        return FloatVector.fromMemorySegment(FLOATS, x, byteOffset, ORDER);
    }

    /**
     * Rows {@code [from, to)} of the dense weight, each element rounded once to the dtype: the dequantization a
     * prefill's matrix product starts from (every product of more rows than the kernels take). A vector of codes at a
     * time: as one element per call it ran at ~0.7 G weights/s, which made an int8 prefill of a Qwen2.5-0.5B shape
     * spend more time dequantizing than multiplying (108 tokens/s against bf16's 196). Each element is
     * {@code (q - z) · s} in float32 as before: {@code q - z} is a small integer, exact as a float, so the vector form
     * computes the same float; bfloat16 is rounded by {@link MatVec#bf16Bits}, the vector form of
     * {@link MatVec#floatToBf16}. A group's tail past whole vectors, and 4-bit groups that start at an odd column, take
     * the scalar loop.
     */
    static void dequantize(int bits, MemorySegment codes, MemorySegment scales, MemorySegment zeros, boolean bf16,
                           MemorySegment y, int in, int block, int from, int to) {
        int groups = (in + block - 1) / block;
        int rowBytes = bits == 8 ? in : (in + 1) / 2;
        for (int n = from; n < to; n++) {
            long row = (long) n * rowBytes;
            long first = (long) n * in;
            for (int g = 0; g < groups; g++) {
                float scale = scales.getAtIndex(F32, (long) n * groups + g);
                int zero = zeros == null ? 0 : zeros.get(ValueLayout.JAVA_BYTE, (long) n * groups + g);
                int start = g * block;
                int end = Math.min(in, start + block);
                int k = bits == 8 ? dequantizeInt8(codes, row, scale, zero, bf16, y, first, start, end)
                        : dequantizeInt4(codes, row, scale, zero, bf16, y, first, start, end);
                for (; k < end; k++) {
                    int q;
                    if (bits == 8) {
                        q = codes.get(ValueLayout.JAVA_BYTE, row + k);
                    } else {
                        int pair = codes.get(ValueLayout.JAVA_BYTE, row + k / 2) & 0xff;
                        q = (k % 2 == 0 ? pair & 15 : pair >>> 4) - 8;
                    }
                    MatVec.store(y, bf16, first + k, (q - zero) * scale);
                }
            }
        }
    }

    /** Columns {@code [start, …)} of one 8-bit group in whole vectors; returns the first column left to do. */
    private static int dequantizeInt8(MemorySegment codes, long row, float scale, int zero, boolean bf16,
                                      MemorySegment y, long first, int start, int end) {
        FloatVector s = FloatVector.broadcast(FLOATS, scale);
        FloatVector z = FloatVector.broadcast(FLOATS, zero);
        int k = start;
        for (; k + STEP <= end; k += STEP) {
            ByteVector q = ByteVector.fromMemorySegment(BYTES, codes, row + k, ORDER);
            for (int part = 0; part < PARTS; part++) {
                FloatVector value = toFloats(q, part).sub(z).mul(s);
                long at = first + k + (long) part * LANES;
                if (bf16) {
                    MatVec.bf16Bits(value).convertShape(VectorOperators.I2S, HALF_SHORTS, 0)
                            .intoMemorySegment(y, 2 * at, ORDER);
                } else {
                    value.intoMemorySegment(y, 4 * at, ORDER);
                }
            }
        }
        return k;
    }

    /**
     * Columns {@code [start, …)} of one 4-bit group in whole vectors of bytes (two columns each: the low nibble the
     * even one); returns the first column left to do. The low and high nibbles' values are interleaved on the way
     * out: as bfloat16, two to an int (the even column in the low half, as little-endian memory wants it); as
     * float32, by a two-vector shuffle.
     */
    private static int dequantizeInt4(MemorySegment codes, long row, float scale, int zero, boolean bf16,
                                      MemorySegment y, long first, int start, int end) {
        if (start % 2 != 0) {
            return start;
        }
        FloatVector s = FloatVector.broadcast(FLOATS, scale);
        FloatVector offset = FloatVector.broadcast(FLOATS, 8 + zero);
        int k = start;
        for (; k + 2 * STEP <= end; k += 2 * STEP) {
            ByteVector pairs = ByteVector.fromMemorySegment(BYTES, codes, row + k / 2, ORDER);
            ByteVector low = pairs.and((byte) 15);
            ByteVector high = pairs.lanewise(VectorOperators.LSHR, 4).and((byte) 15);
            for (int part = 0; part < PARTS; part++) {
                FloatVector even = toFloats(low, part).sub(offset).mul(s);
                FloatVector odd = toFloats(high, part).sub(offset).mul(s);
                long at = first + k + 2L * part * LANES;
                if (bf16) {
                    MatVec.bf16Bits(even).or(MatVec.bf16Bits(odd).lanewise(VectorOperators.LSHL, 16))
                            .intoMemorySegment(y, 2 * at, ORDER);
                } else {
                    even.rearrange(ZIP_LOW, odd).intoMemorySegment(y, 4 * at, ORDER);
                    even.rearrange(ZIP_HIGH, odd).intoMemorySegment(y, 4 * (at + LANES), ORDER);
                }
            }
        }
        return k;
    }

    /** Shorts as many as a float vector has lanes: where {@link MatVec#bf16Bits} narrows to. */
    private static final VectorSpecies<Short> HALF_SHORTS =
            VectorSpecies.of(short.class, VectorShape.forBitSize(LANES * Short.SIZE));
    /**
     * Lanes {@code 0, L, 1, L+1, …} of two vectors (indices from L on name the second vector's lanes): the first
     * half of their interleaving; {@link #ZIP_HIGH} the second.
     */
    private static final VectorShuffle<Float> ZIP_LOW =
            VectorShuffle.fromOp(FLOATS, i -> i % 2 == 0 ? i / 2 : LANES + i / 2);
    private static final VectorShuffle<Float> ZIP_HIGH =
            VectorShuffle.fromOp(FLOATS, i -> i % 2 == 0 ? LANES / 2 + i / 2 : LANES + LANES / 2 + i / 2);
}
