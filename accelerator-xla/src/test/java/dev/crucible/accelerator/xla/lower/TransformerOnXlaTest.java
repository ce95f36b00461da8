package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Activations;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one model definition, traced into StableHLO and run on real XLA (jaxlib's CPU client), against the fixtures'
 * third-party goldens in float32: greedy ids exactly over the whole decode loop, first-step logits and residual norms
 * within the fixtures' tolerances, every case in one left-padded batch.
 */
class TransformerOnXlaTest {
    private static JaxCpuExecutor executor;

    @BeforeAll
    static void start() {
        executor = JaxCpuExecutor.start(1);
    }

    @AfterAll
    static void stop() {
        if (executor != null) {
            executor.close();
        }
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope",
            // Sliding windows, multipliers, post-norms, fused projections with partial rotary, soft-capped attention
            // and logits with GeGLU, per-layer RoPE bases: every op the other families' layouts use.
            "tiny-mistral", "tiny-granite", "tiny-olmo2", "tiny-smollm3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3",
            // The mixture (routing by one-hot masks, every expert mixed) and the convolution with its window state;
            // Mixtral's ops are Qwen3-MoE's.
            "tiny-qwen3-moe", "tiny-lfm2"})
    void goldensInFloat32(String name) {
        GoldenFixture fixture = GoldenFixture.load(name);
        try (XlaOps ops = new XlaOps(executor, Sharding.SINGLE);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             PlacedModel model = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(ops, DType.F32));
             ModelRunner runner = new ModelRunner(ops, model, Buckets.SHAPES)) {
            // All cases in one left-padded batch (padding must not change a row), so each program compiles once.
            int cases = fixture.cases().size();
            List<Activations> forward = runner.forward(new ForwardRequest(fixture.prompts(), cases), cases).prompts();
            int longest = fixture.cases().stream().mapToInt(GoldenFixture.Case::maxNewTokens).max().orElseThrow();
            List<Generation> generations = runner.decode(new DecodeRequest(fixture.prompts(), longest, Set.of(),
                    DecodeRequest.defaultPadToken(fixture.config()), cases), cases).generations();
            for (int i = 0; i < cases; i++) {
                GoldenFixture.Case golden = fixture.cases().get(i);
                String where = name + "/" + golden.name();
                Activations activations = forward.get(i);
                assertClose(golden.firstStepLogits(), activations.logits(), fixture.logitsTolerance(), where);
                assertRelative(golden.embeddingNorm(), norm(activations.residual(0)), fixture.normTolerance(), where);
                for (int layer = 0; layer < golden.afterLayerNorms().length; layer++) {
                    assertRelative(golden.afterLayerNorms()[layer], norm(activations.residual(layer + 1)),
                            fixture.normTolerance(), where + " after layer " + layer);
                }
                assertRelative(golden.finalNormNorm(), norm(activations.finalNorm()), fixture.normTolerance(), where);
                assertArrayEquals(golden.generatedIds(), Arrays.copyOf(generations.get(i).tokens(),
                        golden.maxNewTokens()), where);
                assertClose(golden.firstStepLogits(), generations.get(i).firstStepLogits(), fixture.logitsTolerance(),
                        where + " first step");
            }
            System.out.println(name + ": " + ops.programs().compiles().size() + " programs compiled, "
                    + ops.executions() + " run");
        }
    }

    static double norm(float[] vector) {
        double sum = 0;
        for (float value : vector) {
            sum += (double) value * value;
        }
        return Math.sqrt(sum);
    }

    static double assertClose(float[] expected, float[] actual, double tolerance, String where) {
        assertEquals(expected.length, actual.length, where);
        double worst = 0;
        for (int i = 0; i < expected.length; i++) {
            worst = Math.max(worst, Math.abs((double) expected[i] - actual[i]));
        }
        double found = worst;
        assertTrue(found <= tolerance, () -> where + ": logits differ by " + found + " > " + tolerance);
        return worst;
    }

    static void assertRelative(double expected, double actual, double tolerance, String where) {
        double relative = Math.abs(actual - expected) / Math.abs(expected);
        assertTrue(relative <= tolerance, () -> where + ": norm " + actual + " vs " + expected);
    }
}
