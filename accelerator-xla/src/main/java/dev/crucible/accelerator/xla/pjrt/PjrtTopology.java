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
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.TOPOLOGY_PLATFORM_NAME.args;
            MemorySegment args = api.call(arena, Slot.TOPOLOGY_PLATFORM_NAME, a -> s.set(a, "topology", handle()));
            return PjrtApi.string(s.getAddress(args, "platform_name"), s.getLong(args, "platform_name_size"));
        }
    }

    public String platformVersion() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.TOPOLOGY_PLATFORM_VERSION.args;
            MemorySegment args = api.call(arena, Slot.TOPOLOGY_PLATFORM_VERSION, a -> s.set(a, "topology", handle()));
            return PjrtApi.string(s.getAddress(args, "platform_version"), s.getLong(args, "platform_version_size"));
        }
    }

    public List<DeviceDescription> devices() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.TOPOLOGY_GET_DEVICE_DESCRIPTIONS.args;
            MemorySegment args = api.call(arena, Slot.TOPOLOGY_GET_DEVICE_DESCRIPTIONS, a -> s.set(a, "topology", handle()));
            List<DeviceDescription> out = new ArrayList<>();
            for (MemorySegment description : PjrtApi.pointers(s.getAddress(args, "descriptions"),
                    s.getLong(args, "num_descriptions"))) {
                out.add(PjrtDevice.describe(api, description));
            }
            return out;
        }
    }

    /** {@code PJRT_Compile}: StableHLO text compiled for this topology, no client and no device needed. */
    public PjrtExecutable compile(String stablehlo, CompileOptions options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment program = PjrtExecutable.program(arena, stablehlo);
            byte[] proto = options.toProto();
            MemorySegment protoSegment = PjrtApi.bytes(arena, proto);
            Struct s = Slot.COMPILE.args;
            MemorySegment args = api.call(arena, Slot.COMPILE, a -> {
                s.set(a, "topology", handle());
                s.set(a, "program", program);
                s.set(a, "compile_options", protoSegment);
                s.set(a, "compile_options_size", proto.length);
            });
            return new PjrtExecutable(api, s.getAddress(args, "executable"), this);
        }
    }

    @Override
    void destroy(MemorySegment handle) {
        try (Arena arena = Arena.ofConfined()) {
            api.call(arena, Slot.TOPOLOGY_DESTROY, a -> Slot.TOPOLOGY_DESTROY.args.set(a, "topology", handle));
        }
    }
}
