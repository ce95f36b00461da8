package dev.crucible.runner.prompts;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.runner.prompts.ParquetTestFiles.Codec;
import dev.crucible.runner.prompts.ParquetTestFiles.Column;
import dev.crucible.runner.prompts.ParquetTestFiles.IntColumn;
import dev.crucible.runner.prompts.ParquetTestFiles.Options;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.stream.IntStream;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ParquetPromptsTest {

    @TempDir
    Path dir;

    /** 25 rows with repeats (so dictionaries matter), nulls and a blank, and non-ASCII text. */
    private static final List<String> VALUES = IntStream.range(0, 25)
            .mapToObj(i -> i % 7 == 3 ? null : i == 11 ? "  " : "prompt " + (i % 5) + (i % 2 == 0 ? " é漢" : ""))
            .toList();
    private static final List<String> EXPECTED = VALUES.stream().filter(v -> v != null && !v.isBlank()).toList();

    private List<String> load(String spec) {
        return PromptLoader.load(PromptSourceSpec.parse(spec), dir, Map.of());
    }

    @Test
    void readsEveryCodecPageVersionAndEncoding() {
        for (Codec codec : Codec.values()) {
            for (boolean v2 : List.of(false, true)) {
                for (boolean dictionary : List.of(false, true)) {
                    String name = codec + "-" + (v2 ? "v2" : "v1") + "-" + (dictionary ? "dict" : "plain")
                            + ".parquet";
                    ParquetTestFiles.write(dir.resolve(name), new Options(codec, v2, 10),
                            List.of(new Column("text", VALUES, true, dictionary)), List.of());
                    assertEquals(EXPECTED, load(name), name);
                }
            }
        }
    }

    @Test
    void picksTheColumnAndSlices() {
        List<String> other = IntStream.range(0, 4).mapToObj(i -> "other " + i).toList();
        ParquetTestFiles.write(dir.resolve("two.parquet"), new Options(Codec.SNAPPY, false, 3),
                List.of(new Column("goal", other, false, true), new Column("text", other.reversed(), false, false)),
                List.of(new IntColumn("id", List.of(1, 2, 3, 4))));
        assertEquals(other.reversed(), load("two.parquet"), "text is the default column");
        assertEquals(List.of("other 2", "other 3"), load("two.parquet:goal[-2:]"));
        String notText = assertThrows(UserInputException.class, () -> load("two.parquet:id")).getMessage();
        assertTrue(notText.contains("column 'id' of 'two.parquet' holds INT32, not text"), notText);
        String missing = assertThrows(UserInputException.class, () -> load("two.parquet:gaol")).getMessage();
        assertTrue(missing.contains("no column 'gaol'") && missing.contains("did you mean 'goal'"), missing);
    }

    /** Files written by parquet-java (parquet-mr) for its own tests, shipped in the parquet-hadoop tests jar. */
    private Path realFile(String name) throws IOException {
        try (InputStream in = getClass().getResourceAsStream("/" + name)) {
            Assumptions.assumeTrue(in != null, "parquet-hadoop tests jar is not on the test classpath");
            return Files.write(dir.resolve(name), in.readAllBytes());
        }
    }

    @Test
    void readsRealParquetJavaFiles() throws IOException {
        realFile("test-append_1.parquet");
        List<String> uuids = load("test-append_1.parquet:string");
        assertEquals(1000, uuids.size());
        assertTrue(uuids.stream().allMatch(s -> s.matches("[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")),
                uuids.subList(0, 3).toString());
        // The file repeats 50 UUIDs; Hardwood, an independent reader, gives the same 1000 values in the same order.
        assertEquals(50, uuids.stream().distinct().count());
        assertEquals("85d18253-488b-45a2-91b0-c1a43f2c8343", uuids.getFirst());
        String message = assertThrows(UserInputException.class, () -> load("test-append_1.parquet:id")).getMessage();
        assertTrue(message.contains("holds INT32, not text"), message);

        // An optional string column after a required one, two row groups, nested groups after it.
        realFile("test-file-with-no-column-indexes-1.parquet");
        List<String> names = load("test-file-with-no-column-indexes-1.parquet:name");
        assertEquals(IntStream.range(0, 1000).mapToObj(i -> "p" + i).toList(), names);
        assertEquals(List.of("p10", "p11"), load("test-file-with-no-column-indexes-1.parquet:name[10:12]"));
        String nested = assertThrows(UserInputException.class,
                () -> load("test-file-with-no-column-indexes-1.parquet:location")).getMessage();
        assertTrue(nested.contains("nested value"), nested);
    }

    @Test
    void damagedFilesAreOneLineErrors() throws IOException {
        byte[] good = ParquetTestFiles.bytes(new Options(Codec.SNAPPY, false, 10),
                List.of(new Column("text", VALUES, true, true)), List.of());
        Files.write(dir.resolve("truncated.parquet"), Arrays.copyOf(good, good.length / 2));
        Files.write(dir.resolve("garbage.parquet"), "this is not parquet at all".getBytes());
        Files.write(dir.resolve("empty.parquet"), new byte[0]);
        for (String name : List.of("truncated.parquet", "garbage.parquet", "empty.parquet")) {
            String message = assertThrows(UserInputException.class, () -> load(name)).getMessage();
            assertTrue(message.startsWith("cannot read parquet file '" + name + "'"), message);
            assertFalse(message.contains("\n"), message);
        }
    }

    @Test
    void randomDamageNeverEscapesAsAnythingButAUserError() throws IOException {
        byte[] good = ParquetTestFiles.bytes(new Options(Codec.SNAPPY, true, 10),
                List.of(new Column("text", VALUES, true, true)), List.of());
        Random random = new Random(42);
        Path file = dir.resolve("mutant.parquet");
        List<String> outcomes = new ArrayList<>();
        for (int round = 0; round < 1500; round++) {
            byte[] mutant = good.clone();
            for (int flip = 0; flip <= random.nextInt(3); flip++) {
                mutant[random.nextInt(mutant.length)] = (byte) random.nextInt(256);
            }
            Files.write(file, mutant);
            try {
                load("mutant.parquet");
                outcomes.add("ok");
            } catch (UserInputException e) {
                assertFalse(e.getMessage().contains("\n"), e.getMessage());
                outcomes.add("error");
            }
        }
        assertTrue(outcomes.contains("error"), "some damage must be noticed");
    }
}
