package dev.crucible.accelerator.xla.lower;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The one model definition, traced into StableHLO and run on real XLA (jaxlib's CPU client), against the fixtures'
 * third-party goldens in float32: greedy ids exactly over the whole decode loop, first-step logits and residual norms
 * within the fixtures' tolerances.
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
    @ValueSource(strings = {"stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope"})
    void goldensInFloat32(String name) {
        GoldenFixture fixture = GoldenFixture.load(name);
        try (XlaOps ops = new XlaOps(executor, Sharding.SINGLE);
             Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             PlacedModel model = PlacedModel.place(fixture.config(), checkpoint, new XlaPlacement(ops, DType.F32));
             ModelRunner runner = new ModelRunner(ops, model, true)) {
            for (GoldenFixture.Case golden : fixture.cases()) {
                String where = name + "/" + golden.name();
                Activations activations = runner.forward(new ForwardRequest(List.of(golden.promptIds()), 1), 1)
                        .prompts().getFirst();
                assertClose(golden.firstStepLogits(), activations.logits(), fixture.logitsTolerance(), where);
                assertRelative(golden.embeddingNorm(), norm(activations.residual(0)), fixture.normTolerance(), where);
                for (int layer = 0; layer < golden.afterLayerNorms().length; layer++) {
                    assertRelative(golden.afterLayerNorms()[layer], norm(activations.residual(layer + 1)),
                            fixture.normTolerance(), where + " after layer " + layer);
                }
                assertRelative(golden.finalNormNorm(), norm(activations.finalNorm()), fixture.normTolerance(), where);

                Generation generation = runner.decode(new DecodeRequest(List.of(golden.promptIds()),
                        golden.maxNewTokens(), Set.of(), DecodeRequest.defaultPadToken(fixture.config()), 1), 1)
                        .generations().getFirst();
                assertArrayEquals(golden.generatedIds(), generation.tokens(), where);
                assertClose(golden.firstStepLogits(), generation.firstStepLogits(), fixture.logitsTolerance(),
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
