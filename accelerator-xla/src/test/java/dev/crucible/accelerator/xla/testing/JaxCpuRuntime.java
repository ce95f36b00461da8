package dev.crucible.accelerator.xla.testing;

import dev.crucible.accelerator.xla.XlaRuntime;
import dev.crucible.accelerator.xla.exec.JaxCpuExecutor;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.api.backend.DeviceInfo;
import dev.crucible.api.backend.Probe;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The xla backend on jaxlib's CPU client ({@link JaxCpuExecutor}), selected with {@code crucible.xla.runtime=jaxlib-cpu}:
 * the whole backend (placement, bucketing, the decode loop, donation, LoRA factors as inputs, chunking, merge) runs on
 * real XLA numerics in tests. Test tree only; {@code crucible.xla.jaxlib.devices} sets the CPU device count (1).
 */
public final class JaxCpuRuntime implements XlaRuntime {
    public static final String NAME = "jaxlib-cpu";

    @Override
    public String name() {
        return NAME;
    }

    /** Available once the oracle venv exists (tests make it with {@link OracleVenv#require()} first). */
    @Override
    public Probe detect() {
        Path python = OracleVenv.repositoryRoot().resolve("target/venv/bin/python");
        if (!Files.isExecutable(python)) {
            return Probe.unavailable("jaxlib CPU test runtime: no oracle venv at " + python.getParent().getParent());
        }
        List<DeviceInfo> devices = new ArrayList<>();
        for (int i = 0; i < devices(); i++) {
            devices.add(new DeviceInfo(i, "jaxlib CPU device", OptionalLong.empty()));
        }
        return Probe.available("jaxlib 0.10.2 CPU client (test runtime)", devices, Map.of("platform", "cpu"));
    }

    /**
     * One jaxlib process per test JVM, shared by every environment the tests set up: an environment keeps its runtime
     * for the process, and each in-process CLI run makes one.
     */
    @Override
    public XlaExecutor open() {
        synchronized (SHARED) {
            int devices = devices();
            JaxCpuExecutor running = SHARED.get(devices);
            if (running == null || !running.isAlive()) {
                running = JaxCpuExecutor.start(devices);
                SHARED.put(devices, running);
            }
            return running;
        }
    }

    private static final java.util.Map<Integer, JaxCpuExecutor> SHARED = new java.util.HashMap<>();

    private static int devices() {
        return Integer.getInteger("crucible.xla.jaxlib.devices", 1);
    }
}
