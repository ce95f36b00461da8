package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;

/**
 * An array on one device ({@code PJRT_Buffer}), owned by whoever holds this object (and, failing that, by its
 * client). A buffer donated to an execution is consumed by it: this object is released then, and later use says so.
 */
public final class PjrtBuffer extends NativeHandle {
    /** {@code PJRT_Buffer_MemoryLayout} with its {@code tiled} member flattened in; type 0 is Tiled. */
    private static final Struct MEMORY_LAYOUT = Struct.args("PJRT_Buffer_MemoryLayout")
            .word("tiled.struct_size").word("tiled.extension_start").word("tiled.minor_to_major")
            .word("tiled.minor_to_major_size").word("tiled.tile_dims").word("tiled.tile_dim_sizes")
            .word("tiled.num_tiles").int32("type").build();
    private static final long TILED_STRUCT_SIZE = 56;

    private final PjrtApi api;
    private final PjrtDevice device;
    private final DType dtype;
    private final long[] shape;

    PjrtBuffer(PjrtApi api, PjrtClient client, MemorySegment handle) {
        super(handle, client);
        this.api = api;
        this.dtype = ElementTypes.dtype(Math.toIntExact(api.queryLong(Slot.BUFFER_ELEMENT_TYPE, "buffer", handle, "type")));
        try (Arena arena = Arena.ofConfined()) {
            Struct d = Slot.BUFFER_DIMENSIONS.args;
            MemorySegment dims = api.call(arena, Slot.BUFFER_DIMENSIONS, a -> d.set(a, "buffer", handle));
            long rank = d.getLong(dims, "num_dims");
            this.shape = rank == 0 ? new long[0]
                    : d.getAddress(dims, "dims").reinterpret(8 * rank).toArray(ValueLayout.JAVA_LONG);
        }
        Struct where = Slot.BUFFER_DEVICE.args;
        try (Arena arena = Arena.ofConfined()) {
            this.device = client.device(where.getAddress(api.call(arena, Slot.BUFFER_DEVICE, a -> where.set(a, "buffer", handle)),
                    "device"));
        }
    }

    public DType dtype() {
        return dtype;
    }

    public long[] shape() {
        return shape.clone();
    }

    public PjrtDevice device() {
        return device;
    }

    public long onDeviceSizeInBytes() {
        return api.queryLong(Slot.BUFFER_ON_DEVICE_SIZE_IN_BYTES, "buffer", handle(), "on_device_size_in_bytes");
    }

    /** Whether the plugin has deleted the device memory (a donated buffer is). */
    public boolean isDeleted() {
        return api.queryLong(Slot.BUFFER_IS_DELETED, "buffer", handle(), "is_deleted") != 0;
    }

    /**
     * Copies the array to the host, dense and row-major, into memory allocated from {@code into} (so the caller's
     * arena owns it); waits for the copy.
     */
    public MemorySegment toHost(Arena into) {
        MemorySegment buffer = handle();
        long bytes = byteSize(dtype, shape);
        MemorySegment destination = into.allocate(Math.max(1, bytes), 8);
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment layout = rowMajor(arena, shape.length);
            Struct s = Slot.BUFFER_TO_HOST_BUFFER.args;
            MemorySegment args = api.call(arena, Slot.BUFFER_TO_HOST_BUFFER, a -> {
                s.set(a, "src", buffer);
                s.set(a, "host_layout", layout);
                s.set(a, "dst", destination);
                s.set(a, "dst_size", bytes);
            });
            api.awaitAndDestroy(Slot.BUFFER_TO_HOST_BUFFER.functionName(), s.getAddress(args, "event"));
        }
        return destination.asSlice(0, bytes);
    }

    static long byteSize(DType dtype, long[] shape) {
        long elements = 1;
        for (long dim : shape) {
            elements = Math.multiplyExact(elements, dim);
        }
        return Math.multiplyExact(elements, dtype.byteSize());
    }

    /** A tiled layout without tiles whose minor-to-major order is the last dimension first: plain row-major. */
    private static MemorySegment rowMajor(Arena arena, int rank) {
        MemorySegment order = arena.allocate(ValueLayout.JAVA_LONG, Math.max(1, rank));
        for (int i = 0; i < rank; i++) {
            order.setAtIndex(ValueLayout.JAVA_LONG, i, rank - 1 - i);
        }
        MemorySegment layout = MEMORY_LAYOUT.allocate(arena);
        MEMORY_LAYOUT.set(layout, "tiled.struct_size", TILED_STRUCT_SIZE);
        MEMORY_LAYOUT.set(layout, "tiled.minor_to_major", order);
        MEMORY_LAYOUT.set(layout, "tiled.minor_to_major_size", rank);
        MEMORY_LAYOUT.set(layout, "type", 0);
        return layout;
    }

    @Override
    void destroy(MemorySegment handle) {
        api.destroy(Slot.BUFFER_DESTROY, "buffer", handle);
    }
}
