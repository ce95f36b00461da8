package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.runner.OracleVenv;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * {@code --device xla} end to end: generate, evaluate and a 3-trial abliterate run through the xla backend (the model
 * traced into StableHLO, compiled and run by XLA) give the CPU backend's ids and scores in float32. XLA here is
 * jaxlib's CPU client standing in for a PJRT device ({@code crucible.xla.runtime=jaxlib-cpu}, the test tree's runtime).
 */
class XlaDeviceTest {
    private static final Map<String, String> ONE_THREAD = Map.of("CRUCIBLE_THREADS", "1");

    @TempDir
    static Path temp;

    @BeforeAll
    static void useJaxlib() {
        OracleVenv.python();
        System.setProperty("crucible.xla.runtime", "jaxlib-cpu");
    }

    @AfterAll
    static void backToPjrt() {
        System.clearProperty("crucible.xla.runtime");
    }

    /**
     * The fixture with a plain chat template beside it (the fixtures have none; evaluate and abliterate render prompts
     * as chat turns): every file linked, the template written.
     */
    private static Path withChatTemplate(String name) throws IOException {
        Path source = GenerateCommandTest.stories().getParent().resolve(name);
        Path copy = temp.resolve(name);
        if (Files.isDirectory(copy)) {
            return copy;
        }
        Files.createDirectories(copy);
        try (Stream<Path> files = Files.list(source)) {
            for (Path file : files.toList()) {
                Files.createSymbolicLink(copy.resolve(file.getFileName()), file.toAbsolutePath());
            }
        }
        Files.writeString(copy.resolve("chat_template.jinja"),
                "{% for m in messages %}{{ m['content'] }}\n{% endfor %}{% if add_generation_prompt %}Answer:{% endif %}");
        return copy;
    }

    private static JsonNode run(String device, List<String> args) throws IOException {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of("--device", device, "--dtype", "float32", "--json"));
        RunnerCli r = RunnerCli.run(ONE_THREAD, all.toArray(String[]::new));
        assertEquals(0, r.exit(), device + ": " + r.err());
        return Json.mapper().readTree(r.out());
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen3"})
    void generateGivesTheCpuBackendsIds(String name) throws IOException {
        List<String> args = List.of("generate", "--model", withChatTemplate(name).toString(), "--prompt",
                "Once upon a time", "--prompt", "Lily and Tom went", "--max-new-tokens", "24");
        JsonNode cpu = run("cpu", args);
        JsonNode xla = run("xla", args);
        assertEquals(ids(cpu), ids(xla), name);
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen3"})
    void evaluateGivesTheCpuBackendsScores(String name) throws IOException {
        List<String> args = List.of("evaluate", "--model", withChatTemplate(name).toString(), "--max-response-length",
                "6", "--good-test-prompts", "bundled:harmless/test[:4]", "--bad-test-prompts", "bundled:harmful/test[:4]");
        JsonNode cpu = run("cpu", args);
        JsonNode xla = run("xla", args);
        assertSameScores(cpu.get("scores"), xla.get("scores"), name);
        assertSameScores(cpu.get("base_scores"), xla.get("base_scores"), name + " base");
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen3"})
    void aThreeTrialAbliterationGivesTheCpuBackendsTrials(String name) throws IOException {
        Path model = withChatTemplate(name);
        List<JsonNode> trials = new ArrayList<>();
        for (String device : List.of("cpu", "xla")) {
            JsonNode report = run(device, List.of("abliterate", "--model", model.toString(), "--trials", "3",
                    "--startup-trials", "2", "--max-response-length", "4", "--seed", "3",
                    "--good-prompts", "bundled:harmless/train[:8]", "--bad-prompts", "bundled:harmful/train[:8]",
                    "--good-test-prompts", "bundled:harmless/test[:4]", "--bad-test-prompts", "bundled:harmful/test[:4]",
                    "--study", temp.resolve(name + "-" + device).toString(), "--headless"));
            trials.add(report.get("trials"));
        }
        JsonNode cpu = trials.get(0);
        JsonNode xla = trials.get(1);
        assertEquals(3, xla.size());
        for (int t = 0; t < cpu.size(); t++) {
            assertEquals(cpu.get(t).get("parameters").toString(), xla.get(t).get("parameters").toString(),
                    name + " trial " + t + ": the sampler saw the same scores");
            assertSameScores(cpu.get(t).get("scores"), xla.get(t).get("scores"), name + " trial " + t);
        }
    }

    /**
     * {@code --quantization} on xla: the weights stay quantized on the device (the programs convert the codes) and
     * greedy generation gives the CPU backend's ids; the run's first lines say how XLA computes with them.
     */
    @ParameterizedTest
    @CsvSource({"stories260k, int8, 'int8 per-channel: s8 weights converted to float32 in the program, dot_general in "
            + "float32, scales on the output'", "tiny-qwen3, int4, 'int4 blocks of 32: u8-packed weights dequantized "
            + "to float32 in the program (gather from the codebook, scales), then dot_general in float32'"})
    void quantizedGenerateGivesTheCpuBackendsIds(String name, String method, String kernels) throws IOException {
        List<String> args = List.of("generate", "--model", withChatTemplate(name).toString(), "--prompt",
                "Once upon a time", "--prompt", "Lily and Tom went", "--max-new-tokens", "24", "--quantization", method);
        RunnerCli cpu = runWithNotes("cpu", args);
        RunnerCli xla = runWithNotes("xla", args);
        assertEquals(ids(Json.mapper().readTree(cpu.out())), ids(Json.mapper().readTree(xla.out())), name + " " + method);
        List<String> lines = xla.err().lines().toList();
        assertTrue(lines.getFirst().startsWith("quantization: " + method), xla.err());
        assertEquals("kernels: " + kernels, lines.get(1), xla.err());
    }

    /** A folder {@code runner quantize} wrote runs on xla as stored: its codes placed as they are, the CPU's ids. */
    @Test
    void aQuantizedFolderRunsOnXlaAsStored() throws IOException {
        Path folder = temp.resolve("stories260k-int8");
        RunnerCli quantize = RunnerCli.run(ONE_THREAD, "quantize", "--model", withChatTemplate("stories260k").toString(),
                "--bits", "8", "--out", folder.toString());
        assertEquals(0, quantize.exit(), quantize.err());
        List<String> args = List.of("generate", "--model", folder.toString(), "--prompt", "Once upon a time",
                "--max-new-tokens", "24");
        RunnerCli cpu = runWithNotes("cpu", args);
        RunnerCli xla = runWithNotes("xla", args);
        assertEquals(ids(Json.mapper().readTree(cpu.out())), ids(Json.mapper().readTree(xla.out())));
        assertTrue(xla.err().startsWith("quantization: int8 per-channel (symmetric); full precision: lm_head, "
                + "model.embed_tokens, biases and norms; 35 of 35 projections quantized"), xla.err());
        assertTrue(xla.err().contains("kernels: int8 per-channel: s8 weights converted to float32 in the program"),
                xla.err());
    }

    private static RunnerCli runWithNotes(String device, List<String> args) {
        List<String> all = new ArrayList<>(args);
        all.addAll(List.of("--device", device, "--dtype", "float32", "--json"));
        RunnerCli r = RunnerCli.run(ONE_THREAD, all.toArray(String[]::new));
        assertEquals(0, r.exit(), device + ": " + r.err());
        return r;
    }

    /** Refusal counts exactly; KL divergences to float32 rounding of a sum over the vocabulary. */
    private static void assertSameScores(JsonNode cpu, JsonNode xla, String where) {
        assertEquals(cpu.get("refusals").get("value").asDouble(), xla.get("refusals").get("value").asDouble(), where);
        double kl = cpu.get("kl_divergence").get("value").asDouble();
        double onXla = xla.get("kl_divergence").get("value").asDouble();
        System.out.printf("%s: refusals %s on both, KL divergence %.6g on cpu, %.6g on xla%n", where,
                xla.get("refusals").get("display").asText(), kl, onXla);
        assertTrue(Math.abs(kl - onXla) <= 1e-5 + 1e-3 * kl, where + ": KL " + onXla + " on xla, " + kl + " on cpu");
    }

    private static String ids(JsonNode generations) {
        return generations.findValues("generated_ids").toString();
    }
}
