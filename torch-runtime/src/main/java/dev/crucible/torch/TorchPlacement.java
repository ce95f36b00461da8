package dev.crucible.torch;

import dev.crucible.api.io.HostTensor;
import dev.crucible.api.model.Placement;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import java.util.Objects;

/** How a host tensor reaches a libtorch device: one copy, converted to the dtype on the way ({@link HostTransfer}). */
public record TorchPlacement(TorchOps ops, DType computeDtype, DType adapterDtype) implements Placement {

    public TorchPlacement {
        Objects.requireNonNull(ops, "ops is null");
        Objects.requireNonNull(computeDtype, "computeDtype is null");
        Objects.requireNonNull(adapterDtype, "adapterDtype is null");
    }

    /** Adapters given as host factors are placed in the compute dtype. */
    public TorchPlacement(TorchOps ops, DType computeDtype) {
        this(ops, computeDtype, computeDtype);
    }

    @Override
    public Tensor toDevice(HostTensor host, DType dtype) {
        return new TorchTensor(HostTransfer.toDevice(host, dtype, ops.device()));
    }
}
