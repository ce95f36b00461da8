package dev.crucible.accelerator.xla.lower;

import dev.crucible.accelerator.xla.exec.CompiledProgram;
import dev.crucible.accelerator.xla.exec.DeviceArray;
import dev.crucible.accelerator.xla.exec.Program;
import dev.crucible.accelerator.xla.exec.ProgramManifest;
import dev.crucible.accelerator.xla.exec.TensorSpec;
import dev.crucible.accelerator.xla.exec.XlaExecutor;
import dev.crucible.accelerator.xla.pjrt.CompileOptions;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.QuantizedTensor;
import dev.crucible.api.tensor.Tensor;
import dev.crucible.api.tensor.TensorOps;
import dev.crucible.api.tensor.TensorScope;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.Arena;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.Comparator;
import java.util.Deque;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Consumer;
import java.util.function.LongFunction;

/**
 * The model definition traced into StableHLO programs and run by an {@link XlaExecutor}: a lazy {@link TensorOps}.
 * Every op adds a node to a graph (its output shape known at once); a host read materializes what it needs as one
 * program, compiled once per shape and structure ({@link ProgramCache}) and run with the leaves it reads as
 * arguments, weights and LoRA factors among them, never as constants. A read also materializes the state the step
 * retained (the KV cache a decode step wrote), whose old value is donated to it, so the cache stays on the device
 * without a copy, and the values the step left for later reads (its logits beside the argmax being read).
 *
 * <p>Constants made on the host stay host values until a program takes them: a slice, reshape or cast of them is
 * done on the host, so that per-step values (the slot a decode step writes) are arguments and every decode step is
 * the same program. Zeros are constants written into the program (a fresh KV cache costs no upload).
 *
 * <p>One caller at a time: the backend runs a model's batches one after another.
 */
public final class XlaOps implements TensorOps, AutoCloseable {
    private static final ValueLayout.OfLong I64_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfInt I32_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfFloat F32_LE = ValueLayout.JAVA_FLOAT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfShort I16_LE = ValueLayout.JAVA_SHORT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    private final XlaExecutor executor;
    private final ProgramCache programs;
    private final boolean ownsPrograms;
    private Sharding sharding;
    private final Deque<List<XlaTensor>> scopes = new ArrayDeque<>();
    /** Tensors made outside any scope: alive until this closes. */
    private final List<XlaTensor> unscoped = new ArrayList<>();
    private final Set<XlaTensor> retainedLazy = identitySet();
    private final Set<XlaTensor> aliveLazy = identitySet();
    /** Every tensor holding device arrays, so that closing frees them whoever forgot to. */
    private final Set<XlaTensor> onDevice = identitySet();
    private final List<Consumer<LoweredProgram>> observers = new ArrayList<>();
    private String stepName = "program";
    private long serials;
    private long executions;

    /** Ops with a program cache of their own, closed with them. */
    public XlaOps(XlaExecutor executor, Sharding sharding) {
        this(executor, sharding, new ProgramCache(executor), true);
    }

    /** Ops that compile into {@code programs}, shared with other models of the same executor and kept open. */
    public XlaOps(XlaExecutor executor, Sharding sharding, ProgramCache programs) {
        this(executor, sharding, programs, false);
    }

    private XlaOps(XlaExecutor executor, Sharding sharding, ProgramCache programs, boolean ownsPrograms) {
        this.executor = executor;
        this.sharding = sharding;
        this.programs = programs;
        this.ownsPrograms = ownsPrograms;
        if (sharding.partitions() > executor.deviceCount()) {
            throw new IllegalArgumentException("programs split over " + sharding.partitions() + " devices, the "
                    + executor.platform() + " runtime has " + executor.deviceCount());
        }
    }

    public XlaExecutor executor() {
        return executor;
    }

    public Sharding sharding() {
        return sharding;
    }

    public ProgramCache programs() {
        return programs;
    }

    /** Programs run so far. */
    public synchronized long executions() {
        return executions;
    }

    /** Bytes the device arrays of every tensor alive here take, over all devices (weights as placed, in their types). */
    public synchronized long deviceBytes() {
        long bytes = 0;
        for (XlaTensor tensor : onDevice) {
            for (DeviceArray shard : tensor.device.shards()) {
                bytes += shard.dtype().byteSize() * elements(shard.shape());
            }
        }
        return bytes;
    }

    /** Sees every program once it compiled, before it runs (what {@code runner lower} writes out). */
    public synchronized void observe(Consumer<LoweredProgram> observer) {
        observers.add(observer);
    }

    /** Names the programs materialized from now on (prefill, decode, ...), for manifests and reports. */
    public synchronized void nameSteps(String name) {
        stepName = name;
    }

    /**
     * {@code host} on the devices as {@code dtype}, laid out as {@code layout}: a leaf named {@code host.name()}, a
     * temporary of the current scope. The conversion is done on the host, once.
     */
    public synchronized Tensor place(HostTensor host, DType dtype, Layout layout) {
        XlaTensor tensor = create(dtype, host.shape());
        tensor.name = host.name();
        if (!executor.computes()) {
            // Lowering only: the weights' values are never read, so a large model lowers without touching them.
            List<DeviceArray> shards = new ArrayList<>();
            long[] shape = layout.deviceShape(host.shape(), sharding.partitions());
            for (int d = 0; d < sharding.partitions(); d++) {
                shards.add(executor.placeholder(dtype, shape, d));
            }
            tensor.device = new XlaTensor.Placed(shards, layout);
        } else {
            try (Arena arena = Arena.ofConfined()) {
                tensor.device = upload(convert(host, dtype, bytes -> arena.allocate(Math.max(1, bytes), 8)
                        .asSlice(0, bytes)), layout);
            }
        }
        onDevice.add(tensor);
        return tensor;
    }

    // ---- scopes and ownership ---------------------------------------------------------------------------------

    @Override
    public synchronized TensorScope openScope() {
        List<XlaTensor> scope = new ArrayList<>();
        scopes.push(scope);
        return () -> closeScope(scope);
    }

    private synchronized void closeScope(List<XlaTensor> scope) {
        if (scopes.peek() != scope) {
            throw new IllegalStateException("tensor scopes must close innermost first");
        }
        scopes.pop();
        for (XlaTensor tensor : scope) {
            tensor.scopeOwned = false;
            if (!tensor.alive()) {
                aliveLazy.remove(tensor);
            }
            maybeFree(tensor);
        }
    }

    @Override
    public synchronized Tensor retain(Tensor tensor) {
        XlaTensor t = own(tensor);
        t.checkUsable();
        t.retains++;
        if (t.lazy()) {
            retainedLazy.add(t);
            aliveLazy.add(t);
        }
        return tensor;
    }

    @Override
    public synchronized void release(Tensor tensor) {
        XlaTensor t = own(tensor);
        if (t.retains <= 0) {
            throw new IllegalStateException("release of " + t + ", which is not retained");
        }
        t.retains--;
        if (t.retains == 0) {
            retainedLazy.remove(t);
            if (!t.alive()) {
                aliveLazy.remove(t);
            }
            maybeFree(t);
        }
    }

    private XlaTensor create(DType dtype, long[] shape) {
        XlaTensor tensor = new XlaTensor(serials++, dtype, shape);
        tensor.scopeOwned = true;
        (scopes.isEmpty() ? unscoped : scopes.peek()).add(tensor);
        return tensor;
    }

    private XlaTensor node(Op op, DType dtype, long[] shape, XlaTensor... inputs) {
        for (XlaTensor input : inputs) {
            input.checkUsable();
        }
        XlaTensor tensor = create(dtype, shape);
        tensor.op = op;
        tensor.inputs = inputs;
        for (XlaTensor input : inputs) {
            input.referrers++;
            input.consumed = true;
        }
        aliveLazy.add(tensor);
        return tensor;
    }

    private XlaTensor host(HostTensor values) {
        XlaTensor tensor = create(values.dtype(), values.shape());
        tensor.host = values;
        return tensor;
    }

    private void maybeFree(XlaTensor tensor) {
        Deque<XlaTensor> pending = new ArrayDeque<>();
        pending.push(tensor);
        while (!pending.isEmpty()) {
            XlaTensor t = pending.pop();
            if (t.gone != null || t.alive() || t.referrers > 0) {
                continue;
            }
            t.gone = "freed";
            aliveLazy.remove(t);
            retainedLazy.remove(t);
            if (t.device != null) {
                t.device.close();
                t.device = null;
                onDevice.remove(t);
            }
            t.host = null;
            if (t.inputs != null) {
                for (XlaTensor input : t.inputs) {
                    input.referrers--;
                    pending.push(input);
                }
                t.inputs = null;
                t.op = null;
            }
        }
    }

    // ---- values from and to the host --------------------------------------------------------------------------

    @Override
    public synchronized Tensor constant(float[] values, long... shape) {
        checkCount(values.length, shape);
        MemorySegment data = MemorySegment.ofArray(new byte[values.length * 4]);
        MemorySegment.copy(values, 0, data, F32_LE, 0, values.length);
        return host(new HostTensor("constant", DType.F32, shape, data));
    }

    @Override
    public synchronized Tensor constant(long[] values, long... shape) {
        checkCount(values.length, shape);
        MemorySegment data = MemorySegment.ofArray(new byte[values.length * 8]);
        MemorySegment.copy(values, 0, data, I64_LE, 0, values.length);
        return host(new HostTensor("constant", DType.I64, shape, data));
    }

    @Override
    public synchronized Tensor zeros(DType dtype, long... shape) {
        return node(new Op.Zeros(), dtype, shape);
    }

    @Override
    public synchronized float[] readFloats(Tensor tensor) {
        try (Arena arena = Arena.ofConfined()) {
            HostTensor host = toHost(own(tensor), arena);
            if (host.dtype().isFloatingPoint()) {
                return host.toFloatArray();
            }
            return toFloats(longs(host));
        }
    }

    @Override
    public synchronized long[] readLongs(Tensor tensor) {
        try (Arena arena = Arena.ofConfined()) {
            HostTensor host = toHost(own(tensor), arena);
            if (host.dtype().isFloatingPoint()) {
                throw new IllegalArgumentException("readLongs of a " + host.dtype() + " tensor");
            }
            return longs(host);
        }
    }

    /** The tensor's values on the host (materializing it first), in memory of {@code arena}. */
    public synchronized HostTensor toHost(Tensor tensor, Arena arena) {
        XlaTensor t = own(tensor);
        t.checkUsable();
        if (t.lazy()) {
            materialize(readSet(t));
        }
        if (t.host != null) {
            return t.host;
        }
        return download(t.device, t.toString(), t.dtype(), t.shapeView(), arena);
    }

    // ---- element types and layout -----------------------------------------------------------------------------

    @Override
    public synchronized Tensor cast(Tensor x, DType dtype) {
        XlaTensor t = own(x);
        if (t.dtype() == dtype) {
            return x;
        }
        if (t.host != null) {
            return host(convert(t.host, dtype, XlaOps::heap));
        }
        return node(new Op.Convert(dtype), dtype, t.shapeView(), t);
    }

    @Override
    public synchronized Tensor reshape(Tensor x, long... shape) {
        XlaTensor t = own(x);
        long[] out = inferShape(t.shapeView(), shape);
        if (Arrays.equals(out, t.shapeView())) {
            return x;
        }
        if (t.host != null) {
            return host(new HostTensor(t.host.name(), t.dtype(), out, t.host.data()));
        }
        return node(new Op.Reshape(), t.dtype(), out, t);
    }

    @Override
    public synchronized Tensor transpose(Tensor x, int dim0, int dim1) {
        XlaTensor t = own(x);
        long[] out = t.shape();
        int a = axis(out, dim0);
        int b = axis(out, dim1);
        if (a == b) {
            return x;
        }
        long swap = out[a];
        out[a] = out[b];
        out[b] = swap;
        return node(new Op.Transpose(a, b), t.dtype(), out, t);
    }

    @Override
    public synchronized Tensor slice(Tensor x, int dim, long start, long end) {
        XlaTensor t = own(x);
        long[] shape = t.shapeView();
        int axis = axis(shape, dim);
        check(0 <= start && start <= end && end <= shape[axis], "slice [" + start + ", " + end + ") of " + t);
        if (start == 0 && end == shape[axis]) {
            return x;
        }
        long[] out = shape.clone();
        out[axis] = end - start;
        if (t.host != null) {
            return host(sliceOnHost(t.host, axis, start, end, out));
        }
        return node(new Op.Slice(axis, start, end), t.dtype(), out, t);
    }

    @Override
    public synchronized Tensor concat(List<Tensor> parts, int dim) {
        check(!parts.isEmpty(), "concat of nothing");
        XlaTensor first = own(parts.getFirst());
        if (parts.size() == 1) {
            return first;
        }
        long[] out = first.shape();
        int axis = axis(out, dim);
        XlaTensor[] inputs = new XlaTensor[parts.size()];
        inputs[0] = first;
        for (int i = 1; i < parts.size(); i++) {
            XlaTensor part = own(parts.get(i));
            long[] shape = part.shapeView();
            check(shape.length == out.length && part.dtype() == first.dtype(), "concat " + parts);
            for (int d = 0; d < out.length; d++) {
                check(d == axis || shape[d] == out[d], "concat " + parts);
            }
            out[axis] += shape[axis];
            inputs[i] = part;
        }
        return node(new Op.Concat(axis), first.dtype(), out, inputs);
    }

    // ---- arithmetic -------------------------------------------------------------------------------------------

    @Override
    public synchronized Tensor add(Tensor a, Tensor b) {
        return binary(Op.Binary.Kind.ADD, own(a), own(b));
    }

    @Override
    public synchronized Tensor mul(Tensor a, Tensor b) {
        return binary(Op.Binary.Kind.MULTIPLY, own(a), own(b));
    }

    private Tensor binary(Op.Binary.Kind kind, XlaTensor a, XlaTensor b) {
        return node(new Op.Binary(kind), sameType(a, b), broadcast(a.shapeView(), b.shapeView()), a, b);
    }

    @Override
    public synchronized Tensor scale(Tensor x, double factor) {
        XlaTensor t = own(x);
        return node(new Op.Scale(factor), t.dtype(), t.shapeView(), t);
    }

    @Override
    public synchronized Tensor neg(Tensor x) {
        XlaTensor t = own(x);
        return node(new Op.Negate(), t.dtype(), t.shapeView(), t);
    }

    @Override
    public synchronized Tensor silu(Tensor x) {
        XlaTensor t = own(x);
        return node(new Op.Silu(), t.dtype(), t.shapeView(), t);
    }

    @Override
    public synchronized Tensor tanh(Tensor x) {
        XlaTensor t = own(x);
        return node(new Op.Tanh(), t.dtype(), t.shapeView(), t);
    }

    @Override
    public synchronized Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        XlaTensor in = own(x);
        XlaTensor w = own(weight);
        long[] shape = in.shape();
        long[] ws = w.shapeView();
        check(ws.length == 2 && shape.length >= 1 && shape[shape.length - 1] == ws[1], "linear " + in + " by " + w);
        sameType(in, w);
        shape[shape.length - 1] = ws[0];
        if (bias == null) {
            return node(new Op.Linear(false), in.dtype(), shape, in, w);
        }
        XlaTensor b = own(bias);
        check(Arrays.equals(b.shapeView(), new long[] {ws[0]}), "bias " + b + " for " + w);
        sameType(in, b);
        return node(new Op.Linear(true), in.dtype(), shape, in, w, b);
    }

    /**
     * int8 per-channel in XLA's own form: the s8 codes converted to the compute dtype in the program (exact: every
     * code is an integer of at most 7 bits) feed the {@code dot_general}, and each output channel's float32 scale
     * multiplies the float32 product before the bias and the one rounding, as {@code x·(q·s)ᵀ = (x·qᵀ)·s}. The
     * libtorch backends dequantize first (the weight {@code q·s} rounded to the compute dtype, then multiplied), so
     * in bf16 the two differ by that rounding of the weight; in float32 only in the last bits. Every other format
     * takes the composed dequantization ({@link TensorOps#dequantize}), which traces into converts, gathers from the
     * codebook and multiplies ahead of the product.
     */
    @Override
    public synchronized Tensor linear(Tensor x, QuantizedTensor weight, Tensor bias) {
        if (!scalesOnOutput(weight.format()) || weight.shape().length != 2 || own(x).dtype() != weight.dtype()) {
            return TensorOps.super.linear(x, weight, bias);
        }
        XlaTensor in = own(x);
        XlaTensor codes = own(cast(weight.data(), weight.dtype()));
        XlaTensor scales = own(reshape(weight.scales(), weight.size(0)));
        long[] shape = in.shape();
        check(shape.length >= 1 && shape[shape.length - 1] == weight.size(1), "linear " + in + " by " + weight);
        shape[shape.length - 1] = weight.size(0);
        if (bias == null) {
            return node(new Op.Linear(false, true), in.dtype(), shape, in, codes, scales);
        }
        XlaTensor b = own(bias);
        check(Arrays.equals(b.shapeView(), new long[] {weight.size(0)}), "bias " + b + " for " + weight);
        sameType(in, b);
        return node(new Op.Linear(true, true), in.dtype(), shape, in, codes, scales, b);
    }

    /** int8 with one scale per output row and no zero points: the format whose scales go on the product. */
    private static boolean scalesOnOutput(WeightFormat format) {
        return format instanceof WeightFormat.Int integers && integers.bits() == 8 && integers.blockSize() == 0
                && !integers.zeroPoints();
    }

    /** Which form products with weights of {@code format} take in the programs (a run's first lines say it). */
    public static String describeKernels(WeightFormat format, DType dtype) {
        String product = "dot_general in " + dtype.userName() + (dtype == DType.F32 ? "" : " accumulating in float32");
        if (scalesOnOutput(format)) {
            return "s8 weights converted to " + dtype.userName() + " in the program, " + product
                    + ", scales on the output";
        }
        return switch (format) {
            case WeightFormat.Int integers -> (integers.bits() == 8 ? "s8" : "u8-packed")
                    + " weights dequantized to " + dtype.userName() + " in the program ("
                    + (integers.bits() == 8 ? "convert" : "gather from the codebook") + ", scales"
                    + (integers.zeroPoints() ? " and zero points" : "") + "), then " + product;
            case WeightFormat.Nf4 nf4 -> "u8-packed weights dequantized to " + dtype.userName()
                    + " in the program (gather from the NF4 codebook, block absmax), then " + product;
            default -> "dequantized by the composed ops in the program, then " + product;
        };
    }

    @Override
    public synchronized Tensor matmul(Tensor a, Tensor b) {
        XlaTensor left = own(a);
        XlaTensor right = own(b);
        check(left.rank() == 2 && right.rank() == 2 && left.size(1) == right.size(0), "matmul " + left + " by " + right);
        return node(new Op.MatMul(), sameType(left, right), new long[] {left.size(0), right.size(1)}, left, right);
    }

    @Override
    public synchronized Tensor embedding(Tensor table, Tensor ids) {
        XlaTensor t = own(table);
        XlaTensor i = own(ids);
        check(t.rank() == 2 && !i.dtype().isFloatingPoint() && i.dtype() != DType.BOOL, "embedding " + t + " by " + i);
        if (i.op instanceof Op.Convert && (i.inputs[0].dtype() == DType.U8 || i.inputs[0].dtype() == DType.I32)) {
            // Packed codes arrive widened to i64 (a codebook lookup's indices in the composed dequantization); the
            // gather takes them as they are, which keeps a weight-sized i64 array (emulated on a TPU) out of the program.
            i = i.inputs[0];
        }
        long[] out = Arrays.copyOf(i.shapeView(), i.rank() + 1);
        out[i.rank()] = t.size(1);
        return node(new Op.Embedding(), t.dtype(), out, t, i);
    }

    @Override
    public synchronized Tensor rmsNorm(Tensor x, Tensor weight, double eps) {
        XlaTensor in = own(x);
        XlaTensor w = own(weight);
        check(Arrays.equals(w.shapeView(), new long[] {in.size(-1)}), "rmsNorm " + in + " by " + w);
        sameType(in, w);
        return node(new Op.RmsNorm(eps), in.dtype(), in.shapeView(), in, w);
    }

    @Override
    public synchronized Tensor softmax(Tensor x, int dim) {
        XlaTensor t = own(x);
        return node(new Op.Softmax(axis(t.shapeView(), dim), false), t.dtype(), t.shapeView(), t);
    }

    @Override
    public synchronized Tensor logSoftmax(Tensor x, int dim) {
        XlaTensor t = own(x);
        return node(new Op.Softmax(axis(t.shapeView(), dim), true), t.dtype(), t.shapeView(), t);
    }

    @Override
    public synchronized Tensor argmax(Tensor x, int dim) {
        XlaTensor t = own(x);
        long[] shape = t.shapeView();
        int axis = axis(shape, dim);
        long[] out = new long[shape.length - 1];
        for (int d = 0, j = 0; d < shape.length; d++) {
            if (d != axis) {
                out[j++] = shape[d];
            }
        }
        return node(new Op.Argmax(axis), DType.I64, out, t);
    }

    // ---- masks ------------------------------------------------------------------------------------------------

    @Override
    public synchronized Tensor compare(Tensor a, Tensor b, Comparison comparison) {
        XlaTensor left = own(a);
        XlaTensor right = own(b);
        sameType(left, right);
        return node(new Op.Compare(comparison), DType.BOOL, broadcast(left.shapeView(), right.shapeView()), left, right);
    }

    @Override
    public synchronized Tensor and(Tensor a, Tensor b) {
        return logical(true, own(a), own(b));
    }

    @Override
    public synchronized Tensor or(Tensor a, Tensor b) {
        return logical(false, own(a), own(b));
    }

    private Tensor logical(boolean and, XlaTensor a, XlaTensor b) {
        check(a.dtype() == DType.BOOL && b.dtype() == DType.BOOL, (and ? "and" : "or") + " of " + a + ", " + b);
        return node(new Op.Logical(and), DType.BOOL, broadcast(a.shapeView(), b.shapeView()), a, b);
    }

    // ---- attention and caches ---------------------------------------------------------------------------------

    @Override
    public synchronized Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale) {
        return attention(q, k, v, allowed, scale, 0);
    }

    @Override
    public synchronized Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale, double softcap) {
        XlaTensor query = own(q);
        XlaTensor key = own(k);
        XlaTensor value = own(v);
        XlaTensor mask = own(allowed);
        long[] qs = query.shapeView();
        long[] ks = key.shapeView();
        check(qs.length == 4 && ks.length == 4 && Arrays.equals(ks, value.shapeView()), "attention " + query + " "
                + key + " " + value);
        check(qs[0] == ks[0] && qs[3] == ks[3] && ks[1] > 0 && qs[1] % ks[1] == 0, "attention heads " + query + " " + key);
        check(mask.dtype() == DType.BOOL, "attention mask " + mask);
        long[] full = {qs[0], 1, qs[2], ks[2]};
        check(Arrays.equals(broadcast(full, mask.shapeView()), full), "mask " + mask + " for " + query + " " + key);
        sameType(query, key);
        sameType(query, value);
        return node(new Op.Attention(scale, softcap), query.dtype(), qs, query, key, value, mask);
    }

    @Override
    public synchronized Tensor writeSlots(Tensor target, int dim, Tensor index, Tensor source) {
        XlaTensor into = own(target);
        XlaTensor slots = own(index);
        XlaTensor from = own(source);
        long[] expected = into.shape();
        int axis = axis(expected, dim);
        check(slots.rank() == 1 && slots.dtype() == DType.I64, "slot index " + slots);
        expected[axis] = slots.size(0);
        check(Arrays.equals(expected, from.shapeView()), "writeSlots " + from + " into " + into);
        sameType(into, from);
        return node(new Op.WriteSlots(axis, countsUp(slots)), into.dtype(), into.shapeView(), into, slots, from);
    }

    /** Whether {@code index} is a host constant {@code s, s+1, ...}: then the write is one dynamic slice. */
    private static boolean countsUp(XlaTensor index) {
        if (index.host == null) {
            return false;
        }
        long[] values = longs(index.host);
        for (int i = 1; i < values.length; i++) {
            if (values[i] != values[0] + i) {
                return false;
            }
        }
        return true;
    }

    // ---- materialization --------------------------------------------------------------------------------------

    /**
     * What a read of {@code target} runs: the target; the state retained while it was traced (the cache a step
     * wrote, which must not pile up into the next step's graph); and the values it leaves behind for later reads
     * (its direct inputs and the step's results nothing consumed), so that a second read of the same step does not trace it
     * again. Zeros stay symbolic: they cost nothing until a program uses them.
     */
    private List<XlaTensor> readSet(XlaTensor target) {
        Set<XlaTensor> set = identitySet();
        set.add(target);
        for (XlaTensor input : target.inputs) {
            if (input.lazy() && input.alive()) {
                set.add(input);
            }
        }
        set.addAll(retainedLazy);
        for (XlaTensor alive : aliveLazy) {
            if (!alive.consumed) {
                set.add(alive);
            }
        }
        set.removeIf(t -> t.op instanceof Op.Zeros);
        set.add(target);
        List<XlaTensor> ordered = new ArrayList<>(set);
        ordered.sort(Comparator.comparingLong(t -> t.serial));
        return ordered;
    }

    private void materialize(List<XlaTensor> results) {
        Graph graph = Graph.of(results);
        List<XlaTensor> arguments = graph.arguments();
        for (XlaTensor argument : arguments) {
            if (argument.device == null) {
                // A host constant's first use: one upload, kept for the next program that reads it.
                argument.device = upload(argument.host, Layout.REPLICATED);
                onDevice.add(argument);
            }
        }
        List<Layout> argumentLayouts = arguments.stream().map(a -> a.device.layout()).toList();
        List<Layout> resultLayouts = results.stream().map(this::resultLayout).toList();
        Map<Integer, Integer> donations = donations(graph, resultLayouts);
        LoweredProgram lowered = lower(graph, argumentLayouts, resultLayouts, donations);
        CompiledProgram compiled = compile(lowered, graph, argumentLayouts, resultLayouts, donations);
        List<List<DeviceArray>> perDevice = new ArrayList<>();
        for (int d = 0; d < sharding.partitions(); d++) {
            List<DeviceArray> list = new ArrayList<>(arguments.size());
            for (XlaTensor argument : arguments) {
                list.add(argument.device.shards().get(d));
            }
            perDevice.add(list);
        }
        List<List<DeviceArray>> outputs = executor.execute(compiled, perDevice);
        executions++;
        for (int argument : donations.keySet()) {
            XlaTensor donated = arguments.get(argument);
            donated.device = null;
            donated.gone = "donated to a program that updated it";
            onDevice.remove(donated);
        }
        for (int r = 0; r < results.size(); r++) {
            XlaTensor result = results.get(r);
            List<DeviceArray> shards = new ArrayList<>();
            for (List<DeviceArray> deviceOutputs : outputs) {
                shards.add(deviceOutputs.get(r));
            }
            result.device = new XlaTensor.Placed(shards, resultLayouts.get(r));
            onDevice.add(result);
            XlaTensor[] inputs = result.inputs;
            result.op = null;
            result.inputs = null;
            aliveLazy.remove(result);
            retainedLazy.remove(result);
            for (XlaTensor input : inputs) {
                input.referrers--;
                maybeFree(input);
            }
        }
    }

    private CompiledProgram compile(LoweredProgram lowered, Graph graph, List<Layout> argumentLayouts,
                                    List<Layout> resultLayouts, Map<Integer, Integer> donations) {
        CompiledProgram compiled;
        try {
            compiled = programs.get(lowered.program());
        } catch (RuntimeException e) {
            if (sharding.partitioner() != CompileOptions.Partitioner.SHARDY) {
                throw e;
            }
            // Plugins built before Shardy reject its annotations; GSPMD's express the same split.
            sharding = sharding.withPartitioner(CompileOptions.Partitioner.GSPMD);
            lowered = lower(graph, argumentLayouts, resultLayouts, donations);
            compiled = programs.get(lowered.program());
        }
        LoweredProgram ran = lowered;
        observers.forEach(observer -> observer.accept(ran));
        return compiled;
    }

    private Layout resultLayout(XlaTensor result) {
        if (!sharding.spmd()) {
            return Layout.REPLICATED;
        }
        return result.op instanceof Op.WriteSlots ? sharding.state(result.shapeView()) : Layout.REPLICATED;
    }

    /**
     * Arguments whose memory a result reuses: the old value of state a step rewrote, when nothing but this
     * program's results reads it and nobody holds it (a KV cache the step replaced).
     */
    private static Map<Integer, Integer> donations(Graph graph, List<Layout> resultLayouts) {
        List<XlaTensor> arguments = graph.arguments();
        Map<XlaTensor, Integer> argumentIndex = new IdentityHashMap<>();
        for (int i = 0; i < arguments.size(); i++) {
            argumentIndex.put(arguments.get(i), i);
        }
        Map<XlaTensor, Integer> readsByResults = new IdentityHashMap<>();
        for (XlaTensor result : graph.results()) {
            for (XlaTensor input : result.inputs) {
                readsByResults.merge(input, 1, Integer::sum);
            }
        }
        Map<Integer, Integer> donations = new LinkedHashMap<>();
        for (int r = 0; r < graph.results().size(); r++) {
            XlaTensor result = graph.results().get(r);
            if (!(result.op instanceof Op.WriteSlots)) {
                continue;
            }
            XlaTensor old = result.inputs[0];
            Integer argument = argumentIndex.get(old);
            if (argument == null || old.host != null || old.alive() || donations.containsKey(argument)
                    || old.referrers != readsByResults.getOrDefault(old, 0)
                    || !old.device.layout().equals(resultLayouts.get(r))) {
                continue;
            }
            donations.put(argument, r);
        }
        return donations;
    }

    private LoweredProgram lower(Graph graph, List<Layout> argumentLayouts, List<Layout> resultLayouts,
                                 Map<Integer, Integer> donations) {
        String text = StableHloEmitter.emit(graph, sharding.partitioning(), argumentLayouts, resultLayouts, donations);
        List<TensorSpec> arguments = new ArrayList<>();
        List<TensorSpec> deviceArguments = new ArrayList<>();
        for (int i = 0; i < graph.arguments().size(); i++) {
            XlaTensor argument = graph.arguments().get(i);
            String name = argument.name != null ? argument.name : "input:" + i;
            arguments.add(new TensorSpec(name, argument.dtype(), argument.shapeView()));
            deviceArguments.add(new TensorSpec(name, argument.dtype(),
                    argumentLayouts.get(i).deviceShape(argument.shapeView(), sharding.partitions())));
        }
        List<TensorSpec> results = new ArrayList<>();
        List<TensorSpec> deviceResults = new ArrayList<>();
        for (int i = 0; i < graph.results().size(); i++) {
            XlaTensor result = graph.results().get(i);
            String name = (result.op instanceof Op.WriteSlots ? "state:" : "output:") + i;
            results.add(new TensorSpec(name, result.dtype(), result.shapeView()));
            deviceResults.add(new TensorSpec(name, result.dtype(),
                    resultLayouts.get(i).deviceShape(result.shapeView(), sharding.partitions())));
        }
        CompileOptions options = sharding.spmd() ? CompileOptions.spmd(sharding.partitions(), sharding.partitioner())
                : CompileOptions.singleDevice();
        Program program = new Program(stepName, text, new ProgramManifest(deviceArguments, deviceResults, donations),
                options);
        return new LoweredProgram(program, arguments, argumentLayouts, results, resultLayouts, sharding);
    }

    // ---- transfers --------------------------------------------------------------------------------------------

    private XlaTensor.Placed upload(HostTensor host, Layout layout) {
        int parts = sharding.partitions();
        List<DeviceArray> shards = new ArrayList<>(parts);
        try (Arena arena = Arena.ofConfined()) {
            for (int d = 0; d < parts; d++) {
                HostTensor shard = layout.replicated() ? host : shard(host, layout.splitDim(), d, parts, arena);
                shards.add(executor.upload(shard, d));
            }
        } catch (RuntimeException | Error e) {
            shards.forEach(DeviceArray::close);
            throw e;
        }
        return new XlaTensor.Placed(shards, layout);
    }

    private HostTensor download(XlaTensor.Placed placed, String name, DType dtype, long[] shape, Arena arena) {
        if (placed.layout().replicated()) {
            return executor.download(placed.shards().getFirst(), name, arena);
        }
        int dim = placed.layout().splitDim();
        int parts = placed.shards().size();
        MemorySegment whole = arena.allocate(Math.max(1, elements(shape) * dtype.byteSize()), 8);
        long outer = 1;
        for (int d = 0; d < dim; d++) {
            outer *= shape[d];
        }
        long chunk = elements(shape) / outer / parts * dtype.byteSize();
        try (Arena scratch = Arena.ofConfined()) {
            for (int p = 0; p < parts; p++) {
                MemorySegment part = executor.download(placed.shards().get(p), name, scratch).data();
                for (long o = 0; o < outer; o++) {
                    MemorySegment.copy(part, o * chunk, whole, (o * parts + p) * chunk, chunk);
                }
            }
        }
        return new HostTensor(name, dtype, shape, whole.asSlice(0, elements(shape) * dtype.byteSize()));
    }

    /** Part {@code index} of {@code parts} of {@code host} along {@code dim}. */
    private static HostTensor shard(HostTensor host, int dim, int index, int parts, Arena arena) {
        long[] shape = host.shape();
        long extent = shape[dim] / parts;
        return sliceOnHost(host, dim, index * extent, (index + 1) * extent, withExtent(shape, dim, extent),
                bytes -> arena.allocate(Math.max(1, bytes), 8).asSlice(0, bytes));
    }

    private static HostTensor sliceOnHost(HostTensor host, int dim, long start, long end, long[] out) {
        return sliceOnHost(host, dim, start, end, out, XlaOps::heap);
    }

    /** Host constants are small: they live on the Java heap, owned by their tensor. */
    private static MemorySegment heap(long bytes) {
        return MemorySegment.ofArray(new byte[Math.toIntExact(bytes)]);
    }

    private static HostTensor sliceOnHost(HostTensor host, int dim, long start, long end, long[] out,
                                          LongFunction<MemorySegment> allocate) {
        long[] shape = host.shape();
        long outer = 1;
        for (int d = 0; d < dim; d++) {
            outer *= shape[d];
        }
        long inner = host.dtype().byteSize();
        for (int d = dim + 1; d < shape.length; d++) {
            inner *= shape[d];
        }
        long rows = end - start;
        MemorySegment data = allocate.apply(outer * rows * inner);
        for (long o = 0; o < outer; o++) {
            MemorySegment.copy(host.data(), (o * shape[dim] + start) * inner, data, o * rows * inner, rows * inner);
        }
        return new HostTensor(host.name(), host.dtype(), out, data);
    }

    /** {@code host} as {@code dtype}, converted on the host (floats round to nearest, ties to even). */
    private static HostTensor convert(HostTensor host, DType dtype, LongFunction<MemorySegment> allocate) {
        if (host.dtype() == dtype) {
            return host;
        }
        int count = Math.toIntExact(host.elementCount());
        MemorySegment data = allocate.apply((long) count * dtype.byteSize());
        if (dtype.isFloatingPoint()) {
            float[] values = host.dtype().isFloatingPoint() ? host.toFloatArray() : toFloats(longs(host));
            for (int i = 0; i < count; i++) {
                switch (dtype) {
                    case F32 -> data.set(F32_LE, 4L * i, values[i]);
                    case BF16 -> data.set(I16_LE, 2L * i, HalfFloats.floatToBf16(values[i]));
                    case F16 -> data.set(I16_LE, 2L * i, HalfFloats.floatToF16(values[i]));
                    default -> throw new IllegalStateException(dtype.toString());
                }
            }
        } else {
            long[] values = host.dtype().isFloatingPoint() ? truncate(host.toFloatArray()) : longs(host);
            for (int i = 0; i < count; i++) {
                switch (dtype) {
                    case I64 -> data.set(I64_LE, 8L * i, values[i]);
                    case I32 -> data.set(I32_LE, 4L * i, (int) values[i]);
                    case I8, U8 -> data.set(ValueLayout.JAVA_BYTE, i, (byte) values[i]);
                    case BOOL -> data.set(ValueLayout.JAVA_BYTE, i, (byte) (values[i] != 0 ? 1 : 0));
                    default -> throw new IllegalStateException(dtype.toString());
                }
            }
        }
        return new HostTensor(host.name(), dtype, host.shape(), data);
    }

    private static float[] toFloats(long[] values) {
        float[] floats = new float[values.length];
        for (int i = 0; i < values.length; i++) {
            floats[i] = values[i];
        }
        return floats;
    }

    /** Float to integer as libtorch converts: toward zero. */
    private static long[] truncate(float[] values) {
        long[] longs = new long[values.length];
        for (int i = 0; i < values.length; i++) {
            longs[i] = (long) values[i];
        }
        return longs;
    }

    static long[] longs(HostTensor host) {
        int count = Math.toIntExact(host.elementCount());
        long[] values = new long[count];
        MemorySegment data = host.data();
        for (int i = 0; i < count; i++) {
            values[i] = switch (host.dtype()) {
                case I64 -> data.get(I64_LE, 8L * i);
                case I32 -> data.get(I32_LE, 4L * i);
                case I8 -> data.get(ValueLayout.JAVA_BYTE, i);
                case U8, BOOL -> data.get(ValueLayout.JAVA_BYTE, i) & 0xFF;
                default -> throw new IllegalArgumentException("not an integer tensor: " + host);
            };
        }
        return values;
    }

    // ---- shapes -----------------------------------------------------------------------------------------------

    private static XlaTensor own(Tensor tensor) {
        if (tensor instanceof XlaTensor t) {
            return t;
        }
        throw new IllegalArgumentException("not a tensor of the xla backend: " + tensor);
    }

    private static DType sameType(XlaTensor a, XlaTensor b) {
        check(a.dtype() == b.dtype(), "mixed dtypes " + a + " and " + b);
        return a.dtype();
    }

    private static long[] broadcast(long[] a, long[] b) {
        long[] out = new long[Math.max(a.length, b.length)];
        for (int i = 0; i < out.length; i++) {
            long x = i < out.length - a.length ? 1 : a[i - (out.length - a.length)];
            long y = i < out.length - b.length ? 1 : b[i - (out.length - b.length)];
            check(x == y || x == 1 || y == 1, "cannot broadcast " + Arrays.toString(a) + " with " + Arrays.toString(b));
            out[i] = Math.max(x, y);
        }
        return out;
    }

    private static long[] inferShape(long[] from, long[] shape) {
        long[] out = shape.clone();
        int unknown = -1;
        long known = 1;
        for (int i = 0; i < out.length; i++) {
            if (out[i] == -1) {
                check(unknown < 0, "two -1 extents in " + Arrays.toString(shape));
                unknown = i;
            } else {
                known *= out[i];
            }
        }
        long total = elements(from);
        if (unknown >= 0) {
            check(known > 0 && total % known == 0, "cannot reshape " + Arrays.toString(from) + " to "
                    + Arrays.toString(shape));
            out[unknown] = total / known;
        }
        check(elements(out) == total, "cannot reshape " + Arrays.toString(from) + " to " + Arrays.toString(shape));
        return out;
    }

    private static int axis(long[] shape, int dim) {
        int axis = dim < 0 ? shape.length + dim : dim;
        check(axis >= 0 && axis < shape.length, "dim " + dim + " of " + Arrays.toString(shape));
        return axis;
    }

    private static long elements(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }

    private static long[] withExtent(long[] shape, int dim, long extent) {
        long[] out = shape.clone();
        out[dim] = extent;
        return out;
    }

    private static void checkCount(int values, long[] shape) {
        check(values == elements(shape), "constant of " + values + " values for " + Arrays.toString(shape));
    }

    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }

    private static Set<XlaTensor> identitySet() {
        return Collections.newSetFromMap(new IdentityHashMap<>());
    }

    /** Frees every device array still held and the programs it owns; the executor stays open. */
    @Override
    public synchronized void close() {
        for (XlaTensor tensor : onDevice) {
            tensor.device.close();
            tensor.device = null;
            tensor.gone = "freed when the backend closed";
        }
        onDevice.clear();
        if (ownsPrograms) {
            programs.close();
        }
    }
}
