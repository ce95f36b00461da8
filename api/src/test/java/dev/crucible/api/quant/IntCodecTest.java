package dev.crucible.api.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** 8-bit and 4-bit integer weights: compressed-tensors' minmax arithmetic, the packing, the parts' shapes. */
public class IntCodecTest {

    /** 6 rows of 70 (a partial last block of 32 and of 64), N(0, 0.05²), one row all positive, one all zero. */
    static float[] sample() {
        Random random = new Random(5);
        float[] values = new float[6 * 70];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * 0.05);
        }
        for (int i = 70; i < 140; i++) {
            values[i] = Math.abs(values[i]) + 0.01f;
        }
        java.util.Arrays.fill(values, 280, 350, 0f);
        return values;
    }

    static final long[] SHAPE = {6, 70};

    @Test
    void aHostTensorReadRowByRowEncodesExactlyAsItsFloats() {
        float[] values = sample();
        for (DType dtype : new DType[] {DType.F32, DType.BF16, DType.F16}) {
            dev.crucible.api.tensor.HostTensor host = dev.crucible.api.tensor.HostTensor.ofFloats("w", dtype, SHAPE,
                    values);
            float[] stored = host.toFloatArray(); // the values as the dtype rounds them
            for (WeightFormat.Int format : new WeightFormat.Int[] {new WeightFormat.Int(8, 0, false),
                    new WeightFormat.Int(4, 32, false), new WeightFormat.Int(8, 64, true)}) {
                IntCodec codec = new IntCodec(format);
                QuantizedHostTensor expected = codec.encode("w", stored, SHAPE);
                QuantizedHostTensor rows = codec.encode(host);
                String where = dtype + " " + format;
                assertArrayEquals(expected.data().toByteArray(), rows.data().toByteArray(), where);
                assertArrayEquals(expected.scales().toByteArray(), rows.scales().toByteArray(), where);
                assertEquals(expected.zeroPoints() == null, rows.zeroPoints() == null, where);
                if (expected.zeroPoints() != null) {
                    assertArrayEquals(expected.zeroPoints().toByteArray(), rows.zeroPoints().toByteArray(), where);
                }
                assertEquals("w", rows.name());
                assertArrayEquals(SHAPE, rows.shape());
            }
        }
    }

    @Test
    void symmetricPerChannelInt8ScalesTheRowMaximumToHalfTheRange() {
        float[] values = sample();
        WeightFormat.Int format = new WeightFormat.Int(8, 0, false);
        QuantizedHostTensor parts = new IntCodec(format).encode("w", values, SHAPE);
        assertEquals(DType.I8, parts.data().dtype());
        assertArrayEquals(new long[] {6, 70}, parts.data().shape());
        assertArrayEquals(new long[] {6, 1}, parts.scales().shape());
        assertNull(parts.zeroPoints());
        float[] scales = parts.scales().toFloatArray();
        byte[] codes = parts.data().toByteArray();
        for (int row = 0; row < 6; row++) {
            float absmax = 0;
            for (int c = 0; c < 70; c++) {
                absmax = Math.max(absmax, Math.abs(values[row * 70 + c]));
            }
            float expected = Math.max(absmax / 127.5f, Math.ulp(1f));
            assertEquals(expected, scales[row], "row " + row);
            for (int c = 0; c < 70; c++) {
                int q = (int) Math.rint(Math.min(Math.max(values[row * 70 + c] / expected, -128), 127));
                assertEquals(q, codes[row * 70 + c], "row " + row + " column " + c);
            }
        }
        assertRestored(values, new IntCodec(format).decode(parts), 1 / 127.5 * 0.51);
    }

    @Test
    void asymmetricBlockwiseInt4HasZeroPointsAndPacksEvenColumnsLow() {
        float[] values = sample();
        WeightFormat.Int format = new WeightFormat.Int(4, 32, true);
        QuantizedHostTensor parts = new IntCodec(format).encode("w", values, SHAPE);
        assertEquals(DType.U8, parts.data().dtype());
        assertArrayEquals(new long[] {6, 35}, parts.data().shape());
        assertArrayEquals(new long[] {6, 3}, parts.scales().shape(), "blocks of 32, 32 and 6");
        assertArrayEquals(new long[] {6, 3}, parts.zeroPoints().shape());
        float[] scales = parts.scales().toFloatArray();
        byte[] zeros = parts.zeroPoints().toByteArray();
        byte[] packed = parts.data().toByteArray();
        for (int row = 0; row < 6; row++) {
            for (int group = 0; group < 3; group++) {
                int from = row * 70 + group * 32;
                int to = Math.min(row * 70 + 70, from + 32);
                float min = 0;
                float max = 0;
                for (int i = from; i < to; i++) {
                    min = Math.min(min, values[i]);
                    max = Math.max(max, values[i]);
                }
                float scale = Math.max((max - min) / 15f, Math.ulp(1f));
                int zero = (int) Math.rint(Math.min(Math.max(-8 - min / scale, -8), 7));
                assertEquals(scale, scales[row * 3 + group]);
                assertEquals(zero, zeros[row * 3 + group]);
                for (int i = from; i < to; i++) {
                    int column = i - row * 70;
                    int q = (int) Math.rint(Math.min(Math.max(values[i] / scale + zero, -8), 7));
                    int pair = packed[row * 35 + column / 2] & 0xff;
                    assertEquals(q + 8, column % 2 == 0 ? pair & 15 : pair >>> 4, "element " + i);
                }
            }
        }
        assertRestored(values, new IntCodec(format).decode(parts), 1 / 15.0 * 0.51);
        assertEquals(6 * 35 + 6 * 3 * 4 + 6 * 3, format.storedBytes(SHAPE));
    }

    /**
     * compressed-tensors' pack-quantized int32 words (pack_to_int32: word j holds columns 8j..8j+7, column 8j+i at bit
     * 4i, as q + 8) are our bytes read as little-endian int32: its files load without repacking.
     */
    @Test
    void int4BytesAreCompressedTensorsPackedWords() {
        float[] values = new float[2 * 64];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) Math.sin(i * 0.37);
        }
        WeightFormat.Int format = new WeightFormat.Int(4, 0, false);
        QuantizedHostTensor parts = new IntCodec(format).encode("w", values, new long[] {2, 64});
        float[] scales = parts.scales().toFloatArray();
        ByteBuffer words = ByteBuffer.wrap(parts.data().toByteArray()).order(ByteOrder.LITTLE_ENDIAN);
        for (int row = 0; row < 2; row++) {
            for (int word = 0; word < 8; word++) {
                int expected = 0;
                for (int i = 0; i < 8; i++) {
                    float x = values[row * 64 + 8 * word + i];
                    int q = (int) Math.rint(Math.min(Math.max(x / scales[row], -8), 7));
                    expected |= (q + 8) << (4 * i);
                }
                assertEquals(expected, words.getInt(4 * (row * 8 + word)), "row " + row + " word " + word);
            }
        }
    }

    @Test
    void scalesRoundedToTheFilesDtypeAreTheOnesQuantizedWith() {
        float[] values = sample();
        WeightFormat.Int format = new WeightFormat.Int(8, 32, false);
        QuantizedHostTensor parts = new IntCodec(format, DType.BF16).encode("w", values, SHAPE);
        for (float scale : parts.scales().toFloatArray()) {
            assertEquals(scale, HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(scale)), "a bfloat16 value");
        }
        assertRestored(values, new IntCodec(format).decode(parts), 1 / 127.5 * 0.51 + 1.0 / 128);
    }

    @Test
    void the4BitCodebookHoldsBothNibblesInColumnOrder() {
        float[] table = new IntCodec(new WeightFormat.Int(4, 0, false)).codebook().orElseThrow().toFloatArray();
        assertEquals(-8f, table[0]);
        assertEquals(0x3 - 8f, table[2 * 0xA3]);
        assertEquals(0xA - 8f, table[2 * 0xA3 + 1]);
        assertTrue(new IntCodec(new WeightFormat.Int(8, 0, false)).codebook().isEmpty());
    }

    /** Every restored value is within {@code steps} of its group's range (a scale is at most the range / levels). */
    static void assertRestored(float[] values, float[] restored, double steps) {
        for (int row = 0; row < 6; row++) {
            float min = 0;
            float max = 0;
            for (int c = 0; c < 70; c++) {
                min = Math.min(min, values[row * 70 + c]);
                max = Math.max(max, values[row * 70 + c]);
            }
            double tolerance = (max - min) * steps + 1e-6;
            for (int c = 0; c < 70; c++) {
                int i = row * 70 + c;
                assertTrue(Math.abs(restored[i] - values[i]) <= tolerance,
                        "element " + i + ": " + values[i] + " came back as " + restored[i]);
            }
        }
    }
}
