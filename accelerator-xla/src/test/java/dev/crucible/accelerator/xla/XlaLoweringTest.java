package dev.crucible.accelerator.xla;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.backend.LoweringReport;
import dev.crucible.api.backend.LoweringRequest;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.DType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Lowering where no plugin can compile without a device: the programs are still written, and the report says why. */
class XlaLoweringTest {

    @Test
    void withoutACompilerTheProgramsAreWrittenAndTheReportSaysWhy(@TempDir Path temp) throws Exception {
        Probe nothing = XlaBackends.probeWithSitePackages(temp.resolve("no-site-packages"));
        GoldenFixture fixture = GoldenFixture.load("tiny-qwen3");
        Path folder = Files.createDirectories(temp.resolve("out"));
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory())) {
            LoweringReport report = XlaLowering.lower(new LoweringRequest(fixture.config(), checkpoint, DType.BF16, 2, 8,
                    4, 4, "fsdp", "", folder), nothing);
            assertEquals("4 devices", report.target());
            assertEquals("not compiled: no PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH or TPU_LIBRARY_PATH "
                    + "(libtpu compiles for a TPU topology without a chip: pip install libtpu)", report.notCompiled().orElseThrow());
            assertEquals(List.of("forward", "prefill", "decode_step"),
                    report.programs().stream().map(LoweringReport.Program::name).toList(),
                    "one program per step: the forward pass, the prefill and the decode step");
            for (LoweringReport.Program program : report.programs()) {
                assertTrue(program.compileTime().isEmpty() && program.memory().isEmpty(), program.toString());
                String text = Files.readString(folder.resolve(program.file()));
                assertTrue(text.contains("sdy.mesh @mesh = <[\"x\"=4]>"), "written for Shardy over 4 devices");
                assertTrue(Files.readString(folder.resolve(program.manifest())).contains("\"partitions\" : 4"));
            }
        }
    }
}
