package dev.crucible.api.io;

import dev.crucible.api.tensor.HostTensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.lang.foreign.ValueLayout;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsFileTest {

    @TempDir
    Path dir;

    @Test
    void readsTensorsInHeaderOrderWithMetadata() {
        Path file = TestFiles.write(dir.resolve("a.safetensors"),
                "{\"__metadata__\":{\"format\":\"pt\"},"
                        + "\"z.weight\":{\"dtype\":\"F32\",\"shape\":[2,2],\"data_offsets\":[0,16]},"
                        + "\"a.bias\":{\"dtype\":\"I64\",\"shape\":[1],\"data_offsets\":[16,24]}}",
                concat(TestFiles.floatsLe(1f, -2f, 3.5f, 1e-3f), longLe(-7)));
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertEquals(List.of("z.weight", "a.bias"), List.copyOf(st.tensors().keySet()));
            assertEquals(Map.of("format", "pt"), st.metadata());
            TensorInfo info = st.tensors().get("z.weight");
            assertEquals(new TensorInfo("z.weight", DType.F32, new long[] {2, 2}, 0, 16), info);
            assertEquals(4, info.elementCount());

            HostTensor weight = st.tensor("z.weight");
            assertArrayEquals(new long[] {2, 2}, weight.shape());
            assertArrayEquals(new float[] {1f, -2f, 3.5f, 1e-3f}, weight.toFloatArray());
            assertEquals(3.5f, weight.floatAt(2));
            assertTrue(weight.data().isReadOnly());

            HostTensor bias = st.tensor("a.bias");
            assertEquals(DType.I64, bias.dtype());
            assertEquals(-7L, ByteBuffer.wrap(bias.toByteArray()).order(ByteOrder.LITTLE_ENDIAN).getLong());
            assertThrows(IllegalStateException.class, bias::toFloatArray);
        }
    }

    @Test
    void widensHalfFloatsExactly() {
        // bf16: 1.0, -3.0, smallest normal 2^-126, +inf; f16: 1.0, 0x3555 = 0.333251953125, subnormal 2^-24, 65504.
        Path file = TestFiles.write(dir.resolve("h.safetensors"),
                "{\"b\":{\"dtype\":\"BF16\",\"shape\":[4],\"data_offsets\":[0,8]},"
                        + "\"h\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[8,16]}}",
                concat(TestFiles.shortsLe(0x3F80, 0xC040, 0x0080, 0x7F80),
                        TestFiles.shortsLe(0x3C00, 0x3555, 0x0001, 0x7BFF)));
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertArrayEquals(new float[] {1f, -3f, 0x1p-126f, Float.POSITIVE_INFINITY},
                    st.tensor("b").toFloatArray());
            assertArrayEquals(new float[] {1f, 0.333251953125f, 0x1p-24f, 65504f}, st.tensor("h").toFloatArray());
            assertEquals(0.333251953125f, st.tensor("h").floatAt(1));
        }
    }

    @Test
    void acceptsEmptyTensorsAndAnEmptyFile() {
        Path file = TestFiles.write(dir.resolve("e.safetensors"),
                "{\"empty\":{\"dtype\":\"F32\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                        + "\"scalar\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,4]}}",
                TestFiles.floatsLe(42f));
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertEquals(0, st.tensor("empty").toFloatArray().length);
            assertEquals(1, st.tensors().get("scalar").elementCount());
            assertEquals(42f, st.tensor("scalar").floatAt(0));
        }
        Path none = TestFiles.write(dir.resolve("none.safetensors"), "{}  ", new byte[0]);
        try (SafetensorsFile st = SafetensorsFile.open(none)) {
            assertTrue(st.tensors().isEmpty());
        }
    }

    @Test
    void tensorsAreUnusableAfterClose() {
        Path file = TestFiles.write(dir.resolve("c.safetensors"),
                "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(1f));
        SafetensorsFile st = SafetensorsFile.open(file);
        HostTensor x = st.tensor("x");
        st.close();
        assertThrows(IllegalStateException.class, x::toFloatArray);
        assertThrows(IllegalStateException.class, () -> st.tensor("x"));
    }

    @Test
    void unknownTensorNameIsAUserError() {
        Path file = TestFiles.write(dir.resolve("u.safetensors"),
                "{\"x\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(1f));
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            UserInputException e = assertThrows(UserInputException.class, () -> st.tensor("y"));
            assertTrue(e.getMessage().contains("no tensor named 'y'"), e.getMessage());
        }
    }

    /** A sparse 2.5 GiB file: offsets past 2^31 must work, which a ByteBuffer-based reader cannot do. */
    @Test
    void mapsFilesLargerThanTwoGibibytes() throws IOException {
        long big = (5L << 29) - 8; // 2.5 GiB of U8 in total, minus the small tensor
        String header = "{\"big\":{\"dtype\":\"U8\",\"shape\":[" + big + "],\"data_offsets\":[0," + big + "]},"
                + "\"tail\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[" + big + "," + (big + 8) + "]}}";
        Path file = TestFiles.write(dir.resolve("big.safetensors"), header, new byte[0]);
        long headerLength = Files.size(file) - 8;
        try (RandomAccessFile raf = new RandomAccessFile(file.toFile(), "rw")) {
            raf.setLength(8 + headerLength + big + 8);
            raf.seek(8 + headerLength + big);
            raf.write(TestFiles.floatsLe(6.25f, -1f));
            raf.seek(8 + headerLength + big - 1);
            raf.write(0x5A);
        } catch (IOException e) {
            Assumptions.abort("cannot create a sparse 2.5 GiB file here: " + e.getMessage());
        }
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertArrayEquals(new float[] {6.25f, -1f}, st.tensor("tail").toFloatArray());
            HostTensor bigTensor = st.tensor("big");
            assertEquals(big, bigTensor.elementCount());
            assertEquals((byte) 0x5A, bigTensor.data().get(ValueLayout.JAVA_BYTE, big - 1));
            assertThrows(IllegalStateException.class, bigTensor::toByteArray);
        }
    }

    @Test
    void readsTheStories260kFixture() {
        Path file = TestFiles.fixture("stories260k", "model.safetensors");
        Assumptions.assumeTrue(Files.exists(file), "fixture stories260k is missing");
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertEquals(48, st.tensors().size());
            assertEquals("pt", st.metadata().get("format"));
            assertEquals("model.embed_tokens.weight", st.tensors().keySet().iterator().next());
            assertTrue(st.tensors().values().stream().allMatch(t -> t.dtype() == DType.F32));
            assertArrayEquals(new long[] {512, 64}, st.tensors().get("model.embed_tokens.weight").shape());
            assertArrayEquals(new long[] {32, 64}, st.tensors().get("model.layers.0.self_attn.k_proj.weight").shape());
            assertArrayEquals(new long[] {172, 64}, st.tensors().get("model.layers.4.mlp.gate_proj.weight").shape());
            assertArrayEquals(new long[] {64}, st.tensors().get("model.norm.weight").shape());
            long parameters = st.tensors().values().stream().mapToLong(TensorInfo::elementCount).sum();
            // 260,032 parameters plus the stored copy of the tied lm_head (512 x 64).
            assertEquals(260_032 + 512 * 64, parameters);

            float[] embedding = st.tensor("model.embed_tokens.weight").toFloatArray();
            assertEquals(-0.29474878f, embedding[0], 1e-7f);
            assertEquals(0.5618956f, embedding[1], 1e-7f);
            // The README promises lm_head is a bit-exact copy of the embedding.
            assertArrayEquals(embedding, st.tensor("lm_head.weight").toFloatArray());
            for (float value : st.tensor("model.norm.weight").toFloatArray()) {
                assertTrue(Float.isFinite(value) && value != 0f, "norm weight " + value);
            }
        }
    }

    @Test
    void missingFileIsAUserError() {
        UserInputException e = assertThrows(UserInputException.class,
                () -> SafetensorsFile.open(dir.resolve("nope.safetensors")));
        assertTrue(e.getMessage().contains("not found"), e.getMessage());
        assertFalse(e.getMessage().contains("\n"));
        UserInputException folder = assertThrows(UserInputException.class, () -> SafetensorsFile.open(dir));
        assertTrue(folder.getMessage().contains("is a folder"), folder.getMessage());
    }

    static byte[] concat(byte[]... parts) {
        int length = 0;
        for (byte[] part : parts) {
            length += part.length;
        }
        ByteBuffer buffer = ByteBuffer.allocate(length);
        for (byte[] part : parts) {
            buffer.put(part);
        }
        return buffer.array();
    }

    static byte[] longLe(long value) {
        return ByteBuffer.allocate(8).order(ByteOrder.LITTLE_ENDIAN).putLong(value).array();
    }
}
