package dev.crucible.accelerator.cuda;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.OptionalLong;

/**
 * The driver's management library (NVML, {@code libnvidia-ml.so.1}, installed with every NVIDIA driver and what
 * {@code nvidia-smi} itself reads), called through {@code java.lang.foreign}: device count, names, memory, compute
 * capability and the CUDA version the driver supports. NVML talks to the kernel driver only; it creates no CUDA
 * context and is not the CUDA runtime, so a probe may use it. Every call is checked; any failure gives empty, and the
 * probe falls back to {@code nvidia-smi} and then {@code /proc}.
 */
final class Nvml {
    static final String LIBRARY = "libnvidia-ml.so.1";
    private static final int SUCCESS = 0;
    private static final int NAME_LENGTH = 96;

    /**
     * What NVML reports.
     *
     * @param cudaDriverVersion the newest CUDA the driver runs, e.g. {@code 13000} for 13.0; 0 when unknown
     */
    record Report(String driverVersion, int cudaDriverVersion, List<GpuInfo> gpus) { }

    private Nvml() {
    }

    /** Asks the NVML at {@code library} (a name the dynamic linker resolves, or a path); empty when it cannot. */
    static Optional<Report> query(String library) {
        try (Arena arena = Arena.ofConfined()) {
            SymbolLookup nvml;
            try {
                nvml = SymbolLookup.libraryLookup(library, arena);
            } catch (IllegalArgumentException e) {
                return Optional.empty(); // not installed
            }
            Calls calls = new Calls(nvml);
            if ((int) calls.init.invokeExact() != SUCCESS) {
                return Optional.empty();
            }
            try {
                return Optional.of(report(calls, arena));
            } finally {
                int ignored = (int) calls.shutdown.invokeExact();
            }
        } catch (Throwable e) {
            return Optional.empty(); // a missing symbol or a driver that fails mid-way: the next source answers
        }
    }

    private static Report report(Calls calls, Arena arena) throws Throwable {
        MemorySegment text = arena.allocate(NAME_LENGTH);
        String driver = (int) calls.driverVersion.invokeExact(text, NAME_LENGTH) == SUCCESS ? text.getString(0) : "";
        MemorySegment number = arena.allocate(ValueLayout.JAVA_INT);
        int cuda = (int) calls.cudaVersion.invokeExact(number) == SUCCESS ? number.get(ValueLayout.JAVA_INT, 0) : 0;
        MemorySegment count = arena.allocate(ValueLayout.JAVA_INT);
        if ((int) calls.count.invokeExact(count) != SUCCESS) {
            throw new IllegalStateException("nvmlDeviceGetCount failed");
        }
        List<GpuInfo> gpus = new ArrayList<>();
        MemorySegment handle = arena.allocate(ValueLayout.ADDRESS);
        // nvmlMemory_t: unsigned long long total, free, used
        MemorySegment memory = arena.allocate(3 * Long.BYTES, Long.BYTES);
        MemorySegment major = arena.allocate(ValueLayout.JAVA_INT);
        MemorySegment minor = arena.allocate(ValueLayout.JAVA_INT);
        for (int i = 0; i < count.get(ValueLayout.JAVA_INT, 0); i++) {
            if ((int) calls.handle.invokeExact(i, handle) != SUCCESS) {
                throw new IllegalStateException("nvmlDeviceGetHandleByIndex failed");
            }
            MemorySegment device = handle.get(ValueLayout.ADDRESS, 0);
            String name = (int) calls.name.invokeExact(device, text, NAME_LENGTH) == SUCCESS ? text.getString(0)
                    : "NVIDIA GPU " + i;
            boolean hasMemory = (int) calls.memory.invokeExact(device, memory) == SUCCESS;
            int capability = (int) calls.capability.invokeExact(device, major, minor) == SUCCESS
                    ? 10 * major.get(ValueLayout.JAVA_INT, 0) + minor.get(ValueLayout.JAVA_INT, 0) : 0;
            gpus.add(new GpuInfo(i, name,
                    hasMemory ? OptionalLong.of(memory.get(ValueLayout.JAVA_LONG, 0)) : OptionalLong.empty(),
                    hasMemory ? OptionalLong.of(memory.get(ValueLayout.JAVA_LONG, Long.BYTES)) : OptionalLong.empty(),
                    capability));
        }
        return new Report(driver, cuda, gpus);
    }

    /** The NVML entry points used, by their versioned names as nvml.h maps them. */
    private static final class Calls {
        final MethodHandle init;
        final MethodHandle shutdown;
        final MethodHandle driverVersion;
        final MethodHandle cudaVersion;
        final MethodHandle count;
        final MethodHandle handle;
        final MethodHandle name;
        final MethodHandle memory;
        final MethodHandle capability;

        Calls(SymbolLookup nvml) {
            ValueLayout i = ValueLayout.JAVA_INT;
            ValueLayout p = ValueLayout.ADDRESS;
            init = bind(nvml, "nvmlInit_v2", FunctionDescriptor.of(i));
            shutdown = bind(nvml, "nvmlShutdown", FunctionDescriptor.of(i));
            driverVersion = bind(nvml, "nvmlSystemGetDriverVersion", FunctionDescriptor.of(i, p, i));
            cudaVersion = bind(nvml, "nvmlSystemGetCudaDriverVersion_v2", FunctionDescriptor.of(i, p));
            count = bind(nvml, "nvmlDeviceGetCount_v2", FunctionDescriptor.of(i, p));
            handle = bind(nvml, "nvmlDeviceGetHandleByIndex_v2", FunctionDescriptor.of(i, i, p));
            name = bind(nvml, "nvmlDeviceGetName", FunctionDescriptor.of(i, p, p, i));
            memory = bind(nvml, "nvmlDeviceGetMemoryInfo", FunctionDescriptor.of(i, p, p));
            capability = bind(nvml, "nvmlDeviceGetCudaComputeCapability", FunctionDescriptor.of(i, p, p, p));
        }

        private static MethodHandle bind(SymbolLookup library, String symbol, FunctionDescriptor descriptor) {
            return Linker.nativeLinker().downcallHandle(library.find(symbol)
                    .orElseThrow(() -> new IllegalStateException(symbol + " not found")), descriptor);
        }
    }
}
