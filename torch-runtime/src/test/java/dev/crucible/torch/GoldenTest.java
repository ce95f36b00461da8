package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.Activations;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.Generation;
import dev.crucible.api.tensor.DType;
import java.util.List;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The libtorch execution of the model definition against goldens made by implementations that are not ours
 * (llama2.c run.c and independent PyTorch references): greedy ids exactly, first-step logits and residual norms
 * within each fixture's tolerance, in float32.
 */
class GoldenTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    /** Every fixture family with goldens. */
    static List<String> everyFixture() {
        return List.of("stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope", "tiny-mistral", "tiny-granite",
                "tiny-olmo2", "tiny-smollm3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3", "tiny-qwen3-moe",
                "tiny-mixtral", "tiny-lfm2");
    }

    @ParameterizedTest
    @MethodSource("everyFixture")
    void forwardMatchesLogitsAndResidualNorms(String name) {
        Fixture fixture = Fixture.load(name);
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            for (Fixture.Case golden : fixture.cases()) {
                ForwardResult result = BACKEND.forward(model, new ForwardRequest(List.of(golden.promptIds()), 1));
                Activations activations = result.prompts().getFirst();
                String where = name + "/" + golden.name();
                assertClose(golden.firstStepLogits(), activations.logits(), fixture.logitsTolerance(), where);
                assertEquals(fixture.config().numLayers() + 1, activations.residualCount(), where);
                assertRelative(golden.embeddingNorm(), norm(activations.residual(0)), fixture.normTolerance(),
                        where + " embedding");
                for (int layer = 0; layer < golden.afterLayerNorms().length; layer++) {
                    assertRelative(golden.afterLayerNorms()[layer], norm(activations.residual(layer + 1)),
                            fixture.normTolerance(), where + " after layer " + layer);
                }
                assertRelative(golden.finalNormNorm(), norm(activations.finalNorm()), fixture.normTolerance(),
                        where + " after final norm");
            }
        }
    }

    /** Left padding must not change a row: the batch reproduces the goldens like the single runs. */
    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen3", "tiny-mistral", "tiny-granite", "tiny-olmo2", "tiny-smollm3",
        "tiny-phi3", "tiny-gemma2", "tiny-gemma3", "tiny-qwen3-moe",
        "tiny-mixtral", "tiny-lfm2"})
    void forwardOfALeftPaddedBatchMatchesGoldens(String name) {
        Fixture fixture = Fixture.load(name);
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            ForwardResult result = BACKEND.forward(model, new ForwardRequest(fixture.prompts(), fixture.cases().size()));
            for (int i = 0; i < fixture.cases().size(); i++) {
                Fixture.Case golden = fixture.cases().get(i);
                Activations activations = result.prompts().get(i);
                String where = name + "/" + golden.name() + " in a batch";
                assertClose(golden.firstStepLogits(), activations.logits(), fixture.logitsTolerance(), where);
                assertRelative(golden.embeddingNorm(), norm(activations.residual(0)), fixture.normTolerance(), where);
                assertRelative(golden.finalNormNorm(), norm(activations.finalNorm()), fixture.normTolerance(), where);
            }
        }
    }

    /** A row that generates a stop token ends there (keeping it); the other rows run on to max_new_tokens. */
    @Test
    void eachRowStopsAtItsOwnStopToken() {
        Fixture fixture = Fixture.load("stories260k");
        Fixture.Case first = fixture.cases().get(1);
        Fixture.Case second = fixture.cases().get(2);
        int stop = first.generatedIds()[5];
        int firstStop = indexOf(first.generatedIds(), stop);
        int secondStop = indexOf(second.generatedIds(), stop);
        int budget = 40;
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            DecodeRequest request = new DecodeRequest(List.of(first.promptIds(), second.promptIds()), budget,
                    Set.of(stop), DecodeRequest.defaultPadToken(fixture.config()), 2);
            List<Generation> generations = BACKEND.decode(model, request).generations();
            assertArrayEquals(java.util.Arrays.copyOf(first.generatedIds(), firstStop + 1),
                    generations.get(0).tokens());
            assertTrue(generations.get(0).stopped());
            int secondLength = secondStop >= 0 && secondStop < budget ? secondStop + 1 : budget;
            assertArrayEquals(java.util.Arrays.copyOf(second.generatedIds(), secondLength), generations.get(1).tokens());
            assertEquals(secondLength < budget, generations.get(1).stopped());
        }
    }

    /**
     * Rows that stop leave the batch's later steps (their cache rows and, for LFM2, convolution windows gathered
     * away); the rows left carry on exactly as the goldens. The stop token is the first row's second generated token,
     * so that row stops after two tokens while the others run on.
     */
    @ParameterizedTest
    @MethodSource("everyFixture")
    void rowsLeftAfterOthersStopStillReproduceTheGoldens(String name) {
        Fixture fixture = Fixture.load(name);
        int stop = fixture.cases().getFirst().generatedIds()[1];
        int longest = fixture.cases().stream().mapToInt(Fixture.Case::maxNewTokens).max().orElseThrow();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            List<Generation> generations = BACKEND.decode(model, new DecodeRequest(fixture.prompts(), longest,
                    Set.of(stop), DecodeRequest.defaultPadToken(fixture.config()), fixture.cases().size())).generations();
            for (int i = 0; i < fixture.cases().size(); i++) {
                int[] golden = fixture.cases().get(i).generatedIds();
                int at = indexOf(golden, stop);
                int expected = at >= 0 ? at + 1 : golden.length;
                int[] tokens = generations.get(i).tokens();
                assertArrayEquals(java.util.Arrays.copyOf(golden, expected),
                        java.util.Arrays.copyOf(tokens, Math.min(expected, tokens.length)), name + " row " + i);
                assertEquals(at >= 0, generations.get(i).stopped() && tokens.length == expected, name + " row " + i);
            }
        }
    }

    private static int indexOf(int[] values, int value) {
        for (int i = 0; i < values.length; i++) {
            if (values[i] == value) {
                return i;
            }
        }
        return -1;
    }

    @ParameterizedTest
    @MethodSource("everyFixture")
    void greedyDecodeReproducesIdsOneAtATimeAndBatched(String name) {
        Fixture fixture = Fixture.load(name);
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            for (Fixture.Case golden : fixture.cases()) {
                Generation single = BACKEND.decode(model, goldenRequest(fixture, List.of(golden), 1))
                        .generations().getFirst();
                assertArrayEquals(golden.generatedIds(), single.tokens(), name + "/" + golden.name());
                assertFalse(single.stopped());
                assertClose(golden.firstStepLogits(), single.firstStepLogits(), fixture.logitsTolerance(),
                        name + "/" + golden.name() + " first step");
            }
            // All prompts in one left-padded batch, each row stopping at its own max_new_tokens is not expressible,
            // so run the longest budget and compare each row's prefix.
            int longest = fixture.cases().stream().mapToInt(Fixture.Case::maxNewTokens).max().orElseThrow();
            DecodeResult batched = BACKEND.decode(model, new DecodeRequest(fixture.prompts(), longest, Set.of(),
                    DecodeRequest.defaultPadToken(fixture.config()), fixture.cases().size()));
            for (int i = 0; i < fixture.cases().size(); i++) {
                Fixture.Case golden = fixture.cases().get(i);
                int[] tokens = batched.generations().get(i).tokens();
                assertArrayEquals(golden.generatedIds(), java.util.Arrays.copyOf(tokens, golden.maxNewTokens()),
                        name + "/" + golden.name() + " in a batch of " + fixture.cases().size());
                assertClose(golden.firstStepLogits(), batched.generations().get(i).firstStepLogits(),
                        fixture.logitsTolerance(), name + "/" + golden.name() + " batched first step");
            }
        }
    }

    /** The goldens generate exactly max_new_tokens with no early stop (run.c would stop on BOS, HF on EOS). */
    private static DecodeRequest goldenRequest(Fixture fixture, List<Fixture.Case> cases, int batchSize) {
        return new DecodeRequest(cases.stream().map(Fixture.Case::promptIds).toList(), cases.getFirst().maxNewTokens(),
                Set.of(), DecodeRequest.defaultPadToken(fixture.config()), batchSize);
    }

    static double norm(float[] vector) {
        double sum = 0;
        for (float value : vector) {
            sum += (double) value * value;
        }
        return Math.sqrt(sum);
    }

    static void assertClose(float[] expected, float[] actual, double tolerance, String where) {
        assertEquals(expected.length, actual.length, where + ": length");
        double worst = 0;
        int worstIndex = -1;
        for (int i = 0; i < expected.length; i++) {
            double difference = Math.abs((double) expected[i] - actual[i]);
            if (!(difference <= worst)) {
                worst = difference;
                worstIndex = i;
            }
        }
        double found = worst;
        int index = worstIndex;
        assertTrue(found <= tolerance, () -> where + ": logit " + index + " differs by " + found + " > " + tolerance);
    }

    static void assertRelative(double expected, double actual, double tolerance, String where) {
        double relative = Math.abs(actual - expected) / Math.abs(expected);
        assertTrue(relative <= tolerance, () -> where + ": norm " + actual + " vs " + expected + " (relative "
                + relative + " > " + tolerance + ")");
    }
}
