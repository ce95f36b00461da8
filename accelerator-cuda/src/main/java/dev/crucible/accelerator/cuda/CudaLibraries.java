package dev.crucible.accelerator.cuda;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The system libraries the CUDA build of libtorch (JavaCPP pytorch 2.10.0-1.5.13, {@code linux-x86_64-gpu}) links
 * against and does not ship: the {@code DT_NEEDED} entries of its {@code libtorch_cpu.so}, {@code libtorch_cuda.so},
 * {@code libtorch_cuda_linalg.so}, {@code libjnitorch_cuda.so} and {@code libjnitorch_nccl.so}, read with
 * {@code readelf -d} from that jar, less the C and C++ runtimes. CUDA's own dependencies between these (cuSPARSE on
 * nvJitLink) are left to the loader's message.
 */
final class CudaLibraries {
    /** A library and the package a user installs to get it. */
    record Needed(String soname, String component) { }

    static final String RUNTIME = "libcudart.so.13";

    static final List<Needed> NEEDED = List.of(
            new Needed(RUNTIME, "the CUDA 13 runtime"),
            new Needed("libcublas.so.13", "CUDA 13"), new Needed("libcublasLt.so.13", "CUDA 13"),
            new Needed("libcufft.so.12", "CUDA 13"), new Needed("libcurand.so.10", "CUDA 13"),
            new Needed("libcusparse.so.12", "CUDA 13"), new Needed("libcusolver.so.12", "CUDA 13"),
            new Needed("libcupti.so.13", "CUDA 13"), new Needed("libcufile.so.0", "CUDA 13"),
            new Needed("libcudnn.so.9", "cuDNN 9"), new Needed("libcudnn_ops.so.9", "cuDNN 9"),
            new Needed("libcudnn_cnn.so.9", "cuDNN 9"), new Needed("libcudnn_adv.so.9", "cuDNN 9"),
            new Needed("libcudnn_graph.so.9", "cuDNN 9"),
            new Needed("libnccl.so.2", "NCCL 2"));

    private CudaLibraries() {
    }

    /** Where each needed library resolves, in {@link #NEEDED} order; empty for one that does not. */
    static Map<String, Optional<Path>> resolve(SharedLibraries libraries) {
        Map<String, Optional<Path>> found = new LinkedHashMap<>();
        for (Needed needed : NEEDED) {
            found.put(needed.soname(), libraries.find(needed.soname()));
        }
        return found;
    }

    /** {@code libcudnn.so.9, libcudnn_ops.so.9 (cuDNN 9); libnccl.so.2 (NCCL 2)} for the ones not found. */
    static String describeMissing(Map<String, Optional<Path>> found) {
        Map<String, List<String>> byComponent = new LinkedHashMap<>();
        for (Needed needed : NEEDED) {
            if (found.getOrDefault(needed.soname(), Optional.empty()).isEmpty()) {
                byComponent.computeIfAbsent(needed.component(), c -> new ArrayList<>()).add(needed.soname());
            }
        }
        List<String> parts = new ArrayList<>();
        byComponent.forEach((component, names) -> parts.add(String.join(", ", names) + " (" + component + ")"));
        return String.join("; ", parts);
    }
}
