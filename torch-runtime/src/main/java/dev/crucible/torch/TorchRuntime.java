package dev.crucible.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.pytorch.global.torch;

/**
 * Loads libtorch once per process. JavaCPP extracts native libraries into its cache on first use; on a cold
 * cache the lazy path crashed here, so {@link #load()} extracts every native directory first
 * ({@link Loader#cacheResources}) and only then loads. It must first run on the main thread and through the
 * application class loader: a second class loader loading JavaCPP aborts the JVM, so a copy of JavaCPP inside a
 * plugin jar is refused with a message instead.
 */
public final class TorchRuntime {

    private static final String[] NATIVE_PACKAGES = {"javacpp", "openblas", "pytorch"};
    private static volatile boolean loaded;

    private TorchRuntime() {
    }

    /** Loads libtorch if it is not loaded yet; cheap afterwards. */
    public static void load() {
        if (loaded) {
            return;
        }
        synchronized (TorchRuntime.class) {
            if (loaded) {
                return;
            }
            if (!Thread.currentThread().getName().equals("main")) {
                throw new IllegalStateException("libtorch must first be loaded on the main thread, not on '"
                        + Thread.currentThread().getName() + "'; call TorchRuntime.load() from main before using a"
                        + " torch backend elsewhere");
            }
            if (torch.class.getClassLoader() != TorchRuntime.class.getClassLoader()) {
                throw new IllegalStateException("JavaCPP's torch classes come from " + torch.class.getClassLoader()
                        + ", not the host's class loader; a plugin jar must not bundle org.bytedeco (declare it"
                        + " provided)");
            }
            String platform = Loader.getPlatform();
            try {
                for (String name : NATIVE_PACKAGES) {
                    Loader.cacheResources(torch.class, "/org/bytedeco/" + name + "/" + platform + "/");
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot extract libtorch into JavaCPP's cache", e);
            }
            Loader.load(torch.class);
            loaded = true;
        }
    }

    /** Intra-op threads for CPU kernels ({@code at::set_num_threads}); loads libtorch first. */
    public static void setThreads(int threads) {
        if (threads < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads);
        }
        load();
        torch.set_num_threads(threads);
    }

    public static int threads() {
        load();
        return torch.get_num_threads();
    }
}
