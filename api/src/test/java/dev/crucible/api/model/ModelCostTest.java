package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.tensor.DType;
import org.junit.jupiter.api.Test;

class ModelCostTest {
    private static final String QWEN_05B = """
            {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 896,
             "intermediate_size": 4864, "num_hidden_layers": 24, "num_attention_heads": 14, "num_key_value_heads": 2,
             "vocab_size": 151936, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
             "tie_word_embeddings": true, "torch_dtype": "bfloat16"}""";

    @Test
    void qwenHalfBillionHasItsPublishedParameterCount() {
        ModelCost cost = ModelCost.of(ModelConfig.parse(QWEN_05B, "config.json"), DType.BF16);
        // Qwen2.5-0.5B: 494,032,768 parameters (tied embeddings counted once).
        assertEquals(494_032_768L * 2, cost.weightBytes());
        assertEquals(151_936L * 896, cost.headParams());
    }

    @Test
    void aDecodeStepReadsEveryWeightButTheEmbeddingTableOnceAndItsCache() {
        ModelCost cost = ModelCost.of(ModelConfig.parse(QWEN_05B, "config.json"), DType.F32);
        long cacheRow = 24L * 2 * 2 * 64 * 4; // layers × (K and V) × kv heads × head width × bytes
        assertEquals(cacheRow, cost.cacheRowBytes());
        double context = 100;
        // Tied: the table is read whole as the head, plus one embedding row per token.
        double expected = cost.weightBytes() + 896 * 4 + context * cacheRow;
        assertEquals(expected, cost.decodeStepBytes(1, context), 1e-3);
        assertEquals(cost.weightBytes() + 2 * (896 * 4 + context * cacheRow), cost.decodeStepBytes(2, context), 1e-3);
    }

    /** Quantized projections: a step reads their bytes instead of the dense rows; the operations stay the same. */
    @Test
    void quantizedProjectionsShrinkWhatAStepReadsNotWhatItComputes() {
        ModelCost dense = ModelCost.of(ModelConfig.parse(QWEN_05B, "config.json"), DType.BF16);
        long int8 = dense.linearParams() + dense.linearParams() / 500; // one byte per weight plus scales
        ModelCost quantized = dense.withQuantized(int8, dense.headBytes());
        assertEquals(dense.weightBytes() - 2 * dense.linearParams() + int8, quantized.weightBytes());
        assertEquals(dense.decodeStepBytes(1, 100) - 2 * dense.linearParams() + int8, quantized.decodeStepBytes(1, 100));
        assertEquals(dense.decodeStepFlops(1, 100), quantized.decodeStepFlops(1, 100));
    }

    /**
     * Qwen2.5-0.5B ties its head to the embedding: a quantized head is a copy the logits read instead of the table,
     * which stays for the lookups. A step reads the copy; the model holds both.
     */
    @Test
    void aQuantizedTiedHeadIsWhatAStepReadsAndACopyTheModelHolds() {
        ModelCost dense = ModelCost.of(ModelConfig.parse(QWEN_05B, "config.json"), DType.BF16);
        long table = 2 * dense.headParams();
        long copy = dense.headParams() + 4 * 151936; // a byte per weight and a scale per row
        ModelCost quantized = dense.withQuantized(dense.linearBytes(), copy);
        assertTrue(quantized.quantizedHead());
        assertEquals(dense.decodeStepBytes(1, 100) - table + copy, quantized.decodeStepBytes(1, 100));
        assertEquals(dense.weightBytes() + copy, quantized.weightBytes());
        assertEquals(dense.decodeStepFlops(1, 100), quantized.decodeStepFlops(1, 100));
    }

    @Test
    void prefillCountsTwoFlopsPerMultiplyAddAndCausalAttention() {
        ModelCost cost = ModelCost.of(ModelConfig.parse(QWEN_05B, "config.json"), DType.BF16);
        double linear = 2.0 * cost.linearParams();
        double attentionPerPair = 4.0 * 24 * 14 * 64;
        assertEquals(linear * 3 + attentionPerPair * 6 + 2.0 * cost.headParams(), cost.prefillFlops(1, 3), 1);
        assertEquals(2 * cost.prefillFlops(1, 3), cost.prefillFlops(2, 3), 1);
    }
}
