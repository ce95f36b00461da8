package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** {@code --quantization} end to end: generation on quantized weights, the first lines, KL against full precision. */
class QuantizedRunTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    /** A fixture of ../shared/fixtures; the test is skipped where the folder is missing. */
    static Path fixture(String name) {
        Path p = Path.of(System.getProperty("crucible.repo.root", ".."), "..", "shared", "fixtures", name).normalize();
        Assumptions.assumeTrue(Files.isDirectory(p), "fixture " + p + " is missing (../shared beside the repository)");
        return p;
    }

    private static List<Integer> generated(RunnerCli run) throws Exception {
        List<Integer> ids = new ArrayList<>();
        Json.mapper().readTree(run.out()).get("generated_ids").forEach(id -> ids.add(id.asInt()));
        return ids;
    }

    /** {@code generate --json} of {@code prompt} on {@code model}, {@code tokens} new tokens, with {@code flags}. */
    private static RunnerCli generate(String model, String prompt, int tokens, String... flags) {
        List<String> args = new ArrayList<>(List.of("generate", "--model", model, "--prompt", prompt,
                "--max-new-tokens", Integer.toString(tokens), "--json"));
        args.addAll(List.of(flags));
        return RunnerCli.run(ONE_THREAD, args.toArray(String[]::new));
    }

    /** int8 per-channel keeps stories260k's greedy continuation; the run says how the weights are kept first. */
    @Test
    void int8GenerationFollowsTheFullPrecisionOneAndSaysHowItRuns() throws Exception {
        String model = fixture("stories260k").toString();
        RunnerCli dense = generate(model, "Once upon a time", 24);
        RunnerCli int8 = generate(model, "Once upon a time", 24, "--quantization", "int8");
        assertEquals(0, int8.exit(), int8.err());
        assertEquals(generated(dense), generated(int8));
        List<String> lines = int8.err().lines().toList();
        assertTrue(lines.getFirst().startsWith("quantization: int8 per-channel (symmetric); full precision: lm_head, "
                + "model.embed_tokens, biases and norms; 35 of 35 projections quantized, weights "), int8.err());
        assertTrue(lines.get(1).startsWith("kernels: int8 per-channel: products of up to 8 rows on the vector API kernels")
                || lines.get(1).startsWith("kernels: int8 per-channel: dequantized by libtorch ops"), int8.err());
        assertTrue(dense.err().isBlank(), "nothing is said without --quantization: " + dense.err());
    }

    @Test
    void everyMethodAndSchemeRunsOnTinyQwen3() throws Exception {
        String model = fixture("tiny-qwen3").toString();
        for (List<String> flags : List.of(List.of("int8"), List.of("int4"), List.of("nf4"),
                List.of("int8", "--quant-scheme", "blockwise"), List.of("int4", "--quant-scheme", "asymmetric",
                        "--quant-block-size", "16"), List.of("int8", "--quant-exclude", "none"))) {
            List<String> quantization = new ArrayList<>(List.of("--quantization"));
            quantization.addAll(flags);
            RunnerCli run = generate(model, "Hello", 8, quantization.toArray(String[]::new));
            assertEquals(0, run.exit(), flags + ": " + run.err());
            assertEquals(8, generated(run).size(), flags.toString());
        }
    }

    /**
     * Exclusions that leave {@code lm_head} out quantize the head too: for a tied head (stories260k) a quantized copy
     * of the table the lookups keep reading dense, for an untied one (tiny-qwen2) the head itself, in fewer bytes.
     */
    @Test
    void theOutputHeadIsQuantizedWhenTheExclusionsLeaveItOut() throws Exception {
        String tied = fixture("stories260k").toString();
        RunnerCli dense = generate(tied, "Once upon a time", 24);
        RunnerCli head = generate(tied, "Once upon a time", 24, "--quantization", "int8", "--quant-exclude",
                "model.embed_tokens");
        assertEquals(0, head.exit(), head.err());
        assertEquals(generated(dense), generated(head));
        assertTrue(head.err().lines().findFirst().orElseThrow().contains("full precision: model.embed_tokens, biases "
                + "and norms; 35 of 35 projections quantized and the output head (a quantized copy of the tied "
                + "embedding table, which lookups read dense)"), head.err());

        String untied = fixture("tiny-qwen2").toString();
        RunnerCli kept = generate(untied, "Hello", 8, "--quantization", "int8");
        RunnerCli quantized = generate(untied, "Hello", 8, "--quantization", "int8", "--quant-exclude",
                "model.embed_tokens");
        assertEquals(0, quantized.exit(), quantized.err());
        assertTrue(quantized.err().contains("21 of 21 projections quantized and the output head, weights "),
                quantized.err());
        assertTrue(placedKilobytes(quantized) < placedKilobytes(kept), kept.err() + quantized.err());
        assertEquals(8, generated(quantized).size());
    }

    /** The weights' size the run's first line gives ("weights 286 kB on the device"). */
    private static double placedKilobytes(RunnerCli run) {
        var matcher = java.util.regex.Pattern.compile("weights ([0-9.]+) kB on the device").matcher(run.err());
        assertTrue(matcher.find(), run.err());
        return Double.parseDouble(matcher.group(1));
    }

    @Test
    void evaluateReportsTheQuantizedModelsKlAgainstFullPrecision() throws Exception {
        Path demo = Path.of(System.getProperty("crucible.repo.root", ".."), "demo-model").normalize();
        RunnerCli run = RunnerCli.run(ONE_THREAD, "evaluate", "--model", demo.toString(), "--quantization", "int4",
                "--bad-test-prompts", "bundled:harmful/test[:8]", "--good-test-prompts", "bundled:harmless/test[:8]",
                "--max-response-length", "8", "--json");
        assertEquals(0, run.exit(), run.err());
        JsonNode report = Json.mapper().readTree(run.out());
        assertTrue(report.get("quantization").asText().startsWith("int4 blockwise"), run.out());
        double base = report.get("base_scores").get("kl_divergence").get("value").asDouble();
        double quantized = report.get("scores").get("kl_divergence").get("value").asDouble();
        assertEquals(0.0, base, 1e-12, "the base is the full-precision model itself");
        assertTrue(quantized > 1e-4 && quantized < 0.5, "int4 moves the first-token distribution a little: " + quantized);
    }

    @Test
    void badQuantizationFlagsAreOneLine() {
        String model = fixture("tiny-qwen3").toString();
        RunnerCli blocks = RunnerCli.run("generate", "--model", model, "--prompt", "x", "--quantization", "int8",
                "--quant-block-size", "64");
        assertEquals(2, blocks.exit());
        assertEquals("error: --quant-block-size needs --quant-scheme blockwise or asymmetric (per-channel has one scale "
                + "per output row)", blocks.err().strip());
        RunnerCli full = RunnerCli.run("finetune", "--model", model, "--data", "none.jsonl", "--out", "x",
                "--method", "full", "--quantization", "int4");
        assertEquals(2, full.exit());
        assertTrue(full.err().strip().startsWith("error: --method full trains every weight in float32; --quantization int4"),
                full.err());
    }
}
