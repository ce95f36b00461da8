package dev.crucible.torch;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.Objects;

/** A libtorch tensor behind the backend-neutral handle. The handle belongs to whichever scope created it. */
public final class TorchTensor implements Tensor {

    private final org.bytedeco.pytorch.Tensor handle;
    // Shape, dtype and layout of a tensor object never change (in-place ops here keep them), so each is read from
    // libtorch once: a JNI call per read costs more than a small decode-step op.
    private long[] shape;
    private DType dtype;
    private int contiguous; // 0 unknown, 1 yes, -1 no
    private long[] strides;
    private MemorySegment bytes;
    /** The device of a split model whose ops made it ({@link DeviceSplit}); -1 outside a split. */
    private final int splitDevice;

    public TorchTensor(org.bytedeco.pytorch.Tensor handle) {
        this(handle, -1);
    }

    TorchTensor(org.bytedeco.pytorch.Tensor handle, int splitDevice) {
        this.handle = Objects.requireNonNull(handle, "handle is null");
        this.splitDevice = splitDevice;
    }

    /** A tensor whose shape and dtype the caller already knows (an op's output), so they are never asked for. */
    TorchTensor(org.bytedeco.pytorch.Tensor handle, long[] shape, DType dtype, int splitDevice) {
        this(handle, splitDevice);
        this.shape = shape.clone();
        this.dtype = dtype;
    }

    /**
     * An op's output whose whole layout the caller knows: its strides, whether it is contiguous, and, for a view of a
     * tensor whose bytes are known, the address of its first element (0 where unknown). A decode step's kernels read
     * every tensor's layout and bytes; told here, none of them is asked of libtorch (a JNI call per stride).
     */
    TorchTensor(org.bytedeco.pytorch.Tensor handle, long[] shape, long[] strides, boolean contiguous, DType dtype,
                int splitDevice, long address) {
        this(handle, shape, dtype, splitDevice);
        this.strides = strides.clone();
        this.contiguous = contiguous ? 1 : 0;
        if (address != 0) {
            this.bytes = MemorySegment.ofAddress(address).reinterpret(span() * dtype.byteSize());
        }
    }

    /** The strides if known without asking libtorch, else null. */
    long[] knownStrides() {
        return strides == null ? null : strides.clone();
    }

    /** Whether the tensor is known to be contiguous without asking libtorch. */
    boolean knownContiguous() {
        return contiguous > 0;
    }

    /** The address of the first element if known without asking libtorch, else 0. */
    long knownAddress() {
        return bytes == null ? 0 : bytes.address();
    }

    /** The index, in its model's {@link DeviceSplit}, of the device whose ops made it; -1 outside a split. */
    int splitDevice() {
        return splitDevice;
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
        if (dtype == null) {
            dtype = TorchTypes.dtype(handle.scalar_type());
        }
        return dtype;
    }

    /** Whether the elements are densely laid out in row-major order. */
    boolean isContiguous() {
        if (contiguous == 0) {
            contiguous = handle.is_contiguous() ? 1 : -1;
        }
        return contiguous > 0;
    }

    /** Elements between neighbours along each dimension. */
    long[] strides() {
        if (strides == null) {
            long[] values = new long[shape().length];
            for (int i = 0; i < values.length; i++) {
                values[i] = handle.stride(i);
            }
            strides = values;
        }
        return strides.clone();
    }

    /**
     * The elements of a CPU tensor in host memory, from its first element to its last (with {@link #strides()}
     * for views), for kernels that read or write them directly. The segment aliases the tensor's storage: valid
     * while the tensor lives.
     */
    MemorySegment hostBytes() {
        if (bytes == null) {
            bytes = MemorySegment.ofAddress(handle.data_ptr().address()).reinterpret(span() * dtype().byteSize());
        }
        return bytes;
    }

    /** Elements from the first to the furthest one a view reaches; for a contiguous tensor, its element count. */
    private long span() {
        long[] extents = shape();
        long[] steps = strides();
        long span = 1;
        for (int i = 0; i < extents.length; i++) {
            if (extents[i] == 0) {
                return 0;
            }
            span += (extents[i] - 1) * steps[i];
        }
        return span;
    }

    @Override
    public String toString() {
        return "TorchTensor" + java.util.Arrays.toString(shape()) + " " + dtype();
    }
}
