package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.tensor.DType;
import dev.crucible.runner.Mounts;
import dev.crucible.runner.export.FileHashes;
import dev.crucible.runner.model.ModelInitializer;
import dev.crucible.runner.study.StudyLock;
import java.io.IOException;
import java.io.RandomAccessFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The promise "one line, exit 2, nothing lost" under injected faults: read-only and full file systems (real ones,
 * mounted where the machine allows it, else skipped with the reason), a path under a file, a study in use, a bad
 * model, a broken chat template; and what an export carries instead of the base's README.
 */
class OutputFaultsTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @TempDir
    static Path temp;
    static Path model;
    /** The tiny model with its weights replaced by garbage: a run that got as far as loading it would say so. */
    static Path unloadable;
    static Path adapter;

    @BeforeAll
    static void makeModels() throws IOException {
        model = temp.resolve("tiny");
        ModelInitializer.write(new ModelInitializer.Spec(Architecture.LLAMA, 32, 3, 4, 2, 8, 64, 400, true, DType.F32, 9,
                256, 10000, 0.3), model, false);
        unloadable = copy(model, temp.resolve("unloadable"));
        Files.writeString(unloadable.resolve("model.safetensors"), "not a safetensors file");
        adapter = Files.createDirectories(temp.resolve("adapter"));
        float[] a = new float[4 * 32];
        float[] b = new float[32 * 4];
        Arrays.fill(a, 0.01f);
        Arrays.fill(b, 0.02f);
        String q = "base_model.model.model.layers.0.self_attn.q_proj";
        SafetensorsWriter.write(adapter.resolve("adapter_model.safetensors"), List.of(
                WritableTensor.ofFloats(q + ".lora_A.weight", DType.F32, new long[] {4, 32}, a),
                WritableTensor.ofFloats(q + ".lora_B.weight", DType.F32, new long[] {32, 4}, b)), Map.of("format", "pt"));
        Files.writeString(adapter.resolve("adapter_config.json"),
                "{\"peft_type\": \"LORA\", \"r\": 4, \"lora_alpha\": 8, \"target_modules\": [\"q_proj\"]}");
    }

    private static List<String> abliterate(Path modelDir, Path study, String... more) {
        List<String> args = new ArrayList<>(List.of("abliterate", "--model", modelDir.toString(), "--trials", "2",
                "--startup-trials", "2", "--max-response-length", "2", "--seed", "1",
                "--good-prompts", "bundled:harmless/train[:4]", "--bad-prompts", "bundled:harmful/train[:4]",
                "--good-test-prompts", "bundled:harmless/test[:2]", "--bad-test-prompts", "bundled:harmful/test[:2]",
                "--study", study.toString(), "--headless"));
        args.addAll(Arrays.asList(more));
        return args;
    }

    private static RunnerCli run(List<String> args) {
        return RunnerCli.run(ONE_THREAD, args.toArray(String[]::new));
    }

    private static RunnerCli merge(Path base, Path out, String... more) {
        List<String> args = new ArrayList<>(List.of("merge", "--model", base.toString(), "--adapter", adapter.toString(),
                "--out", out.toString()));
        args.addAll(Arrays.asList(more));
        return run(args);
    }

    /** One line on stderr starting "error: ", exit 2, no exception class in sight. */
    private static String oneLineError(RunnerCli r) {
        assertEquals(2, r.exit(), r.out() + r.err());
        String line = r.err().strip();
        assertEquals(1, line.lines().count(), line);
        assertTrue(line.startsWith("error: "), line);
        assertFalse(line.contains("Exception"), line);
        return line;
    }

    // ---- item 1: a study folder that cannot be written ----

    @Test
    void aStudyOnAReadOnlyFileSystemIsOneLineBeforeTheModelLoads() throws IOException {
        try (Mounts ro = Mounts.tmpfs(temp.resolve("ro-mount"), "size=1m")) {
            Path existing = Files.createDirectories(ro.point().resolve("existing-study"));
            ro.remountReadOnly();
            for (Path study : List.of(ro.point().resolve("new-study"), existing)) {
                String line = oneLineError(run(abliterate(unloadable, study)));
                assertEquals("error: cannot write " + study + ": read-only file system; choose a folder on a writable file system", line);
            }
        }
    }

    @Test
    void aStudyUnderAFileIsOneLineBeforeTheModelLoads() throws IOException {
        // ENOTDIR: refused for root as well, so this fault needs no mount.
        Path file = Files.writeString(temp.resolve("a-file"), "");
        String line = oneLineError(run(abliterate(unloadable, file.resolve("study"))));
        assertEquals("error: cannot write " + file.resolve("study") + ": " + file + " is a file, not a folder", line);
    }

    // ---- item 4: a study in use ----

    @Test
    void aStudyInUseSaysSoAtOnceBeforeTheModelLoads() throws IOException {
        Path study = temp.resolve("study-in-use");
        try (StudyLock held = StudyLock.acquire(study)) {
            String line = oneLineError(run(abliterate(unloadable, study)));
            assertTrue(line.contains("study " + study + " is in use by another run"), line);
        }
        // Released: the same command gets as far as the model, which proves the lock was checked first.
        String line = oneLineError(run(abliterate(unloadable, study)));
        assertTrue(line.contains("model.safetensors"), line);
    }

    // ---- item 2: exports onto a full file system ----

    @Test
    void anExportLargerThanTheFreeSpaceIsRefusedBeforeAnyTrial() throws IOException {
        long modelBytes = Files.size(model.resolve("model.safetensors"));
        try (Mounts small = Mounts.tmpfs(temp.resolve("small-mount"), "size=" + (modelBytes / 2 / 4096 + 1) * 4096)) {
            Path out = small.point().resolve("export");
            RunnerCli r = run(abliterate(model, temp.resolve("study-small"), "--trial", "0", "--export", out.toString()));
            String line = oneLineError(r);
            assertTrue(line.startsWith("error: cannot write " + out + ": not enough space (it needs "), line);
            assertTrue(line.endsWith(" free); free some space or choose another folder"), line);
            assertFalse(r.out().contains("[Trial"), "refused before the first trial: " + r.out());
            RunnerCli merged = merge(model, out);
            assertTrue(oneLineError(merged).contains("not enough space"), merged.err());
            assertEquals(List.of(), list(small.point()));
        }
    }

    /**
     * A checkpoint far larger than this disk's free space, as a sparse file (it takes no room): the export size is
     * known from its header before anything loads. Runs without a mount.
     */
    @Test
    void theExportSizeIsCheckedBeforeTheModelLoadsWithoutAMountToo() throws IOException {
        Path huge = Files.createDirectories(temp.resolve("huge"));
        Files.copy(model.resolve("config.json"), huge.resolve("config.json"));
        long free = OutputLocation.usableSpace(temp).orElseThrow();
        long elements = (free * 2 + 10_000_000_000L) / 4;
        byte[] header = ("{\"huge\":{\"dtype\":\"F32\",\"shape\":[" + elements + "],\"data_offsets\":[0," + elements * 4 + "]}}")
                .getBytes(StandardCharsets.UTF_8);
        byte[] padded = Arrays.copyOf(header, (header.length + 7) / 8 * 8);
        Arrays.fill(padded, header.length, padded.length, (byte) ' ');
        try (RandomAccessFile file = new RandomAccessFile(huge.resolve("model.safetensors").toFile(), "rw")) {
            file.write(new byte[] {(byte) padded.length, (byte) (padded.length >> 8), 0, 0, 0, 0, 0, 0});
            file.write(padded);
            file.setLength(8 + padded.length + elements * 4);
        } catch (IOException e) {
            assumeTrue(false, "this file system takes no sparse file of " + elements * 4 + " bytes: " + e.getMessage());
        }
        String line = oneLineError(merge(huge, temp.resolve("huge-merged")));
        assertTrue(line.startsWith("error: cannot write " + temp.resolve("huge-merged") + ": not enough space (it needs "), line);
        line = oneLineError(run(abliterate(huge, temp.resolve("study-huge"), "--trial", "0", "--export", temp.resolve("huge-export").toString())));
        assertTrue(line.contains("not enough space"), line);
        assertFalse(Files.exists(temp.resolve("study-huge")), "refused before the study began");
    }

    /**
     * A disk that fills up while the export is written (the preflight passed: bytes are free, but the file system's
     * inodes run out after a few files): one line naming the file, the partial folder removed, the old export kept.
     */
    @Test
    void aDiskThatFillsUpDuringTheExportKeepsTheOldExport() throws IOException {
        // Inodes: the root, the old export and its file (3), the staging folder and its first files.
        try (Mounts full = Mounts.tmpfs(temp.resolve("inode-mount"), "size=16m,nr_inodes=7")) {
            Path out = Files.createDirectories(full.point().resolve("export"));
            Files.writeString(out.resolve("keep.txt"), "the previous export");
            RunnerCli r = run(abliterate(model, temp.resolve("study-full"), "--trial", "0", "--export", out.toString(), "--force"));
            String line = oneLineError(r);
            assertTrue(line.startsWith("error: cannot write " + out), line);
            assertTrue(line.contains(": no space left on device; it needs "), line);
            assertTrue(line.contains("the file system is out of inodes or quota"), line);
            assertEquals("the previous export", Files.readString(out.resolve("keep.txt")));
            assertEquals(List.of(out), list(full.point()), "no partial folder is left");

            line = oneLineError(merge(model, out, "--force"));
            assertTrue(line.startsWith("error: cannot write " + out) && line.contains("no space left on device"), line);
            assertEquals("the previous export", Files.readString(out.resolve("keep.txt")));
            assertEquals(List.of(out), list(full.point()));
        }
    }

    // ---- item 5: evaluate checks both models before scoring either ----

    @Test
    void evaluateChecksTheModelBeforeScoringTheBase() throws IOException {
        Path incomplete = copy(model, temp.resolve("incomplete"));
        try (Checkpoint checkpoint = Checkpoint.open(model)) {
            List<WritableTensor> tensors = checkpoint.names().stream().filter(n -> !n.equals("model.norm.weight"))
                    .map(n -> WritableTensor.of(checkpoint.tensor(n))).toList();
            SafetensorsWriter.write(incomplete.resolve("model.safetensors"), tensors, Map.of("format", "pt"));
        }
        List<String> common = List.of("--max-response-length", "2", "--good-test-prompts", "bundled:harmless/test[:2]",
                "--bad-test-prompts", "bundled:harmful/test[:2]");
        for (Path bad : List.of(incomplete, temp.resolve("no-such-model"))) {
            List<String> args = new ArrayList<>(List.of("evaluate", "--model", bad.toString(), "--base", model.toString()));
            args.addAll(common);
            RunnerCli r = run(args);
            String line = oneLineError(r);
            assertTrue(line.contains(bad.equals(incomplete) ? "model.norm.weight" : bad.toString()), line);
            assertFalse(r.out().contains("scoring"), "nothing was scored: " + r.out());
        }
    }

    // ---- item 9: chat templates are checked where they are copied ----

    @Test
    void aChatTemplateWithASyntaxErrorIsRefusedBeforeAnyWeightsAreWritten() throws IOException {
        Path broken = copy(model, temp.resolve("broken-template"));
        JsonNode config = Json.mapper().readTree(broken.resolve("tokenizer_config.json").toFile());
        ((com.fasterxml.jackson.databind.node.ObjectNode) config).put("chat_template", "{% for m in messages %}{{ m.content }");
        Files.writeString(broken.resolve("tokenizer_config.json"), config.toString());
        Path out = temp.resolve("merged-broken");
        String line = oneLineError(merge(broken, out));
        assertTrue(line.startsWith("error: the chat template in " + broken.resolve("tokenizer_config.json")
                + " does not compile (chat template syntax error"), line);
        assertTrue(line.endsWith("fix it in the base model before exporting, nothing was written"), line);
        assertFalse(Files.exists(out));
    }

    // ---- item 13: the export's own model card; licences copied, the base's outputs left behind ----

    @Test
    void aMergeWritesItsOwnModelCardAndLeavesTheBasesOutputsBehind() throws IOException {
        Path base = copy(model, temp.resolve("base-with-card"));
        Files.writeString(base.resolve("README.md"), "---\nlicense: apache-2.0\nlanguage: en\n---\n# Tiny\nRefuses 97/100.\n");
        Files.writeString(base.resolve("goldens.json"), "{\"logits\": []}");
        Files.writeString(base.resolve("LICENSE"), "Apache License 2.0\n");
        Files.writeString(base.resolve("NOTICE"), "Tiny, (c) nobody\n");
        Path out = temp.resolve("merged-card");
        RunnerCli r = merge(base, out);
        assertEquals(0, r.exit(), r.err());
        assertFalse(Files.exists(out.resolve("goldens.json")), "goldens describe the base's outputs");
        assertEquals("Apache License 2.0\n", Files.readString(out.resolve("LICENSE")));
        assertEquals("Tiny, (c) nobody\n", Files.readString(out.resolve("NOTICE")));
        String card = Files.readString(out.resolve("README.md"));
        assertFalse(card.contains("Refuses 97/100"), card);
        assertTrue(card.startsWith("---\nlicense: apache-2.0\nlibrary_name: transformers\ntags:\n- crucible\n- lora\n- merged\n---\n"), card);
        assertTrue(card.contains("# merged-card\n"), card);
        assertTrue(card.contains("The local folder `" + base.toAbsolutePath() + "`."), card);
        assertTrue(card.contains("| r | 4 |") && card.contains("| lora_alpha | 8 |"), card);
        assertTrue(card.contains("runner merge --model " + base + " --adapter " + adapter + " --out " + out), card);
        assertTrue(card.contains("`LICENSE`, `NOTICE` are copied from the base"), card);
        assertTrue(card.contains("describe the base rather than this model: `README.md`, `goldens.json`."), card);
        for (String file : List.of("model.safetensors", "config.json", "LICENSE")) {
            assertTrue(card.contains("| `" + file + "` | `" + FileHashes.sha256(out.resolve(file)) + "` |"), file + "\n" + card);
        }
    }

    @Test
    void anAbliterationExportDescribesTheTrialAndHasTheHashesOfReproduceJson() throws IOException {
        Path out = temp.resolve("abliterated");
        Path study = temp.resolve("study-card");
        RunnerCli r = run(abliterate(model, study, "--trial", "1", "--export", out.toString()));
        assertEquals(0, r.exit(), r.err());
        String card = Files.readString(out.resolve("README.md"));
        JsonNode reproduce = Json.mapper().readTree(out.resolve("reproduce.json").toFile());
        assertTrue(card.contains("with its refusals abliterated by Crucible (trial 1)."), card);
        assertTrue(card.contains("| scorer | base model | this model |") && card.contains("| Refusals | "), card);
        assertTrue(card.contains("| direction_scope | "), card);
        assertTrue(card.contains("--trial 1 --export " + out), card);
        var files = reproduce.get("files_sha256").properties();
        for (var entry : files) {
            if (!entry.getKey().equals("README.md")) {
                assertTrue(card.contains("| `" + entry.getKey() + "` | `" + entry.getValue().asText() + "` |"), entry.getKey());
            }
        }
        assertEquals(FileHashes.sha256(out.resolve("README.md")), reproduce.get("files_sha256").get("README.md").asText());
        // Output files get the umask's permissions, like any file the user makes (a temp file would be rw-------).
        Path reference = Files.createFile(temp.resolve("made-by-touch"));
        assertEquals(permissions(reference), permissions(study.resolve("pareto_front.png")));
        assertEquals(permissions(reference), permissions(out.resolve("README.md")));
    }

    // ---- item 15: output folders follow the umask ----

    @Test
    void outputFoldersGetTheUmaskPermissions() throws IOException {
        Path reference = Files.createDirectory(temp.resolve("made-by-mkdir"));
        Path out = temp.resolve("init-umask");
        RunnerCli r = run(List.of("init-model", "--hidden", "16", "--layers", "1", "--heads", "2", "--out", out.toString()));
        assertEquals(0, r.exit(), r.err());
        assertEquals(permissions(reference), permissions(out), "not rwx------ as createTempDirectory makes");
        Path merged = temp.resolve("merged-umask");
        assertEquals(0, merge(model, merged).exit());
        assertEquals(permissions(reference), permissions(merged));
    }

    private static String permissions(Path path) throws IOException {
        return PosixFilePermissions.toString(Files.getPosixFilePermissions(path));
    }

    private static List<Path> list(Path folder) throws IOException {
        try (Stream<Path> files = Files.list(folder)) {
            return files.sorted().toList();
        }
    }

    private static Path copy(Path from, Path to) throws IOException {
        Files.createDirectories(to);
        try (Stream<Path> files = Files.list(from)) {
            for (Path file : files.toList()) {
                Files.copy(file, to.resolve(file.getFileName()), StandardCopyOption.REPLACE_EXISTING);
            }
        }
        return to;
    }
}
