package dev.crucible.accelerator.cuda;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.tensor.DType;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * NVIDIA GPUs through the CUDA build of libtorch.
 *
 * <p>Detection reads what the driver publishes under {@code /proc/driver/nvidia} and, where present, asks
 * {@code nvidia-smi} for names and memory; it never loads libcuda or libtorch. The GPU build of libtorch is a
 * separate JavaCPP natives jar ({@code org.bytedeco:pytorch:<version>:linux-x86_64-gpu}); without it on the
 * host classpath the backend is unavailable and says so.
 */
public class CudaBackend implements HardwareBackend<BackendEnvironment, DeviceModel> {
    static final String ID = "cuda";
    static final String GPU_NATIVES = "org/bytedeco/pytorch/linux-x86_64-gpu/";

    private final NvidiaProbe nvidia;

    public CudaBackend() {
        this(NvidiaProbe.system());
    }

    CudaBackend(NvidiaProbe nvidia) {
        this.nvidia = nvidia;
    }

    @Override
    public int spiVersion() {
        return SPI_VERSION;
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public int priority() {
        return 40;
    }

    @Override
    public Probe detect() {
        NvidiaProbe.Result driver = nvidia.probe();
        if (driver.driverVersion().isEmpty()) {
            return Probe.unavailable("no NVIDIA driver (" + driver.evidence() + ")");
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("driver", driver.driverVersion().get());
        details.put("gpus", Integer.toString(driver.gpus().size()));
        if (driver.gpus().isEmpty()) {
            return Probe.unavailable("NVIDIA driver " + driver.driverVersion().get() + " is loaded but reports no GPU", details);
        }
        if (!nvidia.hasGpuNatives()) {
            return Probe.unavailable("NVIDIA driver " + driver.driverVersion().get() + " and " + driver.gpus().size()
                    + " GPU(s) found, but the CUDA build of libtorch is not on the classpath (add org.bytedeco:pytorch:"
                    + "2.10.0-1.5.13:linux-x86_64-gpu to lib/)", details);
        }
        return Probe.unavailable("NVIDIA driver and the CUDA build of libtorch found, but this version of the cuda "
                + "backend does not run models yet", details);
    }

    @Override
    public BackendEnvironment setupEnvironment(SetupRequest request) {
        throw new UserInputException("the cuda backend cannot run models in this version: " + request.probe().reason());
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        // Every CUDA GPU we target (compute capability >= 8.0) computes bf16 natively; fp16 checkpoints stay fp16.
        return checkpointDtype.isFloatingPoint() ? checkpointDtype : DType.F32;
    }

    @Override
    public String emptyCache(BackendEnvironment environment) {
        return "cuda: nothing allocated";
    }

    /** Everything the CUDA probe reads from the machine, separated so tests can stand in for a GPU host. */
    interface NvidiaProbe {
        record Result(java.util.Optional<String> driverVersion, List<DeviceInfo> gpus, String evidence) { }

        Result probe();

        boolean hasGpuNatives();

        static NvidiaProbe system() {
            return new SystemNvidiaProbe();
        }
    }
}
