package dev.crucible.accelerator.cpu.kernels;

import jdk.incubator.vector.FloatVector;
import jdk.incubator.vector.IntVector;
import jdk.incubator.vector.VectorMask;
import jdk.incubator.vector.VectorOperators;
import jdk.incubator.vector.VectorSpecies;

/**
 * Vector-valued helpers the token ops' and attention's loops use, apart from those loops: the runner's JVM options
 * keep every method of {@link TokenOps} and {@link DecodeAttention} from being inlined into its callers (see
 * {@link TokenOps}), and a helper that takes or returns a vector must be inlined, or each call boxes its vectors.
 * These are small, and the loops that call them are compiled on their own, so the JIT inlines them.
 */
final class Lanes {
    private static final VectorSpecies<Float> SPECIES = MatVec.WIDENED;

    private static final float LOG2_E = 1.44269504f;
    /** ln 2 split in two, so {@code n · LN2_HIGH} is exact for the {@code n} that occur (Cody and Waite). */
    private static final float LN2_HIGH = 0.693359375f;
    private static final float LN2_LOW = -2.12194440e-4f;
    /** 1.5 · 2²³: adding it rounds a float of magnitude below 2²² to an integer, held in the low mantissa bits. */
    private static final float ROUNDER = 12582912f;
    /** Below this e^x is under float32's smallest normal number; it counts as zero. */
    private static final float LOWEST = -87f;

    private Lanes() {
    }

    /** {@link TokenOps#round} of every lane: bfloat16 rounding, or none. */
    static FloatVector round(boolean bf16, FloatVector values) {
        if (!bf16) {
            return values;
        }
        return bf16Bits(values).lanewise(VectorOperators.LSHL, 16).reinterpretAsFloats();
    }

    /**
     * {@link MatVec#bf16Bits} for these loops' {@link MatVec#WIDENED} vectors: the same rule, a copy on purpose. One
     * method that both these 256-bit loops and the 512-bit dequantization call sees two vector classes, so the JIT
     * compiles it for neither: with the token ops calling the shared one, an int8 prefill fell from 142-163 to 80-88
     * tokens/s, its dequantization's rounding boxed (measured alternating with the build before).
     */
    static IntVector bf16Bits(FloatVector value) {
        IntVector bits = value.reinterpretAsInts();
        IntVector rounded = bits.add(bits.lanewise(VectorOperators.LSHR, 16).and(1)).add(0x7fff)
                .lanewise(VectorOperators.LSHR, 16);
        return rounded.blend(0x7fc0, bits.and(0x7fffffff).compare(VectorOperators.GT, 0x7f800000));
    }

    /**
     * {@code e^x} for {@code x <= 0}, lane by lane, within 3e-7 relative error, and exactly 0 below -87: x = n·ln 2 + r
     * with |r| <= ln 2 / 2, e^r by its Taylor polynomial to degree 6, 2^n by writing n into the exponent bits. The
     * JDK's vector exponential ({@code VectorOperators.EXP}) measured slower here than the scalar {@code Math.exp}.
     */
    static FloatVector exp(FloatVector x) {
        VectorMask<Float> underflow = x.compare(VectorOperators.LT, LOWEST);
        FloatVector clamped = x.max(LOWEST);
        FloatVector shifted = clamped.fma(LOG2_E, ROUNDER);
        FloatVector n = shifted.sub(ROUNDER);
        FloatVector r = n.fma(FloatVector.broadcast(SPECIES, -LN2_HIGH), clamped);
        r = n.fma(FloatVector.broadcast(SPECIES, -LN2_LOW), r);
        FloatVector p = FloatVector.broadcast(SPECIES, 1f / 720);
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 120));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 24));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f / 6));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 0.5f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f));
        p = p.fma(r, FloatVector.broadcast(SPECIES, 1f));
        // The rounded n sits in the low bits of `shifted`; minus the rounder's bits plus the exponent bias, shifted
        // into the exponent field, it is 2^n.
        IntVector exponent = shifted.reinterpretAsInts().sub(Float.floatToRawIntBits(ROUNDER) - 127)
                .lanewise(VectorOperators.LSHL, 23);
        return p.mul(exponent.reinterpretAsFloats()).blend(0f, underflow);
    }
}
