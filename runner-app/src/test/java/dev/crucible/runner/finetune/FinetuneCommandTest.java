package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.SafetensorsFile;
import dev.crucible.api.io.TensorInfo;
import dev.crucible.api.tensor.DType;
import dev.crucible.huggingface.hub.HubCache;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code runner finetune} end to end on tiny init-model models. */
class FinetuneCommandTest {
    @TempDir
    static Path shared;
    @TempDir
    Path temp;
    private static Path f32Model;
    private static Path bf16Model;
    private static Path data;

    @BeforeAll
    static void models() {
        f32Model = TinyModel.write(shared.resolve("tiny-f32"), DType.F32);
        bf16Model = TinyModel.write(shared.resolve("tiny-bf16"), DType.BF16);
        data = TinyModel.chatData(shared.resolve("chat.jsonl"), 12);
    }

    private String[] finetune(Path model, Path out, String... extra) {
        List<String> args = new ArrayList<>(List.of("finetune", "--model", model.toString(), "--data", data.toString(),
                "--out", out.toString(), "--device", "cpu", "--micro-batch", "4", "--grad-accum", "1",
                "--warmup-ratio", "0"));
        args.addAll(List.of(extra));
        if (!args.contains("--epochs")) {
            args.addAll(List.of("--epochs", "3"));
        }
        return args.toArray(String[]::new);
    }

    @Test
    void fullTrainingLowersTheLossAndWritesAModelFolderShapedLikeTheBase() throws Exception {
        Path out = temp.resolve("full");
        Cli run = Cli.run(finetune(f32Model, out, "--method", "full", "--lr", "1e-2", "--epochs", "8"));
        assertEquals(0, run.exit(), run.all());
        assertTrue(run.out().contains("method: full (--method full was asked for)"), run.out());
        JsonNode meta = Cli.json(out.resolve("finetune_meta.json"));
        JsonNode history = meta.get("loss_history");
        assertEquals(24, history.size(), "12 rows in micro-batches of 4, eight epochs");
        double first = history.get(0).get("loss").asDouble();
        double last = history.get(23).get("loss").asDouble();
        assertTrue(last < 0.4 * first, "loss " + first + " -> " + last);
        assertEquals("float32", meta.get("dtype").asText());
        try (Checkpoint base = Checkpoint.open(f32Model); Checkpoint trained = Checkpoint.open(out)) {
            assertEquals(List.copyOf(base.names()), List.copyOf(trained.names()));
            for (String name : base.names()) {
                TensorInfo before = base.info(name);
                TensorInfo after = trained.info(name);
                assertEquals(before.dtype(), after.dtype(), name);
                assertArrayEquals(before.shape(), after.shape(), name);
            }
            assertFalse(java.util.Arrays.equals(base.tensor("model.layers.1.mlp.up_proj.weight").toFloatArray(),
                    trained.tensor("model.layers.1.mlp.up_proj.weight").toFloatArray()), "weights changed");
        }
        for (String file : List.of("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json")) {
            assertTrue(Files.isRegularFile(out.resolve(file)), file);
        }
        Cli generate = Cli.run("generate", "--model", out.toString(), "--chat", "--prompt", "Colour 3?",
                "--max-new-tokens", "12");
        assertEquals(0, generate.exit(), generate.all());
    }

    @Test
    void loraOnABf16BaseWritesFloat32AdaptersInPeftLayout() throws Exception {
        Path out = temp.resolve("lora");
        Cli run = Cli.run(finetune(bf16Model, out, "--method", "lora", "--dtype", "bfloat16", "--rank", "4",
                "--alpha", "8", "--target-modules", "q_proj,v_proj", "--lr", "1e-2"));
        assertEquals(0, run.exit(), run.all());
        try (SafetensorsFile adapter = SafetensorsFile.open(out.resolve("adapter_model.safetensors"))) {
            List<String> expected = new ArrayList<>();
            for (int layer = 0; layer < 2; layer++) {
                for (String projection : List.of("q_proj", "v_proj")) {
                    String prefix = "base_model.model.model.layers." + layer + ".self_attn." + projection;
                    expected.add(prefix + ".lora_A.weight");
                    expected.add(prefix + ".lora_B.weight");
                }
            }
            assertEquals(expected, List.copyOf(adapter.tensors().keySet()));
            TensorInfo a = adapter.tensors().get("base_model.model.model.layers.0.self_attn.v_proj.lora_A.weight");
            TensorInfo b = adapter.tensors().get("base_model.model.model.layers.0.self_attn.v_proj.lora_B.weight");
            assertEquals(DType.F32, a.dtype(), "float32 adapters on a bf16 base");
            assertArrayEquals(new long[] {4, 32}, a.shape());
            assertArrayEquals(new long[] {16, 4}, b.shape(), "v_proj is 2 kv heads of 8 wide");
        }
        JsonNode config = Cli.json(out.resolve("adapter_config.json"));
        assertEquals("LORA", config.get("peft_type").asText());
        assertEquals("CAUSAL_LM", config.get("task_type").asText());
        assertEquals(4, config.get("r").asInt());
        assertEquals(8.0, config.get("lora_alpha").asDouble());
        assertEquals(0.0, config.get("lora_dropout").asDouble());
        assertEquals(List.of("q_proj", "v_proj"), strings(config.get("target_modules")));
        assertEquals(bf16Model.toAbsolutePath().toString(), config.get("base_model_name_or_path").asText());
        assertEquals("none", config.get("bias").asText());
        assertFalse(config.get("fan_in_fan_out").asBoolean());
        assertFalse(config.get("use_rslora").asBoolean());
        JsonNode meta = Cli.json(out.resolve("finetune_meta.json"));
        assertEquals("cpu:0", meta.get("device").asText());
        assertEquals("lora", meta.get("method").asText());
        assertEquals("bfloat16", meta.get("dtype").asText());
        assertEquals("float32", meta.get("adapter_dtype").asText());
        assertEquals(4, meta.get("rank").asInt());
        assertEquals(8.0, meta.get("alpha").asDouble());
        assertEquals(0.01, meta.get("lr").asDouble());
        assertEquals(List.of("q_proj", "v_proj"), strings(meta.get("target_modules")));
        assertEquals(12, meta.get("data").get("rows").asInt());
        assertEquals(12, meta.get("data").get("examples").asInt());
        assertEquals(9, meta.get("loss_history").size());
        assertEquals(2 * ((4 * 32 + 32 * 4) + (4 * 32 + 16 * 4)), meta.get("trainable_parameters").asLong(),
                "q_proj and v_proj of two layers");
        for (String file : List.of("tokenizer.json", "tokenizer_config.json")) {
            assertEquals(Cli.sha256(bf16Model.resolve(file)), Cli.sha256(out.resolve(file)), file + " copied");
        }
        assertFalse(Files.exists(out.resolve("model.safetensors")), "base weights are not copied");
    }

    @Test
    void aRelativeModelPathIsWrittenAbsoluteSoPeftDoesNotTakeItForAHubId() {
        Path relative = Path.of("").toAbsolutePath().relativize(f32Model.toAbsolutePath());
        assertFalse(relative.isAbsolute());
        Path out = temp.resolve("relative");
        Cli run = Cli.run(withModel(finetune(f32Model, out, "--method", "lora", "--rank", "2", "--epochs", "1"),
                relative.toString()));
        assertEquals(0, run.exit(), run.all());
        String written = Cli.json(out.resolve("adapter_config.json")).get("base_model_name_or_path").asText();
        assertEquals(f32Model.toAbsolutePath().normalize().toString(), written);
        assertTrue(Cli.json(out.resolve("adapter_config.json")).get("revision").isNull());
        assertEquals(written, Cli.json(out.resolve("finetune_meta.json")).get("base_model").asText());
    }

    @Test
    void aModelFromTheHubCacheIsNamedByItsHubIdAndRevision() throws Exception {
        Path cache = temp.resolve("hub");
        HubCache layout = new HubCache(cache);
        String commit = "3".repeat(40);
        try (var files = Files.list(f32Model)) {
            for (Path file : files.toList()) {
                Path blob = Files.createDirectories(layout.repoFolder("org/tiny").resolve("blobs"))
                        .resolve(file.getFileName() + ".blob");
                Files.copy(file, blob);
                layout.link("org/tiny", commit, file.getFileName().toString(), blob);
            }
        }
        layout.writeRef("org/tiny", "v1", commit);
        Path out = temp.resolve("from-hub");
        Cli run = Cli.run(Map.of("HF_HUB_CACHE", cache.toString(), "HF_HUB_OFFLINE", "1"),
                withModel(finetune(f32Model, out, "--method", "lora", "--rank", "2", "--epochs", "1"), "org/tiny@v1"));
        assertEquals(0, run.exit(), run.all());
        JsonNode config = Cli.json(out.resolve("adapter_config.json"));
        assertEquals("org/tiny", config.get("base_model_name_or_path").asText());
        assertEquals("v1", config.get("revision").asText());
        JsonNode meta = Cli.json(out.resolve("finetune_meta.json"));
        assertEquals("org/tiny", meta.get("base_model").asText());
        assertEquals("v1", meta.get("base_model_revision").asText());
        assertEquals(layout.snapshot("org/tiny", commit).toAbsolutePath().normalize().toString(),
                meta.get("base_model_folder").asText());
    }

    private static String[] withModel(String[] args, String model) {
        String[] copy = args.clone();
        copy[java.util.Arrays.asList(copy).indexOf("--model") + 1] = model;
        return copy;
    }

    @Test
    void theSameSeedWritesTheSameAdapterBytes() {
        List<String> hashes = new ArrayList<>();
        for (String seed : List.of("3", "3", "4")) {
            Path out = temp.resolve("seed" + hashes.size());
            Cli run = Cli.run(finetune(f32Model, out, "--method", "lora", "--rank", "2", "--seed", seed, "--epochs", "1",
                    "--lr", "1e-2"));
            assertEquals(0, run.exit(), run.all());
            hashes.add(Cli.sha256(out.resolve("adapter_model.safetensors")));
        }
        assertEquals(hashes.get(0), hashes.get(1));
        assertNotEquals(hashes.get(0), hashes.get(2));
    }

    @Test
    void methodAutoSaysWhatItChoseAndWhy() {
        Cli small = Cli.run(Map.of("CRUCIBLE_DEVICE_MEMORY", "64KiB"),
                finetune(f32Model, temp.resolve("auto-q"), "--epochs", "1", "--rank", "2"));
        assertEquals(0, small.exit(), small.all());
        assertTrue(small.out().contains("method: qlora (the frozen weights (") && small.out().contains(
                "in bf16) do not fit in 64.0 KiB of cpu:0"), small.out());
        assertTrue(small.out().contains("base NF4 4-bit, computed in float32"), small.out());
        Cli large = Cli.run(Map.of("CRUCIBLE_DEVICE_MEMORY", "16GiB"),
                finetune(f32Model, temp.resolve("auto-l"), "--epochs", "1", "--rank", "2"));
        assertEquals(0, large.exit(), large.all());
        assertTrue(large.out().contains("method: lora (the frozen weights ("), large.out());
        assertTrue(large.out().contains("fit in 16.0 GiB of cpu:0"), large.out());
        assertTrue(large.out().contains(", lr 0.0002 with "), "numbers as written, not 2.0E-4: " + large.out());
    }

    @Test
    void userMistakesAreOneLineAndExitTwo() throws Exception {
        Path bad = Files.writeString(temp.resolve("bad.jsonl"),
                "{\"prompt\": \"a\", \"completion\": \"b\"}\n{\"prompt\": \"a\"}\n");
        Cli malformed = Cli.run("finetune", "--model", f32Model.toString(), "--data", bad.toString(), "--out",
                temp.resolve("x").toString());
        assertEquals(2, malformed.exit());
        assertEquals("error: bad.jsonl:2: \"completion\" must be a string and is missing", malformed.err().strip());
        Path existing = Files.createDirectories(temp.resolve("existing"));
        Cli exists = Cli.run(finetune(f32Model, existing));
        assertEquals(2, exists.exit());
        assertTrue(exists.err().contains("already exists; pass --force"), exists.err());
        Cli method = Cli.run(finetune(f32Model, temp.resolve("y"), "--method", "dora"));
        assertEquals(2, method.exit());
        assertTrue(method.err().contains("not one of auto, lora, qlora, full"), method.err());
    }

    private static List<String> strings(JsonNode array) {
        List<String> values = new ArrayList<>();
        array.forEach(node -> values.add(node.asText()));
        return values;
    }
}
