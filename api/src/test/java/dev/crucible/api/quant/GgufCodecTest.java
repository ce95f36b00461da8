package dev.crucible.api.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat.GgufType;
import java.io.IOException;
import java.io.InputStream;
import java.util.Objects;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.junit.jupiter.api.Test;

/**
 * GGUF blocks: every type byte for byte against llama.cpp's reference quantizers on one input (the goldens in
 * {@code src/test/resources/gguf}, written by {@code scripts/gguf-block-goldens.py} from llama.cpp's libggml-base),
 * Q8_0 and Q4_0 also against a quantizer written here from the format's definition, and every type's
 * dequantization within the format's error.
 */
public class GgufCodecTest {

    static final int ROWS = 8;
    static final int COLUMNS = 512;

    /**
     * 8 rows of 512: ordinary, half zero, all positive, one outlier per block of 32, tiny, on a grid of halves
     * (rounding ties), all negative and large. Keep in step with {@code scripts/gguf-block-goldens.py}.
     */
    static float[] input() {
        double[] amplitudes = {1.0, 0.0, 0.02, 0.05, 1e-6, 3.0, 0.5, 100.0};
        float[] values = new float[ROWS * COLUMNS];
        int state = 0x9E3779B9;
        for (int i = 0; i < values.length; i++) {
            state ^= state << 13;
            state ^= state >>> 17;
            state ^= state << 5;
            double u = (state >>> 8) / (double) (1 << 24);
            int row = i / COLUMNS;
            int column = i % COLUMNS;
            int block = column / 32;
            double v = (u * 2 - 1) * amplitudes[row] * (1 + block % 3);
            if (row == 1 && column >= 256) {
                v = (u * 2 - 1) * 0.25;
            }
            if (row == 2) {
                v = Math.abs(v) + 0.01;
            }
            if (row == 3 && column % 32 == 7) {
                v = 40.0 * (block % 2 == 0 ? 1 : -1);
            }
            if (row == 5) {
                v = Math.rint(v * 2) / 2;
            }
            if (row == 6) {
                v = -Math.abs(v);
            }
            values[i] = (float) v;
        }
        return values;
    }

    @ParameterizedTest
    @EnumSource(GgufType.class)
    void blocksAreLlamaCppsReferenceQuantizersByteForByte(GgufType type) {
        byte[] ours = new GgufCodec(type).encode(input());
        byte[] theirs = golden(type);
        assertEquals(theirs.length, ours.length, "bytes");
        for (int block = 0; block < ours.length / type.blockBytes(); block++) {
            int at = block * type.blockBytes();
            assertArrayEquals(java.util.Arrays.copyOfRange(theirs, at, at + type.blockBytes()),
                    java.util.Arrays.copyOfRange(ours, at, at + type.blockBytes()), type + " block " + block);
        }
    }

    /**
     * Q8_0 from its definition: per 32 weights an fp16 scale d = max|x| / 127, then each weight as the int8
     * round-half-away-from-zero of x / d (x times the reciprocal of the unrounded d).
     */
    @Test
    void q8_0MatchesItsDefinition() {
        float[] x = input();
        byte[] expected = new byte[x.length / 32 * 34];
        for (int b = 0; b < x.length / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) {
                amax = Math.max(amax, Math.abs(x[32 * b + j]));
            }
            float d = amax / 127;
            float inverse = d == 0 ? 0 : 1 / d;
            short half = HalfFloats.floatToF16(d);
            expected[34 * b] = (byte) half;
            expected[34 * b + 1] = (byte) (half >> 8);
            for (int j = 0; j < 32; j++) {
                float scaled = x[32 * b + j] * inverse;
                expected[34 * b + 2 + j] = (byte) (scaled < 0 ? -Math.floor(-scaled + 0.5) : Math.floor(scaled + 0.5));
            }
        }
        assertArrayEquals(expected, new GgufCodec(GgufType.Q8_0).encode(x));
    }

    /**
     * Q4_0 from its definition: per 32 weights d = m / -8 with m the weight of largest magnitude (the first, with its
     * sign), codes min(15, trunc(x / d + 8.5)); byte j holds weight j in the low nibble and weight j + 16 in the high.
     */
    @Test
    void q4_0MatchesItsDefinition() {
        float[] x = input();
        byte[] expected = new byte[x.length / 32 * 18];
        for (int b = 0; b < x.length / 32; b++) {
            float largest = 0;
            for (int j = 0; j < 32; j++) {
                if (Math.abs(x[32 * b + j]) > Math.abs(largest)) {
                    largest = x[32 * b + j];
                }
            }
            float d = largest / -8;
            float inverse = d == 0 ? 0 : 1 / d;
            short half = HalfFloats.floatToF16(d);
            expected[18 * b] = (byte) half;
            expected[18 * b + 1] = (byte) (half >> 8);
            for (int j = 0; j < 16; j++) {
                int low = Math.min(15, (int) (x[32 * b + j] * inverse + 8.5f));
                int high = Math.min(15, (int) (x[32 * b + 16 + j] * inverse + 8.5f));
                expected[18 * b + 2 + j] = (byte) (low | high << 4);
            }
        }
        assertArrayEquals(expected, new GgufCodec(GgufType.Q4_0).encode(x));
    }

    /**
     * Each type's dequantized values stay within its error per block of 32, relative to the block's largest
     * magnitude m: Q8_0 half a step of m / 127 (and the fp16 rounding of the scale); Q4_0 and Q5_0 one step of m / 8
     * and m / 16 (the scale maps the largest weight to the most negative code, so the other side can clip by one);
     * the K-quants, whose sub-block scales are themselves 6 or 8 bits, two steps. The row of tiny weights checks only
     * the bytes above: its scales are below fp16's normal range, where the format itself gives out.
     */
    @ParameterizedTest
    @EnumSource(GgufType.class)
    void dequantizedValuesAreWithinTheFormatsError(GgufType type) {
        float[] x = input();
        GgufCodec codec = new GgufCodec(type);
        QuantizedHostTensor blocks = codec.encode("w", x, new long[] {ROWS, COLUMNS});
        assertEquals(DType.U8, blocks.data().dtype());
        assertArrayEquals(new long[] {ROWS, COLUMNS / type.blockSize() * type.blockBytes()}, blocks.data().shape());
        float[] restored = codec.decode(blocks);
        double step = switch (type) {
            case Q8_0 -> 0.6 / 127;
            case Q4_0 -> 1.01 / 8;
            case Q5_0 -> 1.01 / 16;
            case Q4_K -> 2.0 / 15;
            case Q6_K -> 2.0 / 31;
        };
        for (int b = 0; b < x.length / 32; b++) {
            if (b * 32 / COLUMNS == 4) {
                continue;
            }
            float max = 0;
            for (int j = 0; j < 32; j++) {
                max = Math.max(max, Math.abs(x[32 * b + j]));
            }
            double tolerance = step * max + 1e-7;
            for (int j = 0; j < 32; j++) {
                int i = 32 * b + j;
                assertTrue(Math.abs(restored[i] - x[i]) <= tolerance,
                        type + " element " + i + ": " + x[i] + " came back as " + restored[i] + " (tolerance " + tolerance + ")");
            }
        }
    }

    @Test
    void rowsMustBeWholeBlocks() {
        GgufCodec codec = new GgufCodec(GgufType.Q4_K);
        assertThrows(IllegalArgumentException.class, () -> codec.encode("w", new float[2 * 128], new long[] {2, 128}));
        assertTrue(new GgufCodec(GgufType.Q8_0).takes(128));
    }

    @Test
    void nearestIntRoundsHalvesToEvenAndRoundfAwayFromZero() {
        assertEquals(2, GgufCodec.nearestInt(2.5f));
        assertEquals(-2, GgufCodec.nearestInt(-2.5f));
        assertEquals(4, GgufCodec.nearestInt(3.5f));
        assertEquals(3f, GgufCodec.roundf(2.5f));
        assertEquals(-3f, GgufCodec.roundf(-2.5f));
        assertEquals(0f, GgufCodec.roundf(0.49999997f));
    }

    private static byte[] golden(GgufType type) {
        String name = "/gguf/golden-" + type.name().toLowerCase(java.util.Locale.ROOT) + ".bin";
        try (InputStream in = Objects.requireNonNull(GgufCodecTest.class.getResourceAsStream(name), name)) {
            return in.readAllBytes();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
