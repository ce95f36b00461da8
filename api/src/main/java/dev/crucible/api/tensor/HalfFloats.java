package dev.crucible.api.tensor;

/**
 * Conversions between float and the two 16-bit float formats checkpoints use.
 * Widening is exact; narrowing rounds to nearest, ties to even, as PyTorch and numpy do,
 * so exported bytes match what the Python ecosystem would write for the same values.
 */
public final class HalfFloats {
    private HalfFloats() {
    }

    /** bfloat16 is the top half of a float32, so widening is a shift. */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** Rounds to the nearest bfloat16, ties to even; NaN stays a (quiet) NaN with its sign. */
    public static short floatToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if (Float.isNaN(value)) {
            // Truncation could clear every mantissa bit and turn a NaN into infinity; force the quiet bit.
            return (short) ((bits >>> 16) | 0x0040);
        }
        int roundingBias = 0x7FFF + ((bits >>> 16) & 1);
        return (short) ((bits + roundingBias) >>> 16);
    }

    public static float f16ToFloat(short bits) {
        return Float.float16ToFloat(bits);
    }

    /** IEEE binary16, round to nearest even (the JDK's conversion is specified that way). */
    public static short floatToF16(float value) {
        return Float.floatToFloat16(value);
    }
}
