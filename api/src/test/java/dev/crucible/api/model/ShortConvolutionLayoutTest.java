package dev.crucible.api.model;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.model.layout.Attention;
import dev.crucible.api.model.layout.Linear;
import dev.crucible.api.model.layout.ModelLayout;
import dev.crucible.api.model.layout.Parameter;
import dev.crucible.api.model.layout.ShortConvolution;
import dev.crucible.api.tensor.RecordingOps;
import java.nio.file.Files;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/** LFM2 laid out as its checkpoints store it, its layer types read both ways, and its convolution state traced. */
class ShortConvolutionLayoutTest {

    @Test
    void theLayoutIsTheCheckpointsTensorsWithTheirShapes() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-lfm2"));
        ModelLayout layout = config.layout();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("tiny-lfm2"))) {
            assertEquals(new TreeSet<>(checkpoint.names()), layout.parameters().stream().map(Parameter::name)
                    .collect(Collectors.toCollection(TreeSet::new)), "tied head: lm_head is not stored");
            for (Parameter parameter : layout.parameters()) {
                assertArrayEquals(checkpoint.info(parameter.name()).shape(), parameter.shape(), parameter.name());
            }
        }
        assertEquals(2, layout.blocks(ShortConvolution.class).size());
        assertEquals(2, layout.blocks(Attention.class).size());
        assertEquals(1e-5, config.rmsNormEps(), "norm_eps");
        assertEquals("model.embedding_norm.weight", layout.finalNorm().name());
        assertEquals(List.of("model.layers.0.conv.out_proj", "model.layers.0.feed_forward.w2",
                        "model.layers.1.self_attn.out_proj", "model.layers.1.feed_forward.w2"),
                layout.residualWriters().subList(0, 4).stream().map(Linear::module).toList());
    }

    /** Without layer_types, full_attn_idxs names the attention layers (every layer when absent). */
    @Test
    void layerTypesOrFullAttentionIndicesSayWhichLayersConvolve() throws Exception {
        String text = Files.readString(ModelFixtures.fixture("tiny-lfm2").resolve("config.json"));
        ModelConfig types = ModelConfig.parse(text, "config.json");
        assertEquals(Set.of(0, 2), types.convolutions().layers());
        String indices = text.replaceAll("(?s)\"layer_types\": \\[.*?\\]", "\"layer_types\": null")
                .replace("\"full_attn_idxs\": null", "\"full_attn_idxs\": [1, 3]");
        assertEquals(types, ModelConfig.parse(indices, "config.json"));
        String none = text.replaceAll("(?s)\"layer_types\": \\[.*?\\]", "\"layer_types\": null");
        assertEquals(Set.of(), ModelConfig.parse(none, "config.json").convolutions().layers());
        UserInputException bias = assertThrows(UserInputException.class, () -> ModelConfig.parse(
                text.replace("\"conv_bias\": false", "\"conv_bias\": true"), "config.json"));
        assertEquals("config.json: conv_bias true is not supported", bias.getMessage());
        UserInputException type = assertThrows(UserInputException.class, () -> ModelConfig.parse(
                text.replaceFirst("\"conv\"", "\"sliding_attention\""), "config.json"));
        assertEquals("config.json: layer_types entry 'sliding_attention' is not supported; supported: conv, "
                + "full_attention", type.getMessage());
    }

    /** The window of recent inputs is a step's input and output: a static-shape decode is still two programs. */
    @Test
    void aStaticShapeDecodeRequestCarriesTheConvolutionWindow() {
        ModelConfig config = ModelConfig.read(ModelFixtures.fixture("tiny-lfm2"));
        RecordingOps ops = new RecordingOps();
        try (Checkpoint checkpoint = Checkpoint.open(ModelFixtures.fixture("tiny-lfm2"));
             PlacedModel model = ModelFixtures.shapes(config, checkpoint, ops);
             ModelRunner runner = new ModelRunner(ops, model, new ShapePolicy(16, 32, true))) {
            runner.decode(new DecodeRequest(List.of(new int[] {1, 5, 6}, new int[] {1}), 8, Set.of(), 2, 2), 2);
            List<String> programs = ops.programs();
            assertEquals(2, programs.size(), programs::toString);
            assertTrue(programs.get(1).contains("F32[2, 2, 64]"), "a window of 2 rows of 64 goes in: " + programs.get(1));
        }
    }
}
