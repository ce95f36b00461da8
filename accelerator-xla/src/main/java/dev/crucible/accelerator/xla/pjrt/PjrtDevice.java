package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * A device of a client ({@code PJRT_Device}). The client owns it: every call checks that the client is still open,
 * so a device kept past its client fails in Java instead of reading freed memory.
 */
public final class PjrtDevice {
    /** A memory space a device can address, e.g. {@code device} (HBM) or {@code pinned_host}. */
    public record Memory(int id, String kind) { }

    private final PjrtApi api;
    private final PjrtClient client;
    private final MemorySegment handle;
    private final DeviceDescription description;
    private final int localHardwareId;
    private final boolean addressable;

    PjrtDevice(PjrtApi api, PjrtClient client, MemorySegment handle) {
        this.api = api;
        this.client = client;
        this.handle = handle;
        Struct d = Slot.DEVICE_GET_DESCRIPTION.args;
        try (Arena arena = Arena.ofConfined()) {
            this.description = describe(api, d.getAddress(api.call(arena, Slot.DEVICE_GET_DESCRIPTION,
                    a -> d.set(a, "device", handle)), "device_description"));
        }
        this.localHardwareId = Math.toIntExact(api.queryLong(Slot.DEVICE_LOCAL_HARDWARE_ID, "device", handle,
                "local_hardware_id"));
        this.addressable = api.queryLong(Slot.DEVICE_IS_ADDRESSABLE, "device", handle, "is_addressable") != 0;
    }

    static DeviceDescription describe(PjrtApi api, MemorySegment description) {
        int id = Math.toIntExact(api.queryLong(Slot.DEVICE_DESCRIPTION_ID, "device_description", description, "id"));
        return new DeviceDescription(id, api.queryString(Slot.DEVICE_DESCRIPTION_KIND, "device_description", description,
                "device_kind"));
    }

    public int id() {
        return description.id();
    }

    public String kind() {
        return description.kind();
    }

    public DeviceDescription description() {
        return description;
    }

    public int localHardwareId() {
        return localHardwareId;
    }

    public boolean addressable() {
        return addressable;
    }

    /** The memory spaces this device can address. */
    public List<Memory> memories() {
        List<Memory> out = new ArrayList<>();
        for (MemorySegment memory : api.queryPointers(Slot.DEVICE_ADDRESSABLE_MEMORIES, "device", handle(), "memories",
                "num_memories")) {
            out.add(new Memory(Math.toIntExact(api.queryLong(Slot.MEMORY_ID, "memory", memory, "id")),
                    api.queryString(Slot.MEMORY_KIND, "memory", memory, "kind")));
        }
        return out;
    }

    /** The allocator's figures, where the plugin keeps them (an UNIMPLEMENTED answer is empty). */
    public Optional<DeviceMemoryStats> memoryStats() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.DEVICE_MEMORY_STATS.args;
            MemorySegment args = api.call(arena, Slot.DEVICE_MEMORY_STATS, a -> s.set(a, "device", handle()));
            return Optional.of(new DeviceMemoryStats(s.getLong(args, "bytes_in_use"),
                    optional(s, args, "bytes_limit"), optional(s, args, "peak_bytes_in_use")));
        } catch (PjrtException e) {
            if (e.code() == PjrtException.UNIMPLEMENTED) {
                return Optional.empty();
            }
            throw e;
        }
    }

    private static OptionalLong optional(Struct s, MemorySegment args, String field) {
        return s.getBool(args, field + "_is_set") ? OptionalLong.of(s.getLong(args, field)) : OptionalLong.empty();
    }

    /** The PJRT pointer, valid while the client is open. */
    MemorySegment handle() {
        client.handle();
        return handle;
    }

    @Override
    public String toString() {
        return kind() + " #" + id();
    }
}
