package dev.crucible.accelerator.cpu;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DType;
import dev.crucible.torch.TorchBackend;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The CPU backend: always available, runs the model definition on the CPU build of libtorch.
 *
 * <p>Policies: one compute thread per available processor unless {@code --threads} or
 * {@code CRUCIBLE_THREADS} says otherwise; bfloat16 only where the CPU has bf16 dot products in hardware
 * (elsewhere libtorch emulates them and is slower and no more accurate than float32).
 */
public class CpuBackend extends TorchBackend {
    static final String ID = "cpu";

    private final CpuFeatures features;
    private volatile int threads;

    public CpuBackend() {
        this(CpuFeatures.probe());
    }

    CpuBackend(CpuFeatures features) {
        this.features = features;
        this.threads = features.cores();
    }

    @Override
    protected String torchDevice() {
        return "cpu";
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public int priority() {
        return 10;
    }

    @Override
    public Probe detect() {
        List<String> notable = features.notableFeatures();
        String reason = features.cores() + (features.cores() == 1 ? " core" : " cores")
                + (notable.isEmpty() ? "" : ", " + String.join(", ", notable));
        Map<String, String> details = new LinkedHashMap<>();
        details.put("model", features.modelName());
        details.put("cores", Integer.toString(features.cores()));
        details.put("features", notable.isEmpty() ? "none detected" : String.join(" ", notable));
        details.put("dtype_policy", features.nativeBf16()
                ? "bfloat16 checkpoints stay bfloat16 (native bf16 dot products); others run in float32"
                : "float32 (no native bf16 on this CPU)");
        details.put("threads", Integer.toString(threads));
        long memory = features.memoryBytes().orElse(0);
        return Probe.available(reason, List.of(DeviceInfo.of(0, features.modelName(), memory)), details);
    }

    @Override
    public void setupEnvironment(SetupRequest request) {
        if (request.device().index().isPresent() && request.device().index().getAsInt() != 0) {
            throw new UserInputException("device '" + request.device() + "' does not exist: the cpu backend has one device, cpu:0");
        }
        int requested = request.threads().orElse(features.cores());
        if (requested < 1) {
            throw new UserInputException("--threads must be at least 1, got " + requested);
        }
        threads = requested;
        useThreads(requested);
    }

    /** The compute threads chosen by {@link #setupEnvironment}; applied when libtorch is first used. */
    public int threads() {
        return threads;
    }

    public CpuFeatures features() {
        return features;
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        if (checkpointDtype == DType.BF16 && features.nativeBf16()) {
            return DType.BF16;
        }
        return DType.F32;
    }

    @Override
    public String emptyCache() {
        return "cpu: nothing to free (host memory is returned to the allocator as tensors close)";
    }
}
