package dev.crucible.api.io;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SafetensorsWriterTest {

    @TempDir
    Path dir;

    private static final Map<String, String> PT = Map.of("format", "pt");

    @Test
    void writesTheReferenceHeaderLayout() throws IOException {
        Path file = dir.resolve("a.safetensors");
        SafetensorsWriter.write(file, List.of(
                WritableTensor.ofFloats("w", DType.F32, new long[] {2}, new float[] {1f, 2f}),
                WritableTensor.ofBytes("m", DType.BOOL, new long[] {1, 3}, new byte[] {1, 0, 1})), PT);
        byte[] bytes = Files.readAllBytes(file);
        long headerLength = ByteBuffer.wrap(bytes, 0, 8).order(ByteOrder.LITTLE_ENDIAN).getLong();
        assertEquals(0, headerLength % 8, "the data section starts 8-byte aligned");
        String header = new String(bytes, 8, (int) headerLength, StandardCharsets.UTF_8);
        String json = "{\"__metadata__\":{\"format\":\"pt\"},"
                + "\"w\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                + "\"m\":{\"dtype\":\"BOOL\",\"shape\":[1,3],\"data_offsets\":[8,11]}}";
        assertEquals(json + " ".repeat((int) headerLength - json.length()), header);
        assertEquals(8 + headerLength + 11, bytes.length);
    }

    @Test
    void roundTripsEveryDtype() {
        Path file = dir.resolve("all.safetensors");
        List<WritableTensor> tensors = List.of(
                WritableTensor.ofFloats("f32", DType.F32, new long[] {3}, new float[] {1.5f, -0f, 3e-39f}),
                WritableTensor.ofFloats("f16", DType.F16, new long[] {2}, new float[] {0.5f, -2048f}),
                WritableTensor.ofFloats("bf16", DType.BF16, new long[] {2, 1}, new float[] {256f, -0.125f}),
                WritableTensor.ofBytes("i64", DType.I64, new long[] {1}, SafetensorsFileTest.longLe(Long.MIN_VALUE)),
                WritableTensor.ofBytes("i32", DType.I32, new long[] {1}, new byte[] {1, 2, 3, 4}),
                WritableTensor.ofBytes("i8", DType.I8, new long[] {2}, new byte[] {-1, 7}),
                WritableTensor.ofBytes("u8", DType.U8, new long[] {}, new byte[] {(byte) 200}),
                WritableTensor.ofBytes("empty", DType.F32, new long[] {0, 4}, new byte[0]));
        SafetensorsWriter.write(file, tensors, Map.of());
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertEquals(List.of("f32", "f16", "bf16", "i64", "i32", "i8", "u8", "empty"),
                    List.copyOf(st.tensors().keySet()));
            assertTrue(st.metadata().isEmpty());
            for (WritableTensor expected : tensors) {
                assertEquals(expected, WritableTensor.of(st.tensor(expected.name())), expected.name());
            }
            assertArrayEquals(new float[] {1.5f, -0f, 3e-39f}, st.tensor("f32").toFloatArray());
            assertArrayEquals(new float[] {0.5f, -2048f}, st.tensor("f16").toFloatArray());
            assertArrayEquals(new float[] {256f, -0.125f}, st.tensor("bf16").toFloatArray());
        }
    }

    @Test
    void narrowingRoundsToNearestEven() {
        Path file = dir.resolve("r.safetensors");
        float tieDown = Float.intBitsToFloat(0x3F808000);
        float tieUp = Float.intBitsToFloat(0x3F818000);
        SafetensorsWriter.write(file, List.of(
                WritableTensor.ofFloats("b", DType.BF16, new long[] {2}, new float[] {tieDown, tieUp})), Map.of());
        try (SafetensorsFile st = SafetensorsFile.open(file)) {
            assertArrayEquals(TestFiles.shortsLe(0x3F80, 0x3F82), st.tensor("b").toByteArray());
        }
    }

    @Test
    void reExportOfTheStories260kFixtureIsLossless() throws IOException {
        Path source = TestFiles.fixture("stories260k", "model.safetensors");
        Assumptions.assumeTrue(Files.exists(source), "fixture stories260k is missing");
        Path copy = dir.resolve("copy.safetensors");
        try (SafetensorsFile st = SafetensorsFile.open(source)) {
            List<WritableTensor> tensors = st.tensors().keySet().stream()
                    .map(name -> WritableTensor.of(st.tensor(name))).toList();
            SafetensorsWriter.write(copy, tensors, st.metadata());
            try (SafetensorsFile back = SafetensorsFile.open(copy)) {
                assertEquals(List.copyOf(st.tensors().values()), List.copyOf(back.tensors().values()));
                assertEquals(st.metadata(), back.metadata());
                for (String name : st.tensors().keySet()) {
                    assertArrayEquals(st.tensor(name).toByteArray(), back.tensor(name).toByteArray(), name);
                }
            }
        }
        // The data section is the original's byte for byte (same order, no gaps); only the header differs.
        assertEquals(Files.size(source) - headerSize(source), Files.size(copy) - headerSize(copy));
    }

    @Test
    void sameInputSameBytes() throws IOException {
        List<WritableTensor> tensors = sampleTensors(5, 64);
        Map<String, String> metadata = new LinkedHashMap<>();
        metadata.put("format", "pt");
        metadata.put("note", "ünïcode \"quoted\"\n");
        Path first = Files.createDirectory(dir.resolve("first"));
        Path second = Files.createDirectory(dir.resolve("second"));
        SafetensorsWriter.writeModel(first, tensors, metadata, 200);
        SafetensorsWriter.writeModel(second, tensors, metadata, 200);
        for (Path file : listing(first)) {
            assertEquals(sha256(file), sha256(second.resolve(file.getFileName())), file.getFileName().toString());
        }
        try (SafetensorsFile st = SafetensorsFile.open(first.resolve("model-00001-of-00002.safetensors"))) {
            assertEquals(metadata, st.metadata());
        }
    }

    @Test
    void shardsLikeTransformers() throws IOException {
        // 64-byte tensors a..e with a 150-byte limit: [a,b] [c,d] [e].
        List<WritableTensor> tensors = sampleTensors(5, 64);
        List<Path> written = SafetensorsWriter.writeModel(dir, tensors, PT, 150);
        assertEquals(List.of(dir.resolve("model-00001-of-00003.safetensors"),
                dir.resolve("model-00002-of-00003.safetensors"), dir.resolve("model-00003-of-00003.safetensors"),
                dir.resolve("model.safetensors.index.json")), written);
        assertEquals("""
                {
                  "metadata": {
                    "total_size": 320
                  },
                  "weight_map": {
                    "t0": "model-00001-of-00003.safetensors",
                    "t1": "model-00001-of-00003.safetensors",
                    "t2": "model-00002-of-00003.safetensors",
                    "t3": "model-00002-of-00003.safetensors",
                    "t4": "model-00003-of-00003.safetensors"
                  }
                }
                """, Files.readString(dir.resolve("model.safetensors.index.json")));
        try (Checkpoint checkpoint = Checkpoint.open(dir)) {
            assertEquals(3, checkpoint.files().size());
            for (WritableTensor expected : tensors) {
                assertEquals(expected, WritableTensor.of(checkpoint.tensor(expected.name())));
            }
        }
    }

    @Test
    void oversizedTensorGetsItsOwnShardAheadOfTheOneBeingFilled() {
        WritableTensor small1 = bytesTensor("s1", 40);
        WritableTensor big = bytesTensor("big", 500);
        WritableTensor small2 = bytesTensor("s2", 40);
        WritableTensor small3 = bytesTensor("s3", 40);
        List<List<WritableTensor>> plan = SafetensorsWriter.planShards(List.of(small1, big, small2, small3), 100);
        assertEquals(List.of(List.of(big), List.of(small1, small2), List.of(small3)), plan);
        assertEquals(List.of(List.of(small1, small2)),
                SafetensorsWriter.planShards(List.of(small1, small2), 80));
    }

    @Test
    void indexKeysSortLikePythonAndEscapeLikeJsonDumps() throws IOException {
        List<WritableTensor> tensors = List.of(bytesTensor("b\u00e9", 8), bytesTensor("B", 8),
                bytesTensor("\ud83d\ude00", 8), bytesTensor("\uffff", 8));
        SafetensorsWriter.writeModel(dir, tensors, PT, 8);
        String index = Files.readString(dir.resolve("model.safetensors.index.json"));
        // Code-point order puts U+FFFF before the emoji (U+1F600); UTF-16 order would not.
        int b = index.indexOf("\"B\"");
        int be = index.indexOf("\"b\\u00e9\"");
        int ffff = index.indexOf("\"\\uffff\"");
        int emoji = index.indexOf("\"\\ud83d\\ude00\"");
        assertTrue(b > 0 && b < be && be < ffff && ffff < emoji, index);
        try (Checkpoint checkpoint = Checkpoint.open(dir)) {
            assertTrue(checkpoint.contains("\ud83d\ude00"));
            assertTrue(checkpoint.contains("b\u00e9"));
        }
    }

    @Test
    void singleFileWhenItFitsAndStaleWeightsAreRemoved() throws IOException {
        SafetensorsWriter.writeModel(dir, sampleTensors(3, 64), PT, 100);
        assertTrue(Files.exists(dir.resolve("model.safetensors.index.json")));
        Files.writeString(dir.resolve("config.json"), "{}");

        List<Path> written = SafetensorsWriter.writeModel(dir, sampleTensors(3, 64), PT, 1000);
        assertEquals(List.of(dir.resolve("model.safetensors")), written);
        assertEquals(List.of("config.json", "model.safetensors"),
                listing(dir).stream().map(p -> p.getFileName().toString()).toList());
        try (Checkpoint checkpoint = Checkpoint.open(dir)) {
            assertEquals(3, checkpoint.names().size());
        }
    }

    @Test
    void aFailedWriteLeavesNothingBehind() throws IOException {
        Path file = dir.resolve("model.safetensors");
        Files.writeString(file, "previous");
        WritableTensor dead;
        try (Arena arena = Arena.ofConfined()) {
            dead = new WritableTensor("x", DType.U8, new long[] {4}, arena.allocate(4));
        }
        WritableTensor deadTensor = dead;
        assertThrows(IllegalStateException.class, () -> SafetensorsWriter.write(file,
                List.of(bytesTensor("ok", 1024), deadTensor), PT));
        assertEquals("previous", Files.readString(file));
        assertEquals(List.of(file), listing(dir));
    }

    @Test
    void rejectsDuplicateNamesAndBadShapes() {
        WritableTensor a = bytesTensor("a", 4);
        assertThrows(IllegalArgumentException.class,
                () -> SafetensorsWriter.write(dir.resolve("d.safetensors"), List.of(a, a), PT));
        assertThrows(IllegalArgumentException.class,
                () -> WritableTensor.ofFloats("x", DType.F32, new long[] {3}, new float[] {1f}));
        assertThrows(IllegalArgumentException.class,
                () -> WritableTensor.ofFloats("x", DType.I32, new long[] {1}, new float[] {1f}));
        assertThrows(IllegalArgumentException.class,
                () -> WritableTensor.ofBytes("__metadata__", DType.U8, new long[] {1}, new byte[1]));
        assertFalse(Files.exists(dir.resolve("d.safetensors")));
    }

    private static List<WritableTensor> sampleTensors(int count, int bytes) {
        List<WritableTensor> tensors = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            float[] values = new float[bytes / 4];
            for (int j = 0; j < values.length; j++) {
                values[j] = i * 100 + j * 0.25f;
            }
            tensors.add(WritableTensor.ofFloats("t" + i, DType.F32, new long[] {values.length}, values));
        }
        return tensors;
    }

    private static WritableTensor bytesTensor(String name, int length) {
        byte[] bytes = new byte[length];
        for (int i = 0; i < length; i++) {
            bytes[i] = (byte) (i * 31 + name.hashCode());
        }
        return new WritableTensor(name, DType.U8, new long[] {length}, MemorySegment.ofArray(bytes));
    }

    private static long headerSize(Path file) throws IOException {
        byte[] prefix = new byte[8];
        try (var in = Files.newInputStream(file)) {
            assertEquals(8, in.readNBytes(prefix, 0, 8));
        }
        return 8 + ByteBuffer.wrap(prefix).order(ByteOrder.LITTLE_ENDIAN).getLong();
    }

    private static List<Path> listing(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.sorted().toList();
        }
    }

    private static String sha256(Path file) throws IOException {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256").digest(Files.readAllBytes(file)));
        } catch (NoSuchAlgorithmException e) {
            throw new AssertionError(e);
        }
    }
}
