package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.DType;
import java.util.List;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class ModelConfigTest {

    @Test
    void readsStories260k() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        assertEquals(Architecture.LLAMA, config.architecture());
        assertEquals(64, config.hiddenSize());
        assertEquals(172, config.intermediateSize());
        assertEquals(5, config.numLayers());
        assertEquals(8, config.numHeads());
        assertEquals(4, config.numKvHeads());
        assertEquals(2, config.groupSize());
        assertEquals(8, config.headDim());
        assertEquals(512, config.vocabSize());
        assertEquals(1e-5, config.rmsNormEps());
        assertEquals(10000.0, config.ropeTheta());
        assertEquals(new RopeScaling.None(), config.ropeScaling());
        assertTrue(config.tieWordEmbeddings());
        assertFalse(config.qkvBias() || config.outputBias() || config.mlpBias() || config.qkNorm());
        assertEquals(OptionalInt.of(1), config.bosTokenId());
        assertEquals(List.of(2), config.eosTokenIds());
        assertEquals(DType.F32, config.dtype());
    }

    @Test
    void qwen2HasQkvBiasWithoutAConfigSwitchAndDerivesHeadDim() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen2"));
        assertEquals(Architecture.QWEN2, config.architecture());
        assertTrue(config.qkvBias());
        assertFalse(config.outputBias());
        assertEquals(16, config.headDim());
        assertFalse(config.tieWordEmbeddings());
        assertEquals(0, config.slidingWindow(), "use_sliding_window false leaves every layer on full attention");
    }

    @Test
    void qwen3NormalizesQueriesAndKeysWithItsExplicitHeadDim() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-qwen3"));
        assertTrue(config.qkNorm());
        assertEquals(32, config.headDim());
        assertFalse(config.qkvBias());
    }

    @Test
    void qwen3WithoutHeadDimUsesTransformersDefaultNotHiddenOverHeads() {
        ModelConfig config = ModelConfig.parse("""
                {"model_type": "qwen3", "hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 2,
                 "num_attention_heads": 16, "num_key_value_heads": 8, "vocab_size": 1000}""", "config.json");
        assertEquals(128, config.headDim());
    }

    @Test
    void llama3RopeScalingIsParsed() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-llama3-rope"));
        assertEquals(new RopeScaling.Llama3(8.0, 1.0, 4.0, 64), config.ropeScaling());
        assertEquals(500000.0, config.ropeTheta());
    }

    @Test
    void eosMayBeAListAndBiasesFollowAttentionBias() {
        ModelConfig config = ModelConfig.parse("""
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64,
                 "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "vocab_size": 10,
                 "attention_bias": true, "mlp_bias": true, "eos_token_id": [128001, 128008, 128009],
                 "bos_token_id": 128000, "torch_dtype": "bfloat16",
                 "rope_scaling": {"type": "linear", "factor": 2.0}}""", "config.json");
        assertEquals(List.of(128001, 128008, 128009), config.eosTokenIds());
        assertEquals(4, config.numKvHeads(), "num_key_value_heads defaults to the head count");
        assertTrue(config.qkvBias() && config.outputBias() && config.mlpBias());
        assertEquals(DType.BF16, config.dtype());
        assertEquals(new RopeScaling.Linear(2.0), config.ropeScaling());
    }

    @Test
    void unsupportedModelTypeNamesItselfAndTheSupportedList() {
        UserInputException error = assertThrows(UserInputException.class, () -> ModelConfig.parse("""
                {"model_type": "gpt2", "hidden_size": 64}""", "config.json"));
        assertEquals("model_type 'gpt2' is not supported; supported: llama, mistral, qwen2, qwen3, granite, olmo2, gemma2, gemma3_text, phi3, smollm3, qwen3_moe, mixtral, lfm2", error.getMessage());
    }

    @Test
    void unsupportedArchitectureClassIsRefused() {
        UserInputException error = assertThrows(UserInputException.class, () -> ModelConfig.parse("""
                {"architectures": ["LlamaForSequenceClassification"], "model_type": "llama"}""", "config.json"));
        assertTrue(error.getMessage().startsWith("architecture 'LlamaForSequenceClassification' is not supported;"),
                error.getMessage());
    }

    @Test
    void ropeScalingThatDependsOnSequenceLengthIsRefused() {
        UserInputException error = assertThrows(UserInputException.class, () -> ModelConfig.parse("""
                {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                 "num_attention_heads": 4, "vocab_size": 10,
                 "rope_scaling": {"rope_type": "yarn", "factor": 4.0}}""", "config.json"));
        assertEquals("config.json: rope_scaling type 'yarn' is not supported; supported: default, linear, llama3",
                error.getMessage());
    }

    @Test
    void missingSizeAndBadHeadsAreUserErrors() {
        assertEquals("config.json: missing hidden_size", assertThrows(UserInputException.class,
                () -> ModelConfig.parse("{\"model_type\": \"mistral\"}", "config.json")).getMessage());
        assertThrows(UserInputException.class, () -> ModelConfig.parse("""
                {"model_type": "llama", "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 1,
                 "num_attention_heads": 6, "num_key_value_heads": 4, "vocab_size": 10}""", "config.json"));
        assertThrows(UserInputException.class, () -> ModelConfig.parse("not json", "config.json"));
    }

    @Test
    void theContextIsMaxPositionEmbeddingsAlsoWithASlidingWindow() {
        ModelConfig llama = ModelConfig.read(ModelFixtures.fixture("stories260k"));
        assertEquals(512, llama.contextLength());
        assertEquals("the model's context of 512 tokens", llama.describeContext());
        ModelConfig mistral = ModelConfig.read(ModelFixtures.fixture("tiny-mistral"));
        assertEquals(8, mistral.slidingWindow());
        assertEquals(512, mistral.contextLength(), "sliding_window 8 limits what a token sees, not the sequence");
        assertEquals("the model's context of 512 tokens", mistral.describeContext());
        ModelConfig qwen = ModelConfig.read(ModelFixtures.fixture("tiny-qwen2"));
        assertEquals(512, qwen.contextLength(), "use_sliding_window false: Qwen's sliding_window is not used");
    }

    @Test
    void aContextThatIsNoSizeIsRefused() {
        String json = """
                {"model_type": "llama", "hidden_size": 8, "intermediate_size": 16, "num_hidden_layers": 1,
                 "num_attention_heads": 2, "vocab_size": 10, "max_position_embeddings": %s}""";
        assertTrue(assertThrows(UserInputException.class, () -> ModelConfig.parse(json.formatted("0"), "c.json"))
                .getMessage().contains("max_position_embeddings must be between 1 and 2147483647, got 0"));
        assertThrows(UserInputException.class, () -> ModelConfig.parse(json.formatted("4294967296"), "c.json"));
        assertEquals(4096, ModelConfig.parse(json.formatted("4096"), "c.json").contextLength());
    }
}
