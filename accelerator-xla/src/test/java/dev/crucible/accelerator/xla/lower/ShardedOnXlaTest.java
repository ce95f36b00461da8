package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.LinearModule;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

/**
 * FSDP programs (weights split over the devices, the KV cache by batch) computed by XLA's SPMD partitioner on four
 * jaxlib CPU devices give the goldens in float32, written for Shardy and for GSPMD: the partitioned programs are not
 * only accepted by a compiler but right.
 */
class ShardedOnXlaTest {
    private static JaxCpuExecutor executor;

    @BeforeAll
    static void start() {
        executor = JaxCpuExecutor.start(4);
    }

    @AfterAll
    static void stop() {
        if (executor != null) {
            executor.close();
        }
    }

    @ParameterizedTest
    @CsvSource({"stories260k, SHARDY", "tiny-qwen3, GSPMD"})
    void fsdpOverFourDevicesGivesTheGoldens(String name, Partitioner partitioner) {
        GoldenFixture fixture = GoldenFixture.load(name);
        // Four prompts, so that the cache splits by batch as the weights split by rows.
        List<GoldenFixture.Case> cases = fixture.cases().subList(0, 4);
        List<int[]> prompts = cases.stream().map(GoldenFixture.Case::promptIds).toList();
        try (XlaOps ops = new XlaOps(executor, Sharding.fsdp(4, partitioner));
             Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             PlacedModel model = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(ops, DType.F32));
             ModelRunner runner = new ModelRunner(ops, model, Buckets.SHAPES)) {
            List<Activations> forward = runner.forward(new ForwardRequest(prompts, 4), 4).prompts();
            int longest = cases.stream().mapToInt(GoldenFixture.Case::maxNewTokens).max().orElseThrow();
            List<Generation> generations = runner.decode(new DecodeRequest(prompts, Math.min(longest, 48), Set.of(),
                    DecodeRequest.defaultPadToken(fixture.config()), 4), 4).generations();
            for (int i = 0; i < cases.size(); i++) {
                GoldenFixture.Case golden = cases.get(i);
                String where = name + "/" + golden.name() + " over 4 devices (" + partitioner + ")";
                TransformerOnXlaTest.assertClose(golden.firstStepLogits(), forward.get(i).logits(),
                        fixture.logitsTolerance(), where);
                int compared = Math.min(golden.maxNewTokens(), 48);
                assertArrayEquals(Arrays.copyOf(golden.generatedIds(), compared),
                        Arrays.copyOf(generations.get(i).tokens(), compared), where);
            }
            assertEquals(partitioner, ops.sharding().partitioner(), "no fallback: jaxlib takes this partitioner");
        }
    }

    /**
     * The seed's FSDP export wrote the sharding wrapper's names into the checkpoint. Here a merge reads the adapted
     * weights back whole, under the base checkpoint's names, with the values of the same merge on one device.
     */
    @Test
    void aMergeOfASplitModelHasTheBasesNamesAndTheUnsplitValues() {
        GoldenFixture fixture = GoldenFixture.load("tiny-qwen3");
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             Arena arena = Arena.ofConfined();
             XlaOps split = new XlaOps(executor, Sharding.fsdp(4, Partitioner.SHARDY));
             XlaOps whole = new XlaOps(executor, Sharding.SINGLE);
             PlacedModel onFour = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(split, DType.F32));
             PlacedModel onOne = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(whole, DType.F32))) {
            Random random = new Random(5);
            List<String> adapted = new ArrayList<>();
            for (LinearModule module : onFour.linearModules()) {
                float[] a = new float[(int) (2 * module.inFeatures())];
                float[] b = new float[(int) (2 * module.outFeatures())];
                for (int i = 0; i < a.length; i++) {
                    a[i] = (float) random.nextGaussian() * 0.1f;
                }
                for (int i = 0; i < b.length; i++) {
                    b[i] = (float) random.nextGaussian() * 0.1f;
                }
                LoraFactors factors = new LoraFactors(
                        HostTensor.fromFloats(module.name() + ".lora_A.weight", DType.F32,
                                new long[] {2, module.inFeatures()}, a, arena),
                        HostTensor.fromFloats(module.name() + ".lora_B.weight", DType.F32,
                                new long[] {module.outFeatures(), 2}, b, arena), 0.5);
                onFour.setAdapter(module.name(), factors);
                onOne.setAdapter(module.name(), factors);
                adapted.add(module.name() + ".weight");
            }
            try (MergedWeights fromFour = onFour.merge(checkpoint);
                 MergedWeights fromOne = onOne.merge(checkpoint)) {
                assertEquals(adapted, List.copyOf(fromFour.tensors().keySet()), "the base's names, in layer order");
                for (var entry : fromFour.tensors().entrySet()) {
                    HostTensor base = checkpoint.tensor(entry.getKey());
                    assertEquals(base.dtype(), entry.getValue().dtype(), entry.getKey());
                    assertArrayEquals(base.shape(), entry.getValue().shape(), entry.getKey());
                    assertArrayEquals(fromOne.tensors().get(entry.getKey()).toFloatArray(),
                            entry.getValue().toFloatArray(), 1e-6f, entry.getKey() + ": split and whole agree");
                }
            }
        }
    }
}
