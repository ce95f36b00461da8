package dev.crucible.runner.finetune;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import java.util.List;
import org.junit.jupiter.api.Test;

class TargetModulesTest {
    private static final List<String> TWO_LAYERS = List.of(
            "model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.k_proj", "model.layers.0.self_attn.v_proj",
            "model.layers.0.self_attn.o_proj", "model.layers.0.mlp.gate_proj", "model.layers.0.mlp.up_proj",
            "model.layers.0.mlp.down_proj",
            "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.k_proj", "model.layers.1.self_attn.v_proj",
            "model.layers.1.self_attn.o_proj", "model.layers.1.mlp.gate_proj", "model.layers.1.mlp.up_proj",
            "model.layers.1.mlp.down_proj");

    @Test
    void autoIsEveryProjection() {
        TargetModules.Resolved auto = TargetModules.resolve("auto", TWO_LAYERS);
        assertEquals(TWO_LAYERS, auto.modules());
        assertEquals(List.of("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"),
                auto.peftTargets());
        assertEquals(auto, TargetModules.resolve("all-linear", TWO_LAYERS));
    }

    @Test
    void shortNamesSelectEveryLayerAndKeepTheModelsOrder() {
        TargetModules.Resolved resolved = TargetModules.resolve("v_proj, q_proj", TWO_LAYERS);
        assertEquals(List.of("model.layers.0.self_attn.q_proj", "model.layers.0.self_attn.v_proj",
                "model.layers.1.self_attn.q_proj", "model.layers.1.self_attn.v_proj"), resolved.modules());
        assertEquals(List.of("q_proj", "v_proj"), resolved.peftTargets());
    }

    @Test
    void fullNamesAreListedInFullForPeft() {
        TargetModules.Resolved resolved = TargetModules.resolve("model.layers.1.mlp.down_proj", TWO_LAYERS);
        assertEquals(List.of("model.layers.1.mlp.down_proj"), resolved.modules());
        assertEquals(resolved.modules(), resolved.peftTargets(), "down_proj alone would adapt layer 0 too");
    }

    @Test
    void unknownNamesListWhatThereIs() {
        UserInputException error = assertThrows(UserInputException.class,
                () -> TargetModules.resolve("c_attn", TWO_LAYERS));
        assertTrue(error.getMessage().contains("q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj"));
        assertThrows(UserInputException.class, () -> TargetModules.resolve(" , ", TWO_LAYERS));
    }
}
