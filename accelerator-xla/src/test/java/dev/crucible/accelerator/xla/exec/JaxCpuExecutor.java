package dev.crucible.accelerator.xla.exec;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.accelerator.xla.pjrt.CompiledMemoryStats;
import dev.crucible.accelerator.xla.testing.OracleVenv;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;

/**
 * An {@link XlaExecutor} on real XLA numerics without a device: jaxlib 0.10.2's CPU client in one long-lived Python
 * process ({@code jax_cpu_executor.py} of the test resources) that keeps the arrays and executables, reached through
 * a pipe. {@code devices} CPU devices are made (XLA's forced host device count), so SPMD programs run too. Test tree
 * only: PJRT is the product path. Skips the test where the oracle venv cannot be made.
 */
public final class JaxCpuExecutor implements XlaExecutor {
    private static final ObjectMapper JSON = new ObjectMapper();

    private final Process process;
    private final OutputStream requests;
    private final DataInputStream replies;
    private final int devices;
    private final String platform;
    private final Set<Remote> live = new HashSet<>();
    private boolean closed;

    private JaxCpuExecutor(Process process, int devices) throws IOException {
        this.process = process;
        this.requests = process.getOutputStream();
        this.replies = new DataInputStream(new BufferedInputStream(process.getInputStream()));
        JsonNode ready = readReply();
        this.devices = ready.get("devices").asInt();
        this.platform = ready.get("platform").asText();
        if (this.devices != devices) {
            throw new IllegalStateException("asked jaxlib for " + devices + " CPU devices, got " + this.devices);
        }
    }

    /** Starts the helper process with {@code devices} CPU devices (about 3 s with the jax import). */
    public static JaxCpuExecutor start(int devices) {
        Path python = OracleVenv.require();
        try {
            Path dir = Files.createDirectories(Path.of("target", "jax-cpu-executor").toAbsolutePath());
            Path script = dir.resolve("jax_cpu_executor.py");
            try (InputStream in = JaxCpuExecutor.class.getResourceAsStream("/jax_cpu_executor.py")) {
                Files.copy(in, script, StandardCopyOption.REPLACE_EXISTING);
            }
            ProcessBuilder builder = new ProcessBuilder(python.toString(), script.toString(), Integer.toString(devices))
                    .redirectError(ProcessBuilder.Redirect.appendTo(dir.resolve("stderr.log").toFile()));
            builder.environment().put("TPU_SKIP_MDS_QUERY", "1");
            return new JaxCpuExecutor(builder.start(), devices);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot start the jaxlib helper (see target/jax-cpu-executor/stderr.log)", e);
        }
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
    public CompiledProgram compile(Program program) {
        ObjectNode request = JSON.createObjectNode().put("op", "compile").put("text", program.stablehlo())
                .put("partitions", program.partitions());
        // jaxlib parses the same CompileOptionsProto bytes the PJRT path sends.
        JsonNode reply = call(request, program.compileOptions().toProto());
        return remember(new RemoteProgram(this, reply.get("id").asLong(), program));
    }

    @Override
    public String fingerprint() {
        return platform + " jaxlib 0.10.2, " + devices + " devices";
    }

    @Override
    public Optional<byte[]> serialize(CompiledProgram compiled) {
        long id = ((RemoteProgram) compiled).id();
        JsonNode reply = call(JSON.createObjectNode().put("op", "serialize").put("program", id), new byte[0]);
        return Optional.of(readBytes(reply.get("bytes").asInt()));
    }

    @Override
    public CompiledProgram deserialize(Program program, byte[] serialized) {
        ObjectNode request = JSON.createObjectNode().put("op", "deserialize").put("partitions", program.partitions());
        request.put("options", java.util.HexFormat.of().formatHex(program.compileOptions().toProto()));
        JsonNode reply = call(request, serialized);
        return remember(new RemoteProgram(this, reply.get("id").asLong(), program));
    }

    @Override
    public DeviceArray upload(HostTensor tensor, int device) {
        ObjectNode request = JSON.createObjectNode().put("op", "upload").put("dtype", tensor.dtype().name())
                .put("device", device);
        long[] shape = tensor.shape();
        var dims = request.putArray("shape");
        for (long dim : shape) {
            dims.add(dim);
        }
        JsonNode reply = call(request, tensor.data().toArray(ValueLayout.JAVA_BYTE));
        return remember(new RemoteArray(this, reply.get("id").asLong(), tensor.dtype(), shape, device));
    }

    @Override
    public List<List<DeviceArray>> execute(CompiledProgram compiled, List<List<DeviceArray>> argumentsPerDevice) {
        RemoteProgram program = (RemoteProgram) compiled;
        Program p = program.program;
        if (argumentsPerDevice.size() != p.partitions()) {
            throw new IllegalArgumentException(p.name() + " runs on " + p.partitions() + " devices, got "
                    + argumentsPerDevice.size() + " argument lists");
        }
        ObjectNode request = JSON.createObjectNode().put("op", "execute").put("program", program.id());
        var lists = request.putArray("args");
        for (int d = 0; d < argumentsPerDevice.size(); d++) {
            p.manifest().checkArguments(p.name(), argumentsPerDevice.get(d));
            var list = lists.addArray();
            for (DeviceArray array : argumentsPerDevice.get(d)) {
                if (array.device() != d) {
                    throw new IllegalArgumentException(p.name() + ": argument list " + d + " holds an array on device "
                            + array.device());
                }
                list.add(((RemoteArray) array).id());
            }
        }
        JsonNode reply = call(request, new byte[0]);
        List<List<DeviceArray>> results = new ArrayList<>();
        int d = 0;
        for (JsonNode deviceOutputs : reply.get("outputs")) {
            List<DeviceArray> list = new ArrayList<>();
            for (JsonNode output : deviceOutputs) {
                long[] shape = new long[output.get("shape").size()];
                for (int i = 0; i < shape.length; i++) {
                    shape[i] = output.get("shape").get(i).asLong();
                }
                list.add(remember(new RemoteArray(this, output.get("id").asLong(),
                        DType.valueOf(output.get("dtype").asText()), shape, d)));
            }
            results.add(list);
            d++;
        }
        Set<Long> released = new HashSet<>();
        reply.get("released").forEach(id -> released.add(id.asLong()));
        for (List<DeviceArray> list : argumentsPerDevice) {
            for (DeviceArray array : list) {
                if (released.contains(((RemoteArray) array).id())) {
                    ((RemoteArray) array).markDonated();
                }
            }
        }
        return results;
    }

    @Override
    public HostTensor download(DeviceArray array, String name, Arena into) {
        RemoteArray remote = (RemoteArray) array;
        remote.checkOpen();
        JsonNode reply = call(JSON.createObjectNode().put("op", "download").put("id", remote.id()), new byte[0]);
        byte[] bytes = readBytes(reply.get("bytes").asInt());
        MemorySegment data = into.allocate(Math.max(1, bytes.length), 8).asSlice(0, bytes.length);
        MemorySegment.copy(bytes, 0, data, ValueLayout.JAVA_BYTE, 0, bytes.length);
        return new HostTensor(name, remote.dtype(), remote.shape(), data);
    }

    /** Whether the helper process still serves (a closed executor's has exited). */
    public boolean isAlive() {
        return process.isAlive() && !closed;
    }

    /** How jaxlib reads a serialized CompileOptionsProto (a check of our writer by XLA's own parser). */
    public JsonNode parseCompileOptions(byte[] proto) {
        return call(JSON.createObjectNode().put("op", "compile_options"), proto);
    }

    @Override
    public synchronized void close() {
        closed = true;
        try {
            requests.close();
            if (!process.waitFor(10, TimeUnit.SECONDS)) {
                process.destroyForcibly();
            }
        } catch (IOException e) {
            process.destroyForcibly();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            process.destroyForcibly();
        }
        live.clear();
    }

    private <T extends Remote> T remember(T remote) {
        live.add(remote);
        return remote;
    }

    synchronized void free(String kind, long id, Remote remote) {
        live.remove(remote);
        if (process.isAlive()) {
            ObjectNode request = JSON.createObjectNode().put("op", "free");
            request.putArray(kind).add(id);
            call(request, new byte[0]);
        }
    }

    private synchronized JsonNode call(ObjectNode request, byte[] payload) {
        try {
            if (payload.length > 0) {
                request.put("bytes", payload.length);
            }
            requests.write((JSON.writeValueAsString(request) + "\n").getBytes(StandardCharsets.UTF_8));
            requests.write(payload);
            requests.flush();
            JsonNode reply = readReply();
            if (reply.has("error")) {
                throw new IllegalStateException("jaxlib: " + reply.get("error").asText());
            }
            return reply;
        } catch (IOException e) {
            throw new UncheckedIOException("the jaxlib helper died (see target/jax-cpu-executor/stderr.log)", e);
        }
    }

    private JsonNode readReply() throws IOException {
        StringBuilder line = new StringBuilder();
        for (int b = replies.read(); b != '\n'; b = replies.read()) {
            if (b < 0) {
                throw new IOException("the jaxlib helper closed its output");
            }
            line.append((char) b);
        }
        return JSON.readTree(new String(line.toString().getBytes(StandardCharsets.ISO_8859_1), StandardCharsets.UTF_8));
    }

    private byte[] readBytes(int count) {
        try {
            byte[] bytes = new byte[count];
            replies.readFully(bytes);
            return bytes;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private interface Remote { }

    private record RemoteProgram(JaxCpuExecutor owner, long id, Program program) implements CompiledProgram, Remote {
        @Override
        public Optional<CompiledMemoryStats> memoryStats() {
            return Optional.empty();
        }

        @Override
        public void close() {
            owner.free("programs", id, this);
        }
    }

    private static final class RemoteArray implements DeviceArray, Remote {
        private final JaxCpuExecutor owner;
        private final long id;
        private final DType dtype;
        private final long[] shape;
        private final int device;
        private String released;

        RemoteArray(JaxCpuExecutor owner, long id, DType dtype, long[] shape, int device) {
            this.owner = owner;
            this.id = id;
            this.dtype = dtype;
            this.shape = shape;
            this.device = device;
        }

        long id() {
            checkOpen();
            return id;
        }

        void checkOpen() {
            if (released != null) {
                throw new IllegalStateException("the array is " + released);
            }
        }

        void markDonated() {
            released = "donated to an execution";
            owner.live.remove(this);
        }

        @Override
        public DType dtype() {
            return dtype;
        }

        @Override
        public long[] shape() {
            return shape.clone();
        }

        @Override
        public int device() {
            return device;
        }

        @Override
        public boolean isReleased() {
            return released != null;
        }

        @Override
        public void close() {
            if (released == null) {
                released = "closed";
                owner.free("arrays", id, this);
            }
        }
    }
}
