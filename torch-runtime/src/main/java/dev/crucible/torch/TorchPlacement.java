package dev.crucible.torch;

import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.model.Placement;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.WeightFormat;
import java.util.Objects;

/**
 * How a host tensor reaches a libtorch device: one copy, converted to the dtype on the way ({@link HostTransfer});
 * projection weights the quantization config names are kept in its format.
 */
public record TorchPlacement(TorchOps ops, DType computeDtype, DType adapterDtype, QuantizationConfig quantization)
        implements Placement {

    public TorchPlacement {
        Objects.requireNonNull(ops, "ops is null");
        Objects.requireNonNull(computeDtype, "computeDtype is null");
        Objects.requireNonNull(adapterDtype, "adapterDtype is null");
        Objects.requireNonNull(quantization, "quantization is null");
    }

    /** Dense weights; adapters given as host factors are placed in the compute dtype. */
    public TorchPlacement(TorchOps ops, DType computeDtype) {
        this(ops, computeDtype, computeDtype, QuantizationConfig.NONE);
    }

    /**
     * Weights as {@code quantization} says; adapters beside quantized weights in float32 (as QLoRA keeps them), so
     * an edit far below the base's resolution is not rounded away.
     */
    public TorchPlacement(TorchOps ops, DType computeDtype, QuantizationConfig quantization) {
        this(ops, computeDtype, quantization.enabled() ? DType.F32 : computeDtype, quantization);
    }

    @Override
    public Tensor toDevice(HostTensor host, DType dtype) {
        return ops.wrap(HostTransfer.toDevice(host, dtype, ops.device()));
    }

    @Override
    public TorchPlacement forLayer(int layer) {
        TorchOps at = ops.forLayer(layer);
        return at == ops ? this : new TorchPlacement(at, computeDtype, adapterDtype, quantization);
    }

    @Override
    public TorchPlacement forHead() {
        TorchOps at = ops.forHead();
        return at == ops ? this : new TorchPlacement(at, computeDtype, adapterDtype, quantization);
    }

    @Override
    public WeightFormat format(String name) {
        return quantization.formatFor(name, computeDtype);
    }
}
