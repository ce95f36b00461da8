package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.Role;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * A family's layout names exactly the tensors its checkpoints hold, with their shapes and roles: what binding, cost,
 * init-model, LoRA targets and abliteration derive from.
 */
class FamilyLayoutTest {

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope", "tiny-mistral", "tiny-granite",
        "tiny-olmo2", "tiny-smollm3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3"})
    void theLayoutIsTheCheckpointsTensorsWithTheirShapes(String name) {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture(name));
        ModelLayout layout = config.layout();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture(name))) {
            Set<String> stored = new TreeSet<>(checkpoint.names());
            if (layout.tiedHead()) {
                stored.remove(layout.outputHead().name()); // stored by some exporters, never read
            }
            assertEquals(stored, layout.parameters().stream().map(Parameter::name)
                    .collect(Collectors.toCollection(TreeSet::new)));
            for (Parameter parameter : layout.parameters()) {
                assertArrayEquals(checkpoint.info(parameter.name()).shape(), parameter.shape(), parameter.name());
            }
        }
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture(name))) {
            assertEquals(checkpoint.names().stream().filter(n -> n.endsWith("_proj.weight")).count(),
                    layout.linears().size(), "every projection (fused ones once) and nothing else");
        }
        assertEquals(config.numLayers() * 2, layout.residualWriters().size());
        for (Linear linear : layout.residualWriters()) {
            assertTrue(linear.module().endsWith(".self_attn.o_proj") || linear.module().endsWith(".mlp.down_proj"),
                    linear.module());
            assertEquals(linear.module(), "model.layers." + linear.layer() + linear.module().substring(
                    linear.module().indexOf('.', "model.layers.".length())));
        }
        for (Parameter parameter : layout.parameters()) {
            assertEquals(parameter.name().endsWith("_proj.weight"), parameter.isProjectionWeight(), parameter.name());
        }
        assertEquals(config.qkNorm(), layout.blocks(Attention.class).getFirst().queryNorm() != null);
    }

    @ParameterizedTest
    @ValueSource(strings = {"stories260k", "tiny-qwen2", "tiny-qwen3", "tiny-llama3-rope", "tiny-mistral", "tiny-granite",
        "tiny-olmo2", "tiny-smollm3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3", "tiny-qwen3-moe",
        "tiny-mixtral"})
    void costCountsWhatTheLayoutHolds(String name) {
        ModelLayout layout = ModelConfig.read(ModelFixtures.fixture(name)).layout();
        assertEquals(layout.parameterCount(), ModelCost.of(layout, dev.crucible.api.tensor.DType.F32).parameters());
    }

    @ParameterizedTest
    @ValueSource(strings = {"tiny-qwen2"})
    void rolesFollowTheFamilyNotTheName(String name) {
        ModelLayout layout = ModelConfig.read(ModelFixtures.fixture(name)).layout();
        List<Role> firstLayer = layout.linears().subList(0, 7).stream().map(Linear::role).toList();
        assertEquals(List.of(Role.ATTENTION_QUERY, Role.ATTENTION_KEY, Role.ATTENTION_VALUE, Role.ATTENTION_OUTPUT,
                Role.MLP_GATE, Role.MLP_UP, Role.MLP_DOWN), firstLayer);
        assertEquals(List.of(true, true, true, false), layout.linears().subList(0, 4).stream().map(Linear::bias)
                .toList(), "Qwen2: q, k and v carry a bias, o_proj never does");
    }
}
