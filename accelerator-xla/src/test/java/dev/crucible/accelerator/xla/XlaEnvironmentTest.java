package dev.crucible.accelerator.xla;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.accelerator.xla.exec.CompileOnlyExecutor;
import dev.crucible.accelerator.xla.lower.BatchPlanner;
import dev.crucible.accelerator.xla.testing.GoldenFixture;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.tensor.DType;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** The xla options a user gives, and what auto makes of a model and a device's memory. */
class XlaEnvironmentTest {

    private static XlaEnvironment of(Map<String, String> options) {
        return XlaEnvironment.of(DeviceRequest.parse("xla").withOptions(options),
                () -> new CompileOnlyExecutor("tpu", 8, program -> Optional.empty()));
    }

    @Test
    void badOptionsAreTheUsersMistakeInOneLine(@TempDir Path temp) throws Exception {
        assertEquals("--xla-devices 'many' is not auto or a number of devices (1, 2, 4, ...)",
                assertThrows(UserInputException.class, () -> of(Map.of("xla-devices", "many"))).getMessage());
        assertEquals("--xla-devices '0' is not auto or a number of devices (1, 2, 4, ...)",
                assertThrows(UserInputException.class, () -> of(Map.of("xla-devices", "0"))).getMessage());
        assertEquals("--strategy 'tp' is not one of: fsdp",
                assertThrows(UserInputException.class, () -> of(Map.of("strategy", "tp"))).getMessage());
        Path file = Files.writeString(temp.resolve("cache"), "");
        assertEquals(file + " is a file; give a folder",
                assertThrows(UserInputException.class, () -> of(Map.of("xla-cache", file.toString()))).getMessage());
        of(Map.of("xla-cache", temp.resolve("made/here").toString()));
        assertEquals(true, Files.isDirectory(temp.resolve("made/here")), "made before any work");
    }

    @Test
    void devicesBeyondTheRuntimesAreRefused() {
        ModelConfig config = GoldenFixture.load("stories260k").config();
        assertEquals("--xla-devices 16: the tpu runtime has 8 devices", assertThrows(UserInputException.class,
                () -> of(Map.of("xla-devices", "16")).sharding(config, DType.BF16)).getMessage());
        assertEquals(4, of(Map.of("xla-devices", "4")).sharding(config, DType.BF16).partitions());
        assertEquals(1, of(Map.of()).sharding(config, DType.BF16).partitions(), "auto, no memory figures: one device");
    }

    /** A 2.6 B-parameter model (the seed's, about 5 GB in bf16) on 16 GiB cores, and the batch that fits. */
    @Test
    void autoTakesTheFewestPowerOfTwoDevicesThatHoldTheModel() throws Exception {
        Path folder = Files.createTempDirectory("lfm-shaped");
        Files.writeString(folder.resolve("config.json"), """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 2048,
                 "intermediate_size": 10752, "num_hidden_layers": 30, "num_attention_heads": 32,
                 "num_key_value_heads": 8, "vocab_size": 65536, "max_position_embeddings": 4096,
                 "rms_norm_eps": 1e-5, "tie_word_embeddings": true, "torch_dtype": "bfloat16"}
                """);
        ModelConfig config = ModelConfig.read(folder);
        long gib = 1L << 30;
        assertEquals(1, XlaEnvironment.fewestThatHold(config, DType.BF16, 8, OptionalLong.of(16 * gib)));
        assertEquals(2, XlaEnvironment.fewestThatHold(config, DType.F32, 8, OptionalLong.of(8 * gib)),
                "10 GB of float32 weights do not fit one 8 GiB core, half of them fit");
        assertEquals(8, XlaEnvironment.fewestThatHold(config, DType.F32, 8, OptionalLong.of(gib)),
                "all there are, when even they are too few");
        int batch = BatchPlanner.promptsPerBatch(config, DType.BF16, 1, OptionalLong.of(16 * gib), 100, 100, 400);
        System.out.println("2.6 B model on one 16 GiB core, 100 + 100 tokens: batches of " + batch);
        assertEquals(true, batch >= 20 && batch <= BatchPlanner.LARGEST, "at least the seed's measured 20: " + batch);
        assertEquals(BatchPlanner.WITHOUT_MEMORY_FIGURES,
                BatchPlanner.promptsPerBatch(config, DType.BF16, 1, OptionalLong.empty(), 100, 100, 400));
        assertEquals("the model's weights take 4.53 GiB of each device's 4.00 GiB (1 device): split it over more "
                + "devices (--xla-devices)", assertThrows(UserInputException.class, () -> BatchPlanner.promptsPerBatch(
                        config, DType.BF16, 1, OptionalLong.of(4 * gib), 100, 100, 400)).getMessage());
    }
}
