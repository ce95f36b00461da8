package dev.crucible.api.quant;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The compressed-tensors tensors and config, read back by an unpacker written here from the format's description
 * (codes {@code q + 2^(bits-1)} packed eight to an int32 from the low bits up, along the columns; 4-bit zero points
 * packed the same way down the rows), never by the code under test.
 */
public class CompressedTensorsTest {
    private static final ObjectMapper JSON = new ObjectMapper();

    /** 10 rows (not a multiple of 8) of 20 columns (not a multiple of 8), N(0, 0.05²). */
    private static float[] sample() {
        Random random = new Random(3);
        float[] values = new float[10 * 20];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) (random.nextGaussian() * 0.05);
        }
        return values;
    }

    private static final long[] SHAPE = {10, 20};

    private static Map<String, WritableTensor> byName(List<dev.crucible.api.tensor.HostTensor> parts) {
        List<WritableTensor> tensors = parts.stream().map(WritableTensor::of).toList();
        Map<String, WritableTensor> map = new LinkedHashMap<>();
        tensors.forEach(t -> map.put(t.name(), t));
        return map;
    }

    private static int[] ints(WritableTensor tensor) {
        ByteBuffer bytes = tensor.bytes().asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        int[] out = new int[bytes.remaining() / 4];
        bytes.asIntBuffer().get(out);
        return out;
    }

    /** The signed codes of {@code parts} as IntCodec keeps them, one per weight. */
    private static int[] codes(QuantizedHostTensor parts) {
        WeightFormat.Int format = (WeightFormat.Int) parts.format();
        byte[] data = parts.data().toByteArray();
        int rows = (int) SHAPE[0];
        int columns = (int) SHAPE[1];
        int[] out = new int[rows * columns];
        for (int r = 0; r < rows; r++) {
            for (int c = 0; c < columns; c++) {
                out[r * columns + c] = format.bits() == 8 ? data[r * columns + c]
                        : ((data[r * (int) format.rowBytes(columns) + c / 2] >> (c % 2 * 4)) & 15) - 8;
            }
        }
        return out;
    }

    @Test
    void int8IsTheCodesAsInt8WithScalesInTheModelsDtype() {
        WeightFormat.Int format = new WeightFormat.Int(8, 0, false);
        QuantizedHostTensor parts = new IntCodec(format, DType.BF16).encode("m.weight", sample(), SHAPE);
        Map<String, WritableTensor> stored = byName(CompressedTensors.tensors(parts, DType.BF16));
        assertEquals(List.of("m.weight", "m.weight_scale"), List.copyOf(stored.keySet()));
        assertEquals(DType.I8, stored.get("m.weight").dtype());
        assertArrayEquals(SHAPE, stored.get("m.weight").shape());
        assertEquals(DType.BF16, stored.get("m.weight_scale").dtype());
        assertArrayEquals(new long[] {10, 1}, stored.get("m.weight_scale").shape());
        byte[] codes = stored.get("m.weight").bytes().toArray(java.lang.foreign.ValueLayout.JAVA_BYTE);
        int[] expected = codes(parts);
        for (int i = 0; i < codes.length; i++) {
            assertEquals(expected[i], codes[i], "weight " + i);
        }
        assertRoundTrip(parts, stored);
    }

    @Test
    void int4PacksEightCodesPerInt32AlongTheRowAndZeroPointsDownTheColumns() {
        WeightFormat.Int format = new WeightFormat.Int(4, 8, true);
        QuantizedHostTensor parts = new IntCodec(format, DType.F16).encode("m.weight", sample(), SHAPE);
        Map<String, WritableTensor> stored = byName(CompressedTensors.tensors(parts, DType.F16));
        assertEquals(List.of("m.weight_packed", "m.weight_shape", "m.weight_scale", "m.weight_zero_point"),
                List.copyOf(stored.keySet()));
        assertEquals(DType.I32, stored.get("m.weight_packed").dtype());
        assertArrayEquals(new long[] {10, 3}, stored.get("m.weight_packed").shape(), "ceil(20 / 8) int32 per row");
        assertArrayEquals(new long[] {10, 3}, stored.get("m.weight_scale").shape(), "ceil(20 / 8) groups per row");
        assertEquals(DType.I32, stored.get("m.weight_zero_point").dtype());
        assertArrayEquals(new long[] {2, 3}, stored.get("m.weight_zero_point").shape(), "ceil(10 / 8) x groups");
        ByteBuffer extents = stored.get("m.weight_shape").bytes().asByteBuffer().order(ByteOrder.LITTLE_ENDIAN);
        assertEquals(10, extents.getLong(0));
        assertEquals(20, extents.getLong(8));

        int[] packed = ints(stored.get("m.weight_packed"));
        int[] expected = codes(parts);
        for (int r = 0; r < 10; r++) {
            for (int c = 0; c < 20; c++) {
                int word = packed[r * 3 + c / 8];
                assertEquals(expected[r * 20 + c], ((word >>> (4 * (c % 8))) & 15) - 8, "row " + r + " column " + c);
            }
        }
        int[] zeros = ints(stored.get("m.weight_zero_point"));
        byte[] expectedZeros = parts.zeroPoints().toByteArray();
        for (int r = 0; r < 10; r++) {
            for (int g = 0; g < 3; g++) {
                int word = zeros[(r / 8) * 3 + g];
                assertEquals(expectedZeros[r * 3 + g], ((word >>> (4 * (r % 8))) & 15) - 8, "row " + r + " group " + g);
            }
        }
        assertRoundTrip(parts, stored);
    }

    /** What is stored reads back as the same parts, which dequantize to what the stored scales say. */
    private static void assertRoundTrip(QuantizedHostTensor parts, Map<String, WritableTensor> stored) {
        QuantizedHostTensor read = CompressedTensors.parts("m.weight", (WeightFormat.Int) parts.format(),
                name -> stored.containsKey(name) ? new HostTensor(name, stored.get(name).dtype(),
                        stored.get(name).shape(), stored.get(name).bytes()) : null);
        assertSameParts(parts, read);
        assertArrayEquals(SHAPE, read.shape());
        assertArrayEquals(WeightCodec.of(parts.format()).decode(parts), WeightCodec.of(read.format()).decode(read));
    }

    /** The same format, shape and part values (heap parts compare by value, not by memory). */
    public static void assertSameParts(QuantizedHostTensor expected, QuantizedHostTensor actual) {
        assertEquals(expected.format(), actual.format());
        assertArrayEquals(expected.shape(), actual.shape());
        assertArrayEquals(expected.data().shape(), actual.data().shape());
        assertEquals(expected.data().dtype(), actual.data().dtype());
        assertArrayEquals(expected.data().toByteArray(), actual.data().toByteArray());
        assertArrayEquals(expected.scales().toFloatArray(), actual.scales().toFloatArray());
        assertEquals(expected.zeroPoints() == null, actual.zeroPoints() == null);
        if (expected.zeroPoints() != null) {
            assertArrayEquals(expected.zeroPoints().toByteArray(), actual.zeroPoints().toByteArray());
        }
    }

    @Test
    void theConfigSaysWhatWasWrittenAndReadsBack() {
        for (QuantizationConfig quantization : List.of(QuantizationConfig.parse("int8", null, null, null, false),
                QuantizationConfig.parse("int4", null, null, null, false),
                QuantizationConfig.parse("int4", "asymmetric", 64, null, false),
                QuantizationConfig.parse("int8", "asymmetric", null, null, false))) {
            ObjectNode config = JSON.createObjectNode();
            config.set("quantization_config", CompressedTensors.quantizationConfig(quantization, List.of("lm_head")));
            JsonNode written = config.get("quantization_config");
            assertEquals("compressed-tensors", written.get("quant_method").asText());
            assertEquals(quantization.method().bits() == 8 ? "int-quantized" : "pack-quantized",
                    written.get("format").asText());
            JsonNode weights = written.get("config_groups").get("group_0").get("weights");
            assertEquals(quantization.method().bits(), weights.get("num_bits").asInt());
            assertEquals(quantization.scheme() != QuantizationConfig.Scheme.ASYMMETRIC, weights.get("symmetric").asBoolean());
            assertEquals(quantization.blockSize() == 0 ? "channel" : "group", weights.get("strategy").asText());
            QuantizationConfig read = CompressedTensors.read(config, "config.json").orElseThrow();
            assertEquals(quantization.format(), read.format(), quantization.describe());
            assertEquals(List.of("lm_head", "model.embed_tokens"), read.exclude());
        }
    }

    @Test
    void foldersItCannotReadAreOneLineErrors() throws Exception {
        JsonNode gptq = JSON.readTree("{\"quantization_config\": {\"quant_method\": \"gptq\", \"bits\": 4}}");
        assertEquals("config.json: quantization_config quant_method 'gptq' is not supported; Crucible reads "
                        + "compressed-tensors folders (runner quantize writes them) and full-precision ones",
                assertThrows(UserInputException.class, () -> CompressedTensors.read(gptq, "config.json")).getMessage());
        JsonNode w8a8 = JSON.readTree("{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", "
                + "\"format\": \"int-quantized\", \"config_groups\": {\"group_0\": {\"weights\": {\"num_bits\": 8, "
                + "\"type\": \"int\", \"strategy\": \"channel\"}, \"input_activations\": {\"num_bits\": 8}}}}}");
        assertTrue(assertThrows(UserInputException.class, () -> CompressedTensors.read(w8a8, "config.json"))
                .getMessage().contains("quantizes input_activations; Crucible reads weight-only quantization"));
        assertTrue(CompressedTensors.read(JSON.readTree("{\"hidden_size\": 8}"), "config.json").isEmpty());
    }
}
