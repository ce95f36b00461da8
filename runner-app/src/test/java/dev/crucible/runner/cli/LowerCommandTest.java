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
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code runner lower} end to end: the programs and manifests it writes, and with libtpu in the venv (as a user's
 * {@code pip install libtpu} would put it) their compile for the TPU topology with per-device memory.
 */
class LowerCommandTest {

    /** The oracle venv exists and holds libtpu (detection finds it through VIRTUAL_ENV, set by the build). */
    private static void requireLibtpu() {
        Path venv = OracleVenv.python().getParent().getParent();
        try (Stream<Path> pythons = Files.list(venv.resolve("lib"))) {
            Assumptions.assumeTrue(pythons.anyMatch(p -> Files.isRegularFile(p.resolve("site-packages/libtpu/libtpu.so"))),
                    "the oracle venv has no libtpu");
        } catch (IOException e) {
            Assumptions.abort("cannot list the oracle venv: " + e.getMessage());
        }
    }

    @Test
    void writesProgramsWithManifestsAndCompilesThemForTheTpuTopology(@TempDir Path temp) throws Exception {
        requireLibtpu();
        Path out = temp.resolve("programs");
        RunnerCli r = RunnerCli.run(Map.of(), "lower", "--model", GenerateCommandTest.stories().toString(), "--batch", "2",
                "--prompt-len", "16", "--new-tokens", "8", "--devices", "8", "--out", out.toString());
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("for tpu (TPU v2), 8 of 8 devices, fsdp"), r.out());
        for (String program : List.of("forward", "prefill", "decode_step")) {
            assertTrue(Files.isRegularFile(out.resolve(program + ".mlir")), program);
            assertTrue(r.out().contains("| " + program + " "), r.out());
            JsonNode manifest = Json.mapper().readTree(out.resolve(program + ".manifest.json").toFile());
            assertEquals("crucible-program/1", manifest.get("format").asText());
            assertEquals(program + ".mlir", manifest.get("stablehlo").asText());
            assertEquals(8, manifest.get("partitions").asInt());
        }
        JsonNode step = Json.mapper().readTree(out.resolve("decode_step.manifest.json").toFile());
        List<String> names = new ArrayList<>();
        step.get("arguments").forEach(a -> names.add(a.get("name").asText()));
        assertTrue(names.contains("model.layers.4.mlp.down_proj.weight"), names.toString());
        JsonNode embedding = step.get("arguments").get(names.indexOf("model.embed_tokens.weight"));
        assertEquals("[512,64]", embedding.get("shape").toString());
        assertEquals("[64,64]", embedding.get("device_shape").toString(), "split in 8 along the vocabulary");
        assertEquals(0, embedding.get("sharding").get("split_dim").asInt());
        long donated = 0;
        for (JsonNode argument : step.get("arguments")) {
            donated += argument.has("donated_to") ? 1 : 0;
        }
        assertEquals(10, donated, "keys and values of 5 layers stay on the device");
    }

    /**
     * {@code --quantization int8}: the programs take the projections as s8 codes and f32 scales (no dense copy), the
     * report says so, and libtpu's compiled argument memory is smaller than the dense programs'.
     */
    @Test
    void quantizedProgramsTakeIntegerWeightsAndLessArgumentMemory(@TempDir Path temp) throws Exception {
        requireLibtpu();
        String model = GenerateCommandTest.stories().toString();
        List<String> shape = List.of("--batch", "1", "--prompt-len", "8", "--new-tokens", "4", "--json");
        List<String> dense = new ArrayList<>(List.of("lower", "--model", model, "--out", temp.resolve("d").toString()));
        dense.addAll(shape);
        List<String> int8 = new ArrayList<>(List.of("lower", "--model", model, "--out", temp.resolve("q").toString(),
                "--quantization", "int8"));
        int8.addAll(shape);
        RunnerCli d = RunnerCli.run(Map.of(), dense.toArray(String[]::new));
        RunnerCli q = RunnerCli.run(Map.of(), int8.toArray(String[]::new));
        assertEquals(0, q.exit(), q.err());
        JsonNode report = Json.mapper().readTree(q.out());
        assertTrue(report.get("quantization").asText().startsWith("int8 per-channel"), q.out());
        JsonNode step = Json.mapper().readTree(temp.resolve("q/decode_step.manifest.json").toFile());
        Map<String, String> dtypes = new java.util.HashMap<>();
        step.get("arguments").forEach(a -> dtypes.put(a.get("name").asText(), a.get("dtype").asText()));
        String down = "model.layers.0.mlp.down_proj.weight";
        assertEquals("I8", dtypes.get(down + ".qdata"), dtypes.toString());
        assertEquals("F32", dtypes.get(down + ".scales"), dtypes.toString());
        assertTrue(!dtypes.containsKey(down), "no dense copy: " + dtypes);
        assertTrue(java.util.regex.Pattern.compile("stablehlo\\.convert %arg\\d+ : \\(tensor<\\d+x\\d+xi8>\\) -> "
                + "tensor<\\d+x\\d+xbf16>").matcher(Files.readString(temp.resolve("q/decode_step.mlir"))).find(),
                "the program converts the s8 codes to bf16");
        JsonNode denseReport = Json.mapper().readTree(d.out());
        for (int i = 0; i < report.get("programs").size(); i++) {
            long quantized = report.get("programs").get(i).at("/memory_per_device/arguments").asLong();
            long full = denseReport.get("programs").get(i).at("/memory_per_device/arguments").asLong();
            assertTrue(quantized < full, report.get("programs").get(i).get("name") + ": " + quantized + " >= " + full);
        }
    }

    @Test
    void jsonReportsCompileTimeAndMemoryPerDevice(@TempDir Path temp) throws Exception {
        requireLibtpu();
        RunnerCli r = RunnerCli.run(Map.of(), "lower", "--model", GenerateCommandTest.stories().toString(), "--batch", "1",
                "--prompt-len", "8", "--new-tokens", "4", "--out", temp.resolve("p").toString(), "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode report = Json.mapper().readTree(r.out());
        assertTrue(report.get("compiled").asBoolean());
        for (JsonNode program : report.get("programs")) {
            assertTrue(program.get("compile_seconds").asDouble() > 0, program.toString());
            JsonNode memory = program.get("memory_per_device");
            assertTrue(memory.get("arguments").asLong() > 0, program.toString());
            assertEquals(memory.get("code").asLong() + memory.get("arguments").asLong() + memory.get("outputs").asLong()
                    - memory.get("aliased").asLong() + memory.get("temporaries").asLong(), memory.get("total").asLong());
        }
    }

    @Test
    void refusesAnExistingFolderAndImpossibleShapesInOneLine(@TempDir Path temp) throws Exception {
        Path existing = Files.createDirectories(temp.resolve("there"));
        RunnerCli r = RunnerCli.run(Map.of(), "lower", "--model", GenerateCommandTest.stories().toString(), "--out",
                existing.toString());
        assertEquals(2, r.exit());
        assertTrue(r.err().startsWith("error: ") && r.err().strip().lines().count() == 1, r.err());
        RunnerCli zero = RunnerCli.run(Map.of(), "lower", "--model", GenerateCommandTest.stories().toString(), "--batch",
                "0", "--out", temp.resolve("x").toString());
        assertEquals(2, zero.exit());
        assertEquals("error: --batch must be at least 1, got 0", zero.err().strip());
        RunnerCli strategy = RunnerCli.run(Map.of(), "lower", "--model", GenerateCommandTest.stories().toString(),
                "--strategy", "tp", "--out", temp.resolve("y").toString());
        assertEquals("error: --strategy 'tp' is not one of: fsdp", strategy.err().strip());
    }

    @Test
    void devicesSaysLibtpuWithoutAChipIsCompileOnly() throws Exception {
        requireLibtpu();
        RunnerCli r = RunnerCli.run(Map.of(), "devices");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().lines().anyMatch(line -> line.startsWith("| xla ") && line.contains("unavailable")
                && line.contains("libtpu found, no TPU chip: compile-only")), r.out());
        RunnerCli tpu = RunnerCli.run(Map.of(), "devices", "--device", "tpu");
        assertEquals(2, tpu.exit());
        assertTrue(tpu.err().startsWith("error: device 'tpu' is not available (found: xla(libtpu found, no TPU chip), "),
                tpu.err());
    }

    @Test
    void moreDevicesThanTheTopologyHasIsTheUsersMistake(@TempDir Path temp) {
        requireLibtpu();
        RunnerCli r = RunnerCli.run(Map.of(), "lower", "--model", GenerateCommandTest.stories().toString(), "--devices",
                "16", "--out", temp.resolve("p").toString());
        assertEquals(2, r.exit());
        assertEquals("error: --devices 16 is more than the 8 devices of the tpu topology", r.err().strip());
        assertTrue(Files.notExists(temp.resolve("p")), "nothing left behind");
    }
}
