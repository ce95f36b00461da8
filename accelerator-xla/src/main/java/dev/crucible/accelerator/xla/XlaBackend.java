package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.pjrt.ClientOptions;
import dev.crucible.accelerator.xla.pjrt.NamedValue;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.LoweringReport;
import dev.crucible.api.backend.LoweringRequest;
import dev.crucible.api.backend.ProgramLowering;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.model.DeviceModel;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.stream.Collectors;

/**
 * TPUs, and any other PJRT device, through the PJRT C API (java.lang.foreign, no libtorch).
 *
 * <p>Detection finds a plugin library and TPU chips on the PCI bus without opening either (the bridge in
 * {@code pjrt} loads a plugin only in set-up and lowering). The PJRT bridge and executor exist; the StableHLO
 * lowering of the model definition arrives with the XLA compute issue, so a found plugin is still reported as
 * unavailable for running models, which keeps {@code --device auto} on a backend that runs.
 */
public class XlaBackend implements HardwareBackend<BackendEnvironment, DeviceModel>, ProgramLowering {
    static final String ID = "xla";
    private static final Map<String, String> CHIPLESS_TPU_ENVIRONMENT = Map.of("TPU_SKIP_MDS_QUERY", "1",
            "TPU_ACCELERATOR_TYPE", "v2-8", "TPU_WORKER_HOSTNAMES", "localhost");

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
        details.put("plugin", plugin.get().library().toString());
        details.put("plugin_source", plugin.get().source());
        details.put("platform", isTpu(plugin.get(), chips) ? "tpu" : "other PJRT device");
        clientOptions(details);
        if (plugin.get().tpu() && chips.isEmpty()) {
            // libtpu can compile for a TPU topology without a chip (runner lower), but nothing here can run.
            return Probe.unavailable("libtpu found, no TPU chip: compile-only", details);
        }
        return Probe.unavailable("PJRT plugin found (" + plugin.get().library() + "), but this version of the xla backend "
                + "does not run models yet", details);
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
        // Without a chip libtpu has no metadata to read its accelerator and workers from and says so on stderr,
        // over every runner lower; v2-8 on this host is what its default topology describes anyway.
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

    @Override
    public BackendEnvironment setupEnvironment(SetupRequest request) {
        throw new UserInputException("the xla backend cannot run models in this version: " + request.probe().reason());
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

    @Override
    public String emptyCache(BackendEnvironment environment) {
        return "xla: nothing allocated";
    }
}
