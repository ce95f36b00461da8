package dev.crucible.torch;

import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DType;
import java.util.List;
import java.util.Map;

/**
 * The smallest backend a plugin author could write on {@link TorchBackend}: libtorch's CPU device. Tests use one
 * thread: on a shared two-core machine, OpenMP threads that wait at barriers for a descheduled peer make a step
 * up to a hundred times slower.
 */
class TestCpuBackend extends TorchBackend {

    TestCpuBackend(int threads) {
        useThreads(threads);
    }

    @Override
    protected String torchDevice() {
        return "cpu";
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
    public void setupEnvironment(SetupRequest request) {
        request.threads().ifPresent(this::useThreads);
    }

    @Override
    public DType chooseDtype(DType checkpointDtype) {
        return DType.F32;
    }

    @Override
    public String emptyCache() {
        return "nothing cached on the CPU";
    }
}
