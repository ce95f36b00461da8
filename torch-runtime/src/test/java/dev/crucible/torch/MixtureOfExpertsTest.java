package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.UnaryOperator;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The mixture of experts on libtorch: the routed op equals the dense sum and runs only the chosen experts, and the
 * new families' configs rewritten in the other key layout give the goldens' ids (the MoE negative controls move
 * them).
 */
class MixtureOfExpertsTest {

    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    /** A decode step of one row runs its two experts on that row; a prefill runs each hit expert once. */
    @Test
    void theRoutedMixtureEqualsTheDenseSumAndRunsOnlyTheChosenExperts() {
        TorchRuntime.setThreads(1);
        try (TorchOps ops = new TorchOps("cpu", true); TensorScope scope = ops.openScope()) {
            Random random = new Random(3);
            int width = 6;
            int count = 4;
            List<Tensor> matrices = new ArrayList<>();
            for (int expert = 0; expert < count; expert++) {
                matrices.add(ops.constant(gaussian(random, width * width), width, width));
            }
            List<Integer> calls = new ArrayList<>();
            List<Long> rowsSeen = new ArrayList<>();
            List<UnaryOperator<Tensor>> experts = new ArrayList<>();
            for (int expert = 0; expert < count; expert++) {
                int e = expert;
                experts.add(rows -> {
                    calls.add(e);
                    rowsSeen.add(rows.size(0));
                    return ops.linear(rows, matrices.get(e), null);
                });
            }

            Tensor one = ops.constant(gaussian(random, width), 1, width);
            Tensor routing = ops.constant(new float[] {0f, 0.7f, 0f, 0.3f}, 1, count);
            float[] routed = ops.readFloats(ops.mixture(one, routing, experts));
            assertEquals(List.of(1, 3), calls, "only the chosen experts run");
            assertEquals(List.of(1L, 1L), rowsSeen);
            assertArrayEquals(dense(ops, one, routing, matrices), routed, 1e-6f);

            calls.clear();
            rowsSeen.clear();
            Tensor five = ops.constant(gaussian(random, 5 * width), 5, width);
            Tensor prefill = ops.constant(new float[] {
                    0.5f, 0.5f, 0, 0,
                    0, 0.9f, 0, 0.1f,
                    0.2f, 0, 0, 0.8f,
                    0, 0.4f, 0, 0.6f,
                    0.6f, 0.4f, 0, 0}, 5, count);
            float[] batched = ops.readFloats(ops.mixture(five, prefill, experts));
            assertEquals(List.of(0, 1, 3), calls, "expert 2 is chosen by no row; each other runs once");
            assertEquals(List.of(3L, 4L, 3L), rowsSeen);
            assertArrayEquals(dense(ops, five, prefill, matrices), batched, 1e-6f);
        }
    }

    /** {@code Σₑ routing[:, e] · x·Wₑᵀ}, every expert on every row. */
    private static float[] dense(TorchOps ops, Tensor x, Tensor routing, List<Tensor> matrices) {
        Tensor sum = null;
        for (int expert = 0; expert < matrices.size(); expert++) {
            Tensor term = ops.mul(ops.linear(x, matrices.get(expert), null), ops.slice(routing, 1, expert, expert + 1));
            sum = sum == null ? term : ops.add(sum, term);
        }
        return ops.readFloats(sum);
    }

    private static float[] gaussian(Random random, int n) {
        float[] values = new float[n];
        for (int i = 0; i < n; i++) {
            values[i] = (float) random.nextGaussian();
        }
        return values;
    }

    /**
     * The other key layout: transformers 5 writes {@code rope_parameters} instead of {@code rope_theta}/
     * {@code rope_scaling} and {@code num_experts} for {@code num_local_experts}; older LFM2 configs list
     * {@code full_attn_idxs} instead of {@code layer_types}. The same model, the same ids.
     */
    @ParameterizedTest
    @ValueSource(strings = {"tiny-qwen3-moe", "tiny-mixtral", "tiny-lfm2"})
    void theConfigInTransformers5sKeyLayoutGivesTheSameIds(String name, @TempDir Path folder) throws IOException {
        Fixture base = Fixture.load(name);
        Fixture rewritten = rewritten(base, folder, config -> {
            ObjectNode rope = config.putObject("rope_parameters");
            rope.put("rope_type", "default");
            rope.set("rope_theta", config.remove("rope_theta"));
            config.remove("rope_scaling");
            if (config.has("num_local_experts")) {
                config.set("num_experts", config.remove("num_local_experts"));
            }
            if (config.has("layer_types")) {
                var attention = config.putArray("full_attn_idxs");
                var types = config.remove("layer_types");
                for (int layer = 0; layer < types.size(); layer++) {
                    if (types.get(layer).asText().equals("full_attention")) {
                        attention.add(layer);
                    }
                }
            }
        });
        assertEquals(base.config(), rewritten.config());
        greedyIds(rewritten);
    }

    /** The READMEs' negative controls: without renormalization, or with one expert per token, the ids move. */
    @Test
    void theNegativeControlsMoveTheIds(@TempDir Path folder) throws IOException {
        Fixture base = Fixture.load("tiny-qwen3-moe");
        assertTrue(changedCases(rewritten(base, folder.resolve("a"), c -> c.put("norm_topk_prob", false))) >= 1,
                "norm_topk_prob=False changes 1/5 cases");
        assertEquals(5, changedCases(rewritten(base, folder.resolve("b"), c -> c.put("num_experts_per_tok", 1))),
                "num_experts_per_tok=1 changes 5/5 cases");
        Fixture mixtral = Fixture.load("tiny-mixtral");
        assertEquals(5, changedCases(rewritten(mixtral, folder.resolve("c"), c -> c.put("num_experts_per_tok", 1))),
                "Mixtral's num_experts_per_tok=1 changes 5/5 cases");
    }

    /** How many cases' greedy ids differ from the goldens. */
    private static int changedCases(Fixture fixture) {
        List<int[]> generated = greedy(fixture);
        int changed = 0;
        for (int i = 0; i < generated.size(); i++) {
            changed += java.util.Arrays.equals(fixture.cases().get(i).generatedIds(), generated.get(i)) ? 0 : 1;
        }
        return changed;
    }

    private static void greedyIds(Fixture fixture) {
        List<int[]> generated = greedy(fixture);
        for (int i = 0; i < generated.size(); i++) {
            Fixture.Case golden = fixture.cases().get(i);
            assertArrayEquals(golden.generatedIds(), generated.get(i), fixture.name() + "/" + golden.name());
        }
    }

    /** Each case's greedy ids, one prompt at a time. */
    private static List<int[]> greedy(Fixture fixture) {
        List<int[]> generated = new ArrayList<>();
        try (Checkpoint checkpoint = Checkpoint.open(fixture.directory());
             TorchModel model = BACKEND.shard(fixture.shardRequest(checkpoint, DType.F32))) {
            for (Fixture.Case golden : fixture.cases()) {
                Generation generation = BACKEND.decode(model, new DecodeRequest(List.of(golden.promptIds()),
                        golden.maxNewTokens(), Set.of(), DecodeRequest.defaultPadToken(fixture.config()), 1))
                        .generations().getFirst();
                generated.add(generation.tokens());
            }
        }
        return generated;
    }

    /** The fixture's files copied into {@code folder} with its config.json edited. */
    static Fixture rewritten(Fixture base, Path folder, Consumer<ObjectNode> edit) throws IOException {
        Files.createDirectories(folder);
        try (var files = Files.list(base.directory())) {
            for (Path file : files.toList()) {
                if (!file.getFileName().toString().equals("config.json")) {
                    Files.copy(file, folder.resolve(file.getFileName()));
                }
            }
        }
        JsonMapper json = JsonMapper.builder().build();
        ObjectNode config = (ObjectNode) json.readTree(base.directory().resolve("config.json").toFile());
        edit.accept(config);
        Files.writeString(folder.resolve("config.json"), json.writerWithDefaultPrettyPrinter().writeValueAsString(config));
        return new Fixture(base.name(), folder, dev.crucible.api.model.ModelConfig.read(folder), base.cases(),
                base.logitsTolerance(), base.normTolerance());
    }
}
