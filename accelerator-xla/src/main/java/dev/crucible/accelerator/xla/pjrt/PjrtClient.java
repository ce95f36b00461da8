package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * A PJRT client: the devices of this process and what runs on them. Buffers and executables it makes are its
 * children (see {@link NativeHandle}): their holders close them, and closing the client closes what is left.
 */
public final class PjrtClient extends NativeHandle {
    /** {@code PJRT_HostBufferSemantics_kImmutableUntilTransferCompletes}: we wait for the copy, then free the host data. */
    private static final int IMMUTABLE_UNTIL_TRANSFER_COMPLETES = 1;

    private final PjrtApi api;
    private final Map<Long, PjrtDevice> devices = new LinkedHashMap<>();
    private final List<PjrtDevice> addressable = new ArrayList<>();

    PjrtClient(PjrtApi api, MemorySegment handle) {
        super(handle, null);
        this.api = api;
        try {
            for (MemorySegment device : api.queryPointers(Slot.CLIENT_DEVICES, "client", handle, "devices", "num_devices")) {
                devices.put(device.address(), new PjrtDevice(api, this, device));
            }
            for (MemorySegment device : api.queryPointers(Slot.CLIENT_ADDRESSABLE_DEVICES, "client", handle,
                    "addressable_devices", "num_addressable_devices")) {
                addressable.add(device(device));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** e.g. {@code tpu}, {@code cuda}. */
    public String platformName() {
        return api.queryString(Slot.CLIENT_PLATFORM_NAME, "client", handle(), "platform_name");
    }

    public String platformVersion() {
        return api.queryString(Slot.CLIENT_PLATFORM_VERSION, "client", handle(), "platform_version");
    }

    /** Every device the runtime sees, addressable or not. */
    public List<PjrtDevice> devices() {
        return List.copyOf(devices.values());
    }

    /** The devices this process can run on, in the order executions take their argument lists. */
    public List<PjrtDevice> addressableDevices() {
        return List.copyOf(addressable);
    }

    /** {@code PJRT_Client_Compile}: StableHLO text compiled and loaded onto this client's devices. */
    public PjrtLoadedExecutable compile(String stablehlo, CompileOptions options) {
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = api.call(arena, Slot.CLIENT_COMPILE, a -> {
                Slot.CLIENT_COMPILE.args.set(a, "client", handle());
                PjrtExecutable.setProgram(arena, Slot.CLIENT_COMPILE.args, a, stablehlo, options);
            });
            return new PjrtLoadedExecutable(api, this, Slot.CLIENT_COMPILE.args.getAddress(args, "executable"));
        }
    }

    /**
     * {@code PJRT_Executable_DeserializeAndLoad}: an executable {@link PjrtExecutable#serialize} wrote (by the same
     * plugin version), loaded onto this client's devices with the compile options it was compiled with.
     */
    public PjrtLoadedExecutable deserialize(byte[] serialized) {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.EXECUTABLE_DESERIALIZE_AND_LOAD.args;
            MemorySegment args = api.call(arena, Slot.EXECUTABLE_DESERIALIZE_AND_LOAD, a -> {
                s.set(a, "client", handle());
                s.set(a, "serialized_executable", PjrtApi.bytes(arena, serialized));
                s.set(a, "serialized_executable_size", serialized.length);
            });
            return new PjrtLoadedExecutable(api, this, s.getAddress(args, "loaded_executable"));
        }
    }

    /**
     * Copies a dense row-major host array onto {@code device} and waits until the plugin no longer needs the host
     * bytes, so {@code data} may be freed or changed as soon as this returns.
     */
    public PjrtBuffer upload(MemorySegment data, DType dtype, long[] shape, PjrtDevice device) {
        long bytes = PjrtBuffer.byteSize(dtype, shape);
        if (data.byteSize() != bytes) {
            throw new IllegalArgumentException(dtype + java.util.Arrays.toString(shape) + " takes " + bytes
                    + " bytes, got " + data.byteSize());
        }
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment source = data.isNative() ? data : arena.allocate(Math.max(1, bytes), 8).copyFrom(data);
            MemorySegment dims = arena.allocate(ValueLayout.JAVA_LONG, Math.max(1, shape.length));
            for (int i = 0; i < shape.length; i++) {
                dims.setAtIndex(ValueLayout.JAVA_LONG, i, shape[i]);
            }
            Struct s = Slot.CLIENT_BUFFER_FROM_HOST_BUFFER.args;
            MemorySegment args = api.call(arena, Slot.CLIENT_BUFFER_FROM_HOST_BUFFER, a -> {
                s.set(a, "client", handle());
                s.set(a, "data", source);
                s.set(a, "type", ElementTypes.code(dtype));
                s.set(a, "dims", dims);
                s.set(a, "num_dims", shape.length);
                s.set(a, "host_buffer_semantics", IMMUTABLE_UNTIL_TRANSFER_COMPLETES);
                s.set(a, "device", device.handle());
            });
            PjrtBuffer buffer = new PjrtBuffer(api, this, s.getAddress(args, "buffer"));
            try {
                api.awaitAndDestroy(Slot.CLIENT_BUFFER_FROM_HOST_BUFFER.functionName(),
                        s.getAddress(args, "done_with_host_buffer"));
            } catch (RuntimeException e) {
                buffer.close();
                throw e;
            }
            return buffer;
        }
    }

    /** The device object for a pointer the plugin returned. */
    PjrtDevice device(MemorySegment pointer) {
        PjrtDevice device = devices.get(pointer.address());
        if (device == null) {
            throw new IllegalStateException("the plugin returned a device that PJRT_Client_Devices did not list");
        }
        return device;
    }

    @Override
    void destroy(MemorySegment handle) {
        api.destroy(Slot.CLIENT_DESTROY, "client", handle);
    }
}
