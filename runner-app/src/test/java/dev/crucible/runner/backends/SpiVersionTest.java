package dev.crucible.runner.backends;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.tensor.DType;
import java.util.function.IntSupplier;
import org.junit.jupiter.api.Test;

/** A backend built for another SPI version is refused with one line naming it, its version and ours. */
class SpiVersionTest {

    @Test
    void aBackendBuiltForThisVersionIsTaken() {
        assertTrue(SpiVersion.refusal(new Versioned(() -> HardwareBackend.SPI_VERSION)).isEmpty());
    }

    @Test
    void anotherVersionIsRefusedByName() {
        assertEquals("backend 'npu' was built for backend SPI " + (HardwareBackend.SPI_VERSION + 1)
                        + ", this runner has SPI " + HardwareBackend.SPI_VERSION
                        + "; rebuild it against this runner's dev.crucible:api",
                SpiVersion.refusal(new Versioned(() -> HardwareBackend.SPI_VERSION + 1)).orElseThrow());
    }

    /** What calling spiVersion() on a class compiled before the method existed throws. */
    @Test
    void aBackendThatPredatesVersionsIsRefused() {
        assertEquals("backend 'npu' declares no backend SPI version (it predates them), this runner has SPI "
                        + HardwareBackend.SPI_VERSION + "; rebuild it against this runner's dev.crucible:api",
                SpiVersion.refusal(new Versioned(() -> {
                    throw new AbstractMethodError("spiVersion");
                })).orElseThrow());
    }

    private record Versioned(IntSupplier version) implements HardwareBackend<BackendEnvironment, DeviceModel> {
        @Override
        public int spiVersion() {
            return version.getAsInt();
        }

        @Override
        public String id() {
            return "npu";
        }

        @Override
        public int priority() {
            return 1;
        }

        @Override
        public Probe detect() {
            return Probe.unavailable("test");
        }

        @Override
        public BackendEnvironment setupEnvironment(SetupRequest request) {
            return request::device;
        }

        @Override
        public DType chooseDtype(DType checkpointDtype) {
            return DType.F32;
        }

        @Override
        public String emptyCache(BackendEnvironment environment) {
            return "";
        }
    }
}
