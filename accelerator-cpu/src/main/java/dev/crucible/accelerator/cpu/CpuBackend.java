package dev.crucible.accelerator.cpu;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelCost;
import dev.crucible.accelerator.cpu.kernels.MachineCode;
import dev.crucible.accelerator.cpu.kernels.VectorKernels;
import dev.crucible.torch.HostKernels;
import dev.crucible.torch.TorchBackend;
import dev.crucible.torch.TorchEnvironment;
import dev.crucible.torch.TorchModel;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The CPU backend: always available, runs the model definition on the CPU build of libtorch.
 *
 * <p>Policies: one compute thread per available processor unless {@code --threads} or
 * {@code CRUCIBLE_THREADS} says otherwise, working inside each op, or for a small model each on a batch of its own
 * ({@link #batchWorkers}); bfloat16 only where the CPU has bf16 dot products in hardware
 * (elsewhere libtorch emulates them and is slower and no more accurate than float32).
 *
 * <p>Decode steps run on this backend's own {@link VectorKernels} where they are faster than libtorch's
 * (matrix-vector products at memory bandwidth), when the Vector API module can be loaded ({@link VectorApiModule});
 * {@code CRUCIBLE_CPU_KERNELS=libtorch} turns them off (for comparisons), and without the module libtorch runs
 * everything. Where the CPU has AVX512-BF16, one-row bfloat16 products run on {@link MachineCode} instead
 * ({@code CRUCIBLE_CPU_KERNELS=vector} keeps them on the Vector API).
 */
public class CpuBackend extends TorchBackend<TorchEnvironment> {
    static final String ID = "cpu";

    static final String KERNELS_VARIABLE = "CRUCIBLE_CPU_KERNELS";
    /** Below this many parameters a model's batches run side by side, one thread each ({@link #batchWorkers}). */
    static final long SMALL_MODEL_PARAMETERS = 20_000_000;

    private final CpuFeatures features;
    private final String kernelChoice;

    public CpuBackend() {
        this(CpuFeatures.probe());
    }

    CpuBackend(CpuFeatures features) {
        this(features, System.getenv(KERNELS_VARIABLE));
    }

    /**
     * @param kernelChoice {@code libtorch} for libtorch's kernels alone, {@code vector} for ours in Java alone, null
     *                     or {@code native} for ours with machine code where the CPU has the instructions for it
     */
    CpuBackend(CpuFeatures features, String kernelChoice) {
        this.features = features;
        this.kernelChoice = kernelChoice == null ? "native" : kernelChoice.strip().toLowerCase(java.util.Locale.ROOT);
    }

    /** The machine code mapped once per backend, on first use (never at detection). */
    private MachineCode.Availability machineCode;

    private synchronized MachineCode.Availability machineCode() {
        if (machineCode == null) {
            machineCode = MachineCode.load(features.flags());
            if (!machineCode.available() && MachineCode.unsupported(features.flags()) == null) {
                // The CPU can run it but the system would not map it (e.g. SELinux denying executable memory):
                // doctor, which only reads the CPU's flags, said it would be used, so say once that it is not.
                System.err.println("warning: cpu: no machine-code kernels (" + machineCode.reason()
                        + "); the Vector API kernels run instead");
            }
        }
        return machineCode;
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
        details.put("threads", Integer.toString(defaultThreads()));
        details.put("kernels", kernelsInUse());
        details.put("quantized", quantizedKernels());
        long memory = features.memoryBytes().orElse(0);
        return Probe.available(reason, List.of(DeviceInfo.of(0, features.modelName(), memory)), details);
    }

    @Override
    public TorchEnvironment setupEnvironment(SetupRequest request) {
        if (request.device().index().isPresent() && request.device().index().getAsInt() != 0) {
            throw new UserInputException("device '" + request.device() + "' does not exist: the cpu backend has one device, cpu:0");
        }
        int requested = request.threads().orElse(defaultThreads());
        if (requested < 1) {
            throw new UserInputException("--threads must be at least 1, got " + requested);
        }
        if (!List.of("native", "vector", "libtorch").contains(kernelChoice)) {
            throw new UserInputException(KERNELS_VARIABLE + " must be 'native', 'vector' or 'libtorch', got '"
                    + kernelChoice + "'");
        }
        return new TorchEnvironment(request.device(), "cpu", OptionalInt.of(requested));
    }

    /** One line saying which kernels decode steps run on, and why. */
    public String kernelsInUse() {
        if (kernelChoice.equals("libtorch")) {
            return "libtorch (" + KERNELS_VARIABLE + "=libtorch)";
        }
        if (!vectorApiLoaded()) {
            return "libtorch (" + VectorApiModule.availability().reason() + ")";
        }
        String machine = machineCodeUnsupported();
        return (machine == null
                ? (hasBf16() ? "machine code (AVX512-BF16 vdpbf16ps, AVX512-VNNI vpdpwssd) for bf16 products of up to 4 rows,"
                        : "machine code (AVX512-VNNI vpdpwssd; no AVX512-BF16, so bf16 weights widened in registers) for"
                                + " one-row bf16 products,")
                + " float32 products of up to 8 rows and one-row int8, int4 and nf4 decode products (float32,"
                + " bf16 and int8 ones read eight weight rows at a time where the input is "
                + (MachineCode.LONG_INPUT_BYTES >> 10) + " KiB or more, half the L1 data cache), vector"
                + " API kernels for the rest of"
                : "vector API kernels for") + " decode steps, libtorch for the rest"
                + (machine == null || kernelChoice.equals("vector") ? "" : " (no machine code: " + machine + ")");
    }

    /** Whether the machine code's bfloat16 kernels can run here (AVX512-BF16), without mapping it. */
    private boolean hasBf16() {
        return features.flags().contains(MachineCode.BF16_FLAG);
    }

    /** Why the machine code is not used (null when it is), without mapping it. */
    private String machineCodeUnsupported() {
        if (kernelChoice.equals("vector")) {
            return KERNELS_VARIABLE + "=vector";
        }
        return MachineCode.unsupported(features.flags());
    }

    /**
     * One line saying what products with quantized weights run on: ours for decode-sized int8/int4 products (one-row
     * symmetric ones in machine code where the CPU can run it). The int8 machine code meets the input rounded to
     * 16-bit integers (VNNI vpdpwssd), whose error is far below the codes' own; VNNI's 8-bit products (vpdpbusd)
     * would need the input rounded to 8 bits, as llama.cpp does, a loss of accuracy the dequantized reference does
     * not have, and the 16-bit product already runs at the speed of the read.
     */
    public String quantizedKernels() {
        if (kernelChoice.equals("libtorch") || !vectorApiLoaded()) {
            return "int8/int4 dequantized by libtorch ops for each product; nf4 dequantized by libtorch ops for each product";
        }
        boolean machine = kernelChoice.equals("native") && MachineCode.unsupported(features.flags()) == null;
        return (machine ? "one-row symmetric int8 (16-bit integer input, VNNI) and int4 products in machine code,"
                + " the rest of " : "")
                + "int8/int4 products of up to 8 rows on the vector API kernels (codes widen to float32), "
                + "longer ones dequantized by them for libtorch's GEMM; nf4 "
                + (machine ? "products of up to 8 rows in machine code, the rest " : "")
                + "dequantized by libtorch ops for each product";
    }

    /**
     * Every thread on its own batch for a small model, else 1 (the threads work inside each op). A small model's ops
     * are too small to split: on the 850 k-parameter demo model an abliteration trial took 8.6 s with two threads
     * inside each op and 5.7 s with one (the difference being hand-offs around every op), while two batches side by
     * side, one thread each, use both cores with no hand-off at all.
     */
    @Override
    protected int batchWorkers(TorchEnvironment environment, ModelConfig config) {
        return small(config) ? threads(environment) : 1;
    }

    /**
     * A small model's trial edits are folded into copies of the weights they edit: each op of a small model costs
     * more in its call than in its arithmetic, and an edit's adapter is three ops per projection (24 of the demo
     * model's ~140 per decode step), the folded weight none. A large model keeps its adapters: its ops are bound by
     * reading the weights, which folding does not change, and the copies would cost a quarter of its memory.
     */
    @Override
    protected boolean foldsAdapters(ModelConfig config) {
        return small(config);
    }

    /** Whether a model is below {@link #SMALL_MODEL_PARAMETERS}: batches side by side, a fixed batch size. */
    private static boolean small(ModelConfig config) {
        return ModelCost.of(config, DType.F32).parameters() < SMALL_MODEL_PARAMETERS;
    }

    /**
     * A model of {@link #SMALL_MODEL_PARAMETERS} or more measures its batch size (1, 2, 4, ... up to this) on its
     * first request of each kind, as the GPU backends do: products of up to 8 rows run in the bandwidth-bound
     * kernels, one pass over the weights per few rows, longer ones in libtorch's matrix product at the compute rate.
     * On a Qwen2.5-0.5B-shaped bf16 model, two threads: a decode step cost 16.9 ms per row at batch 8, 11.6 at 16,
     * 5.8 at 32 and 5.0 at 64 (`bench decode`), so the fixed 8 left a trial's generation three times slower than it
     * needed to be. Small models keep 8 rows, two batches side by side: their batches of 16 to 50 measured no faster,
     * and a fixed size keeps their runs bit for bit repeatable.
     */
    static final int LARGE_MODEL_BATCH_CAP = 64;

    @Override
    protected OptionalInt batchSizeSearchCap(TorchModel model) {
        return batchSizeSearchCap(model.runner().transformer().config());
    }

    /** {@link #LARGE_MODEL_BATCH_CAP} for a model of {@link #SMALL_MODEL_PARAMETERS} or more, else no search. */
    static OptionalInt batchSizeSearchCap(ModelConfig config) {
        return small(config) ? OptionalInt.empty() : OptionalInt.of(LARGE_MODEL_BATCH_CAP);
    }

    @Override
    protected HostKernels hostKernels(TorchEnvironment environment, int threadsPerCall, DType dtype) {
        if (kernelChoice.equals("libtorch") || !vectorApiLoaded()) {
            return null;
        }
        MachineCode machine = kernelChoice.equals("native") ? machineCode().code() : null;
        return new VectorKernels(threadsPerCall > 0 ? threadsPerCall : threads(environment), List.of(dtype), machine,
                features.nativeBf16());
    }

    private int threads(TorchEnvironment environment) {
        return environment.threads().orElse(defaultThreads());
    }

    /** Whether the Vector API module is loaded, without which the kernels' classes cannot load. */
    static boolean vectorApiLoaded() {
        return VectorApiModule.availability().loaded();
    }

    /** The compute threads {@link #setupEnvironment} chooses unless told otherwise: one per core. */
    public int defaultThreads() {
        return features.cores();
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
    public String emptyCache(TorchEnvironment environment) {
        return "cpu: nothing to free (host memory is returned to the allocator as tensors close)";
    }
}
