package dev.crucible.accelerator.cpu;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.torch.TorchEnvironment;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CpuBackendTest {
    @TempDir
    Path temp;

    private CpuFeatures features(String flags) throws Exception {
        Path cpuinfo = temp.resolve("cpuinfo");
        Files.writeString(cpuinfo, "processor\t: 0\nmodel name\t: Test CPU 9000\nflags\t\t: " + flags + "\n\nprocessor\t: 1\nflags\t: sse\n");
        Path meminfo = temp.resolve("meminfo");
        Files.writeString(meminfo, "MemTotal:       24576000 kB\nMemFree: 1 kB\n");
        return CpuFeatures.fromProcFiles(cpuinfo, meminfo, 2);
    }

    @Test
    void reportsCoresMemoryAndTheIsaFeaturesThatMatter() throws Exception {
        CpuBackend cpu = new CpuBackend(features("fpu sse avx2 avx512f avx512_bf16 avx512_vnni"));
        Probe probe = cpu.detect();
        assertTrue(probe.available());
        assertEquals("2 cores, AVX2, AVX-512, AVX512-BF16, AVX512-VNNI", probe.reason());
        assertEquals("Test CPU 9000", probe.devices().getFirst().name());
        assertEquals(24576000L * 1024, probe.devices().getFirst().memoryBytes().getAsLong());
    }

    @Test
    void bf16OnlyWhereTheCpuComputesItNatively() throws Exception {
        assertEquals(DType.BF16, new CpuBackend(features("avx2 avx512f avx512_bf16")).chooseDtype(DType.BF16));
        assertEquals(DType.BF16, new CpuBackend(features("avx2 amx_tile amx_bf16")).chooseDtype(DType.BF16));
        assertEquals(DType.F32, new CpuBackend(features("avx2 avx512f")).chooseDtype(DType.BF16));
        assertEquals(DType.F32, new CpuBackend(features("avx2 avx512_bf16")).chooseDtype(DType.F32));
        assertEquals(DType.F32, new CpuBackend(features("avx2 avx512_bf16")).chooseDtype(DType.F16));
    }

    @Test
    void threadsPolicyAndDeviceIndex() throws Exception {
        CpuBackend cpu = new CpuBackend(features("avx2"));
        assertEquals(2, cpu.defaultThreads());
        TorchEnvironment environment = cpu.setupEnvironment(new SetupRequest(DeviceRequest.parse("cpu"), cpu.detect(),
                OptionalInt.of(1)));
        assertEquals(1, environment.threads().getAsInt());
        assertThrows(UserInputException.class, () -> cpu.setupEnvironment(new SetupRequest(DeviceRequest.parse("cpu:1"), cpu.detect(), OptionalInt.empty())));
        assertThrows(UserInputException.class, () -> cpu.setupEnvironment(new SetupRequest(DeviceRequest.parse("cpu"), cpu.detect(), OptionalInt.of(0))));
        assertTrue(cpu.emptyCache(environment).contains("nothing to free"));
    }

    @Test
    void unreadableProcFilesMeanUnknownNotFailure() {
        CpuFeatures none = CpuFeatures.fromProcFiles(temp.resolve("missing"), temp.resolve("missing2"), 4);
        assertEquals(4, none.cores());
        assertTrue(none.memoryBytes().isEmpty());
        assertEquals(DType.F32, new CpuBackend(none).chooseDtype(DType.BF16));
        assertEquals("4 cores", new CpuBackend(none).detect().reason());
    }

    @Test
    void aSmallModelRunsBatchesSideBySideAndALargeOneSplitsEachOp() throws Exception {
        CpuBackend cpu = new CpuBackend(features("avx2"));
        TorchEnvironment environment = cpu.setupEnvironment(new SetupRequest(DeviceRequest.parse("cpu"), cpu.detect(),
                OptionalInt.of(2)));
        // The demo model's shape: 0.85 M parameters.
        assertEquals(2, cpu.batchWorkers(environment, config("small", 128, 4, 352, 356)));
        // Qwen2.5-0.5B's shape: 494 M parameters.
        assertEquals(1, cpu.batchWorkers(environment, config("large", 896, 24, 4864, 151936)));
        assertTrue(dev.crucible.api.model.ModelCost.of(config("large", 896, 24, 4864, 151936), DType.F32).parameters()
                > 400_000_000L);
    }

    @Test
    void aLargeModelMeasuresItsBatchSizeAndASmallOneKeepsTheFixedOne() throws Exception {
        assertEquals(OptionalInt.empty(), CpuBackend.batchSizeSearchCap(config("small", 128, 4, 352, 356)));
        assertEquals(OptionalInt.of(64), CpuBackend.batchSizeSearchCap(config("large", 896, 24, 4864, 151936)));
    }

    @Test
    void aSmallModelFoldsItsTrialEditsIntoItsWeightsAndALargeOneKeepsItsAdapters() throws Exception {
        assertTrue(new CpuBackend().foldsAdapters(config("small-fold", 128, 4, 352, 356)));
        assertFalse(new CpuBackend().foldsAdapters(config("large-fold", 896, 24, 4864, 151936)));
    }

    private dev.crucible.api.model.ModelConfig config(String name, int hidden, int layers, int intermediate, int vocab)
            throws Exception {
        Path dir = Files.createDirectories(temp.resolve(name));
        Files.writeString(dir.resolve("config.json"), """
                {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": %d,
                 "num_hidden_layers": %d, "num_attention_heads": 8, "num_key_value_heads": 8,
                 "intermediate_size": %d, "vocab_size": %d, "rms_norm_eps": 1e-6, "rope_theta": 10000.0,
                 "max_position_embeddings": 2048, "tie_word_embeddings": true, "torch_dtype": "float32"}
                """.formatted(hidden, layers, intermediate, vocab));
        return dev.crucible.api.model.ModelConfig.read(dir);
    }
}
