package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code runner bench decode} end to end on a tiny random model: every field is there and consistent with the
 * others and with the checkpoint. Speeds are only checked to be positive and finite (this is a test, not a
 * benchmark: the machine may be busy).
 */
class BenchDecodeCommandTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @TempDir
    static Path temp;

    /** A two-layer Qwen2-shaped model with random weights, a character tokenizer and a ChatML template. */
    static Path tinyModel(Path folder, String name, String... extra) {
        Path out = folder.resolve(name);
        String[] args = {"init-model", "--like", "qwen2", "--hidden", "64", "--layers", "2", "--heads", "4",
                "--kv-heads", "2", "--intermediate", "128", "--seed", "3", "--out", out.toString()};
        String[] all = java.util.stream.Stream.concat(java.util.Arrays.stream(args), java.util.Arrays.stream(extra))
                .toArray(String[]::new);
        RunnerCli init = RunnerCli.run(all);
        assertEquals(0, init.exit(), init.err());
        return out;
    }

    @Test
    void aSmallModelsOpsRunOnOneThreadWhateverTheThreadCountAndTheReportSaysSo() throws Exception {
        Path model = tinyModel(temp, "bench-small");
        RunnerCli r = RunnerCli.run("bench", "decode", "--model", model.toString(), "--device", "cpu", "--threads", "2",
                "--prompt-len", "8", "--new-tokens", "3", "--rounds", "1", "--ceiling-seconds", "0.1", "--json");
        assertEquals(0, r.exit(), r.err());
        // Two threads go to batches side by side; a one-row benchmark has one batch, its ops on one thread.
        assertEquals(1, Json.mapper().readTree(r.out()).get("threads").asInt());
    }

    @Test
    void jsonHasTheCeilingsSpeedsRatiosAndMemory() throws Exception {
        Path model = tinyModel(temp, "bench-tiny");
        RunnerCli r = RunnerCli.run(ONE_THREAD, "bench", "decode", "--model", model.toString(), "--device", "cpu",
                "--prompt-len", "12", "--new-tokens", "5", "--rounds", "2", "--ceiling-seconds", "0.2", "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode json = Json.mapper().readTree(r.out());

        assertEquals("float32", json.get("dtype").asText());
        assertEquals(1, json.get("batch").asInt());
        assertEquals(12, json.get("prompt_len").asInt());
        assertEquals(5, json.get("new_tokens").asInt());
        assertEquals(1, json.get("threads").asInt());
        assertPositive(json.at("/ceilings/matmul_gflops"));
        assertPositive(json.at("/ceilings/bandwidth_gbs"));
        assertPositive(json.at("/prefill/tokens_per_s"));
        assertPositive(json.at("/prefill/ratio_to_matmul"));
        assertPositive(json.at("/decode/tokens_per_s"));
        assertPositive(json.at("/decode/ratio_to_bandwidth"));
        assertTrue(json.at("/decode/ratio_to_matmul").isMissingNode(), "batch 1 is bounded by bandwidth");

        long stored;
        try (Checkpoint checkpoint = Checkpoint.open(model)) {
            stored = checkpoint.names().stream().mapToLong(name -> checkpoint.info(name).byteLength()).sum();
        }
        assertEquals(stored, json.get("weights_bytes").asLong(), "the weights the model holds are the checkpoint's");
        long peak = json.get("peak_rss_bytes").asLong();
        assertTrue(peak > stored, "the process holds at least its weights: " + peak);
        assertEquals(peak / (double) stored, json.get("rss_to_weights").asDouble(), 0.001);
        assertEquals(peak, Math.max(json.get("peak_rss_load_bytes").asLong(), json.get("peak_rss_runs_bytes").asLong()));
        assertTrue(json.at("/env/OPENBLAS_CORETYPE").isTextual(), "environment notes say what changes the numbers");
        assertEquals(2, json.get("per_round").size());
        assertTrue(r.err().contains("round 2/2"), "progress while it runs: " + r.err());
    }

    @Test
    void aBatchIsComparedWithTheMatmulCeilingAndTheTableIsReadable() {
        Path model = tinyModel(temp, "bench-batch");
        RunnerCli r = RunnerCli.run(ONE_THREAD, "bench", "decode", "--model", model.toString(), "--device", "cpu",
                "--batch", "3", "--prompt-len", "6", "--new-tokens", "3", "--rounds", "1", "--ceiling-seconds", "0.2");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("of matmul"), r.out());
        assertFalse(r.out().contains("of bandwidth"), r.out());
        assertTrue(r.out().contains("peak RSS"), r.out());
    }

    @Test
    void badSettingsAreOneLineErrors() {
        Path model = tinyModel(temp, "bench-bad");
        RunnerCli oneToken = RunnerCli.run("bench", "decode", "--model", model.toString(), "--new-tokens", "1");
        assertEquals(2, oneToken.exit());
        assertTrue(oneToken.err().contains("--new-tokens must be at least 2"), oneToken.err());
        RunnerCli noKind = RunnerCli.run("bench");
        assertEquals(2, noKind.exit());
        assertTrue(noKind.err().contains("decode"), noKind.err());
    }

    private static void assertPositive(JsonNode value) {
        assertTrue(value.isNumber() && value.asDouble() > 0 && Double.isFinite(value.asDouble()), "got " + value);
    }
}
