package dev.crucible.accelerator.xla.pjrt;

import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;

/**
 * A compiled program that is not loaded on any device ({@code PJRT_Executable}): what a topology compile returns,
 * and what a loaded executable is asked about. It answers what the compiler decided: outputs, partitions, memory.
 */
public final class PjrtExecutable extends NativeHandle {
    private final PjrtApi api;

    PjrtExecutable(PjrtApi api, MemorySegment handle, NativeHandle parent) {
        super(handle, parent);
        this.api = api;
    }

    public String name() {
        return api.queryString(Slot.EXECUTABLE_NAME, "executable", handle(), "executable_name");
    }

    public int numReplicas() {
        return Math.toIntExact(api.queryLong(Slot.EXECUTABLE_NUM_REPLICAS, "executable", handle(), "num_replicas"));
    }

    public int numPartitions() {
        return Math.toIntExact(api.queryLong(Slot.EXECUTABLE_NUM_PARTITIONS, "executable", handle(), "num_partitions"));
    }

    /** Outputs per device. */
    public int numOutputs() {
        return Math.toIntExact(api.queryLong(Slot.EXECUTABLE_NUM_OUTPUTS, "executable", handle(), "num_outputs"));
    }

    public long generatedCodeBytes() {
        return api.queryLong(Slot.EXECUTABLE_SIZE_OF_GENERATED_CODE, "executable", handle(), "size_in_bytes");
    }

    /** Each output's element type, in order. */
    public List<DType> outputDtypes() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.EXECUTABLE_OUTPUT_ELEMENT_TYPES.args;
            MemorySegment args = api.call(arena, Slot.EXECUTABLE_OUTPUT_ELEMENT_TYPES, a -> s.set(a, "executable", handle()));
            long count = s.getLong(args, "num_output_types");
            int[] codes = count == 0 ? new int[0]
                    : s.getAddress(args, "output_types").reinterpret(4 * count).toArray(ValueLayout.JAVA_INT);
            List<DType> out = new ArrayList<>();
            for (int code : codes) {
                out.add(ElementTypes.dtype(code));
            }
            return out;
        }
    }

    /** Each output's per-device shape, in order. */
    public List<long[]> outputShapes() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.EXECUTABLE_OUTPUT_DIMENSIONS.args;
            MemorySegment args = api.call(arena, Slot.EXECUTABLE_OUTPUT_DIMENSIONS, a -> s.set(a, "executable", handle()));
            long outputs = s.getLong(args, "num_outputs");
            long[] ranks = outputs == 0 ? new long[0]
                    : s.getAddress(args, "dim_sizes").reinterpret(8 * outputs).toArray(ValueLayout.JAVA_LONG);
            long total = 0;
            for (long rank : ranks) {
                total += rank;
            }
            MemorySegment dims = total == 0 ? MemorySegment.NULL : s.getAddress(args, "dims").reinterpret(8 * total);
            List<long[]> shapes = new ArrayList<>();
            long at = 0;
            for (long rank : ranks) {
                long[] shape = new long[Math.toIntExact(rank)];
                for (int d = 0; d < rank; d++) {
                    shape[d] = dims.getAtIndex(ValueLayout.JAVA_LONG, at++);
                }
                shapes.add(shape);
            }
            return shapes;
        }
    }

    /** The compiler's memory figures, where the plugin offers them (an UNIMPLEMENTED answer is empty). */
    public Optional<CompiledMemoryStats> memoryStats() {
        if (!api.offers(Slot.EXECUTABLE_GET_COMPILED_MEMORY_STATS)) {
            return Optional.empty();
        }
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.EXECUTABLE_GET_COMPILED_MEMORY_STATS.args;
            MemorySegment args = api.call(arena, Slot.EXECUTABLE_GET_COMPILED_MEMORY_STATS,
                    a -> s.set(a, "executable", handle()));
            return Optional.of(new CompiledMemoryStats(s.getLong(args, "generated_code_size_in_bytes"),
                    s.getLong(args, "argument_size_in_bytes"), s.getLong(args, "output_size_in_bytes"),
                    s.getLong(args, "alias_size_in_bytes"), s.getLong(args, "temp_size_in_bytes"),
                    s.getLong(args, "host_argument_size_in_bytes"), s.getLong(args, "host_output_size_in_bytes"),
                    s.getLong(args, "host_temp_size_in_bytes")));
        } catch (PjrtException e) {
            if (e.code() == PjrtException.UNIMPLEMENTED) {
                return Optional.empty();
            }
            throw e;
        }
    }

    /**
     * The plugin's serialization of this executable ({@code PJRT_Executable_Serialize}), valid only for the same
     * plugin version; the plugin's copy is freed with the deleter it hands out.
     */
    public byte[] serialize() {
        try (Arena arena = Arena.ofConfined()) {
            Struct s = Slot.EXECUTABLE_SERIALIZE.args;
            MemorySegment args = api.call(arena, Slot.EXECUTABLE_SERIALIZE, a -> s.set(a, "executable", handle()));
            MemorySegment backing = s.getAddress(args, "serialized_executable");
            MemorySegment deleter = s.getAddress(args, "serialized_executable_deleter");
            try {
                long size = s.getLong(args, "serialized_bytes_size");
                return size == 0 ? new byte[0]
                        : s.getAddress(args, "serialized_bytes").reinterpret(size).toArray(ValueLayout.JAVA_BYTE);
            } finally {
                if (!deleter.equals(MemorySegment.NULL)) {
                    PjrtApi.callVoid(deleter, backing);
                }
            }
        }
    }

    @Override
    void destroy(MemorySegment handle) {
        api.destroy(Slot.EXECUTABLE_DESTROY, "executable", handle);
    }

    /**
     * Fills the {@code program}, {@code compile_options} and {@code compile_options_size} fields that
     * {@code PJRT_Compile} and {@code PJRT_Client_Compile} share, with memory from {@code arena}.
     */
    static void setProgram(Arena arena, Struct s, MemorySegment args, String stablehlo, CompileOptions options) {
        byte[] proto = options.toProto();
        s.set(args, "program", program(arena, stablehlo));
        s.set(args, "compile_options", PjrtApi.bytes(arena, proto));
        s.set(args, "compile_options_size", proto.length);
    }

    /** A {@code PJRT_Program} holding StableHLO text in {@code arena} (format "mlir"). */
    private static MemorySegment program(Arena arena, String stablehlo) {
        byte[] code = stablehlo.getBytes(StandardCharsets.UTF_8);
        byte[] format = "mlir".getBytes(StandardCharsets.UTF_8);
        Struct s = Slot.PROGRAM;
        MemorySegment program = s.allocate(arena);
        s.set(program, "code", PjrtApi.bytes(arena, code));
        s.set(program, "code_size", code.length);
        s.set(program, "format", PjrtApi.bytes(arena, format));
        s.set(program, "format_size", format.length);
        return program;
    }
}
