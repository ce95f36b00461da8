package dev.crucible.torch;

import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.BoolOptional;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.DeviceOptional;
import org.bytedeco.pytorch.DoubleOptional;
import org.bytedeco.pytorch.LongOptional;
import org.bytedeco.pytorch.MemoryFormatOptional;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.TensorOptional;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;
import org.bytedeco.pytorch.global.torch.ScalarType;

/**
 * {@link TensorOps} executed eagerly by libtorch on one device. Every libtorch object an op creates joins the
 * innermost {@link PointerScope} of the thread, so callers run steps inside {@link #openScope()}; in inference
 * mode a scope also turns autograd off for its duration ({@link NoGradGuard}).
 */
public final class TorchOps implements TensorOps, AutoCloseable {

    private final Device device;
    private final String deviceName;
    private final boolean cpu;
    private final boolean cuda;
    private final boolean inference;
    private final HostKernels kernels;
    // Made once and kept: every libtorch argument object is a native allocation and a JNI call, which on a decode
    // step of a few hundred small ops costs as much as the ops.
    private final TensorOptions[] optionsByDtype = new TensorOptions[DType.values().length];
    private final MemoryFormatOptional anyMemoryFormat;
    /** The split these ops are one device of, and their index in it; null and -1 for a model on one device. */
    private DeviceSplit split;
    private int splitIndex = -1;

    /**
     * @param deviceName a libtorch device string: {@code cpu}, {@code cuda:1}, {@code mps}
     * @param inference  scopes switch autograd off (no graph is recorded, no activation kept for backward)
     */
    public TorchOps(String deviceName, boolean inference) {
        this(deviceName, inference, null);
    }

    /**
     * @param kernels the backend's own host kernels, used on CPU tensors in inference where they take the shape;
     *                null for libtorch's alone
     */
    public TorchOps(String deviceName, boolean inference, HostKernels kernels) {
        TorchRuntime.load();
        this.deviceName = Objects.requireNonNull(deviceName, "deviceName is null");
        this.inference = inference;
        // Owned by these ops, whatever scope happens to be open now; freed by close().
        this.device = new Device(deviceName).retainReference();
        this.cpu = device.is_cpu();
        this.cuda = device.is_cuda();
        // The scope frees the temporaries that build them; the retained results outlive it until close().
        try (PointerScope scope = new PointerScope()) {
            for (DType dtype : DType.values()) {
                optionsByDtype[dtype.ordinal()] = new TensorOptions(TorchTypes.scalarType(dtype))
                        .device(new DeviceOptional(device)).retainReference();
            }
            this.anyMemoryFormat = new MemoryFormatOptional().retainReference();
        }
        // Kernels read host memory and record no autograd graph: only CPU tensors, only in inference.
        this.kernels = cpu && inference ? kernels : null;
    }

    /** Makes these ops device {@code index} of {@code split}; once, before they compute anything. */
    void joinSplit(DeviceSplit split, int index) {
        if (this.split != null) {
            throw new IllegalStateException("these ops are already part of a split");
        }
        this.split = split;
        this.splitIndex = index;
    }

    /** The split these ops are one device of; null for a model on one device. */
    DeviceSplit split() {
        return split;
    }

    /** Frees the device handle; tensors made by these ops are owned elsewhere and stay valid. */
    @Override
    public void close() {
        for (TensorOptions options : optionsByDtype) {
            options.releaseReference();
        }
        anyMemoryFormat.releaseReference();
        device.releaseReference();
    }

    public String deviceName() {
        return deviceName;
    }

    public Device device() {
        return device;
    }

    @Override
    public TensorScope openScope() {
        PointerScope scope = new PointerScope();
        if (inference) {
            new NoGradGuard(); // joins the scope, so autograd comes back on when the scope closes
        }
        OpenScope open = new OpenScope(scope, new ArrayList<>());
        OPEN_SCOPES.get().push(open);
        return () -> {
            OPEN_SCOPES.get().remove(open);
            open.views().forEach(TorchTensor::abandon);
            scope.close();
        };
    }

    /** A scope {@link #openScope} opened, and the views made in it that libtorch has not made yet. */
    private record OpenScope(PointerScope scope, List<TorchTensor> views) {
    }

    /** The scopes {@link #openScope} opened on each thread, innermost first. */
    private static final ThreadLocal<ArrayDeque<OpenScope>> OPEN_SCOPES = ThreadLocal.withInitial(ArrayDeque::new);

    // Owning and reading to the host work on a tensor of any device of a split: neither computes with it.

    @Override
    public Tensor retain(Tensor tensor) {
        handle(tensor).retainReference();
        return tensor;
    }

    @Override
    public void release(Tensor tensor) {
        TorchTensor torchTensor = torchTensor(tensor);
        torchTensor.materializeViews(); // its pending views keep its storage, as eager views do
        torchTensor.handle().releaseReference();
    }

    // ---- a model split by layers over devices -------------------------------------------------------------------

    @Override
    public TorchOps forLayer(int layer) {
        return split == null ? this : split.layer(layer);
    }

    @Override
    public TorchOps forHead() {
        return split == null ? this : split.head();
    }

    /**
     * A copy on this device of a tensor another device of the split made. The copy is forced even where both are
     * the same libtorch device (CPU stand-ins for GPUs in tests), so no two devices ever share storage.
     */
    @Override
    public Tensor transfer(Tensor x) {
        TorchTensor tensor = (TorchTensor) x;
        if (split == null || tensor.splitDevice() == splitIndex) {
            return x;
        }
        org.bytedeco.pytorch.Tensor handle = tensor.handle();
        org.bytedeco.pytorch.Tensor copy = handle.to(device, handle.scalar_type(), false, true, anyMemoryFormat);
        split.transferred(tensor.splitDevice(), splitIndex, x);
        return new TorchTensor(copy, x.shape(), x.dtype(), splitIndex);
    }

    // ---- host transfers -------------------------------------------------------------------------------------------

    @Override
    public Tensor constant(float[] values, long... shape) {
        org.bytedeco.pytorch.Tensor host = torch.empty(shape, hostOptions(ScalarType.Float), new MemoryFormatOptional());
        checkCount(values.length, host.numel());
        MemorySegment.copy(values, 0, segment(host, 4L * values.length), ValueLayout.JAVA_FLOAT, 0, values.length);
        return wrap(onDevice(host));
    }

    @Override
    public Tensor constant(long[] values, long... shape) {
        org.bytedeco.pytorch.Tensor host = torch.empty(shape, hostOptions(ScalarType.Long), new MemoryFormatOptional());
        checkCount(values.length, host.numel());
        MemorySegment.copy(values, 0, segment(host, 8L * values.length), ValueLayout.JAVA_LONG, 0, values.length);
        return wrap(onDevice(host));
    }

    @Override
    public Tensor zeros(DType dtype, long... shape) {
        return wrap(torch.zeros(shape, options(dtype)));
    }

    @Override
    public float[] readFloats(Tensor tensor) {
        org.bytedeco.pytorch.Tensor host = toHost(handle(tensor), ScalarType.Float);
        float[] values = new float[Math.toIntExact(host.numel())];
        MemorySegment.copy(segment(host, 4L * values.length), ValueLayout.JAVA_FLOAT, 0, values, 0, values.length);
        return values;
    }

    @Override
    public long[] readLongs(Tensor tensor) {
        org.bytedeco.pytorch.Tensor host = toHost(handle(tensor), ScalarType.Long);
        long[] values = new long[Math.toIntExact(host.numel())];
        MemorySegment.copy(segment(host, 8L * values.length), ValueLayout.JAVA_LONG, 0, values, 0, values.length);
        return values;
    }

    // ---- layout -------------------------------------------------------------------------------------------------

    @Override
    public Tensor cast(Tensor x, DType dtype) {
        return x.dtype() == dtype ? x : wrap(native_(x).to(TorchTypes.scalarType(dtype)));
    }

    // View ops state their output's shape, which follows from the input's, so the result never asks libtorch.

    @Override
    public Tensor reshape(Tensor x, long... shape) {
        long[] resolved = shape.clone();
        int unknown = -1;
        long known = 1;
        for (int i = 0; i < resolved.length; i++) {
            if (resolved[i] == -1 && unknown < 0) {
                unknown = i;
            } else {
                known *= resolved[i];
            }
        }
        if (unknown >= 0) {
            resolved[unknown] = known == 0 ? 0 : elements(x) / known;
        }
        TorchTensor input = (TorchTensor) x;
        // A contiguous tensor reshapes to a row-major view of the same bytes.
        return view(input, handle -> handle.reshape(shape), resolved,
                input.knownContiguous() ? rowMajor(resolved) : null, input.knownAddress());
    }

    @Override
    public Tensor transpose(Tensor x, int dim0, int dim1) {
        long[] shape = x.shape();
        int a = dim0 < 0 ? dim0 + shape.length : dim0;
        int b = dim1 < 0 ? dim1 + shape.length : dim1;
        long extent = shape[a];
        shape[a] = shape[b];
        shape[b] = extent;
        TorchTensor input = (TorchTensor) x;
        long[] strides = input.knownStrides();
        if (strides != null) {
            long step = strides[a];
            strides[a] = strides[b];
            strides[b] = step;
        }
        return view(input, handle -> handle.transpose(dim0, dim1), shape, strides, input.knownAddress());
    }

    @Override
    public Tensor slice(Tensor x, int dim, long start, long end) {
        long[] shape = x.shape();
        int d = dim < 0 ? dim + shape.length : dim;
        // libtorch clamps the bounds to the extent
        long size = shape[d];
        long from = Math.min(Math.max(start < 0 ? start + size : start, 0), size);
        long to = Math.min(Math.max(end < 0 ? end + size : end, from), size);
        shape[d] = to - from;
        TorchTensor input = (TorchTensor) x;
        long[] strides = input.knownStrides();
        long address = input.knownAddress();
        long first = address == 0 || strides == null ? 0 : address + from * strides[d] * x.dtype().byteSize();
        return view(input, handle -> handle.slice(dim, new LongOptional(start), new LongOptional(end), 1), shape,
                strides, first);
    }

    @Override
    public Tensor concat(List<Tensor> parts, int dim) {
        TensorVector vector = new TensorVector();
        for (Tensor part : parts) {
            vector.push_back(native_(part));
        }
        return wrap(torch.cat(vector, dim));
    }

    // ---- arithmetic ---------------------------------------------------------------------------------------------

    @Override
    public Tensor add(Tensor a, Tensor b) {
        return wrap(native_(a).add(native_(b)));
    }

    @Override
    public Tensor mul(Tensor a, Tensor b) {
        return wrap(native_(a).mul(native_(b)));
    }

    @Override
    public Tensor scale(Tensor x, double factor) {
        return wrap(native_(x).mul(new Scalar(factor)));
    }

    @Override
    public Tensor neg(Tensor x) {
        return wrap(torch.neg(native_(x)));
    }

    @Override
    public Tensor silu(Tensor x) {
        return wrap(torch.silu(native_(x)));
    }

    @Override
    public Tensor tanh(Tensor x) {
        return wrap(torch.tanh(native_(x)));
    }

    @Override
    public Tensor geluTanh(Tensor x) {
        return wrap(torch.gelu(native_(x), "tanh"));
    }

    @Override
    public Tensor gatedSilu(Tensor gate, Tensor up) {
        if (kernels != null && takesElementwise(gate) && up.dtype() == gate.dtype() && contiguous(up)
                && java.util.Arrays.equals(gate.shape(), up.shape())) {
            TorchTensor y = empty(gate.dtype(), gate.shape());
            kernels.gatedSilu(gate.dtype(), bytes(gate), bytes(up), y.hostBytes(), Math.toIntExact(elements(gate)));
            return y;
        }
        return TensorOps.super.gatedSilu(gate, up);
    }

    @Override
    public Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        if (kernels != null) {
            Tensor product = kernelLinear(x, weight, bias);
            if (product != null) {
                return product;
            }
        }
        DType gemm = kernels == null ? x.dtype() : kernels.gemmDtype(x.dtype());
        if (gemm != x.dtype() && weight.dtype() == x.dtype() && (bias == null || bias.dtype() == x.dtype())) {
            return widenedLinear(x, weight, bias, gemm);
        }
        return bias == null
                ? wrap(torch.linear(native_(x), native_(weight)))
                : wrap(torch.linear(native_(x), native_(weight), new TensorOptional(native_(bias))));
    }

    /**
     * libtorch's product computed in {@code wide} and rounded back to the activations' dtype, for a dtype whose own
     * matrix product is slow here ({@link HostKernels#gemmDtype}). The widened copies live in a scope of their own and
     * are freed as soon as the product is made, so a prefill holds one widened weight at a time, not a layer's.
     */
    private Tensor widenedLinear(Tensor x, Tensor weight, Tensor bias, DType wide) {
        ScalarType type = TorchTypes.scalarType(wide);
        org.bytedeco.pytorch.Tensor result;
        try (PointerScope scope = new PointerScope()) {
            org.bytedeco.pytorch.Tensor product = bias == null
                    ? torch.linear(native_(x).to(type), native_(weight).to(type))
                    : torch.linear(native_(x).to(type), native_(weight).to(type),
                            new TensorOptional(native_(bias).to(type)));
            result = product.to(TorchTypes.scalarType(x.dtype()));
            result.retainReference(); // outlives the scope
        }
        PointerScope outer = PointerScope.getInnerScope();
        if (outer != null) {
            outer.attach(result); // now the caller's scope owns it, as it owns every op's result
            result.releaseReference();
        }
        return wrap(result);
    }

    /**
     * The backend's kernel for the weight's format where it takes these rows (a decode step's few); otherwise the
     * weight dequantized once for this product (by the kernels where they can, else by composed ops) and libtorch's
     * matrix product.
     */
    @Override
    public Tensor linear(Tensor x, QuantizedTensor weight, Tensor bias) {
        if (kernels != null) {
            Tensor product = kernelQuantizedLinear(x, weight, bias);
            if (product != null) {
                return product;
            }
        }
        return linear(x, dequantize(weight), bias);
    }

    @Override
    public Tensor dequantize(QuantizedTensor weight) {
        if (kernels != null && kernels.takesDequantize(weight.format(), weight.dtype()) && weight.shape().length == 2
                && contiguous(weight.data()) && contiguous(weight.scales())
                && (weight.zeroPoints() == null || contiguous(weight.zeroPoints()))) {
            TorchTensor y = empty(weight.dtype(), weight.shape());
            kernels.dequantize(weight.format(), weight.dtype(), bytes(weight.data()), bytes(weight.scales()),
                    weight.zeroPoints() == null ? null : bytes(weight.zeroPoints()), y.hostBytes(),
                    Math.toIntExact(weight.size(0)), Math.toIntExact(weight.size(1)));
            return y;
        }
        return TensorOps.super.dequantize(weight);
    }

    /** Which kernels products with weights of {@code format} run on here. */
    public String describeKernels(WeightFormat format, DType dtype) {
        return kernels != null ? kernels.describe(format, dtype)
                : "dequantized by libtorch ops for each product, then libtorch's matrix product";
    }

    @Override
    public Tensor matmul(Tensor a, Tensor b) {
        return wrap(torch.matmul(native_(a), native_(b)));
    }

    /**
     * Runs each expert on the rows routed to it only, as transformers' eager MoE does: the routing is read to the
     * host (an eager step may), a decode step runs its k experts per row, a prefill each hit expert once over all its
     * rows. Outputs are scaled by their rows' weights and added into the rows in expert order.
     */
    @Override
    public Tensor mixture(Tensor x, Tensor routing, List<java.util.function.UnaryOperator<Tensor>> experts) {
        int count = experts.size();
        int rows = Math.toIntExact(x.size(0));
        float[] weights = readFloats(routing);
        org.bytedeco.pytorch.Tensor sum = torch.zeros_like(native_(x));
        long[] routed = new long[rows];
        for (int expert = 0; expert < count; expert++) {
            int used = 0;
            for (int row = 0; row < rows; row++) {
                if (weights[row * count + expert] != 0) {
                    routed[used++] = row;
                }
            }
            if (used == 0) {
                continue;
            }
            Tensor index = constant(java.util.Arrays.copyOf(routed, used), used);
            Tensor output = experts.get(expert).apply(embedding(x, index));
            Tensor weight = slice(embedding(routing, index), 1, expert, expert + 1);
            sum = sum.index_add(0, native_(index), native_(mul(output, weight)));
        }
        return wrap(sum);
    }

    @Override
    public Tensor embedding(Tensor table, Tensor ids) {
        return wrap(torch.embedding(native_(table), native_(ids)));
    }

    @Override
    public Tensor rmsNorm(Tensor x, Tensor weight, double eps) {
        if (kernels != null && takesElementwise(x) && weight.dtype() == x.dtype() && contiguous(weight)) {
            long width = x.size(-1);
            TorchTensor y = empty(x.dtype(), x.shape());
            kernels.rmsNorm(x.dtype(), bytes(x), bytes(weight), y.hostBytes(), Math.toIntExact(elements(x) / width),
                    Math.toIntExact(width), eps);
            return y;
        }
        long[] normalized = {x.size(-1)};
        if (x.dtype() == DType.F32) {
            return wrap(torch.rms_norm(native_(x), normalized, new TensorOptional(native_(weight)),
                    new DoubleOptional(eps)));
        }
        // Half precision: normalize in float32, round back, then scale, exactly as transformers' LlamaRMSNorm.
        org.bytedeco.pytorch.Tensor wide = native_(x).to(ScalarType.Float);
        org.bytedeco.pytorch.Tensor normed = torch.rms_norm(wide, normalized, new TensorOptional(),
                new DoubleOptional(eps));
        return wrap(normed.to(native_(x).scalar_type()).mul(native_(weight)));
    }

    @Override
    public Tensor rotary(Tensor x, Tensor cos, Tensor sin) {
        if (kernels != null && x.shape().length == 4 && takesFloat(x) && cos.dtype() == x.dtype()
                && sin.dtype() == x.dtype() && lastDimensionDense(x) && contiguous(cos) && contiguous(sin)
                && cos.size(1) == 1 && cos.size(0) == x.size(0) && cos.size(2) == x.size(2) && cos.size(3) == x.size(3)
                && java.util.Arrays.equals(cos.shape(), sin.shape()) && x.size(-1) % 2 == 0) {
            long[] shape = x.shape();
            TorchTensor y = empty(x.dtype(), shape);
            kernels.rotary(x.dtype(), bytes(x), ((TorchTensor) x).strides(), bytes(cos), bytes(sin), y.hostBytes(),
                    (int) shape[0], (int) shape[1], (int) shape[2], (int) shape[3]);
            return y;
        }
        return TensorOps.super.rotary(x, cos, sin);
    }

    @Override
    public Tensor softmax(Tensor x, int dim) {
        return wrap(torch.softmax(native_(x), dim));
    }

    @Override
    public Tensor logSoftmax(Tensor x, int dim) {
        return wrap(torch.log_softmax(native_(x), dim));
    }

    @Override
    public Tensor argmax(Tensor x, int dim) {
        int rank = x.shape().length;
        if (kernels != null && (dim == -1 || dim == rank - 1) && takesElementwise(x)) {
            long[] shape = java.util.Arrays.copyOf(x.shape(), rank - 1);
            long width = x.size(-1);
            TorchTensor y = empty(DType.I64, shape);
            kernels.argmax(x.dtype(), bytes(x), y.hostBytes(), Math.toIntExact(elements(x) / width),
                    Math.toIntExact(width));
            return y;
        }
        return wrap(torch.argmax(native_(x), new LongOptional(dim), false));
    }

    // ---- masks --------------------------------------------------------------------------------------------------

    @Override
    public Tensor compare(Tensor a, Tensor b, Comparison comparison) {
        org.bytedeco.pytorch.Tensor left = native_(a);
        org.bytedeco.pytorch.Tensor right = native_(b);
        return wrap(switch (comparison) {
            case LESS -> torch.lt(left, right);
            case LESS_OR_EQUAL -> torch.le(left, right);
            case EQUAL -> torch.eq(left, right);
            case GREATER_OR_EQUAL -> torch.ge(left, right);
            case GREATER -> torch.gt(left, right);
        });
    }

    @Override
    public Tensor and(Tensor a, Tensor b) {
        return wrap(torch.logical_and(native_(a), native_(b)));
    }

    @Override
    public Tensor or(Tensor a, Tensor b) {
        return wrap(torch.logical_or(native_(a), native_(b)));
    }

    // ---- attention ----------------------------------------------------------------------------------------------

    @Override
    public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale) {
        if (kernels != null) {
            Tensor fast = kernelAttention(q, k, v, allowed, scale);
            if (fast != null) {
                return fast;
            }
        }
        boolean grouped = q.size(1) != k.size(1);
        if (cpu && (q.dtype() == DType.BF16 || q.dtype() == DType.F16)) {
            // libtorch's CPU attention in half precision is ~10x slower than in float32 (measured here for a
            // prefill batch of [16, 14, 49, 64]: 45-65 ms against 4-5 ms, whichever SDPA kernel or mask form), so
            // it computes in float32 and rounds once at the end; the casts cost a fraction of a millisecond.
            ScalarType half = native_(q).scalar_type();
            org.bytedeco.pytorch.Tensor out = torch.scaled_dot_product_attention(native_(q).to(ScalarType.Float),
                    native_(k).to(ScalarType.Float), native_(v).to(ScalarType.Float),
                    new TensorOptional(native_(allowed)), 0.0, false, new DoubleOptional(scale), grouped);
            return wrap(out.to(half));
        }
        return wrap(torch.scaled_dot_product_attention(native_(q), native_(k), native_(v),
                new TensorOptional(native_(allowed)), 0.0, false, new DoubleOptional(scale), grouped));
    }

    /**
     * Soft-capped attention as transformers' eager path computes it: scores in the query dtype, capped, masked,
     * softmax in float32 and back; grouped heads by broadcasting {@code [B, Hkv, G, T, D]} against
     * {@code [B, Hkv, 1, S, D]} rather than copying keys and values per query head.
     */
    @Override
    public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale, double softcap) {
        if (softcap == 0) {
            return attention(q, k, v, allowed, scale);
        }
        long batch = q.size(0);
        long heads = q.size(1);
        long queries = q.size(2);
        long width = q.size(3);
        long kvHeads = k.size(1);
        long keys = k.size(2);
        long group = heads / kvHeads;
        org.bytedeco.pytorch.Tensor q5 = native_(q).reshape(batch, kvHeads, group, queries, width);
        org.bytedeco.pytorch.Tensor k5 = native_(k).reshape(batch, kvHeads, 1, keys, width);
        org.bytedeco.pytorch.Tensor v5 = native_(v).reshape(batch, kvHeads, 1, keys, width);
        org.bytedeco.pytorch.Tensor scores = q5.matmul(k5.transpose(-2, -1)).mul(new Scalar(scale));
        scores = scores.div(new Scalar(softcap)).tanh().mul(new Scalar(softcap));
        org.bytedeco.pytorch.Tensor mask = native_(allowed).reshape(native_(allowed).size(0), 1, 1, queries, keys);
        scores = scores.masked_fill(torch.logical_not(mask), new Scalar(Double.NEGATIVE_INFINITY));
        org.bytedeco.pytorch.Tensor probabilities = scores.to(ScalarType.Float).softmax(-1)
                .to(native_(q).scalar_type());
        return wrap(probabilities.matmul(v5).reshape(batch, heads, queries, width));
    }

    @Override
    public Tensor writeSlots(Tensor target, int dim, Tensor index, Tensor source) {
        if (kernels != null && hostCopiesRows(target, dim, index, source)) {
            copyRows((TorchTensor) target, (TorchTensor) index, (TorchTensor) source);
            return target;
        }
        native_(target).index_copy_(dim, native_(index), native_(source));
        return target;
    }

    /**
     * Whether {@link #copyRows} takes this write: a cache {@code [B, H, S, D]} written at slots of its third dimension
     * from rows whose last dimension is dense, as every attention layer's step does. libtorch's index_copy_ builds a
     * TensorIterator for each call, which in a decode step costs more than the two rows of 128 bytes it copies.
     */
    private static boolean hostCopiesRows(Tensor target, int dim, Tensor index, Tensor source) {
        long[] shape = target.shape();
        long[] rows = source.shape();
        return shape.length == 4 && (dim == 2 || dim == -2) && rows.length == 4 && target.dtype() == source.dtype()
                && index.dtype() == DType.I64 && index.shape().length == 1 && index.size(0) == rows[2]
                && rows[0] == shape[0] && rows[1] == shape[1] && rows[3] == shape[3] && contiguous(target)
                && contiguous(index) && lastDimensionDense(source);
    }

    /** {@code target[b, h, index[t], :] = source[b, h, t, :]}, row by row in host memory. */
    private static void copyRows(TorchTensor target, TorchTensor index, TorchTensor source) {
        long[] shape = target.shape();
        long[] to = target.strides();
        long[] from = source.strides();
        long elementBytes = target.dtype().byteSize();
        long rowBytes = shape[3] * elementBytes;
        MemorySegment slots = index.hostBytes();
        MemorySegment into = target.hostBytes();
        MemorySegment rows = source.hostBytes();
        long count = index.size(0);
        for (long t = 0; t < count; t++) {
            long slot = slots.getAtIndex(java.lang.foreign.ValueLayout.JAVA_LONG_UNALIGNED, t);
            if (slot < 0 || slot >= shape[2]) {
                throw new IndexOutOfBoundsException("slot " + slot + " outside a cache of " + shape[2]);
            }
            for (long b = 0; b < shape[0]; b++) {
                for (long h = 0; h < shape[1]; h++) {
                    MemorySegment.copy(rows, elementBytes * (b * from[0] + h * from[1] + t * from[2]), into,
                            elementBytes * (b * to[0] + h * to[1] + slot * to[2]), rowBytes);
                }
            }
        }
    }

    // ---- host kernels -------------------------------------------------------------------------------------------

    /** {@code x·weightᵀ + bias} by the backend's kernel, or null where it does not take these tensors. */
    private Tensor kernelLinear(Tensor x, Tensor weight, Tensor bias) {
        DType dtype = x.dtype();
        if (weight.dtype() != dtype || (bias != null && bias.dtype() != dtype)) {
            return null;
        }
        long[] shape = x.shape();
        long in = shape[shape.length - 1];
        long out = weight.size(0);
        long rows = 1;
        for (int i = 0; i < shape.length - 1; i++) {
            rows *= shape[i];
        }
        if (weight.size(1) != in || !kernels.takesLinear(WeightFormat.Dense.of(dtype), dtype, rows, in, out)) {
            return null;
        }
        TorchTensor input = (TorchTensor) x;
        TorchTensor matrix = (TorchTensor) weight;
        TorchTensor addend = (TorchTensor) bias;
        if (!input.isContiguous() || !matrix.isContiguous() || (addend != null && !addend.isContiguous())) {
            return null;
        }
        shape[shape.length - 1] = out;
        TorchTensor y = empty(dtype, shape);
        kernels.linear(dtype, input.hostBytes(), matrix.hostBytes(), addend == null ? null : addend.hostBytes(),
                y.hostBytes(), (int) rows, (int) in, (int) out);
        return y;
    }

    /** {@code x·weightᵀ + bias} by the backend's kernel for a quantized weight, or null where it does not take it. */
    private Tensor kernelQuantizedLinear(Tensor x, QuantizedTensor weight, Tensor bias) {
        DType dtype = x.dtype();
        if (weight.dtype() != dtype || weight.shape().length != 2 || (bias != null && bias.dtype() != dtype)) {
            return null;
        }
        long[] shape = x.shape();
        long in = shape[shape.length - 1];
        long out = weight.size(0);
        long rows = 1;
        for (int i = 0; i < shape.length - 1; i++) {
            rows *= shape[i];
        }
        if (weight.size(1) != in || !kernels.takesQuantizedLinear(weight.format(), dtype, rows, in, out)
                || !contiguous(x) || !contiguous(weight.data()) || !contiguous(weight.scales())
                || (weight.zeroPoints() != null && !contiguous(weight.zeroPoints()))
                || (bias != null && !contiguous(bias))) {
            return null;
        }
        shape[shape.length - 1] = out;
        TorchTensor y = empty(dtype, shape);
        kernels.quantizedLinear(weight.format(), dtype, bytes(x), bytes(weight.data()), bytes(weight.scales()),
                weight.zeroPoints() == null ? null : bytes(weight.zeroPoints()), bias == null ? null : bytes(bias),
                y.hostBytes(), (int) rows, (int) in, (int) out);
        return y;
    }

    /**
     * Attention by the backend's kernel, written in {@code [B, T, H, D]} order and returned as the {@code [B, H, T, D]}
     * view of it, so the caller's transpose back is free; null where the kernel does not take these tensors.
     */
    private Tensor kernelAttention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale) {
        long[] qShape = q.shape();
        long[] kShape = k.shape();
        long[] mask = allowed.shape();
        DType dtype = q.dtype();
        if (qShape.length != 4 || kShape.length != 4 || mask.length != 4 || !takesFloat(q) || k.dtype() != dtype
                || v.dtype() != dtype || allowed.dtype() != DType.BOOL || !java.util.Arrays.equals(kShape, v.shape())
                || qShape[1] % kShape[1] != 0 || mask[1] != 1 || mask[2] != qShape[2] || mask[3] != kShape[2]
                || (mask[0] != 1 && mask[0] != qShape[0]) || !lastDimensionDense(q) || !lastDimensionDense(k)
                || !lastDimensionDense(v) || !lastDimensionDense(allowed)
                || !kernels.takesAttention(dtype, qShape[0], qShape[1], qShape[2], kShape[2], qShape[3])) {
            return null;
        }
        long[] maskStrides = ((TorchTensor) allowed).strides();
        long[] maskBatchAndQuery = {mask[0] == 1 ? 0 : maskStrides[0], maskStrides[2]};
        TorchTensor out = empty(dtype, qShape[0], qShape[2], qShape[1], qShape[3]);
        kernels.attention(dtype, bytes(q), ((TorchTensor) q).strides(), bytes(k), ((TorchTensor) k).strides(),
                bytes(v), ((TorchTensor) v).strides(), bytes(allowed), maskBatchAndQuery, out.hostBytes(),
                (int) qShape[0], (int) qShape[1], (int) kShape[1], (int) qShape[2], (int) kShape[2], (int) qShape[3],
                scale);
        return transpose(out, 1, 2);
    }

    /** A floating-point tensor the kernels compute in. */
    private static boolean takesFloat(Tensor x) {
        return x.dtype() == DType.F32 || x.dtype() == DType.BF16;
    }

    private static boolean takesElementwise(Tensor x) {
        return takesFloat(x) && contiguous(x) && x.shape().length > 0 && x.size(-1) > 0;
    }

    private static boolean contiguous(Tensor x) {
        return ((TorchTensor) x).isContiguous();
    }

    /** Rows of the last dimension are dense (stride 1), whatever the other strides. */
    private static boolean lastDimensionDense(Tensor x) {
        long[] strides = ((TorchTensor) x).strides();
        return strides.length > 0 && (strides[strides.length - 1] == 1 || x.size(-1) == 1);
    }

    private static MemorySegment bytes(Tensor x) {
        return ((TorchTensor) x).hostBytes();
    }

    private static long elements(Tensor x) {
        long count = 1;
        for (long extent : x.shape()) {
            count *= extent;
        }
        return count;
    }

    private TorchTensor empty(DType dtype, long... shape) {
        return new TorchTensor(torch.empty(shape, options(dtype), anyMemoryFormat), shape, rowMajor(shape), true, dtype,
                splitIndex, 0);
    }

    /**
     * The view {@code op} makes of {@code x}, of {@code shape}, with its {@code strides} and the {@code address} of its
     * first element recorded where the caller knows them (null and 0 where not), so kernels reading it ask libtorch for
     * neither. Where the kernels run (CPU, inference), for a view whose layout and bytes are known, on this device and
     * inside a scope of ours that is the innermost one (closing it is when a view never made is forgotten), libtorch
     * makes the view only when something asks for its handle: a decode step's head splits, transposes and cache
     * slices then cost no libtorch call (measured: the main thread's time outside the products and kernels went from
     * 5.7% to 4.3% of a Qwen2.5-0.5B-shaped bf16 decode).
     */
    private TorchTensor view(TorchTensor x, java.util.function.UnaryOperator<org.bytedeco.pytorch.Tensor> op,
                             long[] shape, long[] strides, long address) {
        if (strides == null) {
            return new TorchTensor(op.apply(native_(x)), shape, x.dtype(), splitIndex);
        }
        boolean contiguous = contiguous(shape, strides);
        OpenScope open = OPEN_SCOPES.get().peek();
        if (kernels != null && address != 0 && open != null && open.scope() == PointerScope.getInnerScope()
                && (split == null || x.splitDevice() == splitIndex)) {
            TorchTensor lazy = new TorchTensor(x, op, shape, strides, contiguous, address, open.scope());
            open.views().add(lazy);
            return lazy;
        }
        return new TorchTensor(op.apply(native_(x)), shape, strides, contiguous, x.dtype(), splitIndex, address);
    }

    /** libtorch's is_contiguous for a layout: row-major strides on every dimension longer than one. */
    private static boolean contiguous(long[] shape, long[] strides) {
        long expected = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            if (shape[i] == 0) {
                return true;
            }
            if (shape[i] != 1) {
                if (strides[i] != expected) {
                    return false;
                }
                expected *= shape[i];
            }
        }
        return true;
    }

    /** The strides of a contiguous tensor of {@code shape}. */
    private static long[] rowMajor(long[] shape) {
        long[] strides = new long[shape.length];
        long step = 1;
        for (int i = shape.length - 1; i >= 0; i--) {
            strides[i] = step;
            step *= Math.max(shape[i], 1);
        }
        return strides;
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    /** Options for new tensors of {@code dtype} on this device; owned by these ops (do not free). */
    TensorOptions options(DType dtype) {
        return optionsByDtype[dtype.ordinal()];
    }

    /**
     * The libtorch tensor an op computes with. On a split model it must have been made on this device: libtorch on
     * CUDA refuses tensors of two GPUs in one op, and checking it here makes CPU stand-ins refuse it the same way.
     */
    org.bytedeco.pytorch.Tensor native_(Tensor tensor) {
        TorchTensor torchTensor = torchTensor(tensor);
        if (split != null && torchTensor.splitDevice() != splitIndex) {
            throw new IllegalStateException("a tensor of device " + torchTensor.splitDevice() + " of the split reached"
                    + " an op of device " + splitIndex + " (" + deviceName + "): it must cross with transfer()");
        }
        return torchTensor.handle();
    }

    private static org.bytedeco.pytorch.Tensor handle(Tensor tensor) {
        return torchTensor(tensor).handle();
    }

    private static TorchTensor torchTensor(Tensor tensor) {
        if (tensor instanceof TorchTensor torchTensor) {
            return torchTensor;
        }
        throw new IllegalArgumentException("not a libtorch tensor: " + tensor);
    }

    /** {@code handle} as a tensor these ops made (so, on a split model, of this device). */
    TorchTensor wrap(org.bytedeco.pytorch.Tensor handle) {
        return new TorchTensor(handle, splitIndex);
    }

    /**
     * Where a constant is written before it goes to the device: for CUDA, page-locked host memory, so that the copy
     * below can be asynchronous. A decode step sends each row's previous id and position this way, and the only
     * point where the host waits for the GPU is reading the step's chosen ids back. (A copy from pageable memory
     * waits for the device to finish everything queued before it.) libtorch's pinned-memory allocator keeps such a
     * block until the copy that reads it has completed, so the host tensor may be freed with its scope.
     */
    private TensorOptions hostOptions(ScalarType type) {
        TensorOptions options = new TensorOptions(type);
        return cuda ? options.pinned_memory(new BoolOptional(true)) : options;
    }

    private org.bytedeco.pytorch.Tensor onDevice(org.bytedeco.pytorch.Tensor host) {
        if (cpu) {
            return host;
        }
        return host.to(device, host.scalar_type(), cuda, false, anyMemoryFormat);
    }

    private static org.bytedeco.pytorch.Tensor toHost(org.bytedeco.pytorch.Tensor tensor, ScalarType type) {
        org.bytedeco.pytorch.Tensor host = tensor.device().is_cpu() ? tensor : tensor.cpu();
        return host.to(type).contiguous();
    }

    /** The bytes of a contiguous CPU tensor, for copying in or out. */
    static MemorySegment segment(org.bytedeco.pytorch.Tensor host, long bytes) {
        return MemorySegment.ofAddress(host.data_ptr().address()).reinterpret(bytes);
    }

    private static void checkCount(long given, long expected) {
        if (given != expected) {
            throw new IllegalArgumentException(given + " values for a tensor of " + expected + " elements");
        }
    }
}
