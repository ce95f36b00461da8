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
        try (Arena arena = Arena.ofConfined()) {
            Struct d = Slot.DEVICE_GET_DESCRIPTION.args;
            MemorySegment args = api.call(arena, Slot.DEVICE_GET_DESCRIPTION, a -> d.set(a, "device", handle));
            this.description = describe(api, d.getAddress(args, "device_description"));
            Struct h = Slot.DEVICE_LOCAL_HARDWARE_ID.args;
            this.localHardwareId = h.getInt(api.call(arena, Slot.DEVICE_LOCAL_HARDWARE_ID, a -> h.set(a, "device", handle)),
                    "local_hardware_id");
            Struct ad = Slot.DEVICE_IS_ADDRESSABLE.args;
            this.addressable = ad.getBool(api.call(arena, Slot.DEVICE_IS_ADDRESSABLE, a -> ad.set(a, "device", handle)),
                    "is_addressable");
        }
    }

    static DeviceDescription describe(PjrtApi api, MemorySegment description) {
        try (Arena arena = Arena.ofConfined()) {
            Struct i = Slot.DEVICE_DESCRIPTION_ID.args;
            int id = i.getInt(api.call(arena, Slot.DEVICE_DESCRIPTION_ID, a -> i.set(a, "device_description", description)), "id");
            Struct k = Slot.DEVICE_DESCRIPTION_KIND.args;
            MemorySegment kind = api.call(arena, Slot.DEVICE_DESCRIPTION_KIND, a -> k.set(a, "device_description", description));
            return new DeviceDescription(id, PjrtApi.string(k.getAddress(kind, "device_kind"), k.getLong(kind, "device_kind_size")));
        }
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
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.DEVICE_ADDRESSABLE_MEMORIES.args;
            MemorySegment args = api.call(arena, Slot.DEVICE_ADDRESSABLE_MEMORIES, a -> s.set(a, "device", handle()));
            List<Memory> out = new ArrayList<>();
            for (MemorySegment memory : PjrtApi.pointers(s.getAddress(args, "memories"), s.getLong(args, "num_memories"))) {
                Struct i = Slot.MEMORY_ID.args;
                int id = i.getInt(api.call(arena, Slot.MEMORY_ID, a -> i.set(a, "memory", memory)), "id");
                Struct k = Slot.MEMORY_KIND.args;
                MemorySegment kind = api.call(arena, Slot.MEMORY_KIND, a -> k.set(a, "memory", memory));
                out.add(new Memory(id, PjrtApi.string(k.getAddress(kind, "kind"), k.getLong(kind, "kind_size"))));
            }
            return out;
        }
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
