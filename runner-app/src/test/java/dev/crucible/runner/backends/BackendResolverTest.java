package dev.crucible.runner.backends;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.runner.plugins.Discovered;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.junit.jupiter.api.Test;

class BackendResolverTest {

    private static BackendResolver resolver(HardwareBackend<?, ?>... backends) {
        List<Discovered<HardwareBackend<?, ?>>> found = java.util.Arrays.stream(backends)
                .map(b -> new Discovered<HardwareBackend<?, ?>>(b, "test")).toList();
        return new BackendResolver(BackendProber.probeAll(found, Duration.ofSeconds(2)));
    }

    private static final HardwareBackend<?, ?> CPU = FakeBackend.available("cpu", 10, 1);
    private static final HardwareBackend<?, ?> CUDA_MISSING = FakeBackend.unavailable("cuda", 40, "no NVIDIA driver (/proc/driver/nvidia/version not found)");
    private static final HardwareBackend<?, ?> XLA_MISSING = FakeBackend.unavailable("xla", 50, "no PJRT plugin found: set PJRT_PLUGIN_LIBRARY_PATH or TPU_LIBRARY_PATH");

    @Test
    void autoTakesTheHighestPriorityAvailableBackend() {
        HardwareBackend<?, ?> cuda = FakeBackend.available("cuda", 40, 2);
        BackendResolver r = resolver(CPU, cuda, XLA_MISSING);
        assertEquals("cuda", r.resolve(DeviceRequest.AUTO, Optional.empty()).id());
    }

    @Test
    void priorityVariableReordersAuto() {
        HardwareBackend<?, ?> cuda = FakeBackend.available("cuda", 40, 1);
        BackendResolver r = resolver(CPU, cuda);
        assertEquals("cpu", r.resolve(DeviceRequest.AUTO, Optional.of("cpu,cuda")).id());
        // Names it does not list keep their default order after the listed ones.
        assertEquals("cuda", r.resolve(DeviceRequest.AUTO, Optional.of("xla")).id());
        // A listed backend that is unavailable is skipped.
        assertEquals("cpu", resolver(CPU, CUDA_MISSING).resolve(DeviceRequest.AUTO, Optional.of("cuda,cpu")).id());
    }

    @Test
    void unavailableExplicitDeviceIsOneLineListingWhatWasFound() {
        BackendResolver r = resolver(CPU, CUDA_MISSING, XLA_MISSING);
        UserInputException e = assertThrows(UserInputException.class, () -> r.resolve(DeviceRequest.parse("tpu"), Optional.empty()));
        assertEquals("device 'tpu' is not available (found: xla(no PJRT plugin found), cuda(no NVIDIA driver), cpu(ok))", e.getMessage());
        UserInputException cuda = assertThrows(UserInputException.class, () -> r.resolve(DeviceRequest.parse("cuda:1"), Optional.empty()));
        assertEquals("device 'cuda:1' is not available (found: xla(no PJRT plugin found), cuda(no NVIDIA driver), cpu(ok))", cuda.getMessage());
        // xpu has no backend at all: still a known name, so the same sentence.
        assertThrows(UserInputException.class, () -> r.resolve(DeviceRequest.parse("xpu"), Optional.empty()));
    }

    @Test
    void tpuSelectsTheXlaBackendOnlyWhenItAnswersToIt() {
        HardwareBackend<?, ?> xlaOnTpu = new FakeBackend("xla", 50, () -> Probe.available("TPU v5e", List.of(), Map.of()), "tpu");
        assertEquals("xla", resolver(CPU, xlaOnTpu).resolve(DeviceRequest.parse("tpu"), Optional.empty()).id());
        HardwareBackend<?, ?> xlaOnGpu = new FakeBackend("xla", 50, () -> Probe.available("CUDA PJRT", List.of(), Map.of()), "not-tpu");
        assertThrows(UserInputException.class, () -> resolver(CPU, xlaOnGpu).resolve(DeviceRequest.parse("tpu"), Optional.empty()));
    }

    @Test
    void deviceIndexMustExist() {
        HardwareBackend<?, ?> cuda = FakeBackend.available("cuda", 40, 2);
        BackendResolver r = resolver(CPU, cuda);
        assertEquals("cuda", r.resolve(DeviceRequest.parse("cuda:1"), Optional.empty()).id());
        UserInputException e = assertThrows(UserInputException.class, () -> r.resolve(DeviceRequest.parse("cuda:2"), Optional.empty()));
        assertEquals("device 'cuda:2' is not available (cuda has 2 devices: cuda:0..cuda:1)", e.getMessage());
    }

    @Test
    void unknownAndMalformedNamesAreUsageErrors() {
        BackendResolver r = resolver(CPU);
        UserInputException e = assertThrows(UserInputException.class, () -> r.resolve(DeviceRequest.parse("gpu"), Optional.empty()));
        assertEquals("unknown device 'gpu'; use auto or one of cpu, cuda, mps, tpu, xla, xpu", e.getMessage());
        assertThrows(UserInputException.class, () -> DeviceRequest.parse("cuda:x"));
        assertThrows(UserInputException.class, () -> DeviceRequest.parse(""));
        assertEquals(DeviceRequest.parse("CUDA:3").toString(), "cuda:3");
    }

    @Test
    void probesThatThrowOrHangAreReportedUnavailableAndNeverStopTheRun() {
        HardwareBackend<?, ?> throwing = new FakeBackend("cuda", 40, () -> {
            throw new IllegalStateException("driver exploded\nsecond line");
        }, null);
        HardwareBackend<?, ?> hanging = new FakeBackend("xla", 50, () -> {
            try {
                Thread.sleep(60_000);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            return Probe.available("late", List.of(), Map.of());
        }, null);
        List<Discovered<HardwareBackend<?, ?>>> found = List.of(new Discovered<>(throwing, "t"), new Discovered<>(hanging, "t"), new Discovered<>(CPU, "t"));
        long start = System.nanoTime();
        List<ProbedBackend> probed = BackendProber.probeAll(found, Duration.ofMillis(300));
        assertEquals(List.of("xla", "cuda", "cpu"), probed.stream().map(ProbedBackend::id).toList());
        assertEquals("detect() took longer than 300 ms", probed.get(0).probe().reason());
        assertEquals("detect() failed with IllegalStateException: driver exploded second line", probed.get(1).probe().reason());
        assertEquals(true, probed.get(2).probe().available());
        assertEquals(true, (System.nanoTime() - start) < 5_000_000_000L, "a hanging probe must not hold the run");
        assertEquals("cpu", new BackendResolver(probed).resolve(DeviceRequest.AUTO, Optional.empty()).id());
    }
}
