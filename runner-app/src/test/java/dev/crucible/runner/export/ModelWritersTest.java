package dev.crucible.runner.export;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.json.JsonMapper;
import dev.crucible.api.UserInputException;
import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.Architecture;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import dev.crucible.huggingface.hub.ModelLocator;
import dev.crucible.runner.model.CharTokenizerFiles;
import dev.crucible.runner.model.ModelInitializer;
import java.lang.foreign.Arena;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The writers behind every export, fed one {@link ExportedModel}: each reads the form of the change it stores. */
class ModelWritersTest {
    private static final String DOWN = "model.layers.1.mlp.down_proj";

    @TempDir
    Path temp;

    @Test
    void oneModelLeavesAsAFolderAndAsAnAdapter() throws Exception {
        Path baseDir = temp.resolve("base");
        ModelInitializer.write(spec(), baseDir, false);
        try (Checkpoint checkpoint = Checkpoint.open(baseDir); Arena arena = Arena.ofConfined()) {
            long[] shape = checkpoint.info(DOWN + ".weight").shape();
            float[] trained = new float[(int) (shape[0] * shape[1])];
            Arrays.fill(trained, 0.25f);
            Map<String, HostTensor> weights = Map.of(DOWN + ".weight",
                    HostTensor.fromFloats(DOWN + ".weight", DType.F32, shape, trained, arena));
            LoraFactors factors = new LoraFactors(
                    HostTensor.fromFloats("a", DType.F32, new long[] {2, shape[1]}, new float[(int) (2 * shape[1])], arena),
                    HostTensor.fromFloats("b", DType.F32, new long[] {shape[0], 2}, new float[(int) (2 * shape[0])], arena), 1.0);
            ExportedModel model = new ExportedModel(new ModelLocator.Located(baseDir, Optional.empty()),
                    ModelConfig.read(baseDir), BaseFiles.of(baseDir),
                    Optional.of(ExportWeights.replacing(checkpoint, ModelConfig.read(baseDir).layout(), weights)),
                    Optional.of(new LoraAdapters(Map.of(DOWN, factors), 2, 4, 0.05, List.of(DOWN))), Optional.empty(),
                    folder -> Files.writeString(folder.resolve("made_by.txt"), "a test"));

            Path folder = temp.resolve("folder");
            ExportFormat.MERGED.writer(1L << 30).write(model, folder, false);
            try (Checkpoint written = Checkpoint.open(folder)) {
                assertEquals(checkpoint.names(), written.names(), "every base tensor, in the base's order");
                assertArrayEquals(trained, written.tensor(DOWN + ".weight").toFloatArray(), "the trained one replaced");
                assertArrayEquals(checkpoint.tensor("model.norm.weight").toFloatArray(),
                        written.tensor("model.norm.weight").toFloatArray());
            }
            assertTrue(Files.isRegularFile(folder.resolve("config.json")) && Files.isRegularFile(folder.resolve("tokenizer.json")));
            assertEquals("a test", Files.readString(folder.resolve("made_by.txt")));
            assertFalse(Files.exists(folder.resolve(ModelCard.FILE_NAME)), "no card was given");

            Path adapter = temp.resolve("adapter");
            ExportFormat.ADAPTER.writer(1L << 30).write(model, adapter, false);
            JsonNode config = JsonMapper.builder().build().readTree(adapter.resolve("adapter_config.json").toFile());
            assertEquals(2, config.get("r").asInt());
            assertEquals(4.0, config.get("lora_alpha").asDouble());
            assertEquals(0.05, config.get("lora_dropout").asDouble());
            assertEquals(baseDir.toString(), config.get("base_model_name_or_path").asText());
            assertEquals(List.of(DOWN), JsonMapper.builder().build().convertValue(config.get("target_modules"), List.class));
            assertEquals("a test", Files.readString(adapter.resolve("made_by.txt")));
            try (Checkpoint tensors = Checkpoint.open(adapter.resolve("adapter_model.safetensors"))) {
                assertEquals(List.of("base_model.model." + DOWN + ".lora_A.weight", "base_model.model." + DOWN + ".lora_B.weight"),
                        tensors.names().stream().sorted().toList());
            }

            UserInputException exists = assertThrows(UserInputException.class,
                    () -> ExportFormat.ADAPTER.writer(1L << 30).write(model, adapter, false));
            assertTrue(exists.getMessage().contains("already exists"), exists.getMessage());
        }
    }

    @Test
    void aWriterIsHandedOnlyModelsWithTheFormItStores() throws Exception {
        Path baseDir = temp.resolve("base");
        ModelInitializer.write(spec(), baseDir, false);
        ExportedModel adaptersOnly = new ExportedModel(new ModelLocator.Located(baseDir, Optional.empty()),
                ModelConfig.read(baseDir), BaseFiles.of(baseDir), Optional.empty(),
                Optional.of(new LoraAdapters(Map.of(), 2, 2, 0, List.of())), Optional.empty(), folder -> { });
        assertThrows(IllegalStateException.class,
                () -> new SafetensorsFolderWriter(1L << 30).write(adaptersOnly, temp.resolve("out"), false));
        assertFalse(Files.exists(temp.resolve("out")));
        assertThrows(IllegalArgumentException.class, () -> new ExportedModel(adaptersOnly.base(), adaptersOnly.config(),
                adaptersOnly.files(), Optional.empty(), Optional.empty(), Optional.empty(), folder -> { }));
    }

    private static ModelInitializer.Spec spec() {
        return new ModelInitializer.Spec(Architecture.LLAMA, 32, 2, 4, 2, 8, 64, CharTokenizerFiles.vocabulary().size(),
                true, DType.F32, 5, 512, 10000.0, 0.02);
    }
}
