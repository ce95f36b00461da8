package dev.crucible.accelerator.xla.exec;

import dev.crucible.accelerator.xla.pjrt.ClientOptions;
import dev.crucible.accelerator.xla.pjrt.CompileOptions;
import dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats;
import dev.crucible.accelerator.xla.pjrt.NamedValue;
import dev.crucible.accelerator.xla.pjrt.PjrtBuffer;
import dev.crucible.accelerator.xla.pjrt.PjrtClient;
import dev.crucible.accelerator.xla.pjrt.PjrtDevice;
import dev.crucible.accelerator.xla.pjrt.PjrtException;
import dev.crucible.accelerator.xla.pjrt.PjrtExecutable;
import dev.crucible.accelerator.xla.pjrt.PjrtLoadedExecutable;
import dev.crucible.accelerator.xla.pjrt.PjrtPlugin;
import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;

/** The product {@link XlaExecutor}: one PJRT client of a loaded plugin. */
public final class PjrtExecutor implements XlaExecutor {
    private final PjrtPlugin plugin;
    private final PjrtClient client;
    private final List<PjrtDevice> devices;

    private PjrtExecutor(PjrtPlugin plugin, PjrtClient client) {
        this.plugin = plugin;
        this.client = client;
        this.devices = client.addressableDevices();
    }

    /**
     * Creates a client of {@code plugin} with {@code options} (see {@link ClientOptions}). What keeps a client from
     * existing is the machine's or the user's to fix, so it is reported as one line: no device, or the options the
     * plugin rejected with its own words.
     */
    public static PjrtExecutor open(PjrtPlugin plugin, List<NamedValue> options) {
        try {
            return new PjrtExecutor(plugin, plugin.createClient(options));
        } catch (PjrtException e) {
            throw clientError(plugin, options, e);
        }
    }

    static UserInputException clientError(PjrtPlugin plugin, List<NamedValue> options, PjrtException e) {
        String file = plugin.library().getFileName().toString();
        String reason = e.pluginMessageLine();
        if (e.code() == PjrtException.NOT_FOUND && file.contains("tpu")) {
            return new UserInputException("no TPU: libtpu found no TPU chip on this machine (" + reason + ")", e);
        }
        if (e.code() == PjrtException.NOT_FOUND) {
            return new UserInputException("no device: the PJRT plugin " + file + " found none (" + reason + ")", e);
        }
        if (e.code() == PjrtException.INVALID_ARGUMENT && !options.isEmpty()) {
            String given = options.stream().map(o -> o.name() + "=" + o.valueText()).collect(Collectors.joining(";"));
            return new UserInputException("the PJRT plugin " + file + " rejected the client options " + given
                    + " (" + ClientOptions.ENV + "): " + reason, e);
        }
        return new UserInputException("cannot start the PJRT plugin " + file + ": " + e.codeName() + ": " + reason, e);
    }

    /** Running out of device memory is the user's to act on (smaller batch, more devices): one line. */
    private static RuntimeException runError(PjrtException e) {
        if (e.code() == PjrtException.RESOURCE_EXHAUSTED) {
            return new OutOfDeviceMemoryException("out of device memory: " + e.pluginMessageLine(), e);
        }
        return e;
    }

    @Override
    public String platform() {
        return client.platformName();
    }

    @Override
    public int deviceCount() {
        return devices.size();
    }

    @Override
    public java.util.OptionalLong deviceMemory(int device) {
        return devices.get(device).memoryStats().map(stats -> stats.bytesLimit()).orElse(java.util.OptionalLong.empty());
    }

    public PjrtClient client() {
        return client;
    }

    @Override
    public CompiledProgram compile(Program program) {
        CompileOptions options = program.compileOptions();
        if (program.partitions() > devices.size()) {
            throw new UserInputException(program.name() + " is split over " + program.partitions() + " devices; "
                    + plugin.library().getFileName() + " has " + devices.size());
        }
        if (options.partitions() > 1 && options.deviceAssignment().isEmpty()) {
            options = options.withDeviceAssignment(devices.subList(0, options.partitions()).stream()
                    .map(PjrtDevice::id).toList());
        }
        return new Loaded(program, client.compile(program.stablehlo(), options));
    }

    @Override
    public String fingerprint() {
        return client.platformName() + " " + client.platformVersion() + " (" + plugin.library().getFileName() + " "
                + plugin.apiVersion() + ")";
    }

    @Override
    public Optional<byte[]> serialize(CompiledProgram program) {
        try (PjrtExecutable compiled = ((Loaded) program).executable.executable()) {
            return Optional.of(compiled.serialize());
        } catch (PjrtException e) {
            if (e.code() == PjrtException.UNIMPLEMENTED) {
                return Optional.empty();
            }
            throw e;
        }
    }

    @Override
    public CompiledProgram deserialize(Program program, byte[] serialized) {
        return new Loaded(program, client.deserialize(serialized));
    }

    @Override
    public DeviceArray upload(HostTensor tensor, int device) {
        try {
            return new Array(client.upload(tensor.data(), tensor.dtype(), tensor.shape(), devices.get(device)), device);
        } catch (PjrtException e) {
            throw runError(e);
        }
    }

    @Override
    public List<List<DeviceArray>> execute(CompiledProgram program, List<List<DeviceArray>> argumentsPerDevice) {
        Loaded loaded = (Loaded) program;
        Program p = loaded.program();
        if (argumentsPerDevice.size() != p.partitions()) {
            throw new IllegalArgumentException(p.name() + " runs on " + p.partitions() + " devices, got "
                    + argumentsPerDevice.size() + " argument lists");
        }
        List<List<PjrtBuffer>> buffers = new ArrayList<>();
        for (int d = 0; d < argumentsPerDevice.size(); d++) {
            List<DeviceArray> list = argumentsPerDevice.get(d);
            p.manifest().checkArguments(p.name(), list);
            List<PjrtBuffer> deviceBuffers = new ArrayList<>();
            for (DeviceArray array : list) {
                if (array.device() != d) {
                    throw new IllegalArgumentException(p.name() + ": argument list " + d + " holds an array on device "
                            + array.device());
                }
                deviceBuffers.add(((Array) array).buffer);
            }
            buffers.add(deviceBuffers);
        }
        List<List<PjrtBuffer>> outputs;
        try {
            outputs = loaded.executable.execute(buffers, p.manifest().donations().keySet());
        } catch (PjrtException e) {
            throw runError(e);
        }
        List<List<DeviceArray>> results = new ArrayList<>();
        for (int d = 0; d < outputs.size(); d++) {
            int device = d;
            results.add(outputs.get(d).stream().map(b -> (DeviceArray) new Array(b, device)).toList());
        }
        return results;
    }

    @Override
    public HostTensor download(DeviceArray array, String name, Arena into) {
        PjrtBuffer buffer = ((Array) array).buffer;
        try {
            return new HostTensor(name, buffer.dtype(), buffer.shape(), buffer.toHost(into));
        } catch (PjrtException e) {
            throw runError(e);
        }
    }

    @Override
    public void close() {
        client.close();
    }

    private record Loaded(Program program, PjrtLoadedExecutable executable) implements CompiledProgram {
        @Override
        public Optional<CompiledMemoryStats> memoryStats() {
            try (PjrtExecutable compiled = executable.executable()) {
                return compiled.memoryStats();
            }
        }

        @Override
        public void close() {
            executable.close();
        }
    }

    private record Array(PjrtBuffer buffer, int device) implements DeviceArray {
        @Override
        public DType dtype() {
            return buffer.dtype();
        }

        @Override
        public long[] shape() {
            return buffer.shape();
        }

        @Override
        public boolean isReleased() {
            return buffer.isClosed();
        }

        @Override
        public void close() {
            buffer.close();
        }
    }
}
