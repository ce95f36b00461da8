package dev.crucible.torch;

import dev.crucible.api.model.DType;
import dev.crucible.api.tensor.Tensor;
import java.util.Objects;

/** A libtorch tensor behind the backend-neutral handle. The handle belongs to whichever scope created it. */
public final class TorchTensor implements Tensor {

    private final org.bytedeco.pytorch.Tensor handle;
    private long[] shape;

    public TorchTensor(org.bytedeco.pytorch.Tensor handle) {
        this.handle = Objects.requireNonNull(handle, "handle is null");
    }

    /** The libtorch tensor, for torch-side code (training, merges) that needs more than {@code TensorOps}. */
    public org.bytedeco.pytorch.Tensor handle() {
        return handle;
    }

    @Override
    public long[] shape() {
        if (shape == null) {
            long[] sizes = new long[(int) handle.dim()];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = handle.size(i);
            }
            shape = sizes; // shapes never change: in-place ops here keep them
        }
        return shape.clone();
    }

    @Override
    public long size(int dim) {
        if (shape == null) {
            shape();
        }
        return shape[dim < 0 ? shape.length + dim : dim];
    }

    @Override
    public DType dtype() {
        return TorchTypes.dtype(handle.scalar_type());
    }

    @Override
    public String toString() {
        return "TorchTensor" + java.util.Arrays.toString(shape()) + " " + dtype();
    }
}
