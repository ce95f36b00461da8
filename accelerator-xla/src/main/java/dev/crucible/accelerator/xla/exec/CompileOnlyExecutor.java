package dev.crucible.accelerator.xla.exec;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.function.Function;

/**
 * An executor that compiles and runs nothing real: what {@code runner lower} traces the backend with, so that it
 * sees exactly the programs a run would compile, for any number of devices, without a device or the weights'
 * values. Arrays are shapes; an execution returns arrays of its results' shapes; a read gives zeros (a greedy
 * decode then generates token 0 until its budget is spent). Each program goes to {@code compiler} (a topology
 * compile where a plugin can do one, else nothing), whose memory figures the compiled program reports.
 */
public final class CompileOnlyExecutor implements XlaExecutor {
    private final String platform;
    private final int devices;
    private final Function<Program, Optional<dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats>> compiler;

    /**
     * @param compiler compiles one program (or not) and returns its per-device memory, where known
     */
    public CompileOnlyExecutor(String platform, int devices,
                               Function<Program, Optional<dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats>> compiler) {
        this.platform = Objects.requireNonNull(platform, "platform is null");
        this.devices = devices;
        this.compiler = Objects.requireNonNull(compiler, "compiler is null");
    }

    @Override
    public String platform() {
        return platform;
    }

    @Override
    public int deviceCount() {
        return devices;
    }

    @Override
    public boolean computes() {
        return false;
    }

    @Override
    public CompiledProgram compile(Program program) {
        Optional<dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats> memory = compiler.apply(program);
        return new CompiledProgram() {
            @Override
            public Program program() {
                return program;
            }

            @Override
            public Optional<dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats> memoryStats() {
                return memory;
            }

            @Override
            public void close() {
            }
        };
    }

    @Override
    public DeviceArray upload(HostTensor tensor, int device) {
        return placeholder(tensor.dtype(), tensor.shape(), device);
    }

    @Override
    public DeviceArray placeholder(DType dtype, long[] shape, int device) {
        Objects.checkIndex(device, devices);
        return new Shape(dtype, shape.clone(), device);
    }

    @Override
    public List<List<DeviceArray>> execute(CompiledProgram program, List<List<DeviceArray>> argumentsPerDevice) {
        Program p = program.program();
        List<List<DeviceArray>> outputs = new ArrayList<>();
        for (int d = 0; d < argumentsPerDevice.size(); d++) {
            p.manifest().checkArguments(p.name(), argumentsPerDevice.get(d));
            List<DeviceArray> results = new ArrayList<>();
            for (TensorSpec result : p.manifest().results()) {
                results.add(new Shape(result.dtype(), result.shape(), d));
            }
            outputs.add(results);
        }
        return outputs;
    }

    @Override
    public HostTensor download(DeviceArray array, String name, Arena into) {
        long bytes = array.dtype().byteSize();
        for (long extent : array.shape()) {
            bytes *= extent;
        }
        return new HostTensor(name, array.dtype(), array.shape(), into.allocate(Math.max(1, bytes), 8).asSlice(0, bytes));
    }

    @Override
    public void close() {
    }

    private record Shape(DType dtype, long[] shape, int device) implements DeviceArray {
        @Override
        public long[] shape() {
            return shape.clone();
        }

        @Override
        public boolean isReleased() {
            return false;
        }

        @Override
        public void close() {
        }
    }
}
