package dev.crucible.runner.backends;

import dev.crucible.api.backend.BackendEnvironment;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.HardwareBackend;
import dev.crucible.api.backend.Probe;
import dev.crucible.api.backend.SetupRequest;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.tensor.DType;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;

/** A backend whose probe the test decides. */
record FakeBackend(String id, int priority, Supplier<Probe> probe, String alias)
        implements HardwareBackend<BackendEnvironment, DeviceModel> {

    static FakeBackend available(String id, int priority, int devices) {
        List<DeviceInfo> list = java.util.stream.IntStream.range(0, devices).mapToObj(i -> DeviceInfo.of(i, id + " device", 0)).toList();
        return new FakeBackend(id, priority, () -> Probe.available("ok", list, Map.of()), null);
    }

    static FakeBackend unavailable(String id, int priority, String reason) {
        return new FakeBackend(id, priority, () -> Probe.unavailable(reason), null);
    }

    @Override
    public int spiVersion() {
        return SPI_VERSION;
    }

    @Override
    public Probe detect() {
        return probe.get();
    }

    @Override
    public boolean answersTo(String name, Probe probe) {
        return name.equals(alias) && probe.available();
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
        return "nothing";
    }
}
