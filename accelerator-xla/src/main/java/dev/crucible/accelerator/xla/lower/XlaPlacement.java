package dev.crucible.accelerator.xla.lower;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.Placement;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Objects;

/**
 * How a host tensor reaches the devices of an {@link XlaOps}: converted on the host, then one upload per device,
 * whole or split as the sharding lays out a placed tensor. The tensor keeps its checkpoint name, which every
 * program manifest shows for the argument. Projection weights the quantization config names are kept in its format:
 * their parts are uploaded in their own element types (codes as s8 or u8, scales f32), so device memory holds the
 * quantized size and the programs convert the codes (see {@link XlaOps#linear(Tensor,
 * dev.crucible.api.tensor.QuantizedTensor, Tensor)}).
 */
public record XlaPlacement(XlaOps ops, DType computeDtype, QuantizationConfig quantization) implements Placement {
    public XlaPlacement {
        Objects.requireNonNull(ops, "ops is null");
        Objects.requireNonNull(computeDtype, "computeDtype is null");
        Objects.requireNonNull(quantization, "quantization is null");
    }

    /** Every weight dense in the compute dtype. */
    public XlaPlacement(XlaOps ops, DType computeDtype) {
        this(ops, computeDtype, QuantizationConfig.NONE);
    }

    @Override
    public Tensor toDevice(HostTensor host, DType dtype) {
        return ops.place(host, dtype, ops.sharding().weight(host.shape()));
    }

    @Override
    public WeightFormat format(String name) {
        return quantization.formatFor(name, computeDtype);
    }

    /**
     * Adapters beside quantized weights in float32, as the libtorch backends keep them (QLoRA's choice), so an edit
     * far below the base's resolution is not rounded away and both backends compute the same low-rank term.
     */
    @Override
    public DType adapterDtype() {
        return quantization.enabled() ? DType.F32 : computeDtype;
    }
}
