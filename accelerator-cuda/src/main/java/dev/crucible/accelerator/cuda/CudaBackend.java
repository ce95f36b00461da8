package dev.crucible.accelerator.cuda;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.torch.LayerSplit;
import dev.crucible.torch.TorchBackend;
import dev.crucible.torch.TorchModel;
import dev.crucible.torch.policy.DtypeFallback;
import dev.crucible.torch.policy.LayerPlan;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.function.Supplier;
import java.util.stream.Collectors;
import org.bytedeco.pytorch.global.torch;

/**
 * NVIDIA GPUs through the CUDA build of libtorch ({@code org.bytedeco:pytorch:2.10.0-1.5.13:linux-x86_64-gpu},
 * added by the {@code -Pcuda} build profile), running the one model definition through torch-runtime on
 * {@code cuda:N}.
 *
 * <p>Detection ({@link CudaHost}) loads neither CUDA nor libtorch: the natives jar is looked up as a resource, the
 * driver read from {@code /proc/driver/nvidia}, the GPUs with their memory and compute capability from the driver's
 * NVML (else {@code nvidia-smi}, else {@code /proc} without memory), and every CUDA library the build links is looked
 * for where the dynamic linker would find it, so a missing one is named in one line instead of failing the load.
 *
 * <p>Policies: {@code --dtype auto} keeps the checkpoint's dtype, then tries bfloat16 (compute capability 8.0 and
 * newer), float16 and float32, each checked with a one-token generation for inf and nan; batch size 0 is measured
 * (powers of two up to {@value #MAX_BATCH_SIZE}, stopping at the first out-of-memory, the fastest kept, the table
 * printed); a model is checked against the GPU's free memory before it is placed, and one that needs several GPUs is
 * planned across them by layers; {@link #emptyCache} empties libtorch's caching allocator and says how much the
 * driver got back. LoRA, QLoRA (the NF4 base dequantized by libtorch ops on the GPU) and full fine-tuning run as on
 * every libtorch device.
 */
public class CudaBackend extends TorchBackend<CudaEnvironment> {
    static final String ID = "cuda";
    static final String CPU_BUILD = "this distribution has the CPU build of libtorch (rebuild with -Pcuda)";
    static final String CPU_BUILD_TOO = "this distribution also has only the CPU build of libtorch (rebuild with -Pcuda)";
    /** CUDA 13.0 needs an R580 driver or newer on Linux. */
    static final int MIN_DRIVER = 580;
    static final int MIN_CUDA_DRIVER = 13000;
    static final int MAX_BATCH_SIZE = 128;
    /** Free memory kept aside on each GPU for activations and the allocator's fragmentation. */
    static final double HEADROOM = 0.1;

    private final CudaHost host;
    private final Supplier<Optional<CudaRuntime>> runtime;

    public CudaBackend() {
        this(CudaHost.system(), CudaRuntime::loaded);
    }

    CudaBackend(CudaHost host, Supplier<Optional<CudaRuntime>> runtime) {
        this.host = host;
        this.runtime = runtime;
    }

    @Override
    public int spiVersion() {
        return HardwareBackend.SPI_VERSION;
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
        CudaHost.Finding found = host.probe();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("libtorch", found.gpuBuild() ? "CUDA build (linux-x86_64-gpu)" : "CPU build only");
        found.driverVersion().ifPresent(version -> details.put("driver", version));
        if (!found.platform().equals("linux-x86_64")) {
            return Probe.unavailable("the CUDA build of libtorch is published for linux-x86_64 only (this is "
                    + found.platform() + ")", details);
        }
        if (found.driverVersion().isPresent()) {
            details.put("gpus", found.gpus().size() + " (from " + found.gpuSource() + ")");
        }
        // No driver is the first thing to fix (a rebuild with -Pcuda would not help), so it leads; the CPU build is
        // named beside it, so the user learns both at once.
        if (found.driverVersion().isEmpty()) {
            return Probe.unavailable("no NVIDIA driver (" + host.versionFile() + " not found)"
                    + (found.gpuBuild() ? "" : "; " + CPU_BUILD_TOO), details);
        }
        if (!found.gpuBuild()) {
            return Probe.unavailable(CPU_BUILD, details);
        }
        String driver = found.driverVersion().get();
        if (found.gpus().isEmpty()) {
            return Probe.unavailable("NVIDIA driver " + driver + " is loaded but reports no GPU", details);
        }
        if (found.cudaDriverVersion() > 0) {
            details.put("cuda_driver", cudaVersion(found.cudaDriverVersion()));
        }
        boolean tooOld = found.cudaDriverVersion() > 0 ? found.cudaDriverVersion() < MIN_CUDA_DRIVER
                : ProcDriver.major(driver) > 0 && ProcDriver.major(driver) < MIN_DRIVER;
        if (tooOld) {
            return Probe.unavailable("NVIDIA driver " + driver + (found.cudaDriverVersion() > 0 ? " runs CUDA up to "
                    + cudaVersion(found.cudaDriverVersion()) : "") + "; the CUDA build of libtorch needs CUDA 13 (driver "
                    + MIN_DRIVER + " or newer)", details);
        }
        long resolved = found.libraries().values().stream().filter(Optional::isPresent).count();
        details.put("cuda_libraries", resolved + " of " + found.libraries().size() + " found"
                + found.libraries().getOrDefault(CudaLibraries.RUNTIME, Optional.empty())
                        .map(path -> ", " + CudaLibraries.RUNTIME + " at " + path).orElse(""));
        if (found.libraries().getOrDefault(CudaLibraries.RUNTIME, Optional.empty()).isEmpty()) {
            return Probe.unavailable(CudaLibraries.RUNTIME + " (the CUDA 13 runtime) is not found: install CUDA 13 or"
                    + " add its lib64 folder to LD_LIBRARY_PATH", details);
        }
        String missing = CudaLibraries.describeMissing(found.libraries());
        if (!missing.isEmpty()) {
            return Probe.unavailable("the CUDA 13 runtime is found but not " + missing + ": install them or add their"
                    + " folders to LD_LIBRARY_PATH", details);
        }
        details.put("compute_capability", found.gpus().stream().map(GpuInfo::capability)
                .collect(Collectors.joining(", ")));
        details.put("dtype_policy", "auto: the checkpoint's dtype, then bfloat16 (compute capability 8.0+), float16,"
                + " float32, each checked for inf/nan on one token");
        List<DeviceInfo> devices = found.gpus().stream()
                .map(g -> new DeviceInfo(g.index(), g.name(), g.totalBytes())).toList();
        return Probe.available(summary(found.gpus()) + ", driver " + driver
                + (found.cudaDriverVersion() > 0 ? " (CUDA " + cudaVersion(found.cudaDriverVersion()) + ")" : ""),
                devices, details);
    }

    /** {@code 2 × NVIDIA H200}, {@code NVIDIA A100-SXM4-80GB, NVIDIA L4}. */
    static String summary(List<GpuInfo> gpus) {
        Map<String, Long> byName = gpus.stream().collect(Collectors.groupingBy(GpuInfo::name, LinkedHashMap::new,
                Collectors.counting()));
        return byName.entrySet().stream().map(e -> e.getValue() == 1 ? e.getKey() : e.getValue() + " × " + e.getKey())
                .collect(Collectors.joining(", "));
    }

    static String cudaVersion(int version) {
        return version / 1000 + "." + version % 1000 / 10;
    }

    @Override
    public CudaEnvironment setupEnvironment(SetupRequest request) {
        List<GpuInfo> gpus = gpusOf(request.probe());
        if (gpus.isEmpty()) {
            throw new UserInputException("the cuda backend is not available: " + request.probe().reason());
        }
        if (request.threads().isPresent() && request.threads().getAsInt() < 1) {
            throw new UserInputException("--threads must be at least 1, got " + request.threads().getAsInt());
        }
        OptionalInt index = request.device().index();
        if (index.isPresent()) {
            int wanted = index.getAsInt();
            gpus = gpus.stream().filter(g -> g.index() == wanted).toList();
            if (gpus.isEmpty()) {
                throw new UserInputException("device 'cuda:" + wanted + "' does not exist: this machine has "
                        + request.probe().devices().size() + " NVIDIA GPU(s)");
            }
        }
        return new CudaEnvironment(request.device(), gpus, request.threads());
    }

    /** The GPUs a probe of this backend found, with the compute capabilities it put in its details. */
    static List<GpuInfo> gpusOf(Probe probe) {
        if (!probe.available()) {
            return List.of();
        }
        String[] capabilities = probe.details().getOrDefault("compute_capability", "").split(",\\s*");
        List<GpuInfo> gpus = new ArrayList<>();
        for (int i = 0; i < probe.devices().size(); i++) {
            DeviceInfo device = probe.devices().get(i);
            int capability = 0;
            if (i < capabilities.length && capabilities[i].matches("\\d+\\.\\d")) {
                capability = Integer.parseInt(capabilities[i].replace(".", ""));
            }
            gpus.add(new GpuInfo(device.index(), device.name(), device.memoryBytes(), OptionalLong.empty(), capability));
        }
        return gpus;
    }

    /** The checkpoint's dtype when it is floating point; {@link #dtypeCandidates} refines it for the GPU. */
    @Override
    public DType chooseDtype(DType checkpointDtype) {
        return checkpointDtype.isFloatingPoint() ? checkpointDtype : DType.F32;
    }

    @Override
    protected List<DType> dtypeCandidates(CudaEnvironment environment, DType chosen) {
        return DtypeFallback.candidates(chosen, environment.computesBf16());
    }

    /**
     * Refuses, before any copy, a model the GPUs cannot hold: weights in the dtype plus a KV cache for a batch of 8 at
     * up to 4096 tokens, against the driver's free memory less {@link #HEADROOM}. A model that fits the first GPU is
     * placed on it whole; one that does not, where the run may use several GPUs, is split by layers over as many as
     * it needs (the plan printed on stderr).
     */
    @Override
    protected Optional<LayerSplit> layerSplit(CudaEnvironment environment, ShardRequest request) {
        return layerSplit(environment, request.config(), request.dtype());
    }

    Optional<LayerSplit> layerSplit(CudaEnvironment environment, ModelConfig config, DType dtype) {
        CudaRuntime cuda = runtime.get().orElseThrow(() -> new IllegalStateException("CUDA is not loaded"));
        if (cuda.deviceCount() < 1) {
            throw new UserInputException("libtorch's CUDA build is loaded but sees no GPU (check CUDA_VISIBLE_DEVICES"
                    + " and that the driver works: nvidia-smi)");
        }
        LayerPlan.Demand demand = demand(config, dtype);
        long[] free = environment.gpus().stream().mapToLong(g -> cuda.memory(g.index()).freeBytes()).toArray();
        LayerPlan plan = LayerPlan.plan(demand, free, HEADROOM);
        if (plan.devicesUsed() == 1) {
            return Optional.empty();
        }
        List<String> devices = environment.gpus().stream().map(g -> "cuda:" + g.index()).toList();
        report(String.format(Locale.ROOT, "the model needs %s in %s, more than %s has free (%s): split by layers over"
                        + " %d GPUs: %s", gib(Arrays.stream(plan.bytesPerDevice()).sum()), dtype.userName(),
                devices.getFirst(), gib(free[0]), plan.devicesUsed(), plan.describe(devices)));
        return Optional.of(new LayerSplit(devices, plan));
    }

    /** Bytes the model's parts need on a GPU in {@code dtype}, layer by layer, with a KV cache for 8 × 4096 tokens. */
    static LayerPlan.Demand demand(ModelConfig config, DType dtype) {
        return LayerPlan.Demand.of(config, dtype, 8L * Math.min(4096, config.contextLength()));
    }

    @Override
    protected OptionalInt batchSizeSearchCap(TorchModel model) {
        return OptionalInt.of(MAX_BATCH_SIZE);
    }

    @Override
    protected void releaseCachedMemory(TorchModel model) {
        runtime.get().ifPresent(CudaRuntime::emptyCache);
    }

    @Override
    public String emptyCache(CudaEnvironment environment) {
        Optional<CudaRuntime> loaded = runtime.get();
        if (loaded.isEmpty()) {
            return "cuda: nothing cached (no model has been loaded)";
        }
        CudaRuntime cuda = loaded.get();
        List<CudaRuntime.Memory> before = environment.gpus().stream().map(g -> cuda.memory(g.index())).toList();
        cuda.emptyCache();
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < before.size(); i++) {
            int index = environment.gpus().get(i).index();
            CudaRuntime.Memory after = cuda.memory(index);
            long returned = Math.max(0, after.freeBytes() - before.get(i).freeBytes());
            lines.add("cuda:" + index + ": " + gib(returned) + " returned to the driver (" + gib(after.freeBytes())
                    + " free of " + gib(after.totalBytes()) + ")");
        }
        return String.join("; ", lines);
    }

    @Override
    public Map<String, String> runtimeDetails(CudaEnvironment environment) {
        Map<String, String> details = new LinkedHashMap<>(super.runtimeDetails(environment));
        details.put("build", "CUDA (linux-x86_64-gpu)");
        details.put("cuda runtime", cudaVersion((int) torch.getCUDAHooks().versionCUDART()));
        details.put("cudnn", Long.toString(torch.getCUDAHooks().versionRuntimeCuDNN()));
        runtime.get().ifPresent(cuda -> {
            for (GpuInfo gpu : environment.gpus()) {
                CudaRuntime.Memory memory = cuda.memory(gpu.index());
                details.put("cuda:" + gpu.index(), gpu.name() + ", compute " + gpu.capability() + ", "
                        + gib(memory.freeBytes()) + " free of " + gib(memory.totalBytes()));
            }
        });
        return details;
    }

    static String gib(long bytes) {
        return String.format(Locale.ROOT, "%.2f GiB", bytes / (double) (1L << 30));
    }
}
