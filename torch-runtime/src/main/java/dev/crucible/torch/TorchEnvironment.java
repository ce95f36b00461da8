package dev.crucible.torch;

import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.DeviceRequest;
import java.util.Objects;
import java.util.OptionalInt;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * What a libtorch backend's set-up chose: the build of libtorch the process loads, the libtorch device string models
 * are placed on and the intra-op thread count (empty: libtorch's default). Made by {@code setupEnvironment} without
 * touching libtorch; libtorch is loaded and the threads applied when the environment is first
 * {@link #activate() activated}. A backend that needs more (the GPUs a run may use) extends it.
 */
public class TorchEnvironment implements BackendEnvironment {

    private final DeviceRequest device;
    private final LibtorchBuild build;
    private final String torchDevice;
    private final OptionalInt threads;
    private final AtomicBoolean activated = new AtomicBoolean();

    /**
     * @param torchDevice a libtorch device string: {@code cpu}, {@code cuda:1}, {@code mps}
     * @param threads     intra-op CPU threads ({@code at::set_num_threads} and OpenBLAS's pool), empty for the default
     */
    public TorchEnvironment(DeviceRequest device, String torchDevice, OptionalInt threads) {
        this(device, LibtorchBuild.DEFAULT, torchDevice, threads);
    }

    /** @param build the natives this process loads: {@link LibtorchBuild#CUDA} for {@code cuda:N} */
    public TorchEnvironment(DeviceRequest device, LibtorchBuild build, String torchDevice, OptionalInt threads) {
        this.device = Objects.requireNonNull(device, "device is null");
        this.build = Objects.requireNonNull(build, "build is null");
        this.torchDevice = Objects.requireNonNull(torchDevice, "torchDevice is null");
        this.threads = Objects.requireNonNull(threads, "threads is null");
        if (threads.isPresent() && threads.getAsInt() < 1) {
            throw new IllegalArgumentException("threads must be at least 1, got " + threads.getAsInt());
        }
    }

    @Override
    public DeviceRequest device() {
        return device;
    }

    public LibtorchBuild build() {
        return build;
    }

    public String torchDevice() {
        return torchDevice;
    }

    public OptionalInt threads() {
        return threads;
    }

    /**
     * Loads libtorch and, the first time, applies the thread count. libtorch's thread count is one per process: a
     * placed model that runs its ops on fewer threads sets its own count when it is placed, and activating the
     * environment again later leaves that in place.
     */
    public void activate() {
        TorchRuntime.load(build);
        if (activated.compareAndSet(false, true)) {
            threads.ifPresent(TorchRuntime::setThreads);
        }
    }

    @Override
    public String toString() {
        return "TorchEnvironment[" + build.name() + ", " + torchDevice + ", threads " + (threads.isPresent() ? threads.getAsInt() : "default")
                + "]";
    }
}
