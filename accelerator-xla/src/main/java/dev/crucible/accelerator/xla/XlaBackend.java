package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.pjrt.ClientOptions;
import dev.crucible.accelerator.xla.pjrt.NamedValue;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.api.UserInputException;
import dev.crucible.accelerator.xla.exec.PjrtExecutor;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.api.backend.Ceilings;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.LoweringReport;
import dev.crucible.api.backend.LoweringRequest;
import dev.crucible.api.backend.ProgramLowering;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.DecodeRequest;
import dev.crucible.api.model.DecodeResult;
import dev.crucible.api.model.ForwardRequest;
import dev.crucible.api.model.ForwardResult;
import dev.crucible.api.model.ShardRequest;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.OptionalLong;
import java.util.ServiceLoader;
import java.util.stream.Collectors;

/**
 * TPUs, and any other PJRT device, through the PJRT C API (java.lang.foreign, no libtorch): the one model definition
 * traced into StableHLO programs ({@link dev.crucible.accelerator.xla.lower.XlaOps}), compiled once per shape and run on the device, the KV cache kept
 * there between decode steps.
 *
 * <p>Detection finds a plugin library and the devices it would drive on the PCI bus without opening either (TPU
 * chips for libtpu, NVIDIA GPUs for the JAX CUDA plugin); the plugin is loaded and its client made when the first
 * model is placed. libtpu without a chip compiles for a TPU topology ({@code runner lower}) but runs nothing, so it is
 * reported as unavailable, which keeps {@code --device auto} on a backend that runs. {@code CRUCIBLE_XLA_RUNTIME}
 * names another {@link XlaRuntime} to run the programs on instead (the test tree's jaxlib CPU client).
 */
public class XlaBackend implements HardwareBackend<XlaEnvironment, XlaModel>, ProgramLowering {
    static final String ID = "xla";
    /**
     * libtpu without a chip: no metadata server to ask; the accelerator and workers it would read from one (or warn
     * about on stderr, over every runner lower; v2-8 on this host is what its default topology describes anyway); and
     * no machine-wide lock (/tmp/libtpu_lockfile), which guards a chip and would keep a second compile-only process
     * from starting.
     */
    private static final Map<String, String> CHIPLESS_TPU_ENVIRONMENT = Map.of("TPU_SKIP_MDS_QUERY", "1",
            "TPU_ACCELERATOR_TYPE", "v2-8", "TPU_WORKER_HOSTNAMES", "localhost", "ALLOW_MULTIPLE_LIBTPU_LOAD", "1");

    private final PjrtPluginLocator locator;
    private final Map<String, String> env;

    public XlaBackend() {
        this(PjrtPluginLocator.system(), System.getenv());
    }

    XlaBackend(PjrtPluginLocator locator, Map<String, String> env) {
        this.locator = locator;
        this.env = env;
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
        return 50;
    }

    @Override
    public Probe detect() {
        Optional<XlaRuntime> runtime = runtime();
        if (runtime.isPresent()) {
            return runtime.get().detect();
        }
        List<String> problems = new ArrayList<>();
        Optional<PjrtPluginLocator.Plugin> plugin = locator.findPlugin(problems);
        List<PjrtPluginLocator.TpuChip> chips = locator.findTpuChips();
        Map<String, String> details = new LinkedHashMap<>();
        if (!chips.isEmpty()) {
            details.put("tpu_chips", chips.size() + " x " + chips.getFirst().generation());
        }
        problems.forEach(p -> details.put("problem", p));
        if (plugin.isEmpty()) {
            String missing = problems.isEmpty() ? "" : " (" + String.join("; ", problems) + ")";
            if (!chips.isEmpty()) {
                return Probe.unavailable("a " + chips.getFirst().generation() + " PCI device is present but libtpu is missing: "
                        + "pip install libtpu or set TPU_LIBRARY_PATH" + missing, details);
            }
            return Probe.unavailable("no PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH or TPU_LIBRARY_PATH" + missing, details);
        }
        PjrtPluginLocator.Plugin found = plugin.get();
        details.put("plugin", found.library().toString());
        details.put("plugin_source", found.source());
        details.put("platform", isTpu(found, chips) ? "tpu" : "other PJRT device");
        clientOptions(details);
        if (found.tpu()) {
            if (chips.isEmpty()) {
                // libtpu can compile for a TPU topology without a chip (runner lower), but nothing here can run.
                return Probe.unavailable("libtpu found, no TPU chip: compile-only", details);
            }
            List<DeviceInfo> devices = new ArrayList<>();
            for (int i = 0; i < chips.size(); i++) {
                devices.add(new DeviceInfo(i, chips.get(i).generation(), OptionalLong.empty()));
            }
            return Probe.available("libtpu, " + chips.size() + " x " + chips.getFirst().generation(), devices, details);
        }
        if (found.source().startsWith("jax-cuda")) {
            int gpus = locator.countNvidiaGpus();
            if (gpus == 0) {
                return Probe.unavailable("the JAX CUDA PJRT plugin is installed (" + found.library()
                        + ") but no NVIDIA GPU is on the PCI bus", details);
            }
            List<DeviceInfo> devices = new ArrayList<>();
            for (int i = 0; i < gpus; i++) {
                devices.add(new DeviceInfo(i, "NVIDIA GPU", OptionalLong.empty()));
            }
            return Probe.available("JAX CUDA PJRT plugin, " + gpus + " NVIDIA GPU" + (gpus == 1 ? "" : "s"), devices,
                    details);
        }
        // A plugin the user named: its devices are known once it is loaded.
        return Probe.available("PJRT plugin " + found.library().getFileName() + " (" + found.source() + ")", List.of(),
                details);
    }

    /** The runtime {@code CRUCIBLE_XLA_RUNTIME} names, if it names one; an unknown name is reported by detection. */
    private Optional<XlaRuntime> runtime() {
        String name = System.getProperty("crucible.xla.runtime", env.getOrDefault("CRUCIBLE_XLA_RUNTIME", ""));
        if (name.isBlank() || name.equals("pjrt")) {
            return Optional.empty();
        }
        List<String> known = new ArrayList<>(List.of("pjrt"));
        for (XlaRuntime runtime : ServiceLoader.load(XlaRuntime.class, XlaBackend.class.getClassLoader())) {
            if (runtime.name().equals(name)) {
                return Optional.of(runtime);
            }
            known.add(runtime.name());
        }
        return Optional.of(new UnknownRuntime(name, known));
    }

    /** Detection says what is wrong with a runtime name that matches nothing; it never starts. */
    private record UnknownRuntime(String name, List<String> known) implements XlaRuntime {
        @Override
        public Probe detect() {
            return Probe.unavailable("CRUCIBLE_XLA_RUNTIME=" + name + " names no runtime (known: "
                    + String.join(", ", known) + ")");
        }

        @Override
        public XlaExecutor open() {
            throw new UserInputException(detect().reason());
        }
    }

    /** CRUCIBLE_PJRT_OPTIONS as the client will get them, or why they cannot be read (detection never throws). */
    private void clientOptions(Map<String, String> details) {
        try {
            List<NamedValue> options = ClientOptions.fromEnvironment(env);
            if (!options.isEmpty()) {
                details.put("client_options", options.stream().map(o -> o.name() + "=" + o.valueText())
                        .collect(Collectors.joining(";")));
            }
        } catch (UserInputException e) {
            details.put("problem", e.getMessage());
        }
    }

    /**
     * Loads the plugin {@code probe} found, for set-up and lowering (detection never loads anything). Without a TPU
     * chip libtpu is told to skip its cloud metadata query, which would otherwise wait on a server that is not there.
     */
    public static PjrtPlugin loadPlugin(Probe probe) {
        String library = probe.details().get("plugin");
        if (library == null) {
            throw new UserInputException("no PJRT plugin to load: " + probe.reason());
        }
        boolean chipless = "tpu".equals(probe.details().get("platform")) && !probe.details().containsKey("tpu_chips");
        return PjrtPlugin.load(Path.of(library), chipless ? CHIPLESS_TPU_ENVIRONMENT : Map.of());
    }

    private static boolean isTpu(PjrtPluginLocator.Plugin plugin, List<PjrtPluginLocator.TpuChip> chips) {
        return plugin.tpu() || !chips.isEmpty();
    }

    /** {@code --device tpu} selects this backend only when the PJRT device is a TPU. */
    @Override
    public boolean answersTo(String name, Probe probe) {
        return name.equals("tpu") && "tpu".equals(probe.details().get("platform"));
    }

    /**
     * Chooses the runtime and how models are split ({@code --xla-devices}, {@code --strategy}); nothing is loaded
     * until a model is placed. A PJRT plugin is loaded then, with the client options of {@code CRUCIBLE_PJRT_OPTIONS}.
     */
    @Override
    public XlaEnvironment setupEnvironment(SetupRequest request) {
        Optional<XlaRuntime> runtime = runtime();
        Probe probe = request.probe();
        return XlaEnvironment.of(request.device(), runtime.isPresent() ? runtime.get()::open
                : () -> PjrtExecutor.open(loadPlugin(probe), ClientOptions.fromEnvironment(env)));
    }

    @Override
    public XlaModel shard(XlaEnvironment environment, ShardRequest request) {
        return XlaModel.place(environment, request, System.err);
    }

    @Override
    public ForwardResult forward(XlaModel model, ForwardRequest request) {
        return model.forward(request);
    }

    @Override
    public DecodeResult decode(XlaModel model, DecodeRequest request) {
        return model.decode(request);
    }

    @Override
    public Ceilings measureCeilings(XlaModel model, Duration budget) {
        return model.measureCeilings(budget);
    }

    @Override
    public Map<String, String> runtimeDetails(XlaEnvironment environment) {
        XlaExecutor executor = environment.executor();
        Map<String, String> details = new LinkedHashMap<>();
        details.put("platform", executor.platform());
        details.put("devices", Integer.toString(executor.deviceCount()));
        executor.deviceMemory(0).ifPresent(bytes -> details.put("device_memory_bytes", Long.toString(bytes)));
        details.put("strategy", environment.strategy());
        return details;
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        // TPUs compute in bf16; f32 weights are narrowed there (the lesson of the torch_xla runs).
        return DType.BF16;
    }

    /** {@code runner lower}: see {@link XlaLowering}. */
    @Override
    public LoweringReport lower(LoweringRequest request, Probe probe) {
        return XlaLowering.lower(request, probe);
    }

    /** Device arrays belong to their model and are freed with it; compiled programs stay for the next request. */
    @Override
    public String emptyCache(XlaEnvironment environment) {
        return "xla: nothing to free (device memory is released with each model; compiled programs are kept)";
    }
}
