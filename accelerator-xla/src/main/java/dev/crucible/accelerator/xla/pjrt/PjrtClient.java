package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.model.DType;
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
        try (Arena arena = Arena.ofConfined()) {
            Struct all = Slot.CLIENT_DEVICES.args;
            MemorySegment found = api.call(arena, Slot.CLIENT_DEVICES, a -> all.set(a, "client", handle));
            for (MemorySegment device : PjrtApi.pointers(all.getAddress(found, "devices"), all.getLong(found, "num_devices"))) {
                devices.put(device.address(), new PjrtDevice(api, this, device));
            }
            Struct mine = Slot.CLIENT_ADDRESSABLE_DEVICES.args;
            MemorySegment local = api.call(arena, Slot.CLIENT_ADDRESSABLE_DEVICES, a -> mine.set(a, "client", handle));
            for (MemorySegment device : PjrtApi.pointers(mine.getAddress(local, "addressable_devices"),
                    mine.getLong(local, "num_addressable_devices"))) {
                addressable.add(device(device));
            }
        } catch (RuntimeException e) {
            close();
            throw e;
        }
    }

    /** e.g. {@code tpu}, {@code cuda}. */
    public String platformName() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.CLIENT_PLATFORM_NAME.args;
            MemorySegment args = api.call(arena, Slot.CLIENT_PLATFORM_NAME, a -> s.set(a, "client", handle()));
            return PjrtApi.string(s.getAddress(args, "platform_name"), s.getLong(args, "platform_name_size"));
        }
    }

    public String platformVersion() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.CLIENT_PLATFORM_VERSION.args;
            MemorySegment args = api.call(arena, Slot.CLIENT_PLATFORM_VERSION, a -> s.set(a, "client", handle()));
            return PjrtApi.string(s.getAddress(args, "platform_version"), s.getLong(args, "platform_version_size"));
        }
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
            MemorySegment program = PjrtExecutable.program(arena, stablehlo);
            byte[] proto = options.toProto();
            MemorySegment protoSegment = PjrtApi.bytes(arena, proto);
            Struct s = Slot.CLIENT_COMPILE.args;
            MemorySegment args = api.call(arena, Slot.CLIENT_COMPILE, a -> {
                s.set(a, "client", handle());
                s.set(a, "program", program);
                s.set(a, "compile_options", protoSegment);
                s.set(a, "compile_options_size", proto.length);
            });
            return new PjrtLoadedExecutable(api, this, s.getAddress(args, "executable"));
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
        try (Arena arena = Arena.ofConfined()) {
            api.call(arena, Slot.CLIENT_DESTROY, a -> Slot.CLIENT_DESTROY.args.set(a, "client", handle));
        }
    }
}
