package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;

class TmpTimingTest {
    @Test
    void timing() {
        GoldenFixture fixture = GoldenFixture.load("stories260k");
        try (JaxCpuExecutor executor = JaxCpuExecutor.start(1);
             XlaOps ops = new XlaOps(executor, Sharding.SINGLE);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             PlacedModel model = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(ops, DType.F32));
             ModelRunner runner = new ModelRunner(ops, model, true)) {
            List<LoweredProgram> seen = new java.util.ArrayList<>();
            ops.observe(seen::add);
            for (int round = 0; round < 2; round++) {
                long start = System.nanoTime();
                runner.decode(new DecodeRequest(List.of(fixture.cases().get(1).promptIds()), 64, Set.of(), 0, 1), 1);
                System.out.printf("round %d: %.2f s, compiles %s, executions %d%n", round, (System.nanoTime() - start) / 1e9,
                        ops.programs().compiles(), ops.executions());
            }
            java.util.Set<String> texts = new java.util.LinkedHashSet<>();
            seen.forEach(p -> texts.add(p.program().stablehlo()));
            System.out.println("distinct texts " + texts.size());
            java.util.Set<String> shown = new java.util.HashSet<>();
            for (LoweredProgram p : seen) if (shown.add(p.program().stablehlo())) System.out.println("ARGS " + p.arguments() + "\nRESULTS " + p.results() + "\nDON " + p.program().manifest().donations());
        }
    }
}
