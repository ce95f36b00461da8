package dev.crucible.torch;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.Generation;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The fixtures' config.json files use the key layout hub checkpoints carry; folders saved by transformers 5 use its
 * newer one ({@code rope_parameters}, per layer type for Gemma 3, explicit {@code layer_types}, {@code dtype}). The
 * rewrite below is what transformers 5.18's {@code save_pretrained} writes for these fixtures (compared key by key
 * with {@code AutoConfig.from_pretrained(...).to_diff_dict()}); both layouts must read as the same model.
 */
class KeyLayoutTest {

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private static final TestCpuBackend BACKEND = new TestCpuBackend(1);

    @TempDir
    Path temp;

    @ParameterizedTest
    @ValueSource(strings = {"tiny-mistral", "tiny-granite", "tiny-olmo2", "tiny-smollm3", "tiny-phi3", "tiny-gemma2", "tiny-gemma3"})
    void theTransformers5LayoutGivesTheSameConfigAndIds(String name) throws IOException {
        Fixture fixture = Fixture.load(name);
        Path rewritten = temp.resolve(name);
        Files.createDirectories(rewritten);
        try (Stream<Path> files = Files.list(fixture.directory())) {
            for (Path file : files.toList()) {
                if (!file.getFileName().toString().equals(ModelConfig.FILE_NAME)) {
                    Files.createSymbolicLink(rewritten.resolve(file.getFileName()), file);
                }
            }
        }
        ObjectNode hub = (ObjectNode) JSON.readTree(fixture.directory().resolve(ModelConfig.FILE_NAME).toFile());
        Files.writeString(rewritten.resolve(ModelConfig.FILE_NAME), JSON.writeValueAsString(transformers5(hub)));

        ModelConfig config = ModelConfig.read(rewritten);
        assertEquals(fixture.config(), config, name + ": both key layouts read as one config");
        try (Checkpoint checkpoint = Checkpoint.open(rewritten);
             TorchModel model = BACKEND.shard(new dev.crucible.api.model.ShardRequest(config, checkpoint, DType.F32))) {
            for (Fixture.Case golden : fixture.cases()) {
                Generation generation = BACKEND.decode(model, new DecodeRequest(List.of(golden.promptIds()),
                        golden.maxNewTokens(), Set.of(), DecodeRequest.defaultPadToken(config), 1))
                        .generations().getFirst();
                assertArrayEquals(golden.generatedIds(), generation.tokens(), name + "/" + golden.name());
            }
        }
    }

    /** The hub layout rewritten as transformers 5 saves it. */
    static ObjectNode transformers5(ObjectNode hub) {
        ObjectNode config = hub.deepCopy();
        int layers = config.get("num_hidden_layers").asInt();
        if (config.has("torch_dtype")) {
            config.set("dtype", config.remove("torch_dtype"));
        }
        ObjectNode rope = JSON.createObjectNode();
        JsonNode scaling = config.remove("rope_scaling");
        if (scaling != null && scaling.isObject()) {
            scaling.properties().forEach(entry -> rope.set(entry.getKey().equals("type") ? "rope_type" : entry.getKey(),
                    entry.getValue()));
        }
        if (!rope.has("rope_type")) {
            rope.put("rope_type", "default");
        }
        JsonNode theta = config.remove("rope_theta");
        rope.set("rope_theta", theta == null ? JSON.getNodeFactory().numberNode(10000.0) : theta);
        JsonNode partial = config.remove("partial_rotary_factor");
        if (partial != null) {
            rope.set("partial_rotary_factor", partial);
        }
        JsonNode localBase = config.remove("rope_local_base_freq");
        JsonNode pattern = config.remove("sliding_window_pattern");
        if (localBase != null) {
            ObjectNode perType = JSON.createObjectNode();
            perType.putObject("sliding_attention").put("rope_type", "default").set("rope_theta", localBase);
            perType.set("full_attention", rope);
            config.set("rope_parameters", perType);
        } else {
            config.set("rope_parameters", rope);
        }
        String modelType = config.get("model_type").asText();
        if (pattern != null || modelType.equals("gemma2")) {
            int every = pattern == null ? 2 : pattern.asInt();
            ArrayNode types = config.putArray("layer_types");
            for (int layer = 0; layer < layers; layer++) {
                types.add((layer + 1) % every == 0 ? "full_attention" : "sliding_attention");
            }
        }
        return config;
    }
}
