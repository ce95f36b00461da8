package dev.crucible.accelerator.xla.pjrt;

import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * A loaded PJRT plugin ({@code libtpu.so}, {@code xla_cuda_plugin.so}, ...): its API version and attributes, and
 * the two things made from it: a client (needs a device) and a topology description (compiles without one).
 *
 * <p>A plugin is loaded once per process and never unloaded (plugins start threads that outlive any unload);
 * {@link #load} returns the same instance for the same file. Loading is for set-up and lowering only: detection
 * finds plugins by path and never calls this.
 */
public final class PjrtPlugin {
    private static final Map<Path, PjrtPlugin> LOADED = new ConcurrentHashMap<>();

    private final PjrtApi api;
    private boolean initialized;

    private PjrtPlugin(PjrtApi api) {
        this.api = api;
    }

    /** Loads {@code library} (once per process). */
    public static PjrtPlugin load(Path library) {
        return load(library, Map.of());
    }

    /**
     * Loads {@code library}, first setting each of {@code environmentDefaults} in the process environment where it
     * is not set already: plugins read their environment when loaded (libtpu's {@code TPU_SKIP_MDS_QUERY} keeps it
     * from asking a cloud metadata server on a machine that has no TPU).
     */
    public static PjrtPlugin load(Path library, Map<String, String> environmentDefaults) {
        Path key = library.toAbsolutePath().normalize();
        return LOADED.computeIfAbsent(key, path -> {
            environmentDefaults.forEach(PjrtPlugin::setenvIfUnset);
            return new PjrtPlugin(PjrtApi.open(path));
        });
    }

    public Path library() {
        return api.library();
    }

    /** The PJRT C API version the plugin was built with, e.g. {@code 0.112}. */
    public String apiVersion() {
        return api.version();
    }

    /** The size of the plugin's {@code PJRT_Api} table in bytes (libtpu 0.0.42.1: 1144, 138 functions). */
    public long apiStructSize() {
        return api.structSize();
    }

    /** {@code PJRT_Plugin_Initialize}, once per process; every other call here runs it first. */
    public synchronized void initialize() {
        if (!initialized) {
            try (Arena arena = Arena.ofConfined()) {
                api.call(arena, Slot.PLUGIN_INITIALIZE, a -> { });
            }
            initialized = true;
        }
    }

    /** {@code PJRT_Plugin_Attributes}: e.g. {@code xla_version}, {@code stablehlo_current_version}. */
    public List<NamedValue> attributes() {
        initialize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment args = api.call(arena, Slot.PLUGIN_ATTRIBUTES, a -> { });
            Struct s = Slot.PLUGIN_ATTRIBUTES.args;
            return NamedValue.decode(s.getAddress(args, "attributes"), s.getLong(args, "num_attributes"));
        }
    }

    /**
     * {@code PJRT_Client_Create} with {@code options} passed through as they are: unknown names are the plugin's to
     * reject, and its {@link PjrtException} says which.
     */
    public PjrtClient createClient(List<NamedValue> options) {
        initialize();
        try (Arena arena = Arena.ofConfined()) {
            MemorySegment encoded = NamedValue.encode(arena, options);
            Struct s = Slot.CLIENT_CREATE.args;
            MemorySegment args = api.call(arena, Slot.CLIENT_CREATE, a -> {
                s.set(a, "create_options", encoded);
                s.set(a, "num_options", options.size());
            });
            return new PjrtClient(api, s.getAddress(args, "client"));
        }
    }

    /**
     * {@code PJRT_TopologyDescription_Create}: the devices a program can be compiled for without any being present.
     * An empty name asks for the plugin's default (libtpu: 8 cores).
     */
    public PjrtTopology createTopology(String name, List<NamedValue> options) {
        initialize();
        try (Arena arena = Arena.ofConfined()) {
            byte[] nameBytes = name.getBytes(StandardCharsets.UTF_8);
            MemorySegment nameSegment = PjrtApi.bytes(arena, nameBytes);
            MemorySegment encoded = NamedValue.encode(arena, options);
            Struct s = Slot.TOPOLOGY_CREATE.args;
            MemorySegment args = api.call(arena, Slot.TOPOLOGY_CREATE, a -> {
                s.set(a, "topology_name", nameSegment);
                s.set(a, "topology_name_size", nameBytes.length);
                s.set(a, "create_options", encoded);
                s.set(a, "num_options", options.size());
            });
            return new PjrtTopology(api, s.getAddress(args, "topology"));
        }
    }

    /** The function table, for tests that check its slots against the plugin. */
    PjrtApi api() {
        return api;
    }

    private static void setenvIfUnset(String name, String value) {
        Linker linker = Linker.nativeLinker();
        MethodHandle setenv = linker.defaultLookup().find("setenv")
                .map(address -> linker.downcallHandle(address, FunctionDescriptor.of(ValueLayout.JAVA_INT,
                        ValueLayout.ADDRESS, ValueLayout.ADDRESS, ValueLayout.JAVA_INT)))
                .orElseThrow(() -> new IllegalStateException("the C library has no setenv"));
        try (Arena arena = Arena.ofConfined()) {
            int unused = (int) setenv.invokeExact(arena.allocateFrom(name), arena.allocateFrom(value), 0);
        } catch (Throwable t) {
            throw new IllegalStateException("setenv(" + name + ") failed", t);
        }
    }
}
