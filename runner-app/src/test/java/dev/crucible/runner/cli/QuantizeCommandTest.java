package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.SafetensorsFile;
import dev.crucible.api.quant.IntCodec;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** {@code runner quantize}: the compressed-tensors folder it writes, and every command running it as stored. */
class QuantizeCommandTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @TempDir
    Path dir;


    private static List<Integer> generated(RunnerCli run) throws Exception {
        List<Integer> ids = new ArrayList<>();
        Json.mapper().readTree(run.out()).get("generated_ids").forEach(id -> ids.add(id.asInt()));
        return ids;
    }

    @Test
    void int8FolderHasTheCompressedTensorsLayoutAndRunsAsTheOnLoadQuantization() throws Exception {
        Path model = QuantizedRunTest.fixture("stories260k");
        Path out = dir.resolve("int8");
        RunnerCli quantize = RunnerCli.run(ONE_THREAD, "quantize", "--model", model.toString(), "--bits", "8",
                "--out", out.toString());
        assertEquals(0, quantize.exit(), quantize.err());
        assertTrue(quantize.out().startsWith("quantized 35 of 35 projections: int8 per-channel (symmetric); full "
                + "precision: lm_head, model.embed_tokens, biases and norms; weights "), quantize.out());

        JsonNode config = Json.mapper().readTree(out.resolve("config.json").toFile()).get("quantization_config");
        assertEquals("compressed-tensors", config.get("quant_method").asText());
        assertEquals("int-quantized", config.get("format").asText());
        assertEquals("channel", config.at("/config_groups/group_0/weights/strategy").asText());
        String down = "model.layers.0.mlp.down_proj";
        try (Arena arena = Arena.ofConfined(); Checkpoint original = Checkpoint.open(model)) {
            SafetensorsFile file = SafetensorsFile.open(out.resolve("model.safetensors"), arena);
            assertEquals(DType.I8, file.tensors().get(down + ".weight").dtype());
            assertArrayEquals(original.info(down + ".weight").shape(), file.tensors().get(down + ".weight").shape());
            assertArrayEquals(new long[] {original.info(down + ".weight").shape()[0], 1},
                    file.tensors().get(down + ".weight_scale").shape());
            assertArrayEquals(original.tensor("model.norm.weight").toFloatArray(),
                    file.tensor("model.norm.weight").toFloatArray(), "norms are copied as they are");
            // What the folder stores is IntCodec's encoding of the original weight, so it runs as --quantization int8.
            float[] stored = original.tensor(down + ".weight").toFloatArray();
            IntCodec codec = new IntCodec(new WeightFormat.Int(8, 0, false));
            try (Checkpoint quantized = Checkpoint.open(out)) {
                assertEquals(original.names(), quantized.names());
                assertArrayEquals(codec.decode(codec.encode(down + ".weight", stored, original.info(down + ".weight")
                        .shape())), quantized.tensor(down + ".weight").toFloatArray());
            }
        }

        RunnerCli asStored = RunnerCli.run(ONE_THREAD, "generate", "--model", out.toString(), "--prompt",
                "Once upon a time", "--max-new-tokens", "16", "--json");
        RunnerCli onLoad = RunnerCli.run(ONE_THREAD, "generate", "--model", model.toString(), "--prompt",
                "Once upon a time", "--max-new-tokens", "16", "--json", "--quantization", "int8");
        assertEquals(0, asStored.exit(), asStored.err());
        assertEquals(generated(onLoad), generated(asStored));
        assertTrue(asStored.err().lines().findFirst().orElse("").startsWith("quantization: int8 per-channel "
                + "(symmetric); full precision: lm_head, model.embed_tokens, biases and norms; 35 of 35 projections "
                + "quantized"), asStored.err());

        RunnerCli again = RunnerCli.run(ONE_THREAD, "quantize", "--model", out.toString(), "--bits", "4",
                "--out", dir.resolve("twice").toString());
        assertEquals(2, again.exit());
        assertEquals("error: " + out + " is stored quantized already (int8 per-channel (symmetric); full precision: lm_head, "
                + "model.embed_tokens, biases and norms); quantize its full-precision original", again.err().strip());
        RunnerCli exists = RunnerCli.run(ONE_THREAD, "quantize", "--model", model.toString(), "--bits", "8",
                "--out", out.toString());
        assertEquals(2, exists.exit());
        assertFalse(exists.err().contains("Exception"), exists.err());
    }

    @Test
    void int4AsymmetricFolderRunsAsStoredEvaluatesAgainstTheOriginalAndLeavesInFullPrecision() throws Exception {
        Path model = Path.of(System.getProperty("crucible.repo.root", ".."), "demo-model").normalize();
        Path out = dir.resolve("int4");
        RunnerCli quantize = RunnerCli.run(ONE_THREAD, "quantize", "--model", model.toString(), "--bits", "4",
                "--scheme", "asymmetric", "--block-size", "32", "--exclude", "model.layers.0.self_attn.q_proj",
                "--out", out.toString());
        assertEquals(0, quantize.exit(), quantize.err());
        assertTrue(quantize.out().startsWith("quantized 27 of 28 projections: int4 asymmetric (zero points, blocks of "
                + "32)"), quantize.out());
        JsonNode config = Json.mapper().readTree(out.resolve("config.json").toFile()).get("quantization_config");
        assertEquals("pack-quantized", config.get("format").asText());
        assertEquals(List.of("lm_head", "model.layers.0.self_attn.q_proj"),
                Json.mapper().convertValue(config.get("ignore"), List.class));

        RunnerCli onLoad = RunnerCli.run(ONE_THREAD, "generate", "--model", model.toString(), "--prompt",
                "Once upon a time", "--max-new-tokens", "16", "--json", "--quantization", "int4", "--quant-scheme",
                "asymmetric", "--quant-block-size", "32", "--quant-exclude", "lm_head,model.embed_tokens,"
                        + "model.layers.0.self_attn.q_proj");
        RunnerCli asStored = RunnerCli.run(ONE_THREAD, "generate", "--model", out.toString(), "--prompt",
                "Once upon a time", "--max-new-tokens", "16", "--json");
        assertEquals(0, asStored.exit(), asStored.err());
        assertEquals(generated(onLoad), generated(asStored));

        RunnerCli evaluate = RunnerCli.run(ONE_THREAD, "evaluate", "--model", out.toString(), "--base",
                model.toString(), "--bad-test-prompts", "bundled:harmful/test[:4]", "--good-test-prompts",
                "bundled:harmless/test[:4]", "--max-response-length", "4", "--json");
        assertEquals(0, evaluate.exit(), evaluate.err());
        JsonNode report = Json.mapper().readTree(evaluate.out());
        assertTrue(report.get("quantization").asText().startsWith("int4 asymmetric"), evaluate.out());
        double kl = report.get("scores").get("kl_divergence").get("value").asDouble();
        assertTrue(kl > 1e-6 && kl < 1, "int4 moves the first-token distribution a little: " + kl);

        // Every writer stores weights dense (the dequantized values), so the config it copies says nothing of quantization.
        Path copy = Files.createDirectory(dir.resolve("copy"));
        dev.crucible.runner.export.BaseFiles.of(out).copyInto(copy);
        JsonNode copied = Json.mapper().readTree(copy.resolve("config.json").toFile());
        assertFalse(copied.has("quantization_config"), copied.toString());
        assertEquals(Json.mapper().readTree(model.resolve("config.json").toFile()).get("hidden_size"),
                copied.get("hidden_size"));
    }
}
