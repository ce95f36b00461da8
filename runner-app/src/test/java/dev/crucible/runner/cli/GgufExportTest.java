package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.quant.GgufCodec;
import dev.crucible.api.tensor.WeightFormat;
import dev.crucible.runner.OracleVenv;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code runner convert --to gguf}, read back by llama.cpp's gguf package (the oracle venv): metadata, tensor names,
 * shapes and types, values dequantized by gguf.quants against the model's own, and Q8_0 and Q4_0 blocks byte for
 * byte against quantizers written here from the format's definition.
 */
class GgufExportTest {
    @TempDir
    Path dir;


    private static Path demo() {
        return Path.of(System.getProperty("crucible.repo.root", ".."), "demo-model").normalize();
    }

    /** What the gguf package read: the JSON and the folder with each tensor's values and bytes. */
    private record Read(JsonNode json, Path folder) {
        JsonNode metadata(String key) {
            return json.get("metadata").get(key);
        }

        Map<String, JsonNode> tensors() {
            Map<String, JsonNode> tensors = new LinkedHashMap<>();
            json.get("tensors").forEach(t -> tensors.put(t.get("name").asText(), t));
            return tensors;
        }

        float[] values(String tensor) throws Exception {
            ByteBuffer bytes = ByteBuffer.wrap(Files.readAllBytes(folder.resolve(tensor + ".f32")))
                    .order(ByteOrder.LITTLE_ENDIAN);
            float[] out = new float[bytes.remaining() / 4];
            bytes.asFloatBuffer().get(out);
            return out;
        }

        byte[] raw(String tensor) throws Exception {
            return Files.readAllBytes(folder.resolve(tensor + ".raw"));
        }
    }

    private Read convertAndRead(Path model, String type, Path python) throws Exception {
        Path file = dir.resolve(model.getFileName() + "-" + type + ".gguf");
        RunnerCli run = RunnerCli.run("convert", "--model", model.toString(), "--to", "gguf", "--gguf-type", type,
                "--out", file.toString());
        assertEquals(0, run.exit(), run.err());
        assertTrue(run.out().startsWith("wrote " + file + " (GGUF " + type + ", "), run.out());
        return readBack(file, python);
    }

    private Read readBack(Path file, Path python) throws Exception {
        Path folder = Files.createDirectories(dir.resolve(file.getFileName() + ".read"));
        Path script = Path.of(getClass().getResource("/gguf/read_gguf.py").toURI());
        Process process = new ProcessBuilder(python.toString(), script.toString(), file.toString(), folder.toString())
                .redirectErrorStream(true).start();
        String log = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(process.waitFor(5, TimeUnit.MINUTES), "the gguf reader did not finish");
        assertEquals(0, process.exitValue(), "the gguf package cannot read " + file + ": " + log);
        return new Read(Json.mapper().readTree(folder.resolve("gguf.json").toFile()), folder);
    }

    /** llama.cpp's names, layer by layer, for a family (written out here, not taken from the writer). */
    private static List<String> expectedNames(ModelConfig config, boolean biases, boolean qkNorm, boolean ropeFreqs) {
        List<String> names = new ArrayList<>(List.of("token_embd.weight"));
        for (int layer = 0; layer < config.numLayers(); layer++) {
            String blk = "blk." + layer + ".";
            names.add(blk + "attn_norm.weight");
            for (String p : List.of("attn_q", "attn_k", "attn_v")) {
                names.add(blk + p + ".weight");
                if (biases) {
                    names.add(blk + p + ".bias");
                }
            }
            names.add(blk + "attn_output.weight");
            if (qkNorm) {
                names.add(blk + "attn_q_norm.weight");
                names.add(blk + "attn_k_norm.weight");
            }
            names.add(blk + "ffn_norm.weight");
            names.addAll(List.of(blk + "ffn_gate.weight", blk + "ffn_up.weight", blk + "ffn_down.weight"));
        }
        names.add("output_norm.weight");
        if (!config.tieWordEmbeddings()) {
            names.add("output.weight");
        }
        if (ropeFreqs) {
            names.add("rope_freqs.weight");
        }
        return names;
    }

    @Test
    void everySupportedFamilyReadsBackWithItsMetadataNamesShapesAndValues() throws Exception {
        Path python = OracleVenv.python();
        record Family(String fixture, String arch, boolean biases, boolean qkNorm, boolean ropeFreqs) { }
        for (Family family : List.of(new Family("stories260k", "llama", false, false, false),
                new Family("tiny-llama3-rope", "llama", false, false, true),
                new Family("tiny-mistral", "llama", false, false, false),
                new Family("tiny-qwen2", "qwen2", true, false, false),
                new Family("tiny-qwen3", "qwen3", false, true, false))) {
            Path model = QuantizedRunTest.fixture(family.fixture());
            ModelConfig config = ModelConfig.read(model);
            Read read = convertAndRead(model, "f32", python);
            String arch = family.arch();
            String what = family.fixture();
            assertEquals(arch, read.metadata("general.architecture").asText(), what);
            assertEquals(config.numLayers(), read.metadata(arch + ".block_count").asInt(), what);
            assertEquals(config.hiddenSize(), read.metadata(arch + ".embedding_length").asInt(), what);
            assertEquals(config.intermediateSize(), read.metadata(arch + ".feed_forward_length").asInt(), what);
            assertEquals(config.numHeads(), read.metadata(arch + ".attention.head_count").asInt(), what);
            assertEquals(config.numKvHeads(), read.metadata(arch + ".attention.head_count_kv").asInt(), what);
            assertEquals(config.headDim(), read.metadata(arch + ".rope.dimension_count").asInt(), what);
            assertEquals(config.maxPositionEmbeddings(), read.metadata(arch + ".context_length").asLong(), what);
            assertEquals((float) config.ropeTheta(), (float) read.metadata(arch + ".rope.freq_base").asDouble(), what);
            assertEquals((float) config.rmsNormEps(),
                    (float) read.metadata(arch + ".attention.layer_norm_rms_epsilon").asDouble(), what);
            assertEquals(0, read.metadata("general.file_type").asInt(), what);
            assertEquals("llama", read.metadata("tokenizer.ggml.model").asText(), what);
            JsonNode vocab = Json.mapper().readTree(model.resolve("tokenizer.json").toFile()).get("model").get("vocab");
            JsonNode tokens = read.metadata("tokenizer.ggml.tokens");
            assertEquals(config.vocabSize(), tokens.size(), what);
            vocab.properties().forEach(e -> assertEquals(e.getKey(), tokens.get(e.getValue().asInt()).asText(), what));
            assertEquals(tokens.size(), read.metadata("tokenizer.ggml.scores").size(), what);
            assertEquals(6, read.metadata("tokenizer.ggml.token_type").get(vocab.get("<0x00>").asInt()).asInt(),
                    what + ": byte tokens are BYTE");
            assertEquals(3, read.metadata("tokenizer.ggml.token_type").get(vocab.get("<s>").asInt()).asInt(),
                    what + ": <s> is CONTROL");
            assertEquals(vocab.get("<s>").asInt(), read.metadata("tokenizer.ggml.bos_token_id").asInt(), what);
            assertEquals(vocab.get("</s>").asInt(), read.metadata("tokenizer.ggml.eos_token_id").asInt(), what);
            assertTrue(read.metadata("tokenizer.ggml.add_bos_token").asBoolean(), what + " adds <s>");

            if (family.ropeFreqs()) {
                assertArrayEquals(llama3RopeFactors(model, config), read.values("rope_freqs.weight"), 1e-6f, what);
            }
            Map<String, JsonNode> tensors = read.tensors();
            // The file keeps the checkpoint's order; the set of names is llama.cpp's.
            assertEquals(expectedNames(config, family.biases(), family.qkNorm(), family.ropeFreqs()).stream().sorted()
                    .toList(), tensors.keySet().stream().sorted().toList(), what);
            assertTensorsAre(read, model, "F32", what);
        }
    }

    /**
     * Every tensor of the folder {@code model} is in the file under llama.cpp's name, with the shape reversed
     * (innermost first), of {@code type}, holding the folder's values exactly (q and k rows interleaved for llama).
     */
    private static void assertTensorsAre(Read read, Path model, String type, String what) throws Exception {
        ModelConfig config = ModelConfig.read(model);
        String arch = read.metadata("general.architecture").asText();
        Map<String, JsonNode> tensors = read.tensors();
        try (Checkpoint checkpoint = Checkpoint.open(model)) {
            for (String hf : checkpoint.names()) {
                String name = ggufName(hf);
                if (name == null || (hf.equals("lm_head.weight") && config.tieWordEmbeddings())) {
                    continue;
                }
                long[] shape = checkpoint.info(hf).shape();
                long[] reversed = new long[shape.length];
                for (int i = 0; i < shape.length; i++) {
                    reversed[i] = shape[shape.length - 1 - i];
                }
                JsonNode tensor = tensors.get(name);
                assertArrayEquals(reversed, Json.mapper().convertValue(tensor.get("shape"), long[].class),
                        what + " " + name);
                assertEquals(shape.length == 1 ? "F32" : type, tensor.get("type").asText(), what + " " + name);
                float[] expected = checkpoint.tensor(hf).toFloatArray();
                if (arch.equals("llama") && (name.contains("attn_q.") || name.contains("attn_k."))) {
                    expected = interleaved(expected, shape, name.contains("attn_q.") ? config.numHeads()
                            : config.numKvHeads());
                }
                assertArrayEquals(expected, read.values(name), what + " " + name);
            }
        }
    }

    /**
     * A family added after the first four, as llama.cpp reads it: its architecture, the keys its loader reads beyond
     * the common ones, each layer's tensor names, and how a checkpoint tensor's values become the file's.
     */
    private record LaterFamily(String fixture, String arch, List<String> layerTensors, boolean output,
                          Map<String, Double> keys) {
        /** llama.cpp's rope rotates adjacent pairs for these, so q/k rows are interleaved. */
        boolean interleaved() {
            return arch.equals("llama") || arch.equals("granite") || arch.equals("smollm3");
        }

        boolean gemma() {
            return arch.startsWith("gemma");
        }
    }

    private static final List<String> LLAMA_LAYER = List.of("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
            "ffn_norm", "ffn_gate", "ffn_up", "ffn_down");
    private static final List<String> GEMMA2_LAYER = List.of("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
            "post_attention_norm", "ffn_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm");

    private static List<LaterFamily> laterFamilies() {
        List<String> gemma3 = new ArrayList<>(GEMMA2_LAYER);
        gemma3.addAll(List.of("attn_q_norm", "attn_k_norm"));
        return List.of(
                new LaterFamily("tiny-phi3", "phi3", List.of("attn_norm", "attn_qkv", "attn_output", "ffn_norm", "ffn_up",
                        "ffn_down"), true, Map.of("phi3.rope.dimension_count", 8.0, "phi3.attention.sliding_window", 0.0)),
                new LaterFamily("tiny-gemma2", "gemma2", GEMMA2_LAYER, false, Map.of("gemma2.attn_logit_softcapping", 20.0,
                        "gemma2.final_logit_softcapping", 15.0, "gemma2.attention.sliding_window", 8.0,
                        "gemma2.attention.sliding_window_pattern", 2.0)),
                new LaterFamily("tiny-mixtral", "llama", List.of("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
                        "ffn_norm", "ffn_gate_inp", "ffn_gate_exps", "ffn_up_exps", "ffn_down_exps"), true,
                        Map.of("llama.expert_count", 4.0, "llama.expert_used_count", 2.0)),
                new LaterFamily("tiny-olmo2", "olmo2", List.of("attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
                        "attn_k_norm", "post_attention_norm", "ffn_gate", "ffn_up", "ffn_down", "post_ffw_norm"), true,
                        Map.of()),
                new LaterFamily("tiny-granite", "granite", LLAMA_LAYER, false, Map.of("granite.attention.scale", 0.09,
                        "granite.embedding_scale", 6.0, "granite.residual_scale", 0.4, "granite.logit_scale", 3.0)),
                new LaterFamily("tiny-gemma3", "gemma3", gemma3, false, Map.of("gemma3.attention.sliding_window", 8.0,
                        "gemma3.attention.sliding_window_pattern", 4.0, "gemma3.rope.freq_base_swa", 10000.0,
                        "gemma3.rope.freq_base", 1e6)),
                new LaterFamily("tiny-smollm3", "smollm3", LLAMA_LAYER, false, Map.of()));
    }

    @Test
    void theLaterFamiliesReadBackWithLlamaCppsKeysNamesAndTransformedValues() throws Exception {
        Path python = OracleVenv.python();
        for (LaterFamily family : laterFamilies()) {
            Path model = QuantizedRunTest.fixture(family.fixture());
            ModelConfig config = ModelConfig.read(model);
            JsonNode json = Json.mapper().readTree(model.resolve("config.json").toFile());
            Read read = convertAndRead(model, "f32", python);
            String what = family.fixture();
            String arch = family.arch();
            assertEquals(arch, read.metadata("general.architecture").asText(), what);
            assertEquals(config.numLayers(), read.metadata(arch + ".block_count").asInt(), what);
            assertEquals(config.numHeads(), read.metadata(arch + ".attention.head_count").asInt(), what);
            assertEquals(config.numKvHeads(), read.metadata(arch + ".attention.head_count_kv").asInt(), what);
            assertEquals(config.headDim(), read.metadata(arch + ".attention.key_length").asInt(), what);
            assertEquals(json.get("rms_norm_eps").floatValue(),
                    (float) read.metadata(arch + ".attention.layer_norm_rms_epsilon").asDouble(), what);
            family.keys().forEach((key, value) -> assertEquals(value.floatValue(),
                    (float) read.metadata(key).asDouble(), what + " " + key));
            if (arch.equals("gemma3")) {
                assertEquals(null, read.metadata("gemma3.attn_logit_softcapping"), "Gemma 3 has no attention cap");
            }

            List<String> names = new ArrayList<>(List.of("token_embd.weight", "output_norm.weight"));
            for (int layer = 0; layer < config.numLayers(); layer++) {
                for (String tensor : family.layerTensors()) {
                    names.add("blk." + layer + "." + tensor + ".weight");
                }
            }
            if (family.output()) {
                names.add("output.weight");
            }
            Map<String, JsonNode> tensors = read.tensors();
            assertEquals(names.stream().sorted().toList(), tensors.keySet().stream().sorted().toList(), what);

            // Gemma 2's llama.cpp scales queries by head_dim^-0.5; the fixture's query_pre_attn_scalar differs.
            double queryFold = arch.equals("gemma2")
                    ? Math.sqrt(config.headDim() / json.get("query_pre_attn_scalar").asDouble()) : 1;
            try (Checkpoint checkpoint = Checkpoint.open(model)) {
                for (String hf : checkpoint.names()) {
                    long[] shape = checkpoint.info(hf).shape();
                    float[] expected = checkpoint.tensor(hf).toFloatArray();
                    String name = laterName(hf, arch);
                    if (name.contains("_exps.")) {
                        // Expert E's rows are the E-th slice of the stacked [experts, out, in] tensor.
                        int expert = Integer.parseInt(hf.replaceFirst(".*\\.experts\\.(\\d+)\\..*", "$1"));
                        float[] stacked = read.values(name);
                        assertArrayEquals(new long[] {shape[1], shape[0], config.experts().count()},
                                Json.mapper().convertValue(tensors.get(name).get("shape"), long[].class), what + name);
                        assertArrayEquals(expected, java.util.Arrays.copyOfRange(stacked, expert * expected.length,
                                (expert + 1) * expected.length), what + " " + hf);
                        continue;
                    }
                    JsonNode tensor = tensors.get(name);
                    if (hf.equals("lm_head.weight") && !family.output()) {
                        continue;
                    }
                    long[] reversed = new long[shape.length];
                    for (int i = 0; i < shape.length; i++) {
                        reversed[i] = shape[shape.length - 1 - i];
                    }
                    assertArrayEquals(reversed, Json.mapper().convertValue(tensor.get("shape"), long[].class),
                            what + " " + name);
                    assertEquals("F32", tensor.get("type").asText(), what + " " + name);
                    if (family.interleaved() && (name.contains("attn_q.") || name.contains("attn_k."))) {
                        expected = interleaved(expected, shape, name.contains("attn_q.") ? config.numHeads()
                                : config.numKvHeads());
                    }
                    for (int i = 0; i < expected.length; i++) {
                        if (family.gemma() && name.endsWith("norm.weight")) {
                            expected[i] += 1; // Gemma's RMSNorm multiplies by 1 + weight; llama.cpp's by the weight
                        }
                        if (name.contains(".attn_q.")) {
                            expected[i] = (float) (expected[i] * queryFold);
                        }
                    }
                    assertArrayEquals(expected, read.values(name), what + " " + name);
                }
            }
        }
        Read q8 = convertAndRead(QuantizedRunTest.fixture("tiny-mixtral"), "q8_0", python);
        assertEquals("Q8_0", q8.tensors().get("blk.0.ffn_down_exps.weight").get("type").asText());
        assertEquals("F32", q8.tensors().get("blk.0.ffn_gate_inp.weight").get("type").asText(), "routers stay F32");
        try (Checkpoint checkpoint = Checkpoint.open(QuantizedRunTest.fixture("tiny-mixtral"))) {
            float[] expert3 = checkpoint.tensor("model.layers.0.block_sparse_moe.experts.3.w2.weight").toFloatArray();
            float[] stacked = q8.values("blk.0.ffn_down_exps.weight");
            byte[] raw = q8.raw("blk.0.ffn_down_exps.weight");
            float[] slice = java.util.Arrays.copyOfRange(stacked, 3 * expert3.length, 4 * expert3.length);
            byte[] rawSlice = java.util.Arrays.copyOfRange(raw, 3 * expert3.length / 32 * 34,
                    4 * expert3.length / 32 * 34);
            assertArrayEquals(q8_0(expert3), rawSlice, "expert 3's Q8_0 blocks byte for byte");
            for (int i = 0; i < expert3.length; i++) {
                float amax = 0;
                for (int j = i / 32 * 32; j < i / 32 * 32 + 32; j++) {
                    amax = Math.max(amax, Math.abs(expert3[j]));
                }
                assertEquals(expert3[i], slice[i], amax / 127, "q8_0 expert weight " + i + ": within half a step");
            }
        }
    }

    /**
     * llama.cpp's {@code llama-simple}: {@code $LLAMA_SIMPLE}, else the build beside the repository
     * ({@code ../peers/llama.cpp/build/bin}); the test is skipped without one.
     */
    private static Path llamaSimple() {
        String configured = System.getenv("LLAMA_SIMPLE");
        Path path = configured != null ? Path.of(configured)
                : Path.of(System.getProperty("crucible.repo.root", ".."), "..", "peers", "llama.cpp", "build", "bin",
                        "llama-simple").normalize();
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.isExecutable(path), "llama.cpp's llama-simple is not at "
                + path + " (set LLAMA_SIMPLE): the llama.cpp build is outside the repository and not in CI");
        return path;
    }

    /**
     * Greedy text without whitespace (a decoded first token drops its leading space, a printed piece keeps it) and
     * without undecodable bytes (they print differently).
     */
    private static String normalized(String text) {
        return text.replace("\uFFFD", "").replaceAll("\\s+", "");
    }

    @Test
    void llamaCppGeneratesWhatRunnerGeneratesForTheLaterFamilies() throws Exception {
        Path llama = llamaSimple();
        List<String> prompts = List.of("Once upon a time, there was a little girl named",
                "Lily and Tom went to the park. They saw a big dog and");
        for (LaterFamily family : laterFamilies()) {
            // llama.cpp gives a model whose general.name contains "phi3" Phi-3's special-token attributes, and looks
            // up <|endoftext|>, which the fixture's (stories260k) vocabulary lacks: convert it under another name.
            Path fixture = QuantizedRunTest.fixture(family.fixture());
            Path model = family.arch().equals("phi3") ? Files.createSymbolicLink(dir.resolve("tiny-p-three"),
                    fixture.toAbsolutePath()) : fixture;
            Path file = dir.resolve(family.fixture() + ".gguf");
            RunnerCli convert = RunnerCli.run("convert", "--model", model.toString(), "--to", "gguf", "--gguf-type",
                    "f32", "--out", file.toString());
            assertEquals(0, convert.exit(), convert.err());
            for (String prompt : prompts) {
                RunnerCli ours = RunnerCli.run(Map.of("CRUCIBLE_THREADS", "1"), "generate", "--model",
                        model.toString(), "--prompt", prompt, "--max-new-tokens", "12", "--json");
                assertEquals(0, ours.exit(), ours.err());
                String text = Json.mapper().readTree(ours.out()).get("text").asText();
                Process process = new ProcessBuilder(llama.toString(), "-m", file.toString(), "-n", "12", prompt)
                        .redirectError(ProcessBuilder.Redirect.DISCARD).start();
                String theirs = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                assertTrue(process.waitFor(2, TimeUnit.MINUTES), "llama-simple did not finish");
                assertEquals(0, process.exitValue(), family.fixture() + ": llama-simple failed: " + theirs);
                // llama-simple prints the prompt's pieces (BOS first) and then the generated ones.
                assertEquals(normalized("<s> " + prompt + " " + text), normalized(theirs),
                        family.fixture() + ": " + prompt);
            }
        }
    }

    @Test
    void familiesLlamaCppWouldMisreadAreRefusedWithTheReason() {
        RunnerCli moe = RunnerCli.run("convert", "--model", QuantizedRunTest.fixture("tiny-qwen3-moe").toString(),
                "--to", "gguf", "--out", dir.resolve("moe.gguf").toString());
        assertEquals(2, moe.exit());
        assertEquals("error: GGUF export: the qwen3_moe model has dense MLP layers [1] (mlp_only_layers/"
                + "decoder_sparse_step), and llama.cpp's qwen3moe makes every layer a mixture of experts; it cannot be "
                + "written to GGUF (export a safetensors folder instead)", moe.err().strip());
        RunnerCli lfm2 = RunnerCli.run("convert", "--model", QuantizedRunTest.fixture("tiny-lfm2").toString(),
                "--to", "gguf", "--out", dir.resolve("lfm2.gguf").toString());
        assertEquals(2, lfm2.exit());
        assertEquals("error: GGUF export is not available for lfm2 models yet; it supports llama, mistral, mixtral, "
                + "qwen2, qwen3, qwen3_moe, phi3, gemma2, gemma3_text, olmo2, granite and smollm3 (export a "
                + "safetensors folder instead)", lfm2.err().strip());
        assertTrue(!Files.exists(dir.resolve("moe.gguf")) && !Files.exists(dir.resolve("lfm2.gguf")), "nothing written");
    }

    /** llama.cpp's name for a tensor of the later families (written out here, not taken from the writer). */
    private static String laterName(String hf, String arch) {
        boolean postNorms = arch.startsWith("gemma") || arch.equals("olmo2");
        String[][] map = {{"input_layernorm", "attn_norm"},
                {"post_attention_layernorm", postNorms ? "post_attention_norm" : "ffn_norm"},
                {"pre_feedforward_layernorm", "ffn_norm"}, {"post_feedforward_layernorm", "post_ffw_norm"},
                {"self_attn.qkv_proj", "attn_qkv"}, {"mlp.gate_up_proj", "ffn_up"},
                {"block_sparse_moe.gate", "ffn_gate_inp"}, {"mlp.gate", "ffn_gate_inp"}};
        String name = hf.replaceFirst("\\.block_sparse_moe\\.experts\\.\\d+\\.w1\\.", ".ffn_gate_exps.")
                .replaceFirst("\\.block_sparse_moe\\.experts\\.\\d+\\.w3\\.", ".ffn_up_exps.")
                .replaceFirst("\\.block_sparse_moe\\.experts\\.\\d+\\.w2\\.", ".ffn_down_exps.");
        for (String[] pair : map) {
            name = name.replace("." + pair[0] + ".", "." + pair[1] + ".");
        }
        String common = ggufName(name);
        return common != null ? common : name.replaceFirst("^model\\.layers\\.(\\d+)\\.", "blk.$1.");
    }

    /** abliterate, finetune and merge write the model they export as GGUF: the same tensors as their folders. */
    @Test
    void theExportingCommandsWriteWhatTheirFoldersHold() throws Exception {
        Path python = OracleVenv.python();
        Path model = demo();
        Path folder = dir.resolve("abliterated");
        Path file = dir.resolve("abliterated.gguf");
        RunnerCli abliterate = RunnerCli.run(Map.of("CRUCIBLE_THREADS", "1"), "abliterate", "--model", model.toString(),
                "--trials", "2", "--startup-trials", "2", "--max-response-length", "2", "--seed", "1",
                "--good-prompts", "bundled:harmless/train[:4]", "--bad-prompts", "bundled:harmful/train[:4]",
                "--good-test-prompts", "bundled:harmless/test[:2]", "--bad-test-prompts", "bundled:harmful/test[:2]",
                "--study", dir.resolve("study").toString(), "--headless", "--trial", "1", "--export", folder.toString(),
                "--export-gguf", file.toString(), "--gguf-type", "f32");
        assertEquals(0, abliterate.exit(), abliterate.err());
        assertTrue(abliterate.out().contains("wrote " + file + " (GGUF f32, "), abliterate.out());
        assertTensorsAre(readBack(file, python), folder, "F32", "abliterate");

        Path data = dir.resolve("chat.jsonl");
        Files.writeString(data, ("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}, {\"role\": \"assistant\", "
                + "\"content\": \"hello there\"}]}\n").repeat(4));
        Path adapter = dir.resolve("adapter");
        Path trained = dir.resolve("trained.gguf");
        RunnerCli finetune = RunnerCli.run(Map.of("CRUCIBLE_THREADS", "1"), "finetune", "--model", model.toString(),
                "--data", data.toString(), "--out", adapter.toString(), "--method", "lora", "--rank", "2", "--epochs",
                "1", "--micro-batch", "4", "--lr", "1e-2", "--export-gguf", trained.toString(), "--gguf-type", "f32");
        assertEquals(0, finetune.exit(), finetune.err());
        Path merged = dir.resolve("merged");
        Path mergedFile = dir.resolve("merged.gguf");
        RunnerCli merge = RunnerCli.run("merge", "--model", model.toString(), "--adapter", adapter.toString(), "--out",
                merged.toString(), "--export-gguf", mergedFile.toString(), "--gguf-type", "f32");
        assertEquals(0, merge.exit(), merge.err());
        assertTensorsAre(readBack(mergedFile, python), merged, "F32", "merge");
        assertTensorsAre(readBack(trained, python), merged, "F32", "finetune");

        RunnerCli exists = RunnerCli.run("convert", "--model", model.toString(), "--to", "gguf", "--out", file.toString());
        assertEquals(2, exists.exit());
        assertEquals("error: " + file + " already exists; pass --force to replace it, or choose another file",
                exists.err().strip());
        RunnerCli badType = RunnerCli.run("convert", "--model", model.toString(), "--to", "gguf", "--gguf-type", "q3_k",
                "--out", dir.resolve("x.gguf").toString());
        assertEquals(2, badType.exit());
        assertEquals("error: --gguf-type 'q3_k' is not one of f32, f16, bf16, q8_0, q4_0, q4_k_m, q6_k",
                badType.err().strip());
    }

    /**
     * The factor llama.cpp divides each rotary frequency by, as its converter computes it from config.json's llama3
     * rope_scaling: 1 above the high-frequency wavelength, {@code factor} below the low one, a smooth blend between.
     */
    private static float[] llama3RopeFactors(Path model, ModelConfig config) throws Exception {
        JsonNode scaling = Json.mapper().readTree(model.resolve("config.json").toFile()).get("rope_scaling");
        double factor = scaling.get("factor").asDouble();
        double low = scaling.get("low_freq_factor").asDouble();
        double high = scaling.get("high_freq_factor").asDouble();
        double context = scaling.get("original_max_position_embeddings").asDouble();
        float[] factors = new float[config.headDim() / 2];
        for (int i = 0; i < factors.length; i++) {
            double frequency = 1 / Math.pow(config.ropeTheta(), 2.0 * i / config.headDim());
            double wavelength = 2 * Math.PI / frequency;
            if (wavelength < context / high) {
                factors[i] = 1;
            } else if (wavelength > context / low) {
                factors[i] = (float) factor;
            } else {
                double smooth = (context / wavelength - low) / (high - low);
                factors[i] = (float) (1 / ((1 - smooth) / factor + smooth));
            }
        }
        return factors;
    }

    /** HF's rotate-half rows of each head (first half, then second) as llama.cpp's interleaved pairs. */
    private static float[] interleaved(float[] values, long[] shape, int heads) {
        int rows = (int) shape[0];
        int columns = shape.length == 1 ? 1 : (int) shape[1];
        int headDim = rows / heads;
        float[] out = new float[values.length];
        for (int row = 0; row < rows; row++) {
            int head = row / headDim;
            int within = row % headDim;
            int pair = within / 2;
            int which = within % 2;
            int from = head * headDim + which * (headDim / 2) + pair;
            System.arraycopy(values, from * columns, out, row * columns, columns);
        }
        return out;
    }

    private static String ggufName(String hf) {
        if (hf.equals("model.embed_tokens.weight")) {
            return "token_embd.weight";
        }
        if (hf.equals("model.norm.weight")) {
            return "output_norm.weight";
        }
        if (hf.equals("lm_head.weight")) {
            return "output.weight";
        }
        String[][] map = {{"input_layernorm", "attn_norm"}, {"post_attention_layernorm", "ffn_norm"},
                {"self_attn.q_proj", "attn_q"}, {"self_attn.k_proj", "attn_k"}, {"self_attn.v_proj", "attn_v"},
                {"self_attn.o_proj", "attn_output"}, {"self_attn.q_norm", "attn_q_norm"},
                {"self_attn.k_norm", "attn_k_norm"}, {"mlp.gate_proj", "ffn_gate"}, {"mlp.up_proj", "ffn_up"},
                {"mlp.down_proj", "ffn_down"}};
        String rest = hf.replaceFirst("^model\\.layers\\.(\\d+)\\.", "blk.$1.");
        for (String[] pair : map) {
            rest = rest.replace("." + pair[0] + ".", "." + pair[1] + ".");
        }
        return rest.startsWith("blk.") ? rest : null;
    }

    @Test
    void theDemoModelsBlockTypesAreByteExactAndCarryItsTokenizerAndChatTemplate() throws Exception {
        Path python = OracleVenv.python();
        Path model = demo();
        ModelConfig config = ModelConfig.read(model);
        JsonNode tokenizerConfig = Json.mapper().readTree(model.resolve("tokenizer_config.json").toFile());
        try (Checkpoint checkpoint = Checkpoint.open(model)) {
            String hf = "model.layers.1.mlp.up_proj.weight";
            String name = "blk.1.ffn_up.weight";
            float[] values = checkpoint.tensor(hf).toFloatArray();
            float amax = 0;
            for (float v : values) {
                amax = Math.max(amax, Math.abs(v));
            }
            Map<String, String> expectedType = Map.of("q8_0", "Q8_0", "q4_0", "Q4_0", "f16", "F16", "bf16", "BF16",
                    "q6_k", config.hiddenSize() % 256 == 0 ? "Q6_K" : "Q8_0",
                    "q4_k_m", config.hiddenSize() % 256 == 0 ? "Q4_K" : "Q5_0");
            for (String type : List.of("q8_0", "q4_0", "f16", "bf16", "q6_k", "q4_k_m")) {
                Read read = convertAndRead(model, type, python);
                assertEquals(tokenizerConfig.get("chat_template").asText(),
                        read.metadata("tokenizer.chat_template").asText(), type);
                assertEquals(config.vocabSize(), read.metadata("tokenizer.ggml.tokens").size(), type);
                assertEquals(expectedType.get(type), read.tensors().get(name).get("type").asText(), type);
                float[] back = read.values(name);
                assertEquals(values.length, back.length, type);
                switch (type) {
                    case "q8_0" -> assertArrayEquals(q8_0(values), read.raw(name), "Q8_0 blocks byte for byte");
                    case "q4_0" -> assertArrayEquals(q4_0(values), read.raw(name), "Q4_0 blocks byte for byte");
                    default -> { }
                }
                double tolerance = switch (type) {
                    case "f16" -> amax / 1024;
                    case "bf16" -> amax / 128;
                    case "q8_0" -> amax / 127;
                    default -> amax / 7;
                };
                for (int i = 0; i < values.length; i++) {
                    assertEquals(values[i], back[i], tolerance, type + " weight " + i);
                }
                if (read.tensors().get(name).get("type").asText().startsWith("Q")) {
                    WeightFormat.GgufType block = WeightFormat.GgufType.valueOf(read.tensors().get(name).get("type").asText());
                    GgufCodec codec = new GgufCodec(block);
                    assertArrayEquals(codec.decode(codec.encode(values), values.length), back,
                            type + ": gguf.quants dequantizes our blocks to what GgufCodec does");
                }
            }
        }
    }

    /** Q8_0 from its definition: per 32 weights d = max|x| / 127 (f16) and 32 int8 roundf(x / d). */
    private static byte[] q8_0(float[] x) {
        ByteBuffer out = ByteBuffer.allocate(x.length / 32 * 34).order(ByteOrder.LITTLE_ENDIAN);
        for (int b = 0; b < x.length / 32; b++) {
            float amax = 0;
            for (int j = 0; j < 32; j++) {
                amax = Math.max(amax, Math.abs(x[b * 32 + j]));
            }
            float d = amax / 127;
            float id = d != 0 ? 1 / d : 0;
            out.putShort(HalfFloats.floatToF16(d));
            for (int j = 0; j < 32; j++) {
                out.put((byte) roundf(x[b * 32 + j] * id));
            }
        }
        return out.array();
    }

    /**
     * Q4_0 from its definition: per 32 weights d = m / -8 with m the weight of largest magnitude (f16), and
     * q = min(15, trunc(x / d + 8.5)) in nibbles, weight j in the low nibble of byte j and weight 16 + j in its high one.
     */
    private static byte[] q4_0(float[] x) {
        ByteBuffer out = ByteBuffer.allocate(x.length / 32 * 18).order(ByteOrder.LITTLE_ENDIAN);
        for (int b = 0; b < x.length / 32; b++) {
            float amax = 0;
            float max = 0;
            for (int j = 0; j < 32; j++) {
                float v = x[b * 32 + j];
                if (amax < Math.abs(v)) {
                    amax = Math.abs(v);
                    max = v;
                }
            }
            float d = max / -8;
            float id = d != 0 ? 1 / d : 0;
            out.putShort(HalfFloats.floatToF16(d));
            for (int j = 0; j < 16; j++) {
                int lo = Math.min(15, (int) (x[b * 32 + j] * id + 8.5f));
                int hi = Math.min(15, (int) (x[b * 32 + 16 + j] * id + 8.5f));
                out.put((byte) (lo | hi << 4));
            }
        }
        return out.array();
    }

    /** C's roundf: half away from zero. */
    private static float roundf(float v) {
        return Math.signum(v) * (float) Math.floor(Math.abs(v) + 0.5f);
    }
}
