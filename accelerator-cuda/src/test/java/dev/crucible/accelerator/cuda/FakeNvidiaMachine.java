package dev.crucible.accelerator.cuda;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
import org.junit.jupiter.api.Assumptions;

/**
 * A machine with NVIDIA GPUs as the cuda probe sees it, made of files under a temporary root: the driver's
 * {@code /proc} files, CUDA libraries (empty files: the probe only looks for them), the linker's cache, and
 * optionally a stub NVML compiled from the test resources.
 */
final class FakeNvidiaMachine {
    private static Path stubNvml;
    private static String stubReason;

    final Path root;
    private String ldLibraryPath;
    private String nvml = "libnvidia-ml-absent.so.1";
    private Supplier<List<GpuInfo>> nvidiaSmi = List::of;
    private boolean gpuBuild = true;
    private String platform = "linux-x86_64";

    FakeNvidiaMachine(Path root) {
        this.root = root;
    }

    FakeNvidiaMachine driver(String version) {
        write("proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  " + version
                + "  Sun Jul 20 01:12:15 UTC 2025\nGCC version:  gcc version 12.2.0 (Debian 12.2.0-14)\n");
        return this;
    }

    FakeNvidiaMachine procGpu(String bus, String model) {
        write("proc/driver/nvidia/gpus/" + bus + "/information", "Model: \t\t " + model
                + "\nIRQ:   \t\t 42\nGPU UUID: \t GPU-0000\nBus Type: \t PCIe\nDevice Minor: \t 0\n");
        return this;
    }

    /** Every library the CUDA build needs, in {@code folder}, except those named. */
    FakeNvidiaMachine cudaLibraries(String folder, String... except) {
        for (CudaLibraries.Needed needed : CudaLibraries.NEEDED) {
            if (!List.of(except).contains(needed.soname())) {
                write(folder.substring(1) + "/" + needed.soname(), "");
            }
        }
        return this;
    }

    /** An {@code /etc/ld.so.cache} listing {@code paths} the way glibc's does: header, entries, NUL-ended strings. */
    FakeNvidiaMachine linkerCache(String... paths) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        bytes.writeBytes("glibc-ld.so.cache1.1".getBytes(StandardCharsets.US_ASCII));
        bytes.writeBytes(new byte[] {3, 0, 0, 0, 0x7f, 0, 0, 0, 1, 2, 3, 4});
        for (String path : paths) {
            bytes.writeBytes(path.substring(path.lastIndexOf('/') + 1).getBytes(StandardCharsets.UTF_8));
            bytes.write(0);
            bytes.writeBytes(path.getBytes(StandardCharsets.UTF_8));
            bytes.write(0);
        }
        try {
            Files.createDirectories(root.resolve("etc"));
            Files.write(root.resolve("etc/ld.so.cache"), bytes.toByteArray());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return this;
    }

    FakeNvidiaMachine ldLibraryPath(String value) {
        this.ldLibraryPath = value;
        return this;
    }

    FakeNvidiaMachine nvidiaSmi(String csv) {
        this.nvidiaSmi = () -> NvidiaSmi.parse(csv);
        return this;
    }

    /** NVML from the stub (two GPUs: an H200 and a T4); the test is skipped where gcc cannot build it. */
    FakeNvidiaMachine stubNvml() {
        this.nvml = requireStubNvml().toString();
        return this;
    }

    FakeNvidiaMachine cpuBuildOnly() {
        this.gpuBuild = false;
        return this;
    }

    FakeNvidiaMachine platform(String name) {
        this.platform = name;
        return this;
    }

    CudaHost host() {
        boolean build = gpuBuild;
        return new CudaHost(root, ldLibraryPath, nvml, nvidiaSmi, () -> build, platform);
    }

    private void write(String relative, String text) {
        try {
            Path file = root.resolve(relative);
            Files.createDirectories(file.getParent());
            Files.writeString(file, text);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static synchronized Path requireStubNvml() {
        if (stubNvml == null && stubReason == null) {
            try {
                Path dir = Files.createDirectories(Path.of("target", "stub-nvml"));
                Path source = dir.resolve("stub_nvml.c");
                try (InputStream in = FakeNvidiaMachine.class.getResourceAsStream("/stub_nvml.c")) {
                    Files.copy(in, source, StandardCopyOption.REPLACE_EXISTING);
                }
                Path output = dir.resolve("libnvidia-ml-stub.so.1").toAbsolutePath();
                List<String> command = new ArrayList<>(List.of("gcc", "-shared", "-fPIC", "-O1", "-Wall", "-Werror",
                        "-o", output.toString(), source.toString()));
                Process gcc;
                try {
                    gcc = new ProcessBuilder(command).redirectErrorStream(true).start();
                } catch (IOException e) {
                    stubReason = "gcc is not installed, so the stub NVML cannot be built: " + e.getMessage();
                    Assumptions.abort(stubReason);
                    throw e;
                }
                String log = new String(gcc.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
                if (!gcc.waitFor(2, TimeUnit.MINUTES) || gcc.exitValue() != 0) {
                    throw new IllegalStateException("gcc failed on stub_nvml.c:\n" + log);
                }
                stubNvml = output;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
        }
        Assumptions.assumeTrue(stubNvml != null, stubReason);
        return stubNvml;
    }
}
