package dev.crucible.accelerator.cuda;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;

/**
 * Finds a shared library by its soname where the dynamic linker and JavaCPP would find it, without opening it:
 * {@code LD_LIBRARY_PATH}, the CUDA folders JavaCPP's pytorch preset preloads from, every path in the linker's cache
 * ({@code /etc/ld.so.cache}, written by {@code ldconfig}), and the default system folders. A library that is not in
 * any of them makes {@code dlopen} fail, which in a JVM loading libtorch is a crash or a wall of text; found here, the
 * probe says which one is missing instead.
 */
final class SharedLibraries {
    /** Where JavaCPP's pytorch preset (-gpu) looks for CUDA before the system paths; see its {@code preloadpath}. */
    static final List<String> CUDA_FOLDERS = List.of("/usr/local/cuda-13.1/lib64", "/usr/local/cuda-13.1/extras/CUPTI/lib64",
            "/usr/local/cuda/lib64", "/usr/local/cuda/extras/CUPTI/lib64", "/usr/local/cuda/targets/x86_64-linux/lib");
    static final List<String> SYSTEM_FOLDERS = List.of("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64",
            "/usr/lib64", "/lib", "/usr/lib");
    private static final long MAX_CACHE_BYTES = 64L << 20;

    private final Path root;
    private final List<String> folders;
    private List<String> cached;

    /**
     * @param root          the file-system root ({@code /}, or a fake tree in tests); every folder is read below it
     * @param ldLibraryPath the value of {@code LD_LIBRARY_PATH}, or null
     */
    SharedLibraries(Path root, String ldLibraryPath) {
        this.root = root;
        Set<String> order = new LinkedHashSet<>();
        if (ldLibraryPath != null) {
            for (String entry : ldLibraryPath.split(":")) {
                if (!entry.isBlank()) {
                    order.add(entry.strip());
                }
            }
        }
        order.addAll(CUDA_FOLDERS);
        this.folders = List.copyOf(order);
    }

    /** Where {@code soname} (e.g. {@code libcudart.so.13}) would be loaded from; empty when nowhere. */
    Optional<Path> find(String soname) {
        for (String folder : folders) {
            Optional<Path> hit = existing(folder + "/" + soname);
            if (hit.isPresent()) {
                return hit;
            }
        }
        for (String path : linkerCache()) {
            if (path.endsWith("/" + soname)) {
                Optional<Path> hit = existing(path);
                if (hit.isPresent()) {
                    return hit;
                }
            }
        }
        for (String folder : SYSTEM_FOLDERS) {
            Optional<Path> hit = existing(folder + "/" + soname);
            if (hit.isPresent()) {
                return hit;
            }
        }
        return Optional.empty();
    }

    private Optional<Path> existing(String absolute) {
        Path path = root.resolve(absolute.startsWith("/") ? absolute.substring(1) : absolute);
        return Files.isRegularFile(path) ? Optional.of(path) : Optional.empty();
    }

    /**
     * The absolute paths in the linker's cache. The file is glibc's binary format, a header and entries followed by a
     * table of NUL-terminated strings: each library's soname and its full path. Only the paths matter here, and they
     * are exactly the strings that start with {@code /}, so the table is scanned rather than the format parsed (the
     * entry layout changed between glibc versions; the strings did not).
     */
    private List<String> linkerCache() {
        if (cached == null) {
            List<String> paths = new ArrayList<>();
            Path file = root.resolve("etc/ld.so.cache");
            try (InputStream in = Files.newInputStream(file)) {
                byte[] bytes = in.readNBytes((int) MAX_CACHE_BYTES);
                int start = 0;
                for (int i = 0; i <= bytes.length; i++) {
                    if (i == bytes.length || bytes[i] == 0) {
                        if (i > start && bytes[start] == '/') {
                            paths.add(new String(bytes, start, i - start, StandardCharsets.UTF_8));
                        }
                        start = i + 1;
                    }
                }
            } catch (IOException e) {
                // no cache: the folders above and the defaults still count
            }
            cached = List.copyOf(paths);
        }
        return cached;
    }
}
