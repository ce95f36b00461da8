package dev.crucible.runner.session;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.crucible.api.model.ModelConfig;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class DefaultThreadsTest {

    @Test
    void aSmallModelRunsOnOneThreadAndALargeOneOnTheBackendsChoice(@TempDir Path dir) throws Exception {
        assertEquals(OptionalInt.of(1), ModelSession.defaultThreads(config(dir.resolve("small"), 128, 4, 352, 356)));
        // Qwen2.5-0.5B's shape: 494 M parameters.
        assertEquals(OptionalInt.empty(), ModelSession.defaultThreads(config(dir.resolve("large"), 896, 24, 4864, 151936)));
    }

    private static ModelConfig config(Path dir, int hidden, int layers, int intermediate, int vocab) throws Exception {
        Files.createDirectories(dir);
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": %d,
                 "num_hidden_layers": %d, "num_attention_heads": 8, "num_key_value_heads": 8,
                 "intermediate_size": %d, "vocab_size": %d, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                 "max_position_embeddings": 2048, "tie_word_embeddings": true, "torch_dtype": "float32"}
                """.formatted(hidden, layers, intermediate, vocab));
        return ModelConfig.read(dir);
    }
}
