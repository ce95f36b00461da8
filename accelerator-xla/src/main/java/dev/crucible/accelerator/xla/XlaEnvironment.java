package dev.crucible.accelerator.xla;

import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.accelerator.xla.lower.BatchPlanner;
import dev.crucible.accelerator.xla.lower.ProgramCache;
import dev.crucible.accelerator.xla.lower.Sharding;
import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import dev.crucible.api.UserInputException;
import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.io.OutputLocation;
import dev.crucible.api.model.ModelConfig;
import java.nio.file.Path;
import java.util.Optional;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.OptionalLong;
import java.util.function.Supplier;

/**
 * What the xla backend's set-up chose: the runtime to start (a PJRT plugin's client, made on first use and kept for
 * the process), how many devices a model is split over ({@code --xla-devices N}, or {@code auto}: the fewest, a power
 * of two, whose memory holds the model) and how ({@code --strategy fsdp}). One device keeps programs out of SPMD.
 * Nothing here touches a device until a model is placed.
 */
public final class XlaEnvironment implements BackendEnvironment {
    /** What a placement may take of a device's memory for weights; the rest is for the KV cache and activations. */
    private static final double WEIGHT_SHARE = 2.0 / 3;

    private final DeviceRequest device;
    private final Supplier<XlaExecutor> runtime;
    private final OptionalInt devices;
    private final String strategy;
    private final Optional<Path> cacheFolder;
    private XlaExecutor executor;
    private ProgramCache programs;

    /**
     * @param devices devices to split a model over, or empty for {@code auto}
     */
    XlaEnvironment(DeviceRequest device, Supplier<XlaExecutor> runtime, OptionalInt devices, String strategy) {
        this(device, runtime, devices, strategy, Optional.empty());
    }

    /** @param cacheFolder where compiled programs are kept across runs ({@code --xla-cache}), or empty */
    XlaEnvironment(DeviceRequest device, Supplier<XlaExecutor> runtime, OptionalInt devices, String strategy,
                   Optional<Path> cacheFolder) {
        this.device = Objects.requireNonNull(device, "device is null");
        this.runtime = Objects.requireNonNull(runtime, "runtime is null");
        this.devices = Objects.requireNonNull(devices, "devices is null");
        this.strategy = Objects.requireNonNull(strategy, "strategy is null");
        this.cacheFolder = Objects.requireNonNull(cacheFolder, "cacheFolder is null");
    }

    /** Reads {@code --xla-devices} and {@code --strategy} from the request; a bad value is the user's mistake. */
    static XlaEnvironment of(DeviceRequest device, Supplier<XlaExecutor> runtime) {
        String count = device.option("xla-devices").orElse("auto");
        OptionalInt devices = OptionalInt.empty();
        if (!count.equals("auto")) {
            try {
                devices = OptionalInt.of(Integer.parseInt(count));
            } catch (NumberFormatException e) {
                devices = OptionalInt.of(0);
            }
            if (devices.getAsInt() < 1) {
                throw new UserInputException("--xla-devices '" + count + "' is not auto or a number of devices (1, 2, 4, ...)");
            }
        }
        String strategy = device.option("strategy").orElse("fsdp");
        if (!strategy.equals("fsdp")) {
            throw new UserInputException("--strategy '" + strategy + "' is not one of: fsdp");
        }
        // Made (or checked writable) now, before any work: a folder the user cannot write to is their mistake.
        Optional<Path> cache = device.option("xla-cache").map(Path::of).map(OutputLocation::createFolder);
        return new XlaEnvironment(device, runtime, devices, strategy, cache);
    }

    @Override
    public DeviceRequest device() {
        return device;
    }

    /** The runtime's executor, started on first use. */
    public synchronized XlaExecutor executor() {
        if (executor == null) {
            executor = runtime.get();
        }
        return executor;
    }

    /**
     * The compiled programs of this process, shared by every model placed here (same shapes, same programs: the
     * weights are arguments), kept in the {@code --xla-cache} folder where there is one.
     */
    public synchronized ProgramCache programs() {
        if (programs == null) {
            programs = new ProgramCache(executor(), cacheFolder, System.err::println);
        }
        return programs;
    }

    /** How {@code config}'s model in {@code dtype} is split: the devices asked for, or the fewest that hold it. */
    Sharding sharding(ModelConfig config, DType dtype) {
        XlaExecutor runtime = executor();
        int available = runtime.deviceCount();
        int count;
        if (devices.isPresent()) {
            count = devices.getAsInt();
            if (count > available) {
                throw new UserInputException("--xla-devices " + count + ": the " + runtime.platform() + " runtime has "
                        + available + " device" + (available == 1 ? "" : "s"));
            }
        } else {
            count = fewestThatHold(config, dtype, available, runtime.deviceMemory(0));
        }
        return Sharding.fsdp(count, Partitioner.SHARDY);
    }

    /** The fewest devices, a power of two, whose memory holds the weights with room to spare; 1 when unknown. */
    static int fewestThatHold(ModelConfig config, DType dtype, int available, OptionalLong deviceBytes) {
        if (deviceBytes.isEmpty()) {
            return 1;
        }
        int count = 1;
        while (count * 2 <= available
                && BatchPlanner.weightBytesPerDevice(config, dtype, count) > WEIGHT_SHARE * deviceBytes.getAsLong()) {
            count *= 2;
        }
        return count;
    }

    String strategy() {
        return strategy;
    }

    @Override
    public String toString() {
        return "XlaEnvironment[" + device + ", devices " + (devices.isPresent() ? devices.getAsInt() : "auto") + ", "
                + strategy + "]";
    }
}
