package dev.crucible.api.quant;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.util.List;
import org.junit.jupiter.api.Test;

/** {@code --quantization}, {@code --quant-scheme}, {@code --quant-block-size} and {@code --quant-exclude} as a value. */
public class QuantizationConfigTest {

    @Test
    void eachMethodHasItsDefaultSchemeAndBlock() {
        assertEquals(new WeightFormat.Int(8, 0, false), QuantizationConfig.parse("int8", null, null, null, false).format());
        assertEquals(new WeightFormat.Int(4, 32, false), QuantizationConfig.parse("INT4", null, null, null, false).format());
        assertEquals(new WeightFormat.Int(8, 128, false),
                QuantizationConfig.parse("int8", "blockwise", null, null, false).format());
        assertEquals(new WeightFormat.Int(4, 0, true),
                QuantizationConfig.parse("int4", "asymmetric", null, null, false).format());
        assertEquals(new WeightFormat.Int(4, 64, true),
                QuantizationConfig.parse("int4", "asymmetric", 64, null, false).format());
        assertEquals(new WeightFormat.Nf4(64), QuantizationConfig.parse("nf4", null, null, null, false).format());
        assertFalse(QuantizationConfig.parse("none", null, null, null, false).enabled());
    }

    @Test
    void theHeadAndEmbeddingsStayFullPrecisionByDefault() {
        QuantizationConfig config = QuantizationConfig.parse("int8", null, null, null, false);
        assertFalse(config.quantizes("lm_head.weight"));
        assertFalse(config.quantizes("model.embed_tokens.weight"));
        assertTrue(config.quantizes("model.layers.0.mlp.down_proj.weight"));
        assertEquals(WeightFormat.Dense.of(DType.BF16), config.formatFor("lm_head.weight", DType.BF16));
    }

    @Test
    void excludeTakesNamesGlobsAndNone() {
        QuantizationConfig config = QuantizationConfig.parse("int4", null, null,
                List.of("*.down_proj", "model.layers.1", "model.layers.2.self_attn.q_proj"), false);
        assertFalse(config.quantizes("model.layers.5.mlp.down_proj.weight"));
        assertFalse(config.quantizes("model.layers.1.mlp.up_proj.weight"), "everything under a plain name");
        assertTrue(config.quantizes("model.layers.10.mlp.up_proj.weight"), "a plain name is not a prefix of digits");
        assertFalse(config.quantizes("model.layers.2.self_attn.q_proj.weight"));
        assertTrue(config.quantizes("lm_head.weight"), "giving names replaces the defaults");
        assertTrue(QuantizationConfig.parse("int8", null, null, List.of("none"), false).exclude().isEmpty());
        assertEquals("int4 blockwise (symmetric, blocks of 32); full precision: *.down_proj, model.layers.1, "
                + "model.layers.2.self_attn.q_proj, biases and norms", config.describe());
    }

    @Test
    void mistakesAreOneLineNamingTheFlag() {
        assertEquals("--quantization 'int3' is not one of none, int8, int4, nf4",
                assertThrows(UserInputException.class,
                        () -> QuantizationConfig.parse("int3", null, null, null, false)).getMessage());
        assertEquals("--quant-scheme 'grouped' is not one of per-channel, blockwise, asymmetric",
                assertThrows(UserInputException.class,
                        () -> QuantizationConfig.parse("int8", "grouped", null, null, false)).getMessage());
        assertTrue(assertThrows(UserInputException.class,
                () -> QuantizationConfig.parse("int8", "per-channel", 32, null, false)).getMessage()
                .startsWith("--quant-block-size needs --quant-scheme blockwise or asymmetric"));
        assertTrue(assertThrows(UserInputException.class,
                () -> QuantizationConfig.parse("int4", "blockwise", 7, null, false)).getMessage()
                .startsWith("--quant-block-size must be an even number"));
        assertTrue(assertThrows(UserInputException.class,
                () -> QuantizationConfig.parse("nf4", "asymmetric", null, null, false)).getMessage()
                .contains("does not apply to nf4"));
        assertTrue(assertThrows(UserInputException.class,
                () -> QuantizationConfig.parse("none", "blockwise", null, null, false)).getMessage()
                .contains("need --quantization"));
    }
}
