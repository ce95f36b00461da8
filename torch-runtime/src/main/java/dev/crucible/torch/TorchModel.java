package dev.crucible.torch;

import dev.crucible.api.model.DeviceModel;
import dev.crucible.api.model.ModelRunner;
import dev.crucible.api.model.PlacedModel;
import dev.crucible.api.model.ShardRequest;

/**
 * A model placed on one libtorch device: the backend-neutral {@link PlacedModel} (weights, adapters, tables) over
 * this device's {@link TorchOps}, and the {@link ModelRunner} that runs it. Tensors are plain libtorch tensors, so
 * a trainer can mark adapters as requiring grad and run the same model definition with autograd.
 */
public final class TorchModel implements DeviceModel {

    private final TorchOps ops;
    private final PlacedModel placed;
    private final ModelRunner runner;
    private boolean closed;

    private TorchModel(TorchOps ops, PlacedModel placed, int batchWorkers) {
        this.ops = ops;
        this.placed = placed;
        this.runner = new ModelRunner(ops, placed, false, batchWorkers);
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
        try {
            PlacedModel placed = PlacedModel.place(request.config(), request.checkpoint(),
                    new TorchPlacement(ops, request.dtype()));
            return new TorchModel(ops, placed, batchWorkers);
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
    }
}
