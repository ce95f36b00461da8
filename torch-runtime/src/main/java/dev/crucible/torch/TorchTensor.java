package dev.crucible.torch;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Tensor;
import java.lang.foreign.MemorySegment;
import java.util.List;
import java.util.Objects;

/** A libtorch tensor behind the backend-neutral handle. The handle belongs to whichever scope created it. */
public final class TorchTensor implements Tensor {

    private org.bytedeco.pytorch.Tensor handle;
    /**
     * For a view not yet made in libtorch: how to make it from {@link #base}'s handle, and the scope it belongs to
     * (null once made, or for a tensor that always had its handle).
     */
    private java.util.function.UnaryOperator<org.bytedeco.pytorch.Tensor> pendingView;
    private TorchTensor base;
    private org.bytedeco.javacpp.PointerScope owner;
    /** Views of this tensor still pending, made before it is released ({@link #materializeViews}). */
    private List<TorchTensor> pendingViews;
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

    /**
     * A view of {@code base} with the given layout that libtorch makes only when something asks for its handle
     * ({@code view} applied to the base's handle, in {@code owner}, the scope open now): kernels read it from its
     * address and strides, so a decode step's head splits, transposes and cache slices cost no libtorch call.
     */
    TorchTensor(TorchTensor base, java.util.function.UnaryOperator<org.bytedeco.pytorch.Tensor> view, long[] shape,
                long[] strides, boolean contiguous, long address, org.bytedeco.javacpp.PointerScope owner) {
        this.splitDevice = base.splitDevice;
        this.shape = shape.clone();
        this.dtype = base.dtype();
        this.strides = strides.clone();
        this.contiguous = contiguous ? 1 : -1;
        this.bytes = bytesAt(address);
        this.base = base;
        this.pendingView = view;
        this.owner = owner;
        if (base.pendingViews == null) {
            base.pendingViews = new java.util.ArrayList<>();
        }
        base.pendingViews.add(this);
    }

    /**
     * Called when the scope the view was made in closes before anything asked for its handle: an eager view would
     * have been freed there, so this one is forgotten by its base, and asking for its handle now is an error.
     */
    void abandon() {
        if (pendingView != null) {
            forget();
        }
    }

    /** No longer pending: the base forgets this view (a long-lived base, a cache, gets views at every step). */
    private void forget() {
        if (base.pendingViews != null) {
            base.pendingViews.remove(this);
        }
        pendingView = null;
        base = null;
        owner = null;
    }

    /** Makes every pending view of this tensor (and theirs), so they keep its storage once it is released. */
    void materializeViews() {
        if (pendingViews != null) {
            for (TorchTensor view : List.copyOf(pendingViews)) {
                view.materializeViews();
                view.handle();
            }
            pendingViews = null;
        }
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
        this.contiguous = contiguous ? 1 : -1;
        if (address != 0) {
            this.bytes = bytesAt(address);
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
        if (handle == null) {
            if (pendingView == null) {
                throw new IllegalStateException("a view was used after the scope it was made in closed");
            }
            org.bytedeco.pytorch.Tensor made = pendingView.apply(base.handle());
            org.bytedeco.javacpp.PointerScope current = org.bytedeco.javacpp.PointerScope.getInnerScope();
            if (current != owner) {
                // Made in a scope other than the view's own: it belongs to the view's, as an eager view would.
                owner.attach(made);
                if (current != null) {
                    current.detach(made);
                }
            }
            handle = made;
            forget();
        }
        return handle;
    }

    @Override
    public long[] shape() {
        if (shape == null) {
            long[] sizes = new long[(int) handle().dim()];
            for (int i = 0; i < sizes.length; i++) {
                sizes[i] = handle().size(i);
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
            dtype = TorchTypes.dtype(handle().scalar_type());
        }
        return dtype;
    }

    /** Whether the elements are densely laid out in row-major order. */
    boolean isContiguous() {
        if (contiguous == 0) {
            contiguous = handle().is_contiguous() ? 1 : -1;
        }
        return contiguous > 0;
    }

    /** Elements between neighbours along each dimension. */
    long[] strides() {
        if (strides == null) {
            long[] values = new long[shape().length];
            for (int i = 0; i < values.length; i++) {
                values[i] = handle().stride(i);
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
            bytes = bytesAt(handle().data_ptr().address());
        }
        return bytes;
    }

    /** The elements from {@code address} on, as far as the furthest one this tensor reaches. */
    private MemorySegment bytesAt(long address) {
        return MemorySegment.ofAddress(address).reinterpret(span() * dtype().byteSize());
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
