package dev.crucible.accelerator.cuda;

import dev.crucible.torch.LibtorchBuild;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * Everything the cuda probe reads from the machine, none of it by loading CUDA or libtorch: whether this
 * distribution carries the CUDA build of libtorch (a resource lookup), the kernel driver ({@code /proc}), the GPUs
 * (NVML, else {@code nvidia-smi}, else {@code /proc}) and where the CUDA libraries resolve. Tests point it at a fake
 * file-system tree, a stub NVML and a canned {@code nvidia-smi}.
 */
final class CudaHost {

    /**
     * What was found.
     *
     * @param platform          JavaCPP's platform name for this machine
     * @param gpuBuild          whether the CUDA build of libtorch is on the classpath
     * @param driverVersion     the kernel module's version; empty without a driver
     * @param cudaDriverVersion the newest CUDA the driver runs ({@code 13000}: 13.0), 0 where NVML could not say
     * @param gpus              the GPUs, in CUDA's order
     * @param gpuSource         where the GPU list came from ({@code NVML}, {@code nvidia-smi}, {@code /proc})
     * @param libraries         each needed CUDA library and where it resolves
     */
    record Finding(String platform, boolean gpuBuild, Optional<String> driverVersion, int cudaDriverVersion,
                   List<GpuInfo> gpus, String gpuSource, Map<String, Optional<Path>> libraries) { }

    private final Path root;
    private final String ldLibraryPath;
    private final String nvmlLibrary;
    private final Supplier<List<GpuInfo>> nvidiaSmi;
    private final Supplier<Boolean> gpuBuild;
    private final String platform;

    CudaHost(Path root, String ldLibraryPath, String nvmlLibrary, Supplier<List<GpuInfo>> nvidiaSmi,
             Supplier<Boolean> gpuBuild, String platform) {
        this.root = root;
        this.ldLibraryPath = ldLibraryPath;
        this.nvmlLibrary = nvmlLibrary;
        this.nvidiaSmi = nvidiaSmi;
        this.gpuBuild = gpuBuild;
        this.platform = platform;
    }

    /** This machine, this process's classpath. */
    static CudaHost system() {
        String platform = LibtorchBuild.hostPlatform();
        return new CudaHost(Path.of("/"), System.getenv("LD_LIBRARY_PATH"), Nvml.LIBRARY, NvidiaSmi::query,
                () -> LibtorchBuild.CUDA.presentIn(CudaHost.class.getClassLoader(), platform), platform);
    }

    Path versionFile() {
        return new ProcDriver(root).versionFile();
    }

    Finding probe() {
        boolean build = gpuBuild.get();
        ProcDriver proc = new ProcDriver(root);
        Optional<String> driver = proc.version();
        if (driver.isEmpty()) {
            return new Finding(platform, build, driver, 0, List.of(), "", Map.of());
        }
        int cuda = 0;
        List<GpuInfo> gpus;
        String source;
        Optional<Nvml.Report> nvml = Nvml.query(nvmlLibrary);
        if (nvml.isPresent()) {
            gpus = nvml.get().gpus();
            cuda = nvml.get().cudaDriverVersion();
            source = "NVML";
        } else {
            gpus = nvidiaSmi.get();
            source = "nvidia-smi";
            if (gpus.isEmpty()) {
                gpus = proc.gpus();
                source = "/proc/driver/nvidia/gpus";
            }
        }
        Map<String, Optional<Path>> libraries = CudaLibraries.resolve(new SharedLibraries(root, ldLibraryPath));
        return new Finding(platform, build, driver, cuda, gpus, source, libraries);
    }
}
