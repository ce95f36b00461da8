package dev.crucible.torch;

import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.ShapePolicy;
import dev.crucible.api.model.ShardRequest;
import java.util.HashMap;
import java.util.Map;
import java.util.OptionalInt;

/**
 * A model placed on one libtorch device: the backend-neutral {@link PlacedModel} (weights, adapters, tables) over
 * this device's {@link TorchOps}, and the {@link ModelRunner} that runs it. Tensors are plain libtorch tensors, so
 * a trainer can mark adapters as requiring grad and run the same model definition with autograd.
 */
public final class TorchModel implements DeviceModel {

    private final TorchOps ops;
    private final HostKernels kernels;
    private final PlacedModel placed;
    private final ModelRunner runner;
    private final OptionalInt threadsPerOp;
    private final Map<String, BatchSizeChoice> batchSizes = new HashMap<>();
    private boolean closed;

    private TorchModel(TorchOps ops, HostKernels kernels, PlacedModel placed, ShapePolicy shapes, int batchWorkers,
                       OptionalInt threadsPerOp) {
        this.ops = ops;
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
        TorchOps ops = new TorchOps(device, true, kernels);
        try {
            PlacedModel placed = PlacedModel.place(request.config(), request.checkpoint(),
                    new TorchPlacement(ops, request.dtype(), request.quantization()));
            return new TorchModel(ops, kernels, placed, shapes, batchWorkers, threadsPerOp);
        } catch (RuntimeException | Error e) {
            ops.close();
            throw e;
        }
    }

    @Override
    public PlacedModel placed() {
        return placed;
    }

    /** The ops this model computes with (its device, inference scopes). */
    public TorchOps ops() {
        return ops;
    }

    @Override
    public java.util.List<String> quantizedKernels() {
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
        ops.close();
        if (kernels != null) {
            kernels.close();
        }
    }
}
