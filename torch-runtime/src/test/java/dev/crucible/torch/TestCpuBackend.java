package dev.crucible.torch;

import dev.crucible.api.backend.DeviceRequest;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.train.TrainingRequest;
import dev.crucible.api.train.TrainingSession;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The smallest backend a plugin author could write on {@link TorchBackend}: libtorch's CPU device. Tests use one
 * thread: on a shared two-core machine, OpenMP threads that wait at barriers for a descheduled peer make a step
 * up to a hundred times slower.
 */
class TestCpuBackend extends TorchBackend<TorchEnvironment> {

    private final int threads;

    TestCpuBackend(int threads) {
        this.threads = threads;
    }

    @Override
    public int spiVersion() {
        return SPI_VERSION;
    }

    @Override
    public String id() {
        return "cpu";
    }

    @Override
    public int priority() {
        return 10;
    }

    @Override
    public Probe detect() {
        return Probe.available("test", List.of(), Map.of());
    }

    @Override
    public TorchEnvironment setupEnvironment(SetupRequest request) {
        return new TorchEnvironment(request.device(), "cpu", OptionalInt.of(request.threads().orElse(threads)));
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        return DType.F32;
    }

    @Override
    public String emptyCache(TorchEnvironment environment) {
        return "nothing cached on the CPU";
    }

    /** The environment a run with {@code --device cpu} and no {@code --threads} sets up. */
    TorchEnvironment environment() {
        return setupEnvironment(new SetupRequest(DeviceRequest.parse("cpu"), detect(), OptionalInt.empty()));
    }

    /** {@link #shard} in {@link #environment()}. */
    TorchModel shard(ShardRequest request) {
        return shard(environment(), request);
    }

    /** {@link #startTraining} in {@link #environment()}. */
    TrainingSession startTraining(TrainingRequest request) {
        return startTraining(environment(), request);
    }
}
