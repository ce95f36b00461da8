package dev.crucible.accelerator.mps;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.torch.LibtorchBuild;
import dev.crucible.torch.TorchBackend;
import dev.crucible.torch.TorchEnvironment;
import dev.crucible.torch.TorchModel;
import dev.crucible.torch.TorchRuntime;
import dev.crucible.torch.policy.DtypeFallback;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.pytorch.MPSHooksInterface;
import org.bytedeco.pytorch.global.torch;

/**
 * Apple-silicon GPUs through libtorch's MPS device: the macOS arm64 build of libtorch (the {@code -Pmacos-arm64}
 * build profile) has MPS compiled in, and runs the one model definition through torch-runtime on {@code mps}.
 *
 * <p>Detection needs only the OS name, version and architecture and a resource lookup for the macOS natives; Metal
 * is first touched when libtorch loads, where the MPS device itself is checked ({@code hasMPS}). Policies:
 * {@code --dtype auto} keeps float16 and float32 checkpoints, bfloat16 ones only from macOS 14 (whose Metal has
 * bfloat16; before it they run in float16), then falls back to float16 and float32, each checked for inf and nan on
 * one token; batch size 0 is measured as on CUDA; {@link #emptyCache} empties the MPS allocator's cache and says how
 * much it held. QLoRA is refused: its 4-bit base is dequantized by integer gathers that the MPS kernels of this
 * libtorch build do not cover for every dtype, and it has not been run on a Mac.
 */
public class MpsBackend extends TorchBackend<TorchEnvironment> {
    static final String ID = "mps";
    static final int MAX_BATCH_SIZE = 64;
    /** bfloat16 arrived in Metal (and so in MPS) with macOS 14 Sonoma. */
    static final int BF16_MACOS = 14;
    static final String QLORA_REFUSED = "QLoRA is not available on mps: its 4-bit NF4 base needs dequantization"
            + " kernels that have not been checked on Apple silicon; use --method lora (the bf16/fp16 base fits"
            + " unified memory) or a CUDA GPU";

    private final String osName;
    private final String osVersion;
    private final String osArch;
    private final boolean hasMacNatives;

    public MpsBackend() {
        this(System.getProperty("os.name", ""), System.getProperty("os.version", ""), System.getProperty("os.arch", ""),
                LibtorchBuild.DEFAULT.presentIn(MpsBackend.class.getClassLoader(), "macosx-arm64"));
    }

    MpsBackend(String osName, String osVersion, String osArch, boolean hasMacNatives) {
        this.osName = osName;
        this.osVersion = osVersion;
        this.osArch = osArch;
        this.hasMacNatives = hasMacNatives;
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
        return 20;
    }

    @Override
    public Probe detect() {
        boolean mac = osName.toLowerCase(Locale.ROOT).startsWith("mac");
        boolean arm = osArch.equals("aarch64") || osArch.equals("arm64");
        if (!mac || !arm) {
            return Probe.unavailable("MPS needs macOS on Apple silicon (this is " + osName + " " + osArch + ")");
        }
        if (!hasMacNatives) {
            return Probe.unavailable("this distribution has no macOS arm64 build of libtorch (rebuild with"
                    + " -Pmacos-arm64)");
        }
        Map<String, String> details = new LinkedHashMap<>();
        details.put("macos", osVersion);
        details.put("dtype_policy", "auto: float16 and float32 kept, bfloat16 " + (bf16() ? "kept" : "as float16 (needs"
                + " macOS " + BF16_MACOS + ")") + "; then float16, float32, each checked for inf/nan on one token");
        return Probe.available("Apple silicon, macOS " + osVersion + " (the MPS device is checked when libtorch loads)",
                List.of(DeviceInfo.of(0, "Apple silicon GPU (MPS)", 0)), details);
    }

    /** Whether this macOS runs bfloat16 on MPS. */
    boolean bf16() {
        return macosMajor(osVersion) >= BF16_MACOS;
    }

    static int macosMajor(String version) {
        Matcher m = Pattern.compile("^(\\d+)").matcher(version);
        return m.find() ? Integer.parseInt(m.group(1)) : 0;
    }

    @Override
    public TorchEnvironment setupEnvironment(SetupRequest request) {
        if (request.device().index().isPresent() && request.device().index().getAsInt() != 0) {
            throw new UserInputException("device '" + request.device() + "' does not exist: the mps backend has one"
                    + " device, mps:0");
        }
        if (request.threads().isPresent() && request.threads().getAsInt() < 1) {
            throw new UserInputException("--threads must be at least 1, got " + request.threads().getAsInt());
        }
        return new TorchEnvironment(request.device(), LibtorchBuild.DEFAULT, "mps", request.threads());
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        return switch (checkpointDtype) {
            case F16 -> DType.F16;
            case BF16 -> bf16() ? DType.BF16 : DType.F16;
            default -> DType.F32;
        };
    }

    @Override
    protected List<DType> dtypeCandidates(TorchEnvironment environment, DType chosen) {
        return DtypeFallback.candidates(chosen, bf16());
    }

    @Override
    public Optional<String> trainingUnsupported(TrainingMethod method) {
        return method == TrainingMethod.QLORA ? Optional.of(QLORA_REFUSED) : Optional.empty();
    }

    @Override
    protected OptionalInt batchSizeSearchCap(TorchModel model) {
        return OptionalInt.of(MAX_BATCH_SIZE);
    }

    @Override
    protected void releaseCachedMemory(TorchModel model) {
        hooks().emptyCache();
    }

    @Override
    public TorchModel shard(TorchEnvironment environment, ShardRequest request) {
        environment.activate();
        if (!torch.hasMPS()) {
            throw new UserInputException("libtorch for macOS is loaded but finds no MPS device (macOS "
                    + osVersion + "; MPS needs macOS 12.3 or newer on Apple silicon)");
        }
        return super.shard(environment, request);
    }

    @Override
    public String emptyCache(TorchEnvironment environment) {
        if (TorchRuntime.loadedBuild().isEmpty()) {
            return "mps: nothing cached (no model has been loaded)";
        }
        MPSHooksInterface hooks = hooks();
        long before = hooks.getDriverAllocatedMemory();
        hooks.emptyCache();
        long after = hooks.getDriverAllocatedMemory();
        return String.format(Locale.ROOT, "mps: %.2f GiB returned to Metal (%.2f GiB still allocated by tensors)",
                Math.max(0, before - after) / (double) (1L << 30), hooks.getCurrentAllocatedMemory() / (double) (1L << 30));
    }

    @Override
    public Map<String, String> runtimeDetails(TorchEnvironment environment) {
        Map<String, String> details = new LinkedHashMap<>(super.runtimeDetails(environment));
        details.put("mps", torch.hasMPS() ? "available" : "not available");
        if (torch.hasMPS()) {
            details.put("recommended max memory", String.format(Locale.ROOT, "%.2f GiB",
                    hooks().getRecommendedMaxMemory() / (double) (1L << 30)));
        }
        return details;
    }

    private static MPSHooksInterface hooks() {
        return torch.getMPSHooks();
    }
}
