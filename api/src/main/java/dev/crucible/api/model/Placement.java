package dev.crucible.api.model;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.WeightFormat;

/**
 * What a backend tells {@link PlacedModel#place} about its device: the ops the model computes with, the dtype it
 * computes in, and how a host tensor reaches the device. Everything else about a placed model (which tensors a
 * family has, binding them, adapters, rotary tables, merging) is the same on every backend and lives in
 * {@link PlacedModel}.
 */
public interface Placement {

    /** The ops that run the model and own its tensors. */
    TensorOps ops();

    /** The dtype weights are placed in and activations computed in. */
    DType computeDtype();

    /**
     * A copy of {@code host} where {@link #ops()} computes, converted to {@code dtype}: a temporary of the current
     * scope (the caller retains what it keeps). Taken while {@code host}'s file is open; the copy never views it.
     */
    Tensor toDevice(HostTensor host, DType dtype);

    /**
     * How the projection weight {@code name} is kept: dense in the compute dtype (the default), or a quantized format
     * whose codec turns the stored values into parts (QLoRA keeps every projection weight as NF4). Embeddings,
     * norms and biases are always dense in the compute dtype and never asked about.
     */
    default WeightFormat format(String name) {
        return WeightFormat.Dense.of(computeDtype());
    }

    /**
     * The placement of decoder layer {@code layer}'s weights, adapters and state: this one (the default) unless the
     * backend splits the model by layers over several devices, when its {@link #ops()} are
     * {@code ops().forLayer(layer)} and its copies go to that device.
     */
    default Placement forLayer(int layer) {
        return this;
    }

    /** The placement of the final norm and an untied output head, as {@link #forLayer} (this one on one device). */
    default Placement forHead() {
        return this;
    }

    /** The dtype adapter factors given as host tensors are placed in: the compute dtype unless a backend says so. */
    default DType adapterDtype() {
        return computeDtype();
    }
}
