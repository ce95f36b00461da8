package dev.crucible.accelerator.cuda;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.Probe;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class CudaBackendTest {

    private static CudaBackend.NvidiaProbe fake(Optional<String> driver, List<DeviceInfo> gpus, boolean natives) {
        return new CudaBackend.NvidiaProbe() {
            @Override
            public Result probe() {
                return new Result(driver, gpus, "/proc/driver/nvidia/version not found");
            }

            @Override
            public boolean hasGpuNatives() {
                return natives;
            }
        };
    }

    @Test
    void noDriver() {
        Probe p = new CudaBackend(fake(Optional.empty(), List.of(), false)).detect();
        assertFalse(p.available());
        assertEquals("no NVIDIA driver (/proc/driver/nvidia/version not found)", p.reason());
    }

    @Test
    void driverWithoutTheGpuBuildOfLibtorchSaysWhichJarToAdd() {
        Probe p = new CudaBackend(fake(Optional.of("550.54"), List.of(DeviceInfo.of(0, "NVIDIA H200", 141L << 30)), false)).detect();
        assertFalse(p.available());
        assertTrue(p.reason().contains("linux-x86_64-gpu"), p.reason());
        assertEquals("550.54", p.details().get("driver"));
    }

    @Test
    void thisMachineProbesWithoutLoadingAnything() {
        Probe p = new CudaBackend().detect();
        assertFalse(p.reason().isBlank());
        assertFalse(p.reason().contains("\n"));
    }
}
