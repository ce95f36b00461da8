package dev.crucible.torch;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.HostTensor;
import dev.crucible.api.model.DType;
import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.LinearModule;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.api.model.LoraLinear;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.api.model.Transformer;
import dev.crucible.api.model.TransformerWeights;
import dev.crucible.api.model.WeightSource;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorScope;
import java.lang.foreign.Arena;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * A model placed on one libtorch device: the weights (one device copy each), the rotary tables and adapters, all
 * owned here and freed by {@link #close()}. Tensors are plain libtorch tensors, so a trainer can mark adapters as
 * requiring grad and run the same {@link Transformer} with autograd.
 */
public final class TorchModel implements DeviceModel {

    private final ModelConfig config;
    private final DType dtype;
    private final TorchOps ops;
    private final Transformer transformer;
    private final ModelRunner runner;
    private final Map<String, LoraLinear> linears = new LinkedHashMap<>();
    private boolean closed;

    private TorchModel(ModelConfig config, DType dtype, TorchOps ops, TransformerWeights weights, int batchWorkers) {
        this.config = config;
        this.dtype = dtype;
        this.ops = ops;
        this.transformer = new Transformer(config, weights);
        this.runner = new ModelRunner(ops, transformer, false, batchWorkers);
        for (LoraLinear linear : weights.linears()) {
            linears.put(linear.module(), linear);
        }
    }

    /** Copies every weight {@code request.config()} needs onto {@code device}, once, in the request's dtype. */
    public static TorchModel place(ShardRequest request, String device) {
        return place(request, device, null);
    }

    /**
     * The same, computing with {@code kernels} where they take a shape ({@link TorchOps}); null for libtorch's
     * kernels alone.
     */
    public static TorchModel place(ShardRequest request, String device, HostKernels kernels) {
        return place(request, device, kernels, 1);
    }

    /**
     * The same, with up to {@code batchWorkers} batches of a request running at once, each on its own thread (see
     * {@link ModelRunner}); the kernels must then take calls from that many threads.
     */
    public static TorchModel place(ShardRequest request, String device, HostKernels kernels, int batchWorkers) {
        TorchOps ops = new TorchOps(device, true, kernels);
        Checkpoint checkpoint = request.checkpoint();
        DType dtype = request.dtype();
        List<Tensor> placed = new ArrayList<>();
        WeightSource source = new WeightSource() {
            @Override
            public boolean contains(String name) {
                return checkpoint.contains(name);
            }

            @Override
            public long[] shape(String name) {
                return checkpoint.info(name).shape();
            }

            @Override
            public Tensor load(String name) {
                HostTensor host = checkpoint.tensor(name);
                if (!host.dtype().isFloatingPoint()) {
                    throw new dev.crucible.api.UserInputException("checkpoint tensor " + name + " is " + host.dtype()
                            + "; quantized or integer weights are not supported by this loader");
                }
                Tensor tensor = ops.retain(new TorchTensor(HostTransfer.toDevice(host, dtype, ops.device())));
                placed.add(tensor);
                return tensor;
            }
        };
        try (TensorScope scope = ops.openScope()) {
            return new TorchModel(request.config(), dtype, ops, TransformerWeights.bind(request.config(), source),
                    batchWorkers);
        } catch (RuntimeException | Error e) {
            placed.forEach(ops::release);
            ops.close();
            throw e;
        }
    }

    @Override
    public ModelConfig config() {
        return config;
    }

    @Override
    public DType dtype() {
        return dtype;
    }

    /** The ops this model computes with (its device, inference scopes). */
    public TorchOps ops() {
        return ops;
    }

    public Transformer transformer() {
        return transformer;
    }

    public ModelRunner runner() {
        checkOpen();
        return runner;
    }

    @Override
    public List<LinearModule> linearModules() {
        return linears.values().stream()
                .map(linear -> new LinearModule(linear.module(), linear.inFeatures(), linear.outFeatures()))
                .toList();
    }

    @Override
    public void setAdapter(String module, LoraFactors factors) {
        checkOpen();
        LoraLinear linear = linear(module);
        try (TensorScope scope = ops.openScope()) {
            Tensor a = ops.retain(new TorchTensor(HostTransfer.toDevice(factors.a(), dtype, ops.device())));
            Tensor b = ops.retain(new TorchTensor(HostTransfer.toDevice(factors.b(), dtype, ops.device())));
            LoraLinear.Adapter previous;
            try {
                previous = linear.setAdapter(a, b, factors.scale());
            } catch (RuntimeException e) {
                ops.release(a);
                ops.release(b);
                throw e;
            }
            release(previous);
        }
    }

    @Override
    public void zeroAdapters() {
        checkOpen();
        try (TensorScope scope = ops.openScope()) {
            for (LoraLinear linear : linears.values()) {
                if (linear.adapter() != null) {
                    TorchOps.native_(linear.adapter().b()).zero_();
                }
            }
        }
    }

    @Override
    public void removeAdapters() {
        checkOpen();
        for (LoraLinear linear : linears.values()) {
            release(linear.removeAdapter());
        }
    }

    /**
     * {@code W + scale·B·A} for every projection with an adapter, computed in float32 on the device from
     * {@code base}'s stored weight (not the device copy, which may be in a narrower dtype) and rounded once to the
     * stored dtype.
     */
    public MergedWeights merge(Checkpoint base) {
        checkOpen();
        Arena arena = Arena.ofShared();
        Map<String, HostTensor> merged = new LinkedHashMap<>();
        try {
            for (LoraLinear linear : linears.values()) {
                LoraLinear.Adapter adapter = linear.adapter();
                if (adapter == null) {
                    continue;
                }
                String name = linear.module() + ".weight";
                HostTensor stored = base.tensor(name);
                try (TensorScope scope = ops.openScope()) {
                    org.bytedeco.pytorch.Tensor weight = HostTransfer.toDevice(stored, DType.F32, ops.device());
                    org.bytedeco.pytorch.Tensor a = TorchOps.native_(adapter.a()).to(ScalarType.Float);
                    org.bytedeco.pytorch.Tensor b = TorchOps.native_(adapter.b()).to(ScalarType.Float);
                    org.bytedeco.pytorch.Tensor delta = torch.matmul(b, a).mul(new Scalar(adapter.scale()));
                    merged.put(name, HostTransfer.toHost(weight.add(delta), name, stored.dtype(), arena));
                }
            }
            return new MergedWeights(merged, arena);
        } catch (RuntimeException | Error e) {
            arena.close();
            throw e;
        }
    }

    private LoraLinear linear(String module) {
        LoraLinear linear = linears.get(module);
        if (linear == null) {
            throw new IllegalArgumentException("no adaptable projection named '" + module + "'; names look like "
                    + linears.keySet().iterator().next());
        }
        return linear;
    }

    private void release(LoraLinear.Adapter adapter) {
        if (adapter != null) {
            ops.release(adapter.a());
            ops.release(adapter.b());
        }
    }

    private void checkOpen() {
        if (closed) {
            throw new IllegalStateException("this model was closed");
        }
    }

    @Override
    public void close() {
        if (closed) {
            return;
        }
        closed = true;
        for (LoraLinear linear : linears.values()) {
            release(linear.removeAdapter());
        }
        runner.close();
        for (Tensor tensor : transformer.weights().tensors()) {
            ops.release(tensor);
        }
        ops.close();
    }
}
