package dev.crucible.torch;

import dev.crucible.api.UserInputException;
import java.io.File;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.SymbolLookup;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.pytorch.global.torch;

/**
 * Loads libtorch once per process. JavaCPP extracts native libraries into its cache on first use; on a cold
 * cache the lazy path crashed here, so {@link #load()} extracts every native directory first
 * ({@link Loader#cacheResources}) and only then loads. It must first run on the main thread and through the
 * application class loader: a second class loader loading JavaCPP aborts the JVM, so a copy of JavaCPP inside a
 * plugin jar is refused with a message instead.
 *
 * <p>Before JavaCPP initializes, {@link #load()} also turns off its garbage-collector-driven memory limits
 * ({@code org.bytedeco.javacpp.maxBytes} and {@code maxPhysicalBytes}, unless set by the user): every tensor here has
 * an owner that frees it, and those limits check the process's resident memory on every allocation (a quarter
 * of decode time on small models) and throw OutOfMemoryError once weights held by libtorch pass
 * {@code 4 × -Xmx}, which a large model on the CPU does.
 */
public final class TorchRuntime {

    private static final String EXTENSION_PROPERTY = "org.bytedeco.javacpp.platform.extension";
    private static final Pattern MISSING_LIBRARY = Pattern.compile("(\\S+\\.so[.\\d]*): cannot open shared object file");
    private static volatile LibtorchBuild loaded;
    private static File[] nativeDirectories = new File[0];
    private static volatile boolean setOpenMpWaitPolicy;

    private TorchRuntime() {
    }

    /** Loads libtorch if it is not loaded yet, the CPU build unless a backend chose another first; cheap afterwards. */
    public static void load() {
        if (loaded == null) {
            load(LibtorchBuild.DEFAULT);
        }
    }

    /**
     * Loads {@code build} of libtorch, once per process: loading it again is cheap, asking for another build once
     * one is loaded is refused (JavaCPP cannot unload natives). Missing natives, or a system library the natives
     * need that is not there (the CUDA build's CUDA 13, cuDNN, NCCL), fail with one line saying so rather than a
     * stack trace.
     */
    public static void load(LibtorchBuild build) {
        LibtorchBuild current = loaded;
        if (current != null) {
            requireSame(current, build);
            return;
        }
        synchronized (TorchRuntime.class) {
            if (loaded != null) {
                requireSame(loaded, build);
                return;
            }
            if (!Thread.currentThread().getName().equals("main")) {
                throw new IllegalStateException("libtorch must first be loaded on the main thread, not on '"
                        + Thread.currentThread().getName() + "'; call TorchRuntime.load() from main before using a"
                        + " torch backend elsewhere");
            }
            for (String limit : new String[] {"org.bytedeco.javacpp.maxBytes", "org.bytedeco.javacpp.maxPhysicalBytes"}) {
                if (System.getProperty(limit) == null && System.getProperty(limit.toLowerCase(Locale.ROOT)) == null) {
                    System.setProperty(limit, "0");
                }
            }
            if (torch.class.getClassLoader() != TorchRuntime.class.getClassLoader()) {
                throw new IllegalStateException("JavaCPP's torch classes come from " + torch.class.getClassLoader()
                        + ", not the host's class loader; a plugin jar must not bundle org.bytedeco (declare it"
                        + " provided)");
            }
            String platform = LibtorchBuild.hostPlatform();
            if (!build.presentIn(TorchRuntime.class.getClassLoader(), platform)) {
                throw new UserInputException("this distribution has no " + build + " for " + platform + " ("
                        + build.rebuildHint() + ")");
            }
            // Read by JavaCPP's loader when it first loads its platform properties, which nothing has done yet:
            // nothing touches JavaCPP's Loader before this method.
            System.setProperty(EXTENSION_PROPERTY, build.platformExtension());
            try {
                File[] directories = new File[0];
                for (String name : LibtorchBuild.NATIVE_PACKAGES) {
                    File[] cached = Loader.cacheResources(torch.class, build.nativeFolder(name, platform));
                    directories = concat(directories, cached);
                }
                nativeDirectories = directories;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot extract libtorch into JavaCPP's cache", e);
            }
            passiveOpenMpThreads();
            try {
                openGate(build, nativeDirectories);
                Loader.load(torch.class);
            } catch (UnsatisfiedLinkError e) {
                throw new UserInputException("cannot load the " + build + ": " + describeLoadFailure(e), e);
            }
            loaded = build;
        }
    }

    /**
     * Sets {@code OMP_WAIT_POLICY=PASSIVE} in the process's environment unless the user set it, before libgomp reads
     * it (when libtorch loads). libtorch runs its ops on OpenMP threads and its float32 matrix products on OpenBLAS's
     * own threads; with OpenMP's default policy the idle OpenMP threads spin for a while after every op, on the very
     * cores OpenBLAS then computes on. Two threads on two cores, a Qwen2.5-0.5B-shaped prefill of 128 tokens,
     * interleaved (2026-12-07): float32 114-163 tokens/s against 85-98 with the default, bf16 (widened for the
     * product on a CPU without bf16 dot products) 97-114 against 36-46; a perf profile of the latter had 19% of its
     * samples in libgomp's spin and 17% in OpenBLAS's.
     */
    private static void passiveOpenMpThreads() {
        if (System.getenv("OMP_WAIT_POLICY") != null) {
            return;
        }
        try {
            Linker linker = Linker.nativeLinker();
            MethodHandle setenv = linker.downcallHandle(linker.defaultLookup().find("setenv").orElseThrow(),
                    FunctionDescriptor.of(ValueLayout.JAVA_INT, ValueLayout.ADDRESS, ValueLayout.ADDRESS,
                            ValueLayout.JAVA_INT));
            try (Arena arena = Arena.ofConfined()) {
                // overwrite = 0: a value the user exported stays.
                int result = (int) setenv.invokeExact(arena.allocateFrom("OMP_WAIT_POLICY"),
                        arena.allocateFrom("PASSIVE"), 0);
                if (result != 0) {
                    throw new IllegalStateException("setenv returned " + result);
                }
            }
            setOpenMpWaitPolicy = true;
        } catch (Throwable e) {
            // Only speed depends on it: libtorch runs the same without it.
            System.getLogger(TorchRuntime.class.getName()).log(System.Logger.Level.DEBUG,
                    "could not set OMP_WAIT_POLICY: " + e);
        }
    }

    /**
     * Opens the build's gate library before JavaCPP loads the build. When a library of the GPU build cannot be opened
     * (a CUDA library missing), JavaCPP's loader goes on to the same library of the CPU build if that jar is on the
     * classpath too, as in a {@code -Pcuda} distribution; the two builds' {@code libtorch_cpu.so} then both register
     * their kernels and libtorch aborts the JVM ("Tried to register multiple backend fallbacks", seen here). Opened
     * first, on its own, the gate fails with the dynamic linker's message instead, and nothing of either build is
     * loaded. OpenBLAS is loaded first because the build's {@code libtorch_cpu.so} links JavaCPP's copy of it.
     */
    private static void openGate(LibtorchBuild build, File[] directories) {
        if (build.gateLibrary().isEmpty()) {
            return;
        }
        Loader.load(org.bytedeco.openblas.global.openblas.class);
        for (File directory : directories) {
            File gate = new File(directory, build.gateLibrary());
            if (gate.isFile()) {
                System.load(gate.getAbsolutePath());
                return;
            }
        }
        throw new UnsatisfiedLinkError(build.gateLibrary() + " is not in the " + build + "'s natives");
    }

    /**
     * Whether this process set {@code OMP_WAIT_POLICY} itself (the user had not): a program it starts inherits the
     * C environment, so one whose speed is being compared with ours (llama-bench) must be started without it.
     */
    public static boolean setOpenMpWaitPolicy() {
        return setOpenMpWaitPolicy;
    }

    /** The build this process loaded; empty before the first load. */
    public static Optional<LibtorchBuild> loadedBuild() {
        return Optional.ofNullable(loaded);
    }

    private static void requireSame(LibtorchBuild current, LibtorchBuild wanted) {
        if (!current.equals(wanted)) {
            throw new IllegalStateException("this process loaded the " + current + " and cannot switch to the "
                    + wanted + "; one native runtime per process");
        }
    }

    /**
     * The part of a loader error that names what is missing: JavaCPP wraps the dynamic linker's message
     * ({@code libcudnn.so.9: cannot open shared object file}) in several lines of search paths.
     */
    static String describeLoadFailure(Throwable error) {
        String message = error.getMessage() == null ? error.toString() : error.getMessage();
        for (Throwable cause = error.getCause(); cause != null; cause = cause.getCause()) {
            if (cause.getMessage() != null && cause.getMessage().contains("cannot open shared object")) {
                message = cause.getMessage();
            }
        }
        String line = message.lines().findFirst().orElse(message).strip();
        Matcher missing = MISSING_LIBRARY.matcher(message);
        return missing.find() ? missing.group(1) + " is missing (" + line + ")" : line;
    }

    /**
     * Threads for CPU kernels: libtorch's intra-op pool ({@code at::set_num_threads}) and OpenBLAS's own pool,
     * which libtorch does not size (its GEMMs run there). Loads libtorch first.
     *
     * @return whether OpenBLAS was found and sized too
     */
    public static boolean setThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        load();
        torch.set_num_threads(threads);
        List<MethodHandle> pools = openBlasThreadSetters();
        for (MethodHandle pool : pools) {
            try {
                pool.invokeExact(threads);
            } catch (Throwable e) {
                throw new IllegalStateException("openblas_set_num_threads failed", e);
            }
        }
        return !pools.isEmpty();
    }

    /**
     * {@code openblas_set_num_threads} of every OpenBLAS copy JavaCPP extracted and loaded: the preset ships
     * {@code libopenblas} and {@code libopenblas_nolapack}, and which one libtorch's GEMM calls bind to depends on
     * load order, so both are sized. Opening an already loaded file yields the loaded library, not a new copy. The
     * JavaCPP OpenBLAS preset does not map this function.
     */
    private static List<MethodHandle> openBlasThreadSetters() {
        Map<Path, MethodHandle> setters = new LinkedHashMap<>();
        for (File directory : nativeDirectories) {
            File[] libraries = directory.listFiles((dir, name) -> name.startsWith("libopenblas") && !name.contains("jni"));
            if (libraries == null) {
                continue;
            }
            for (File library : libraries) {
                Path real;
                try {
                    real = library.toPath().toRealPath();
                } catch (IOException e) {
                    continue;
                }
                if (setters.containsKey(real)) {
                    continue;
                }
                SymbolLookup.libraryLookup(real, Arena.global()).find("openblas_set_num_threads")
                        .ifPresent(symbol -> setters.put(real, Linker.nativeLinker().downcallHandle(symbol,
                                FunctionDescriptor.ofVoid(ValueLayout.JAVA_INT))));
            }
        }
        return List.copyOf(setters.values());
    }

    private static File[] concat(File[] first, File[] second) {
        File[] all = Arrays.copyOf(first, first.length + second.length);
        System.arraycopy(second, 0, all, first.length, second.length);
        return all;
    }

    public static int threads() {
        load();
        return torch.get_num_threads();
    }

    /** libtorch's own account of itself: intra-op and inter-op threads, and the build's parallel backend. */
    public static java.util.Map<String, String> describe() {
        load();
        java.util.Map<String, String> out = new java.util.LinkedHashMap<>();
        out.put("threads", torch.get_num_threads() + " intra-op, " + torch.get_num_interop_threads() + " inter-op");
        torch.get_parallel_info().getString().lines().map(String::strip)
                .filter(l -> l.startsWith("ATen parallel backend:")).findFirst()
                .ifPresent(l -> out.put("parallel", l.substring("ATen parallel backend:".length()).strip()));
        for (String line : torch.show_config().getString().lines().map(String::strip).toList()) {
            if (line.startsWith("- GCC") || line.startsWith("- Clang")) {
                out.put("compiler", line.substring(2));
            } else if (line.startsWith("- CPU capability usage:")) {
                out.put("cpu kernels", line.substring("- CPU capability usage:".length()).strip());
            } else if (line.startsWith("- LAPACK")) {
                out.put("lapack", line.substring(2));
            }
        }
        return out;
    }
}
