package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;

/**
 * A description of devices to compile for, with none present ({@code PJRT_TopologyDescription}). What
 * {@link #compile} returns is owned by this topology too: closing the topology destroys executables left open.
 */
public final class PjrtTopology extends NativeHandle {
    private final PjrtApi api;

    PjrtTopology(PjrtApi api, MemorySegment handle) {
        super(handle, null);
        this.api = api;
    }

    /** e.g. {@code tpu}. */
    public String platformName() {
        return api.queryString(Slot.TOPOLOGY_PLATFORM_NAME, "topology", handle(), "platform_name");
    }

    public String platformVersion() {
        return api.queryString(Slot.TOPOLOGY_PLATFORM_VERSION, "topology", handle(), "platform_version");
    }

    public List<DeviceDescription> devices() {
        List<DeviceDescription> out = new ArrayList<>();
        for (MemorySegment description : api.queryPointers(Slot.TOPOLOGY_GET_DEVICE_DESCRIPTIONS, "topology", handle(),
                "descriptions", "num_descriptions")) {
            out.add(PjrtDevice.describe(api, description));
        }
        return out;
    }

    /** {@code PJRT_Compile}: StableHLO text compiled for this topology, no client and no device needed. */
    public PjrtExecutable compile(String stablehlo, CompileOptions options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = api.call(arena, Slot.COMPILE, a -> {
                Slot.COMPILE.args.set(a, "topology", handle());
                PjrtExecutable.setProgram(arena, Slot.COMPILE.args, a, stablehlo, options);
            });
            return new PjrtExecutable(api, Slot.COMPILE.args.getAddress(args, "executable"), this);
        }
    }

    @Override
    void destroy(MemorySegment handle) {
        api.destroy(Slot.TOPOLOGY_DESTROY, "topology", handle);
    }
}
