package dev.crucible.accelerator.mps;

import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.tensor.DType;
import java.util.Locale;

/**
 * Apple-silicon GPUs through libtorch's MPS device (macOS arm64 build of libtorch).
 *
 * <p>Detection needs only the OS name and architecture plus a look for the macOS arm64 natives jar on the
 * classpath; Metal itself is not touched.
 */
public class MpsBackend implements HardwareBackend<BackendEnvironment, DeviceModel> {
    static final String ID = "mps";
    static final String MAC_NATIVES = "org/bytedeco/pytorch/macosx-arm64/";

    private final String osName;
    private final String osArch;
    private final boolean hasMacNatives;

    public MpsBackend() {
        this(System.getProperty("os.name", ""), System.getProperty("os.arch", ""),
                MpsBackend.class.getClassLoader().getResource(MAC_NATIVES) != null);
    }

    MpsBackend(String osName, String osArch, boolean hasMacNatives) {
        this.osName = osName;
        this.osArch = osArch;
        this.hasMacNatives = hasMacNatives;
    }

    @Override
    public int spiVersion() {
        return SPI_VERSION;
    }

    @Override
    public String id() {
        return ID;
    }

    @Override
    public int priority() {
        return 20;
    }

    @Override
    public Probe detect() {
        boolean mac = osName.toLowerCase(Locale.ROOT).startsWith("mac");
        boolean arm = osArch.equals("aarch64") || osArch.equals("arm64");
        if (!mac || !arm) {
            return Probe.unavailable("MPS needs macOS on Apple silicon (this is " + osName + " " + osArch + ")");
        }
        if (!hasMacNatives) {
            return Probe.unavailable("Apple silicon found, but the macOS arm64 build of libtorch is not on the classpath "
                    + "(add org.bytedeco:pytorch:2.10.0-1.5.13:macosx-arm64 to lib/)");
        }
        return Probe.unavailable("Apple silicon and libtorch for macOS found, but this version of the mps backend "
                + "does not run models yet");
    }

    @Override
    public BackendEnvironment setupEnvironment(SetupRequest request) {
        throw new UserInputException("the mps backend cannot run models in this version: " + request.probe().reason());
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        // MPS has no fast bf16 matmul on M1/M2; fp16 is native.
        return checkpointDtype == DType.F16 ? DType.F16 : DType.F32;
    }

    @Override
    public String emptyCache(BackendEnvironment environment) {
        return "mps: nothing allocated";
    }
}
