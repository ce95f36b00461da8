package dev.crucible.accelerator.mps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingMethod;
import dev.crucible.torch.LibtorchBuild;
import dev.crucible.torch.TorchEnvironment;
import java.util.List;
import java.util.Optional;
import java.util.OptionalInt;
import org.junit.jupiter.api.Test;

class MpsBackendTest {
    private static final MpsBackend SONOMA = new MpsBackend("Mac OS X", "14.5", "aarch64", true);
    private static final MpsBackend VENTURA = new MpsBackend("Mac OS X", "13.6.1", "aarch64", true);

    @Test
    void needsMacOsOnAppleSilicon() {
        assertEquals("MPS needs macOS on Apple silicon (this is Linux amd64)",
                new MpsBackend("Linux", "6.1", "amd64", false).detect().reason());
        assertEquals("MPS needs macOS on Apple silicon (this is Mac OS X x86_64)",
                new MpsBackend("Mac OS X", "14.5", "x86_64", false).detect().reason());
    }

    @Test
    void thisMachineIsNotAMac() {
        Probe probe = new MpsBackend().detect();
        assertFalse(probe.available());
        assertTrue(probe.reason().startsWith("MPS needs macOS on Apple silicon (this is "), probe.reason());
    }

    @Test
    void aMacWithoutTheMacNativesSaysHowToBuildThem() {
        assertEquals("this distribution has no macOS arm64 build of libtorch (rebuild with -Pmacos-arm64)",
                new MpsBackend("Mac OS X", "14.5", "aarch64", false).detect().reason());
    }

    @Test
    void appleSiliconWithTheMacNativesIsAvailable() {
        Probe probe = SONOMA.detect();
        assertTrue(probe.available());
        assertEquals("Apple silicon, macOS 14.5 (the MPS device is checked when libtorch loads)", probe.reason());
        assertEquals(1, probe.devices().size());
    }

    @Test
    void bfloat16OnlyFromMacOs14() {
        assertEquals(DType.BF16, SONOMA.chooseDtype(DType.BF16));
        assertEquals(DType.F16, VENTURA.chooseDtype(DType.BF16));
        assertEquals(DType.F16, VENTURA.chooseDtype(DType.F16));
        assertEquals(DType.F32, VENTURA.chooseDtype(DType.F32));
        TorchEnvironment environment = SONOMA.setupEnvironment(new SetupRequest(DeviceRequest.parse("mps"),
                SONOMA.detect(), OptionalInt.empty()));
        assertEquals(List.of(DType.BF16, DType.F16, DType.F32), SONOMA.dtypeCandidates(environment, DType.BF16));
        assertEquals(List.of(DType.F16, DType.F32), VENTURA.dtypeCandidates(environment, DType.F16));
    }

    @Test
    void setUpNamesTheMpsDeviceAndTheMacBuild() {
        TorchEnvironment environment = SONOMA.setupEnvironment(new SetupRequest(DeviceRequest.parse("mps"),
                SONOMA.detect(), OptionalInt.empty()));
        assertEquals("mps", environment.torchDevice());
        assertEquals(LibtorchBuild.DEFAULT, environment.build());
        UserInputException e = assertThrows(UserInputException.class, () -> SONOMA.setupEnvironment(
                new SetupRequest(DeviceRequest.parse("mps:1"), SONOMA.detect(), OptionalInt.empty())));
        assertEquals("device 'mps:1' does not exist: the mps backend has one device, mps:0", e.getMessage());
    }

    @Test
    void qloraIsRefusedWithAReasonAndLoraIsNot() {
        assertEquals(Optional.of(MpsBackend.QLORA_REFUSED), SONOMA.trainingUnsupported(TrainingMethod.QLORA));
        assertEquals(Optional.empty(), SONOMA.trainingUnsupported(TrainingMethod.LORA));
    }

    @Test
    void emptyCacheBeforeAnyModelSaysSo() {
        assertEquals("mps: nothing cached (no model has been loaded)", SONOMA.emptyCache(null));
    }
}
