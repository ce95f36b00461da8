package dev.crucible.runner.cli;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.zip.ZipOutputStream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The runner's device commands as a user runs them on this machine (no GPU, no TPU, not a Mac). */
class DevicesCommandTest {

    @Test
    void devicesJsonListsAllFourBackendsWithCpuAvailable() throws Exception {
        RunnerCli r = RunnerCli.run("devices", "--json");
        assertEquals(0, r.exit(), r.err());
        JsonNode array = Json.mapper().readTree(r.out());
        List<String> ids = new ArrayList<>();
        array.forEach(node -> ids.add(node.get("id").asText()));
        assertEquals(List.of("xla", "cuda", "mps", "cpu"), ids, "priority order");
        for (JsonNode node : array) {
            for (String field : List.of("id", "priority", "available", "reason", "devices")) {
                assertTrue(node.has(field), node + " lacks " + field);
            }
            assertFalse(node.get("reason").asText().isBlank());
        }
        JsonNode cpu = array.get(3);
        assertTrue(cpu.get("available").asBoolean());
        assertEquals(1, cpu.get("devices").size());
        assertEquals(Runtime.getRuntime().availableProcessors() + " cores", cpu.get("details").get("cores").asText() + " cores");
        if (!java.nio.file.Files.exists(java.nio.file.Path.of("/proc/driver/nvidia/version"))) {
            assertFalse(array.get(1).get("available").asBoolean());
            assertTrue(array.get(1).get("reason").asText().startsWith("no NVIDIA driver"), array.get(1).toString());
        }
        if (!System.getProperty("os.name").startsWith("Mac")) {
            assertTrue(array.get(2).get("reason").asText().startsWith("MPS needs macOS on Apple silicon"));
        }
        assertFalse(array.get(0).get("available").asBoolean(), "the xla backend cannot run models yet");
    }

    @Test
    void brokenPluginJarsAreWarningsOnStderrAndLeaveStdoutAlone(@TempDir Path temp) throws Exception {
        Path plugins = Files.createDirectories(temp.resolve("plugins"));
        new ZipOutputStream(Files.newOutputStream(plugins.resolve("empty.jar"))).close();
        Files.writeString(plugins.resolve("garbage.jar"), "not a zip");
        Map<String, String> env = Map.of("CRUCIBLE_PLUGINS_DIR", plugins.toString());
        List<String> warnings = List.of(
                "warning: plugin empty.jar skipped: it has no META-INF/MANIFEST.MF (an empty jar?), so no Plugin-Id",
                "warning: plugin garbage.jar skipped: not a jar (zip) file: ZipException: zip END header not found");

        RunnerCli table = RunnerCli.run(env, "devices");
        assertEquals(0, table.exit(), table.err());
        assertTrue(table.out().contains("| cpu "), table.out());
        assertFalse(table.out().contains("warning"), table.out());
        assertEquals(warnings, table.err().lines().toList());

        RunnerCli json = RunnerCli.run(env, "devices", "--json");
        assertEquals(0, json.exit(), json.err());
        assertEquals(4, Json.mapper().readTree(json.out()).size());
        assertEquals(warnings, json.err().lines().toList());
    }

    @Test
    void unavailableDeviceExitsTwoWithOneLine() {
        RunnerCli r = RunnerCli.run(Map.of(), "devices", "--device", "tpu");
        assertEquals(2, r.exit());
        assertEquals("", r.out());
        String line = r.err().strip();
        assertFalse(line.contains("\n"), line);
        assertTrue(line.matches("error: device 'tpu' is not available \\(found: xla\\(.+\\), cuda\\(.+\\), mps\\(.+\\), cpu\\(ok\\)\\)"), line);
    }

    @Test
    void autoResolvesToCpuHereAndThePriorityVariableIsHonoured() {
        RunnerCli auto = RunnerCli.run("devices", "--device", "auto");
        assertEquals(0, auto.exit(), auto.err());
        assertTrue(auto.out().startsWith("--device auto -> cpu:"), auto.out());
        RunnerCli reordered = RunnerCli.run(Map.of("CRUCIBLE_DEVICE_PRIORITY", "cuda,cpu"), "devices", "--device", "auto");
        assertTrue(reordered.out().startsWith("--device auto -> cpu:"), reordered.out());
    }

    @Test
    void humanTableShowsEveryBackend() {
        RunnerCli r = RunnerCli.run("devices");
        assertEquals(0, r.exit(), r.err());
        for (String id : List.of("xla", "cuda", "mps", "cpu")) {
            assertTrue(r.out().contains("| " + id + " "), r.out());
        }
    }

    @Test
    void usageErrorsExitTwoWithoutAStackTrace() {
        RunnerCli bad = RunnerCli.run("devices", "--bogus");
        assertEquals(2, bad.exit());
        assertEquals(1, bad.err().strip().lines().count(), bad.err());
        assertFalse(bad.err().contains("Exception"), bad.err());
        RunnerCli none = RunnerCli.run();
        assertEquals(2, none.exit());
        assertTrue(none.err().contains("devices"));
        RunnerCli unknown = RunnerCli.run("devices", "--device", "gpu");
        assertEquals(2, unknown.exit());
        assertTrue(unknown.err().startsWith("error: unknown device 'gpu'"), unknown.err());
    }

    @Test
    void versionAndHelp() {
        RunnerCli version = RunnerCli.run("--version");
        assertEquals(0, version.exit());
        assertTrue(version.out().startsWith("crucible runner 0.1.0"), version.out());
        RunnerCli help = RunnerCli.run("devices", "--help");
        assertEquals(0, help.exit());
        assertTrue(help.out().contains("--json"));
    }

    @Test
    void doctorMasksSecrets() {
        RunnerCli r = RunnerCli.run(Map.of("HF_TOKEN", "hf_abcdefghijklmnop", "HF_HOME", "/data/hf", "UNRELATED", "x"), "doctor");
        assertEquals(0, r.exit(), r.err());
        assertTrue(r.out().contains("HF_HOME=/data/hf"));
        assertTrue(r.out().contains("HF_TOKEN=****** (19 characters, masked)"), r.out());
        assertFalse(r.out().contains("hf_abcdefghijklmnop"));
        assertFalse(r.out().contains("UNRELATED"));
        assertTrue(r.out().contains("libtorch presets"), r.out());
        assertTrue(r.out().contains("features"), r.out());
        assertTrue(r.out().contains("Runtime  cpu:") && r.out().contains("intra-op"), r.out());
    }
}
