package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.UserInputException;
import dev.crucible.api.model.layout.Attention;
import java.util.List;
import java.util.OptionalDouble;
import org.junit.jupiter.api.Test;

/** Each family's own config.json keys: read where they change the math, refused by name where we lack them. */
class FamilyConfigTest {

    private static final String SIZES = """
            "hidden_size": 32, "intermediate_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4,
            "num_key_value_heads": 2, "vocab_size": 100""";

    private static ModelConfig parse(String modelType, String extra) {
        return ModelConfig.parse("{\"model_type\": \"" + modelType + "\", " + SIZES + (extra.isEmpty() ? "" : ", " + extra)
                + "}", "config.json");
    }

    @Test
    void graniteReadsItsFourScalarsIntoTheLayout() {
        ModelConfig granite = parse("granite", """
                "embedding_multiplier": 6.0, "residual_multiplier": 0.4, "attention_multiplier": 0.09,
                "logits_scaling": 4.0""");
        assertEquals(new FamilyOptions(6.0, 0.4, OptionalDouble.of(0.09), 4.0, List.of(), 1.0, List.of(),
                        dev.crucible.api.model.layout.GatedMlp.Activation.SILU, 0, 0, OptionalDouble.empty()),
                granite.options());
        assertEquals(6.0, granite.layout().embeddingScale());
        assertEquals(0.25, granite.layout().logitScale());
        assertEquals(0.09, granite.layout().blocks(Attention.class).getFirst().scale());
        assertEquals(0.4, granite.layout().layers().getFirst().blocks().getLast().scale());
        assertEquals(1.0 / Math.sqrt(8), parse("llama", "").layout().blocks(Attention.class).getFirst().scale());
    }

    @Test
    void smolLm3PositionlessLayersDefaultToEveryFourthAndSlideOnlyWhenAsked() {
        ModelConfig plain = parse("smollm3", "");
        assertEquals(List.of(3), plain.options().positionlessLayers(), "no_rope_layer_interval 4");
        assertEquals(List.of(8, 8, 8, 0), plain.layout().blocks(Attention.class).stream().map(Attention::rotaryDims)
                .toList());
        assertEquals(0, plain.windowOf(3), "use_sliding_window false");
        ModelConfig sliding = parse("smollm3", "\"use_sliding_window\": true, \"sliding_window\": 16");
        assertEquals(List.of(0, 0, 0, 16), sliding.layout().blocks(Attention.class).stream().map(Attention::window)
                .toList(), "without layer_types the NoPE layers slide");
    }

    @Test
    void keysThatChangeTheMathButAreNotImplementedAreRefusedByName() {
        assertEquals("config.json: rope_parameters per layer type is not supported for llama; its layers share one "
                        + "rotary embedding here",
                assertThrows(UserInputException.class, () -> parse("llama", """
                        "rope_parameters": {"full_attention": {"rope_type": "default", "rope_theta": 10000.0}}"""))
                        .getMessage());
        assertEquals("config.json: layer_types entry 'chunked_attention' is not supported; supported: "
                        + "full_attention, sliding_attention",
                assertThrows(UserInputException.class, () -> parse("smollm3", """
                        "use_sliding_window": true, "sliding_window": 16, "layer_types": ["full_attention",
                        "full_attention", "full_attention", "chunked_attention"]""")).getMessage());
    }
}
