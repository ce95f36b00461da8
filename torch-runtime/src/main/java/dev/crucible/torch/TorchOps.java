package dev.crucible.torch;

import dev.crucible.api.model.DType;
import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.util.List;
import java.util.Objects;
import org.bytedeco.javacpp.PointerScope;
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
    private final boolean inference;

    /**
     * @param deviceName a libtorch device string: {@code cpu}, {@code cuda:1}, {@code mps}
     * @param inference  scopes switch autograd off (no graph is recorded, no activation kept for backward)
     */
    public TorchOps(String deviceName, boolean inference) {
        TorchRuntime.load();
        this.deviceName = Objects.requireNonNull(deviceName, "deviceName is null");
        this.inference = inference;
        // Owned by these ops, whatever scope happens to be open now; freed by close().
        this.device = new Device(deviceName).retainReference();
        this.cpu = device.is_cpu();
    }

    /** Frees the device handle; tensors made by these ops are owned elsewhere and stay valid. */
    @Override
    public void close() {
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
        return scope::close;
    }

    @Override
    public Tensor retain(Tensor tensor) {
        native_(tensor).retainReference();
        return tensor;
    }

    @Override
    public void release(Tensor tensor) {
        native_(tensor).releaseReference();
    }

    // ---- host transfers -------------------------------------------------------------------------------------------

    @Override
    public Tensor constant(float[] values, long... shape) {
        org.bytedeco.pytorch.Tensor host = torch.empty(shape, new TensorOptions(ScalarType.Float), new MemoryFormatOptional());
        checkCount(values.length, host.numel());
        MemorySegment.copy(values, 0, segment(host, 4L * values.length), ValueLayout.JAVA_FLOAT, 0, values.length);
        return wrap(onDevice(host));
    }

    @Override
    public Tensor constant(long[] values, long... shape) {
        org.bytedeco.pytorch.Tensor host = torch.empty(shape, new TensorOptions(ScalarType.Long), new MemoryFormatOptional());
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
        org.bytedeco.pytorch.Tensor host = toHost(native_(tensor), ScalarType.Float);
        float[] values = new float[Math.toIntExact(host.numel())];
        MemorySegment.copy(segment(host, 4L * values.length), ValueLayout.JAVA_FLOAT, 0, values, 0, values.length);
        return values;
    }

    @Override
    public long[] readLongs(Tensor tensor) {
        org.bytedeco.pytorch.Tensor host = toHost(native_(tensor), ScalarType.Long);
        long[] values = new long[Math.toIntExact(host.numel())];
        MemorySegment.copy(segment(host, 8L * values.length), ValueLayout.JAVA_LONG, 0, values, 0, values.length);
        return values;
    }

    // ---- layout -------------------------------------------------------------------------------------------------

    @Override
    public Tensor cast(Tensor x, DType dtype) {
        return x.dtype() == dtype ? x : wrap(native_(x).to(TorchTypes.scalarType(dtype)));
    }

    @Override
    public Tensor reshape(Tensor x, long... shape) {
        return wrap(native_(x).reshape(shape));
    }

    @Override
    public Tensor transpose(Tensor x, int dim0, int dim1) {
        return wrap(native_(x).transpose(dim0, dim1));
    }

    @Override
    public Tensor slice(Tensor x, int dim, long start, long end) {
        return wrap(native_(x).slice(dim, new LongOptional(start), new LongOptional(end), 1));
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
    public Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        return bias == null
                ? wrap(torch.linear(native_(x), native_(weight)))
                : wrap(torch.linear(native_(x), native_(weight), new TensorOptional(native_(bias))));
    }

    @Override
    public Tensor embedding(Tensor table, Tensor ids) {
        return wrap(torch.embedding(native_(table), native_(ids)));
    }

    @Override
    public Tensor rmsNorm(Tensor x, Tensor weight, double eps) {
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
    public Tensor softmax(Tensor x, int dim) {
        return wrap(torch.softmax(native_(x), dim));
    }

    @Override
    public Tensor logSoftmax(Tensor x, int dim) {
        return wrap(torch.log_softmax(native_(x), dim));
    }

    @Override
    public Tensor argmax(Tensor x, int dim) {
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
        boolean grouped = q.size(1) != k.size(1);
        return wrap(torch.scaled_dot_product_attention(native_(q), native_(k), native_(v),
                new TensorOptional(native_(allowed)), 0.0, false, new DoubleOptional(scale), grouped));
    }

    @Override
    public Tensor writeSlots(Tensor target, int dim, Tensor index, Tensor source) {
        native_(target).index_copy_(dim, native_(index), native_(source));
        return target;
    }

    // ---- helpers ------------------------------------------------------------------------------------------------

    TensorOptions options(DType dtype) {
        return new TensorOptions(TorchTypes.scalarType(dtype)).device(new DeviceOptional(device));
    }

    static org.bytedeco.pytorch.Tensor native_(Tensor tensor) {
        if (tensor instanceof TorchTensor torchTensor) {
            return torchTensor.handle();
        }
        throw new IllegalArgumentException("not a libtorch tensor: " + tensor);
    }

    static TorchTensor wrap(org.bytedeco.pytorch.Tensor handle) {
        return new TorchTensor(handle);
    }

    private org.bytedeco.pytorch.Tensor onDevice(org.bytedeco.pytorch.Tensor host) {
        return cpu ? host : host.to(device, host.scalar_type());
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
