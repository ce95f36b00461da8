package dev.crucible.api.tensor;


import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class HalfFloatsTest {

    @Test
    void bf16RoundsToNearestTiesToEven() {
        assertEquals(0x3F80, bits(HalfFloats.floatToBf16(1f)));
        // 1 + 2^-8 lies exactly between 0x3F80 and 0x3F81: the even one wins.
        assertEquals(0x3F80, bits(HalfFloats.floatToBf16(Float.intBitsToFloat(0x3F808000))));
        // 0x3F818000 lies between 0x3F81 and 0x3F82: again the even one, this time upwards.
        assertEquals(0x3F82, bits(HalfFloats.floatToBf16(Float.intBitsToFloat(0x3F818000))));
        // Just above the midpoint rounds up, just below rounds down.
        assertEquals(0x3F81, bits(HalfFloats.floatToBf16(Float.intBitsToFloat(0x3F808001))));
        assertEquals(0x3F80, bits(HalfFloats.floatToBf16(Float.intBitsToFloat(0x3F807FFF))));
        assertEquals(0xC040, bits(HalfFloats.floatToBf16(-3f)));
        // The largest float rounds past bf16's largest finite value to infinity, as in PyTorch.
        assertEquals(0x7F80, bits(HalfFloats.floatToBf16(Float.MAX_VALUE)));
        assertEquals(0xFF80, bits(HalfFloats.floatToBf16(Float.NEGATIVE_INFINITY)));
    }

    @Test
    void bf16KeepsNaNsAsNaNs() {
        // A signalling NaN whose payload sits only in the low 16 bits would truncate to infinity.
        float nan = Float.intBitsToFloat(0x7F800001);
        assertTrue(Float.isNaN(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(nan))));
        assertTrue(Float.isNaN(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(Float.NaN))));
    }

    @Test
    void f16RoundsToNearestTiesToEven() {
        assertEquals(0x3C00, bits(HalfFloats.floatToF16(1f)));
        assertEquals(0x3C00, bits(HalfFloats.floatToF16(1f + 0x1p-11f)));
        assertEquals(0x3C02, bits(HalfFloats.floatToF16(1f + 3 * 0x1p-11f)));
        assertEquals(0x7BFF, bits(HalfFloats.floatToF16(65504f)));
        assertEquals(0x7C00, bits(HalfFloats.floatToF16(65520f)));
        assertEquals(0x0001, bits(HalfFloats.floatToF16(0x1p-24f)));
    }

    @Test
    void wideningIsExactForEveryBitPattern() {
        for (int i = 0; i < 0x10000; i++) {
            short half = (short) i;
            float bf = HalfFloats.bf16ToFloat(half);
            if (!Float.isNaN(bf)) {
                assertEquals(i, bits(HalfFloats.floatToBf16(bf)), "bf16 " + Integer.toHexString(i));
            }
            float f = HalfFloats.f16ToFloat(half);
            if (!Float.isNaN(f)) {
                assertEquals(i, bits(HalfFloats.floatToF16(f)), "f16 " + Integer.toHexString(i));
            }
        }
    }

    private static int bits(short value) {
        return value & 0xFFFF;
    }
}
