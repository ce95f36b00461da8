package dev.crucible.torch;

import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.ShapePolicy;
import dev.crucible.api.model.ShardRequest;
import dev.crucible.torch.policy.LayerPlan;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * A model placed on one libtorch device, or split by layers over several: the backend-neutral {@link PlacedModel}
 * (weights, adapters, tables) over its devices' {@link TorchOps}, and the {@link ModelRunner} that runs it. Tensors
 * are plain libtorch tensors, so a trainer can mark adapters as requiring grad and run the same model definition with
 * autograd.
 */
public final class TorchModel implements DeviceModel {

    private final TorchOps ops;
    /** Every device's ops when the model is split by layers (the first is {@link #ops}); just {@link #ops} if not. */
    private final List<TorchOps> devices;
    private final HostKernels kernels;
    private final PlacedModel placed;
    private final ModelRunner runner;
    private final OptionalInt threadsPerOp;
    private final Map<String, BatchSizeChoice> batchSizes = new HashMap<>();
    private boolean closed;

    private TorchModel(List<TorchOps> devices, HostKernels kernels, PlacedModel placed, ShapePolicy shapes,
                       int batchWorkers, OptionalInt threadsPerOp) {
        this.ops = devices.getFirst();
        this.devices = List.copyOf(devices);
        this.kernels = kernels;
        this.placed = placed;
        this.runner = new ModelRunner(ops, placed, shapes, batchWorkers);
        this.threadsPerOp = threadsPerOp;
    }

    /**
     * Copies every weight {@code request.config()} needs onto {@code device}, once, in the request's dtype, the
     * projections the request quantizes in their quantized format.
     */
    public static TorchModel place(ShardRequest request, String device) {
        return place(request, device, null);
    }

    /**
     * The same, computing with {@code kernels} where they take a shape ({@link TorchOps}); null for libtorch's
     * kernels alone. The model owns the kernels and closes them.
     */
    public static TorchModel place(ShardRequest request, String device, HostKernels kernels) {
        return place(request, device, kernels, ShapePolicy.EXACT, 1, OptionalInt.empty());
    }

    /**
     * The same, with up to {@code batchWorkers} batches of a request running at once, each on its own thread (see
     * {@link ModelRunner}); the kernels must then take calls from that many threads.
     *
     * @param shapes       the shapes its steps run in
     * @param threadsPerOp the libtorch threads its ops run on, as the backend set them (empty: libtorch's default)
     */
    public static TorchModel place(ShardRequest request, String device, HostKernels kernels, ShapePolicy shapes,
                                   int batchWorkers, OptionalInt threadsPerOp) {
        return place(request, List.of(new TorchOps(device, true, kernels)), kernels, shapes, batchWorkers,
                threadsPerOp);
    }

    /**
     * The same, split by layers over {@code split}'s devices: each layer's weights, adapters and KV cache on the
     * device the plan gives it, the embedding on the first, the final norm and head where the plan says; a step's
     * residual stream moves to the next device at each boundary ({@link DeviceSplit}). A plan that uses one device
     * places the model whole on it.
     */
    public static TorchModel place(ShardRequest request, LayerSplit split, HostKernels kernels, ShapePolicy shapes,
                                   int batchWorkers, OptionalInt threadsPerOp) {
        LayerPlan plan = split.plan();
        if (plan.layerDevices().length != request.config().numLayers()) {
            throw new IllegalArgumentException("a plan of " + plan.layerDevices().length + " layers for a model of "
                    + request.config().numLayers());
        }
        if (request.config().tieWordEmbeddings() && plan.headDevice() != plan.embeddingDevice()) {
            throw new IllegalArgumentException("a tied head is the embedding: it goes on the embedding's device");
        }
        List<TorchOps> devices = new ArrayList<>();
        try {
            for (int i = 0; i < plan.devicesUsed(); i++) {
                devices.add(new TorchOps(split.devices().get(i), true, kernels));
            }
            if (devices.size() > 1) {
                new DeviceSplit(devices, plan.layerDevices(), plan.headDevice());
            }
        } catch (RuntimeException | Error e) {
            devices.forEach(TorchOps::close);
            throw e;
        }
        return place(request, devices, kernels, shapes, batchWorkers, threadsPerOp);
    }

    /** Places the model with {@code devices}' ops (the first holds the embedding); closes them on failure. */
    private static TorchModel place(ShardRequest request, List<TorchOps> devices, HostKernels kernels,
                                    ShapePolicy shapes, int batchWorkers, OptionalInt threadsPerOp) {
        try {
            PlacedModel placed = PlacedModel.place(request.config(), request.checkpoint(),
                    new TorchPlacement(devices.getFirst(), request.dtype(), request.quantization()));
            return new TorchModel(devices, kernels, placed, shapes, batchWorkers, threadsPerOp);
        } catch (RuntimeException | Error e) {
            devices.forEach(TorchOps::close);
            throw e;
        }
    }

    @Override
    public PlacedModel placed() {
        return placed;
    }

    /**
     * The ops this model computes with (its device, inference scopes); for a model split by layers, the first
     * device's, whose {@link TorchOps#forLayer} give the others.
     */
    public TorchOps ops() {
        return ops;
    }

    /** How many devices the model is placed on: 1, or the devices it is split over by layers. */
    public int deviceCount() {
        return devices.size();
    }

    @Override
    public List<String> quantizedKernels() {
        return placed.quantizedFormats().stream()
                .map(format -> format.describe() + ": " + ops.describeKernels(format, placed.dtype())).toList();
    }

    /** The libtorch threads this model's ops run on (empty: libtorch's default). */
    public OptionalInt threadsPerOp() {
        return threadsPerOp;
    }

    /**
     * A batch size a backend measured for this model and one pass (generation, the residual pass).
     *
     * @param searchedUpTo the largest size the search could try (it was bounded by the request's prompts)
     * @param settled      whether a larger request would not change it (the search ran out of memory or reached its
     *                     cap)
     */
    public record BatchSizeChoice(int batchSize, int searchedUpTo, boolean settled) { }

    /** What {@link #rememberBatchSize} kept for {@code pass}, or null. */
    BatchSizeChoice batchSizeChoice(String pass) {
        return batchSizes.get(pass);
    }

    void rememberBatchSize(String pass, BatchSizeChoice choice) {
        batchSizes.put(pass, choice);
    }

    public ModelRunner runner() {
        checkOpen();
        return runner;
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
        runner.close();
        placed.close();
        devices.forEach(TorchOps::close);
        if (kernels != null) {
            kernels.close();
        }
    }
}
