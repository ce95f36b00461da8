package dev.crucible.accelerator.cuda;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.torch.LibtorchBuild;
import dev.crucible.torch.TorchEnvironment;
import java.util.List;
import java.util.OptionalInt;

/**
 * What the cuda backend's set-up chose: the CUDA build of libtorch, the GPU models are placed on first
 * ({@code cuda:N}) and the GPUs a run may use, as the probe described them (the one named by {@code --device cuda:N},
 * or every GPU for {@code --device cuda} and {@code auto}).
 */
public final class CudaEnvironment extends TorchEnvironment {
    private final List<GpuInfo> gpus;

    CudaEnvironment(DeviceRequest device, List<GpuInfo> gpus, OptionalInt threads) {
        super(device, LibtorchBuild.CUDA, "cuda:" + gpus.getFirst().index(), threads);
        this.gpus = List.copyOf(gpus);
    }

    /** The GPUs this run may use, the first being where models go when one GPU holds them. */
    List<GpuInfo> gpus() {
        return gpus;
    }

    /** Whether every GPU this run may use computes bfloat16 natively (compute capability 8.0 or newer). */
    boolean computesBf16() {
        return gpus.stream().allMatch(GpuInfo::computesBf16);
    }
}
