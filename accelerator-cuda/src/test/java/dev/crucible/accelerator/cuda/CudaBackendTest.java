package dev.crucible.accelerator.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import java.util.OptionalLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class CudaBackendTest {
    private static final String SMI_TWO_GPUS = """
            0, NVIDIA H200, 143771, 143000, 9.0
            1, NVIDIA H200, 143771, 100000, 9.0
            """;

    @TempDir
    Path root;

    private FakeNvidiaMachine machine() {
        return new FakeNvidiaMachine(root);
    }

    /** A machine the probe finds usable: driver 580, one GPU in /proc, every CUDA library in the toolkit's lib64. */
    private FakeNvidiaMachine working() {
        return machine().driver("580.65.06").procGpu("0000:01:00.0", "NVIDIA H200")
                .cudaLibraries("/usr/local/cuda/lib64");
    }

    private static Probe detect(FakeNvidiaMachine machine) {
        return new CudaBackend(machine.host(), Optional::empty).detect();
    }

    @Test
    void theCpuBuildOfLibtorchIsTheReasonWhenTheDriverIsThere() {
        Probe probe = detect(working().cpuBuildOnly());
        assertFalse(probe.available());
        assertEquals("this distribution has the CPU build of libtorch (rebuild with -Pcuda)", probe.reason());
        assertEquals("580.65.06", probe.details().get("driver"));
        assertEquals("1 (from /proc/driver/nvidia/gpus)", probe.details().get("gpus"));
    }

    @Test
    void withoutADriverTheDriverLeadsAndTheCpuBuildIsNamedBesideIt() {
        assertEquals("no NVIDIA driver (" + root.resolve("proc/driver/nvidia/version") + " not found); "
                + CudaBackend.CPU_BUILD_TOO, detect(machine().cpuBuildOnly()).reason());
    }

    @Test
    void thisDistributionReportsItsCpuBuildWithoutLoadingAnything() {
        Probe probe = new CudaBackend().detect();
        assertFalse(probe.available());
        assertEquals("CPU build only", probe.details().get("libtorch"));
        assertTrue(probe.reason().endsWith(CudaBackend.CPU_BUILD) || probe.reason().endsWith(CudaBackend.CPU_BUILD_TOO),
                probe.reason());
    }

    @Test
    void noDriverSaysWhichFileIsMissing() {
        Probe probe = detect(machine());
        assertEquals("no NVIDIA driver (" + root.resolve("proc/driver/nvidia/version") + " not found)", probe.reason());
    }

    @Test
    void onlyLinuxX8664HasTheCudaBuild() {
        assertEquals("the CUDA build of libtorch is published for linux-x86_64 only (this is linux-arm64)",
                detect(working().platform("linux-arm64")).reason());
    }

    @Test
    void aDriverWithoutGpus() {
        assertEquals("NVIDIA driver 580.65.06 is loaded but reports no GPU", detect(machine().driver("580.65.06")).reason());
    }

    @Test
    void aDriverTooOldForCuda13() {
        Probe probe = detect(working().driver("550.54.15"));
        assertEquals("NVIDIA driver 550.54.15; the CUDA build of libtorch needs CUDA 13 (driver 580 or newer)",
                probe.reason());
    }

    @Test
    void procAloneGivesNamesButNoMemory() {
        Probe probe = detect(working().procGpu("0000:02:00.0", "NVIDIA L4"));
        assertTrue(probe.available(), probe.reason());
        assertEquals("NVIDIA H200, NVIDIA L4, driver 580.65.06", probe.reason());
        assertEquals(List.of(new DeviceInfo(0, "NVIDIA H200", OptionalLong.empty()),
                new DeviceInfo(1, "NVIDIA L4", OptionalLong.empty())), probe.devices());
        assertEquals("unknown, unknown", probe.details().get("compute_capability"));
    }

    @Test
    void nvidiaSmiGivesMemoryAndComputeCapabilityWhenNvmlCannotBeOpened() {
        Probe probe = detect(working().nvidiaSmi(SMI_TWO_GPUS));
        assertEquals("2 × NVIDIA H200, driver 580.65.06", probe.reason());
        assertEquals(OptionalLong.of(143771L << 20), probe.devices().get(1).memoryBytes());
        assertEquals("9.0, 9.0", probe.details().get("compute_capability"));
        assertEquals("2 (from nvidia-smi)", probe.details().get("gpus"));
    }

    @Test
    void nvmlGivesEveryGpuWithMemoryComputeCapabilityAndTheCudaVersion() {
        Probe probe = detect(working().stubNvml());
        assertTrue(probe.available(), probe.reason());
        assertEquals("NVIDIA H200, Tesla T4, driver 580.65.06 (CUDA 13.0)", probe.reason());
        assertEquals(List.of(new DeviceInfo(0, "NVIDIA H200", OptionalLong.of(150754820096L)),
                new DeviceInfo(1, "Tesla T4", OptionalLong.of(16106127360L))), probe.devices());
        assertEquals("9.0, 7.5", probe.details().get("compute_capability"));
        assertEquals("2 (from NVML)", probe.details().get("gpus"));
    }

    @Test
    void aMissingCudaRuntimeIsOneLine() {
        FakeNvidiaMachine bare = machine().driver("580.65.06").procGpu("0000:01:00.0", "NVIDIA H200")
                .cudaLibraries("/opt/cuda/lib64", CudaLibraries.RUNTIME);
        assertEquals("libcudart.so.13 (the CUDA 13 runtime) is not found: install CUDA 13 or add its lib64 folder to"
                + " LD_LIBRARY_PATH", detect(bare.ldLibraryPath("/opt/cuda/lib64")).reason());
    }

    @Test
    void missingCudnnAndNcclAreNamedWithTheirPackages() {
        FakeNvidiaMachine machine = machine().driver("580.65.06").procGpu("0000:01:00.0", "NVIDIA H200")
                .cudaLibraries("/opt/cuda/lib64", "libcudnn.so.9", "libcudnn_cnn.so.9", "libnccl.so.2")
                .ldLibraryPath("/opt/other:/opt/cuda/lib64");
        assertEquals("the CUDA 13 runtime is found but not libcudnn.so.9, libcudnn_cnn.so.9 (cuDNN 9); libnccl.so.2"
                + " (NCCL 2): install them or add their folders to LD_LIBRARY_PATH", detect(machine).reason());
    }

    @Test
    void librariesResolveThroughTheLinkersCache() {
        FakeNvidiaMachine machine = machine().driver("580.65.06").procGpu("0000:01:00.0", "NVIDIA H200")
                .cudaLibraries("/opt/vendor/cuda-13/lib");
        assertTrue(detect(machine).reason().startsWith("libcudart.so.13"), "not on any search path yet");
        String[] cached = CudaLibraries.NEEDED.stream().map(n -> "/opt/vendor/cuda-13/lib/" + n.soname())
                .toArray(String[]::new);
        Probe probe = detect(machine.linkerCache(cached));
        assertTrue(probe.available(), probe.reason());
        assertEquals("15 of 15 found, libcudart.so.13 at " + root.resolve("opt/vendor/cuda-13/lib/libcudart.so.13"),
                probe.details().get("cuda_libraries"));
    }

    private static CudaEnvironment setUp(Probe probe, String device) {
        return new CudaBackend(null, Optional::empty).setupEnvironment(new SetupRequest(DeviceRequest.parse(device),
                probe, OptionalInt.empty()));
    }

    @Test
    void cudaNSelectsThatGpuAndCudaAloneMayUseThemAll() {
        Probe probe = detect(working().stubNvml());
        CudaEnvironment second = setUp(probe, "cuda:1");
        assertEquals("cuda:1", second.torchDevice());
        assertEquals(List.of("Tesla T4"), second.gpus().stream().map(GpuInfo::name).toList());
        assertEquals(75, second.gpus().getFirst().computeCapability());
        CudaEnvironment all = setUp(probe, "cuda");
        assertEquals("cuda:0", all.torchDevice());
        assertEquals(2, all.gpus().size());
        assertEquals(dev.crucible.torch.LibtorchBuild.CUDA, all.build());
        UserInputException missing = assertThrows(UserInputException.class, () -> setUp(probe, "cuda:7"));
        assertEquals("device 'cuda:7' does not exist: this machine has 2 NVIDIA GPU(s)", missing.getMessage());
    }

    @Test
    void autoDtypeTriesBf16OnlyWhereTheGpuComputesIt() {
        Probe probe = detect(working().stubNvml());
        CudaBackend backend = new CudaBackend(null, Optional::empty);
        DType chosen = backend.chooseDtype(DType.BF16);
        assertEquals(DType.BF16, chosen);
        assertEquals(List.of(DType.BF16, DType.F16, DType.F32), backend.dtypeCandidates(setUp(probe, "cuda:0"), chosen));
        assertEquals(List.of(DType.F16, DType.F32), backend.dtypeCandidates(setUp(probe, "cuda:1"), chosen),
                "a T4 (7.5) has no native bfloat16");
        assertEquals(List.of(DType.F16, DType.F32), backend.dtypeCandidates(setUp(probe, "cuda"), chosen),
                "a run that may use both GPUs computes as the weaker one");
        assertEquals(DType.F32, backend.chooseDtype(DType.F32));
    }
}
