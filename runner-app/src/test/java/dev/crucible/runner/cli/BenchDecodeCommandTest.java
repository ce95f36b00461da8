package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import dev.crucible.api.io.Checkpoint;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
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

    /**
     * A stand-in for llama.cpp's llama-bench: it appends its arguments to {@code calls} and prints the JSON the real
     * one prints for {@code -p P -n G -d 0,P -o json} (one object per test and depth, fields as llama.cpp names them).
     */
    private static Path fakeLlamaBench(Path folder, String prefillTs, String decodeTs) throws Exception {
        return executable(folder.resolve("llama-bench"), """
                #!/bin/sh
                echo "$@" >> "$(dirname "$0")/calls"
                echo "OMP_WAIT_POLICY=${OMP_WAIT_POLICY-unset}" >> "$(dirname "$0")/env"
                echo "loading model" >&2
                p=0; n=0
                while [ $# -gt 0 ]; do case "$1" in -p) p=$2;; -n) n=$2;; esac; shift; done
                cat <<EOF
                [
                  {"model_type": "fake", "n_threads": 1, "n_prompt": $p, "n_gen": 0, "n_depth": 0, "avg_ts": %s},
                  {"model_type": "fake", "n_threads": 1, "n_prompt": 0, "n_gen": $n, "n_depth": 0, "avg_ts": 999},
                  {"model_type": "fake", "n_threads": 1, "n_prompt": $p, "n_gen": 0, "n_depth": $p, "avg_ts": 999},
                  {"model_type": "fake", "n_threads": 1, "n_prompt": 0, "n_gen": $n, "n_depth": $p, "avg_ts": %s}
                ]
                EOF
                """.formatted(prefillTs, decodeTs));
    }

    private static Path executable(Path script, String text) throws Exception {
        Files.writeString(script, text);
        Files.setPosixFilePermissions(script, PosixFilePermissions.fromString("rwxr-xr-x"));
        return script;
    }

    /** A file llama-bench would take for GGUF (its magic and version), in {@code folder}. */
    private static Path ggufStandIn(Path folder) throws Exception {
        return Files.write(folder.resolve("model.gguf"),
                "GGUF\u0003\u0000\u0000\u0000".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
    }

    /** {@code bench decode} of {@code model} against {@code llamaBench} on {@code gguf}: 12 + 5 tokens, JSON out. */
    private static RunnerCli benchAgainst(Path model, Path gguf, Path llamaBench, int rounds) {
        return RunnerCli.run(ONE_THREAD, "bench", "decode", "--model", model.toString(), "--device", "cpu",
                "--prompt-len", "12", "--new-tokens", "5", "--rounds", Integer.toString(rounds), "--ceiling-seconds",
                "0.1", "--compare-gguf", gguf.toString(), "--llama-bench", llamaBench.toString(), "--json");
    }

    @Test
    void llamaBenchRunsInEveryRoundAndTheRatiosAreOursOverItsAtTheSameDepth() throws Exception {
        Path model = tinyModel(temp, "bench-peer");
        Path folder = Files.createDirectories(temp.resolve("peer"));
        Path gguf = ggufStandIn(folder);
        RunnerCli r = benchAgainst(model, gguf, fakeLlamaBench(folder, "100.0", "2.5"), 3);
        assertEquals(0, r.exit(), r.err());
        JsonNode json = Json.mapper().readTree(r.out());

        List<String> calls = Files.readAllLines(folder.resolve("calls"));
        assertEquals(3, calls.size(), "one llama-bench run per round: " + calls);
        // Crucible sets OMP_WAIT_POLICY for libtorch where the user did not; llama-bench runs as the user left it.
        String users = System.getenv("OMP_WAIT_POLICY");
        assertEquals(java.util.Collections.nCopies(3, "OMP_WAIT_POLICY=" + (users == null ? "unset" : users)),
                Files.readAllLines(folder.resolve("env")));
        assertEquals(users == null ? "PASSIVE (Crucible's default)" : users,
                json.path("env").path("OMP_WAIT_POLICY").asText());
        assertEquals("-m " + gguf + " -t 1 -p 12 -n 4 -d 0,12 -r 1 -o json", calls.getFirst(),
                "the prefill from an empty context and the decode steps after the prompt, as ours");
        JsonNode peer = json.get("llama_cpp");
        assertEquals(100.0, peer.get("prefill_tokens_per_s").asDouble());
        assertEquals(2.5, peer.get("decode_tokens_per_s").asDouble(), "the decode at depth P, not at depth 0");
        assertEquals(12, peer.get("decode_depth").asInt());
        double ours = json.at("/decode/tokens_per_s").asDouble();
        assertTrue(peer.get("decode_ratio").asDouble() > 0);
        // Each round's ratio is ours over its; the median of those is within rounding of the median ratio.
        double medianOfOurs = json.get("per_round").findValues("decode_s").size();
        assertEquals(3, medianOfOurs);
        assertEquals(ours / 2.5, peer.get("decode_ratio").asDouble(), 0.01 * ours / 2.5 + 0.001);
        for (JsonNode round : json.get("per_round")) {
            assertEquals(2.5, round.get("llama_cpp_decode_tokens_per_s").asDouble());
        }
        assertTrue(r.err().contains("round 3/3: llama-bench prefill 100.0 tokens/s, decode 2.50 tokens/s"), r.err());
    }

    /**
     * A llama-bench from before {@code -d} (early 2025) refuses it: the rounds run without it, its decode from an
     * empty context is the one compared, and the output says so.
     */
    @Test
    void aLlamaBenchWithoutDepthIsRunWithoutItAndTheReportSaysSo() throws Exception {
        Path model = tinyModel(temp, "bench-old-peer");
        Path folder = Files.createDirectories(temp.resolve("old-peer"));
        Path gguf = ggufStandIn(folder);
        Path script = executable(folder.resolve("llama-bench"), """
                #!/bin/sh
                echo "$@" >> "$(dirname "$0")/calls"
                p=0; n=0
                while [ $# -gt 0 ]; do case "$1" in -p) p=$2;; -n) n=$2;; -d) echo "error: invalid parameter for argument: -d" >&2; exit 1;; esac; shift; done
                cat <<EOF
                [
                  {"model_type": "fake", "n_prompt": $p, "n_gen": 0, "avg_ts": 100.0},
                  {"model_type": "fake", "n_prompt": 0, "n_gen": $n, "avg_ts": 3.5}
                ]
                EOF
                """);
        RunnerCli r = benchAgainst(model, gguf, script, 2);
        assertEquals(0, r.exit(), r.err());
        List<String> calls = Files.readAllLines(folder.resolve("calls"));
        assertEquals(List.of("-m " + gguf + " -t 1 -p 12 -n 4 -d 0,12 -r 1 -o json",
                "-m " + gguf + " -t 1 -p 12 -n 4 -r 1 -o json", "-m " + gguf + " -t 1 -p 12 -n 4 -r 1 -o json"), calls,
                "asked once with -d, then without it");
        JsonNode peer = Json.mapper().readTree(r.out()).get("llama_cpp");
        assertEquals(3.5, peer.get("decode_tokens_per_s").asDouble());
        assertEquals(0, peer.get("decode_depth").asInt());
        assertTrue(r.err().contains("decode 3.50 tokens/s (from an empty context: this llama-bench has no -d)"), r.err());
    }

    @Test
    void theComparisonsInputsAreCheckedBeforeTheModelLoads() throws Exception {
        Path model = tinyModel(temp, "bench-peer-bad");
        Path folder = Files.createDirectories(temp.resolve("peer-bad"));
        Path notGguf = Files.writeString(folder.resolve("model.bin"), "PK not a gguf");
        Path gguf = Files.write(folder.resolve("ok.gguf"), "GGUF\u0003".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        Path llamaBench = fakeLlamaBench(folder, "1", "1");
        Path notExecutable = Files.writeString(folder.resolve("llama-bench.txt"), "#!/bin/sh\n");
        String[][] cases = {
                {"--compare-gguf", gguf.toString()},
                {"--llama-bench", llamaBench.toString()},
                {"--compare-gguf", notGguf.toString(), "--llama-bench", llamaBench.toString()},
                {"--compare-gguf", folder.resolve("missing.gguf").toString(), "--llama-bench", llamaBench.toString()},
                {"--compare-gguf", gguf.toString(), "--llama-bench", notExecutable.toString()},
                {"--compare-gguf", gguf.toString(), "--llama-bench", llamaBench.toString(), "--batch", "2"},
        };
        String[] expected = {"go together", "go together", "is not a GGUF file", "is not a readable file",
                "is not an executable file", "compares batch-1 decode"};
        for (int i = 0; i < cases.length; i++) {
            List<String> args = new java.util.ArrayList<>(List.of("bench", "decode", "--model", model.toString(),
                    "--device", "cpu", "--rounds", "1", "--ceiling-seconds", "0.1"));
            args.addAll(List.of(cases[i]));
            RunnerCli r = RunnerCli.run(ONE_THREAD, args.toArray(String[]::new));
            assertEquals(2, r.exit(), String.join(" ", cases[i]) + ": " + r.err());
            assertTrue(r.err().contains(expected[i]), r.err());
            assertEquals(1, r.err().strip().lines().count(), "one line: " + r.err());
            assertFalse(r.err().contains("loading"), "refused before the model loads: " + r.err());
        }
        assertFalse(Files.exists(folder.resolve("calls")), "llama-bench never ran");
        RunnerCli missing = RunnerCli.run(ONE_THREAD, "bench", "decode", "--model", folder.resolve("no-model").toString(),
                "--device", "cpu");
        assertEquals(2, missing.exit(), missing.err());
        assertEquals(1, missing.err().strip().lines().count(), "a missing model is one line, no progress: " + missing.err());
    }

    @Test
    void aFailingLlamaBenchIsOneLineWithItsStatusAndLastWords() throws Exception {
        Path model = tinyModel(temp, "bench-peer-fails");
        Path folder = Files.createDirectories(temp.resolve("peer-fails"));
        Path gguf = Files.write(folder.resolve("ok.gguf"), "GGUF\u0003".getBytes(java.nio.charset.StandardCharsets.ISO_8859_1));
        Path script = executable(folder.resolve("llama-bench"),
                "#!/bin/sh\necho 'main: error: failed to load model' >&2\nexit 1\n");
        RunnerCli r = RunnerCli.run(ONE_THREAD, "bench", "decode", "--model", model.toString(), "--device", "cpu",
                "--prompt-len", "8", "--new-tokens", "3", "--rounds", "1", "--ceiling-seconds", "0.1",
                "--compare-gguf", gguf.toString(), "--llama-bench", script.toString());
        assertEquals(2, r.exit(), r.err());
        String last = r.err().strip().lines().reduce((a, b) -> b).orElse("");
        assertTrue(last.contains("llama-bench exited with status 1: main: error: failed to load model"), r.err());
        assertFalse(r.err().contains("\tat "), "no trace: " + r.err());
    }

    private static void assertPositive(JsonNode value) {
        assertTrue(value.isNumber() && value.asDouble() > 0 && Double.isFinite(value.asDouble()), "got " + value);
    }
}
