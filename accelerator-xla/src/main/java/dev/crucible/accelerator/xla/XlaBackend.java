package dev.crucible.accelerator.xla;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DType;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * TPUs, and any other PJRT device, through the PJRT C API (java.lang.foreign, no libtorch).
 *
 * <p>Detection finds a plugin library and TPU chips on the PCI bus without opening either. This version
 * detects and explains; the StableHLO lowering of the model definition arrives with the XLA compute issue, so
 * a found plugin is still reported as unavailable, which keeps {@code --device auto} on a backend that runs.
 */
public class XlaBackend implements HardwareBackend {
    static final String ID = "xla";

    private final PjrtPluginLocator locator;

    public XlaBackend() {
        this(PjrtPluginLocator.system());
    }

    XlaBackend(PjrtPluginLocator locator) {
        this.locator = locator;
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
        return Probe.unavailable("PJRT plugin found (" + plugin.get().library() + "), but this version of the xla backend "
                + "does not run models yet", details);
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
    public void setupEnvironment(SetupRequest request) {
        throw new UserInputException("the xla backend cannot run models in this version: " + request.probe().reason());
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        // TPUs compute in bf16; f32 weights are narrowed there (the lesson of the torch_xla runs).
        return DType.BF16;
    }

    @Override
    public String emptyCache() {
        return "xla: nothing allocated";
    }
}
