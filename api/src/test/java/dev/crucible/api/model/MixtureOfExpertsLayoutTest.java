package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.layout.GatedMlp;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.MixtureOfExperts;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Role;
import dev.crucible.api.tensor.RecordingOps;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/** The mixture-of-experts families laid out as the hub stores them, and traced with static shapes. */
class MixtureOfExpertsLayoutTest {

    @ParameterizedTest
    @ValueSource(strings = {"tiny-qwen3-moe", "tiny-mixtral"})
    void theLayoutIsTheCheckpointsTensorsWithTheirShapes(String name) {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture(name));
        ModelLayout layout = config.layout();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture(name))) {
            Set<String> stored = new TreeSet<>(checkpoint.names());
            assertEquals(stored, layout.parameters().stream().map(Parameter::name)
                    .collect(Collectors.toCollection(TreeSet::new)));
            for (Parameter parameter : layout.parameters()) {
                assertArrayEquals(checkpoint.info(parameter.name()).shape(), parameter.shape(), parameter.name());
            }
        }
    }

    /** Layer 1 is in mlp_only_layers; layers 0 and 2 route each token to 2 of 4 experts, renormalized. */
    @Test
    void qwen3MoeIsSparseWhereTheConfigSaysAndEveryExpertWritesTheResidual() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen3-moe"));
        assertEquals(new Experts(4, 2, 48, true, Set.of(1), 1), config.experts());
        ModelLayout layout = config.layout();
        List<MixtureOfExperts> mixtures = layout.blocks(MixtureOfExperts.class);
        assertEquals(2, mixtures.size());
        assertInstanceOf(GatedMlp.class, layout.layers().get(1).blocks().get(1).block(), "layer 1 is dense");
        MixtureOfExperts first = mixtures.getFirst();
        assertEquals("model.layers.0.mlp.gate", first.router().module());
        assertEquals(Role.ROUTER, first.router().role());
        assertEquals(2, first.perToken());
        assertTrue(first.normalize());
        // Abliteration edits every writer: 3 o_proj, layer 1's down_proj and 4 experts' down_proj in layers 0 and 2.
        List<String> writers = layout.residualWriters().stream().map(Linear::module).toList();
        assertEquals(3 + 1 + 2 * 4, writers.size(), writers::toString);
        for (int expert = 0; expert < 4; expert++) {
            assertTrue(writers.contains("model.layers.2.mlp.experts." + expert + ".down_proj"), writers::toString);
        }
    }

    /** decoder_sparse_step 2 makes every second layer sparse (layers 1, 3, ...), as Qwen3MoeDecoderLayer does. */
    @Test
    void decoderSparseStepPicksTheSparseLayers() {
        Experts experts = new Experts(4, 2, 8, false, Set.of(3), 2);
        assertEquals(List.of(false, true, false, false, false, true),
                java.util.stream.IntStream.range(0, 6).mapToObj(experts::sparse).toList());
    }

    /**
     * The routing is static-shape ops (the dense mixture of the default op): a static-shape decode request on a
     * mixture is still one prefill and one decode program, with no host read inside either.
     */
    @Test
    void aStaticShapeDecodeRequestOnAMixtureIsTwoPrograms() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen3-moe"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("tiny-qwen3-moe"));
             PlacedModel model = ModelFixtures.shapes(config, checkpoint, ops);
             ModelRunner runner = new ModelRunner(ops, model, new ShapePolicy(16, 32, true))) {
            runner.decode(new DecodeRequest(List.of(new int[] {1, 5, 6}, new int[] {1}), 8, Set.of(), 2, 2), 2);
            List<String> programs = ops.programs();
            assertEquals(2, programs.size(), programs::toString);
            assertTrue(ops.trace().stream().anyMatch(op -> op.name().equals("argmax")
                    && op.signature().startsWith("F32[2, 4]")), "the decode step routes its 2 tokens over 4 experts");
        }
    }
}
