package dev.crucible.accelerator.xla.lower;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.Placement;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import java.util.Objects;

/**
 * How a host tensor reaches the devices of an {@link XlaOps}: converted on the host, then one upload per device,
 * whole or split as the sharding lays out a placed tensor. The tensor keeps its checkpoint name, which every
 * program manifest shows for the argument.
 */
public record XlaPlacement(XlaOps ops, DType computeDtype) implements Placement {
    public XlaPlacement {
        Objects.requireNonNull(ops, "ops is null");
        Objects.requireNonNull(computeDtype, "computeDtype is null");
    }

    @Override
    public Tensor toDevice(HostTensor host, DType dtype) {
        return ops.place(host, dtype, ops.sharding().weight(host.shape()));
    }
}
