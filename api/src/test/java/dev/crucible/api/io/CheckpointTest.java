package dev.crucible.api.io;

import dev.crucible.api.tensor.HalfFloats;

import dev.crucible.api.tensor.HostTensor;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CheckpointTest {

    @TempDir
    Path dir;

    @Test
    void opensTheStories260kFolder() {
        Path folder = TestFiles.fixture("stories260k");
        Assumptions.assumeTrue(Files.exists(folder.resolve("model.safetensors")), "fixture stories260k is missing");
        try (Checkpoint checkpoint = Checkpoint.open(folder)) {
            assertEquals(48, checkpoint.names().size());
            assertEquals("model.embed_tokens.weight", checkpoint.names().getFirst());
            assertTrue(checkpoint.contains("model.layers.4.mlp.down_proj.weight"));
            assertFalse(checkpoint.contains("model.layers.5.mlp.down_proj.weight"));
            HostTensor down = checkpoint.tensor("model.layers.4.mlp.down_proj.weight");
            assertArrayEquals(new long[] {64, 172}, down.shape());
            assertEquals(DType.F32, down.dtype());
            assertEquals(List.of(folder.resolve("model.safetensors")), checkpoint.files());
        }
    }

    @Test
    void opensAShardedFolderMappingEachShardOnce() throws IOException {
        TestFiles.write(dir.resolve("model-00001-of-00002.safetensors"),
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
                        + "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
                TestFiles.floatsLe(1f, 2f));
        TestFiles.write(dir.resolve("model-00002-of-00002.safetensors"),
                "{\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[0,4]}}", TestFiles.shortsLe(0x4040, 0xBF80));
        Files.writeString(dir.resolve(Checkpoint.INDEX_FILE), """
                {"metadata": {"total_size": 12},
                 "weight_map": {"c": "model-00002-of-00002.safetensors",
                                "a": "model-00001-of-00002.safetensors",
                                "b": "model-00001-of-00002.safetensors"}}
                """);
        try (Checkpoint checkpoint = Checkpoint.open(dir)) {
            assertEquals(List.of("c", "a", "b"), List.copyOf(checkpoint.names()));
            assertEquals(2, checkpoint.files().size());
            assertArrayEquals(new float[] {3f, -1f}, checkpoint.tensor("c").toFloatArray());
            assertArrayEquals(new float[] {2f}, checkpoint.tensor("b").toFloatArray());
            assertEquals(DType.BF16, checkpoint.info("c").dtype());
            UserInputException e = assertThrows(UserInputException.class, () -> checkpoint.tensor("d"));
            assertTrue(e.getMessage().contains("has no tensor 'd'"), e.getMessage());
        }
    }

    @Test
    void closingUnmapsEveryShard() {
        TestFiles.write(dir.resolve("model.safetensors"),
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(1f));
        Checkpoint checkpoint = Checkpoint.open(dir);
        HostTensor a = checkpoint.tensor("a");
        checkpoint.close();
        assertThrows(IllegalStateException.class, a::toFloatArray);
    }

    @Test
    void indexNamingAMissingShardOrTensor() throws IOException {
        Files.writeString(dir.resolve(Checkpoint.INDEX_FILE),
                "{\"weight_map\": {\"a\": \"model-00001-of-00002.safetensors\"}}");
        assertUserError(dir, "which is missing from");

        TestFiles.write(dir.resolve("model-00001-of-00002.safetensors"),
                "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(1f));
        assertUserError(dir, "says tensor 'a' is in model-00001-of-00002.safetensors, which has no such tensor");
    }

    @Test
    void indexMayNotPointOutsideTheFolder() throws IOException {
        Path inner = Files.createDirectory(dir.resolve("model"));
        TestFiles.write(dir.resolve("elsewhere.safetensors"),
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(1f));
        Files.writeString(inner.resolve(Checkpoint.INDEX_FILE),
                "{\"weight_map\": {\"a\": \"../elsewhere.safetensors\"}}");
        assertUserError(inner, "is not a file inside");
    }

    @Test
    void malformedIndex() throws IOException {
        Files.writeString(dir.resolve(Checkpoint.INDEX_FILE), "{\"weight_map\": [");
        assertUserError(dir, "not valid JSON");
        Files.writeString(dir.resolve(Checkpoint.INDEX_FILE), "{\"metadata\": {}}");
        assertUserError(dir, "has no weight_map object");
    }

    @Test
    void refusesPickleCheckpointsWithoutReadingThem() throws IOException {
        Path bin = Files.writeString(dir.resolve("pytorch_model.bin"), "not really a pickle");
        Files.writeString(dir.resolve("config.json"), "{}");
        // Unreadable, so any attempt to open it would fail differently (when not running as root).
        Files.setPosixFilePermissions(bin, PosixFilePermissions.fromString("---------"));
        UserInputException e = assertUserError(dir, "pickle checkpoint (pytorch_model.bin)");
        assertTrue(e.getMessage().contains("never unpickles"), e.getMessage());
        assertTrue(e.getMessage().contains("save_pretrained(out_dir, safe_serialization=True)"), e.getMessage());

        for (String name : List.of("weights.pt", "model.pth", "last.ckpt")) {
            Path other = Files.createDirectory(dir.resolve("d-" + name));
            Files.writeString(other.resolve(name), "x");
            assertUserError(other, "pickle checkpoint (" + name + ")");
        }
    }

    @Test
    void safetensorsWinOverPicklesInTheSameFolder() throws IOException {
        Files.writeString(dir.resolve("pytorch_model.bin"), "x");
        TestFiles.write(dir.resolve("model.safetensors"),
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(5f));
        try (Checkpoint checkpoint = Checkpoint.open(dir)) {
            assertEquals(5f, checkpoint.tensor("a").floatAt(0));
        }
    }

    @Test
    void folderWithoutWeights() throws IOException {
        Files.writeString(dir.resolve("config.json"), "{}");
        assertUserError(dir, "has neither model.safetensors nor model.safetensors.index.json");
        assertUserError(dir.resolve("absent"), "does not exist");
    }

    @Test
    void acceptsASingleSafetensorsFile() {
        Path file = TestFiles.write(dir.resolve("adapter.safetensors"),
                "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", TestFiles.floatsLe(5f));
        try (Checkpoint checkpoint = Checkpoint.open(file)) {
            assertEquals(List.of("a"), List.copyOf(checkpoint.names()));
        }
    }

    private static UserInputException assertUserError(Path folder, String expected) {
        UserInputException e = assertThrows(UserInputException.class, () -> Checkpoint.open(folder).close());
        assertTrue(e.getMessage().contains(expected), "expected '" + expected + "' in: " + e.getMessage());
        assertFalse(e.getMessage().contains("\n"), e.getMessage());
        return e;
    }

    /**
     * A compressed-tensors folder: each quantized weight is one name, {@code M.weight}, with the dense shape and the
     * scales' dtype; its values are what its codes dequantize to; its parts are there for a loader that keeps them.
     */
    @Test
    void aCompressedTensorsFolderShowsEachQuantizedWeightOnceAsTheDenseWeight() throws IOException {
        float[] values = new float[6 * 16];
        for (int i = 0; i < values.length; i++) {
            values[i] = (float) Math.sin(i) * 0.1f;
        }
        dev.crucible.api.quant.QuantizationConfig int4 =
                dev.crucible.api.quant.QuantizationConfig.parse("int4", "blockwise", 8, null, false);
        dev.crucible.api.tensor.WeightFormat.Int format = (dev.crucible.api.tensor.WeightFormat.Int) int4.format();
        dev.crucible.api.quant.QuantizedHostTensor parts = new dev.crucible.api.quant.IntCodec(format, DType.BF16)
                .encode("p.weight", values, new long[] {6, 16});
        java.util.List<WritableTensor> tensors = new java.util.ArrayList<>();
        tensors.add(WritableTensor.ofFloats("norm.weight", DType.BF16, new long[] {2}, new float[] {1f, 2f}));
        dev.crucible.api.quant.CompressedTensors.tensors(parts, DType.BF16).forEach(part -> tensors.add(WritableTensor.of(part)));
        SafetensorsWriter.write(dir.resolve(Checkpoint.SINGLE_FILE), tensors, java.util.Map.of());
        com.fasterxml.jackson.databind.node.ObjectNode config = new com.fasterxml.jackson.databind.ObjectMapper()
                .createObjectNode();
        config.set("quantization_config", dev.crucible.api.quant.CompressedTensors.quantizationConfig(int4,
                List.of("lm_head")));
        Files.writeString(dir.resolve("config.json"), config.toString());
        try (Checkpoint checkpoint = Checkpoint.open(dir)) {
            assertEquals(List.of("norm.weight", "p.weight"), List.copyOf(checkpoint.names()));
            assertFalse(checkpoint.contains("p.weight_packed"));
            assertEquals(format, checkpoint.storedQuantization().format());
            assertArrayEquals(new long[] {6, 16}, checkpoint.info("p.weight").shape());
            assertEquals(DType.BF16, checkpoint.info("p.weight").dtype());
            dev.crucible.api.quant.CompressedTensorsTest.assertSameParts(parts, checkpoint.quantized("p.weight").orElseThrow());
            assertTrue(checkpoint.quantized("norm.weight").isEmpty());
            float[] dequantized = new dev.crucible.api.quant.IntCodec(format).decode(parts);
            float[] read = checkpoint.tensor("p.weight").toFloatArray();
            for (int i = 0; i < values.length; i++) {
                assertEquals(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(dequantized[i])), read[i], "weight " + i);
                assertEquals(values[i], read[i], 0.1 / 7 * 0.51 + 1e-3, "weight " + i);
            }
            assertThrows(UserInputException.class, () -> checkpoint.tensor("p.weight_scale"));
        }
    }
}
