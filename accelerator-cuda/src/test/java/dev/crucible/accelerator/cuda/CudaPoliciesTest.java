package dev.crucible.accelerator.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.torch.LayerSplit;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;

/** The cuda backend's memory policies against a fake CUDA runtime: what a run on GPUs of given sizes would do. */
class CudaPoliciesTest {
    private static final long GIB = 1L << 30;

    /** GPUs with the given free and total memory; emptying the cache frees {@code cached} bytes on each. */
    private static final class FakeCuda implements CudaRuntime {
        final long[] free;
        final long[] total;
        final long cached;
        int emptied;

        FakeCuda(long[] free, long[] total, long cached) {
            this.free = free.clone();
            this.total = total;
            this.cached = cached;
        }

        @Override
        public int deviceCount() {
            return free.length;
        }

        @Override
        public Memory memory(int device) {
            return new Memory(free[device], total[device]);
        }

        @Override
        public void emptyCache() {
            emptied++;
            for (int i = 0; i < free.length; i++) {
                free[i] += cached;
            }
        }
    }

    private static CudaEnvironment environment(int gpus) {
        List<GpuInfo> list = new ArrayList<>();
        for (int i = 0; i < gpus; i++) {
            list.add(new GpuInfo(i, "NVIDIA L4", OptionalLong.of(24 * GIB), OptionalLong.empty(), 89));
        }
        return new CudaEnvironment(DeviceRequest.parse("cuda"), list, OptionalInt.empty());
    }

    /** Qwen2.5-7B's shape: 7.6 billion parameters, 14.2 GiB of weights in bfloat16. */
    private static final ModelConfig QWEN_7B = ModelConfig.parse("""
            {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
             "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28, "num_key_value_heads": 4,
             "vocab_size": 152064, "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
             "tie_word_embeddings": false, "torch_dtype": "bfloat16"}""", "config.json");

    /** A backend over {@code cuda} whose stderr lines are kept. */
    private static final class ReportingBackend extends CudaBackend {
        final List<String> reports = new ArrayList<>();

        ReportingBackend(FakeCuda cuda) {
            super(null, () -> Optional.of(cuda));
        }

        @Override
        protected void report(String line) {
            reports.add(line);
        }
    }

    @Test
    void aModelThatFitsTheFirstGpuIsPlacedThereWhole() {
        FakeCuda cuda = new FakeCuda(new long[] {22 * GIB, 22 * GIB}, new long[] {24 * GIB, 24 * GIB}, 0);
        ReportingBackend backend = new ReportingBackend(cuda);
        assertTrue(backend.layerSplit(environment(2), QWEN_7B, DType.BF16).isEmpty());
        assertTrue(backend.reports.isEmpty(), backend.reports.toString());
    }

    @Test
    void aModelTooBigForOneGpuIsRefusedInOneLine() {
        FakeCuda cuda = new FakeCuda(new long[] {10 * GIB}, new long[] {24 * GIB}, 0);
        UserInputException e = assertThrows(UserInputException.class,
                () -> new CudaBackend(null, () -> Optional.of(cuda)).layerSplit(environment(1), QWEN_7B, DType.BF16));
        assertTrue(e.getMessage().matches("the model needs 1\\d\\.\\d\\d GiB of weights and cache, more than the 1"
                + " device can hold \\(9\\.00 GiB usable\\); use a 4-bit quantization or a smaller model"), e.getMessage());
    }

    @Test
    void aModelThatNeedsTwoGpusIsSplitByLayersOverThemAndThePlanIsPrinted() {
        FakeCuda cuda = new FakeCuda(new long[] {10 * GIB, 12 * GIB}, new long[] {24 * GIB, 24 * GIB}, 0);
        ReportingBackend backend = new ReportingBackend(cuda);
        LayerSplit split = backend.layerSplit(environment(2), QWEN_7B, DType.BF16).orElseThrow();
        assertEquals(List.of("cuda:0", "cuda:1"), split.devices());
        int[] layers = split.plan().layerDevices();
        assertEquals(0, layers[0]);
        assertEquals(1, layers[27]);
        assertEquals(1, split.plan().headDevice(), "an untied head follows the last layer");
        assertEquals(1, backend.reports.size());
        assertTrue(backend.reports.getFirst().matches("the model needs 1\\d\\.\\d\\d GiB in bfloat16, more than cuda:0"
                + " has free \\(10\\.00 GiB\\): split by layers over 2 GPUs: cuda:0 embedding, layers 0-\\d+ \\([\\d.]+"
                + " GiB\\); cuda:1 layers \\d+-27, head \\([\\d.]+ GiB\\)"), backend.reports.getFirst());
    }

    @Test
    void aModelTooBigEvenForEveryGpuTogetherIsRefusedInOneLine() {
        FakeCuda cuda = new FakeCuda(new long[] {6 * GIB, 6 * GIB}, new long[] {24 * GIB, 24 * GIB}, 0);
        ReportingBackend backend = new ReportingBackend(cuda);
        UserInputException e = assertThrows(UserInputException.class,
                () -> backend.layerSplit(environment(2), QWEN_7B, DType.BF16));
        assertTrue(e.getMessage().matches("the model needs 1\\d\\.\\d\\d GiB of weights and cache, more than the 2"
                + " devices can hold \\(10\\.80 GiB usable\\); use a 4-bit quantization or a smaller model"),
                e.getMessage());
        assertTrue(backend.reports.isEmpty(), "nothing is planned aloud for a model that is refused");
    }

    @Test
    void float32NeedsTwiceTheMemory() {
        FakeCuda cuda = new FakeCuda(new long[] {22 * GIB}, new long[] {24 * GIB}, 0);
        CudaBackend backend = new CudaBackend(null, () -> Optional.of(cuda));
        assertTrue(backend.layerSplit(environment(1), QWEN_7B, DType.BF16).isEmpty());
        assertThrows(UserInputException.class, () -> backend.layerSplit(environment(1), QWEN_7B, DType.F32));
    }

    @Test
    void emptyCacheSaysHowMuchEachGpuGotBack() {
        FakeCuda cuda = new FakeCuda(new long[] {10 * GIB, 20 * GIB}, new long[] {24 * GIB, 24 * GIB}, 3 * GIB / 2);
        CudaBackend backend = new CudaBackend(null, () -> Optional.of(cuda));
        assertEquals("cuda:0: 1.50 GiB returned to the driver (11.50 GiB free of 24.00 GiB); cuda:1: 1.50 GiB returned"
                + " to the driver (21.50 GiB free of 24.00 GiB)", backend.emptyCache(environment(2)));
        assertEquals(1, cuda.emptied, "one call empties every GPU's cache");
    }

    @Test
    void emptyCacheBeforeAnyModelSaysSo() {
        assertEquals("cuda: nothing cached (no model has been loaded)",
                new CudaBackend(null, Optional::empty).emptyCache(environment(1)));
    }
}
