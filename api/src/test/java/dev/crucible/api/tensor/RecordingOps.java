package dev.crucible.api.tensor;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;
import java.util.function.Function;

/**
 * A {@link TensorOps} that computes nothing: it infers each op's output shape (failing on any inconsistency) and
 * records the op's name and shapes, as a tracer building a static program would. Host reads are allowed only
 * between steps (a read inside a {@link #step} fails) and are recorded as {@code read} so a test can split the trace
 * into steps; each step's key and input shapes are what a tracer would compile a program for ({@link #programs}).
 */
public final class RecordingOps implements TensorOps {

    /** A tensor that is only a shape and a dtype. */
    public record Shape(long[] dims, DType dtype) implements Tensor {
        @Override
        public long[] shape() {
            return dims.clone();
        }

        @Override
        public String toString() {
            return dtype + Arrays.toString(dims);
        }
    }

    /** One recorded op: its name, input shapes and output shape, as text for easy comparison. */
    public record Op(String name, String signature) {
    }

    private final List<Op> trace = new ArrayList<>();
    private final Set<String> programs = new LinkedHashSet<>();
    private int retained;
    private int stepDepth;
    private Function<Shape, long[]> longReads = shape -> new long[Math.toIntExact(count(shape.shape()))];

    public List<Op> trace() {
        return List.copyOf(trace);
    }

    /**
     * Every distinct program a tracer would compile for the steps run so far: a step's key with the shapes and
     * dtypes of its inputs, in the order first seen.
     */
    public List<String> programs() {
        return List.copyOf(programs);
    }

    @Override
    public List<Tensor> step(String key, List<Tensor> inputs, Function<List<Tensor>, List<Tensor>> body) {
        check(stepDepth == 0, "step " + key + " inside another step");
        programs.add(key + " " + inputs);
        stepDepth++;
        try {
            return body.apply(inputs);
        } finally {
            stepDepth--;
        }
    }

    /** What {@link #readLongs} returns from now on (zeros by default): e.g. the token ids a decode test scripts. */
    public void onLongReads(Function<Shape, long[]> values) {
        longReads = values;
    }

    public int retained() {
        return retained;
    }

    public static Shape shape(DType dtype, long... dims) {
        return new Shape(dims.clone(), dtype);
    }

    private Tensor record(String name, Shape out, Tensor... inputs) {
        StringBuilder signature = new StringBuilder();
        for (Tensor input : inputs) {
            signature.append(input).append(' ');
        }
        trace.add(new Op(name, signature.append("-> ").append(out).toString()));
        return out;
    }

    @Override
    public TensorScope openScope() {
        return () -> { };
    }

    @Override
    public Tensor retain(Tensor tensor) {
        retained++;
        return tensor;
    }

    @Override
    public void release(Tensor tensor) {
        retained--;
    }

    @Override
    public Tensor constant(float[] values, long... shape) {
        check(values.length == count(shape), "constant of " + values.length + " values for " + Arrays.toString(shape));
        return record("constant", shape(DType.F32, shape));
    }

    @Override
    public Tensor constant(long[] values, long... shape) {
        check(values.length == count(shape), "constant of " + values.length + " values for " + Arrays.toString(shape));
        return record("constant", shape(DType.I64, shape));
    }

    @Override
    public Tensor zeros(DType dtype, long... shape) {
        return record("zeros", shape(dtype, shape));
    }

    @Override
    public float[] readFloats(Tensor tensor) {
        check(stepDepth == 0, "a host read of " + tensor + " inside a step");
        record("read", (Shape) tensor, tensor);
        return new float[Math.toIntExact(count(tensor.shape()))];
    }

    @Override
    public long[] readLongs(Tensor tensor) {
        check(!tensor.dtype().isFloatingPoint(), "readLongs of " + tensor);
        check(stepDepth == 0, "a host read of " + tensor + " inside a step");
        record("read", (Shape) tensor, tensor);
        long[] values = longReads.apply((Shape) tensor);
        check(values.length == count(tensor.shape()), values.length + " values read from " + tensor);
        return values;
    }

    @Override
    public Tensor cast(Tensor x, DType dtype) {
        return record("cast", shape(dtype, x.shape()), x);
    }

    @Override
    public Tensor reshape(Tensor x, long... shape) {
        long[] out = shape.clone();
        int unknown = -1;
        long known = 1;
        for (int i = 0; i < out.length; i++) {
            if (out[i] == -1) {
                check(unknown < 0, "two -1 extents");
                unknown = i;
            } else {
                known *= out[i];
            }
        }
        long total = count(x.shape());
        if (unknown >= 0) {
            check(known > 0 && total % known == 0, "cannot infer -1 for " + x + " to " + Arrays.toString(shape));
            out[unknown] = total / known;
        }
        check(count(out) == total, "reshape " + x + " to " + Arrays.toString(shape));
        return record("reshape", shape(x.dtype(), out), x);
    }

    @Override
    public Tensor transpose(Tensor x, int dim0, int dim1) {
        long[] out = x.shape();
        int a = axis(out, dim0);
        int b = axis(out, dim1);
        long swap = out[a];
        out[a] = out[b];
        out[b] = swap;
        return record("transpose", shape(x.dtype(), out), x);
    }

    @Override
    public Tensor slice(Tensor x, int dim, long start, long end) {
        long[] out = x.shape();
        int axis = axis(out, dim);
        check(0 <= start && start <= end && end <= out[axis], "slice [" + start + ", " + end + ") of " + x);
        out[axis] = end - start;
        return record("slice", shape(x.dtype(), out), x);
    }

    @Override
    public Tensor concat(List<Tensor> parts, int dim) {
        long[] out = parts.getFirst().shape();
        int axis = axis(out, dim);
        for (Tensor part : parts.subList(1, parts.size())) {
            long[] shape = part.shape();
            check(shape.length == out.length && part.dtype() == parts.getFirst().dtype(), "concat " + parts);
            for (int i = 0; i < out.length; i++) {
                check(i == axis || shape[i] == out[i], "concat " + parts);
            }
            out[axis] += shape[axis];
        }
        return record("concat", shape(parts.getFirst().dtype(), out), parts.toArray(Tensor[]::new));
    }

    @Override
    public Tensor add(Tensor a, Tensor b) {
        return record("add", shape(sameType(a, b), broadcast(a, b)), a, b);
    }

    @Override
    public Tensor mul(Tensor a, Tensor b) {
        return record("mul", shape(sameType(a, b), broadcast(a, b)), a, b);
    }

    @Override
    public Tensor scale(Tensor x, double factor) {
        return record("scale", shape(x.dtype(), x.shape()), x);
    }

    @Override
    public Tensor neg(Tensor x) {
        return record("neg", shape(x.dtype(), x.shape()), x);
    }

    @Override
    public Tensor silu(Tensor x) {
        return record("silu", shape(x.dtype(), x.shape()), x);
    }

    @Override
    public Tensor tanh(Tensor x) {
        return record("tanh", shape(x.dtype(), x.shape()), x);
    }

    @Override
    public Tensor linear(Tensor x, Tensor weight, Tensor bias) {
        long[] in = x.shape();
        long[] w = weight.shape();
        check(w.length == 2 && in[in.length - 1] == w[1], "linear " + x + " by " + weight);
        check(bias == null || Arrays.equals(bias.shape(), new long[] {w[0]}), "bias " + bias + " for " + weight);
        sameType(x, weight);
        in[in.length - 1] = w[0];
        return bias == null ? record("linear", shape(x.dtype(), in), x, weight)
                : record("linear", shape(x.dtype(), in), x, weight, bias);
    }

    @Override
    public Tensor embedding(Tensor table, Tensor ids) {
        check(table.rank() == 2 && ids.dtype() == DType.I64, "embedding " + table + " by " + ids);
        long[] out = Arrays.copyOf(ids.shape(), ids.rank() + 1);
        out[ids.rank()] = table.size(1);
        return record("embedding", shape(table.dtype(), out), table, ids);
    }

    @Override
    public Tensor rmsNorm(Tensor x, Tensor weight, double eps) {
        check(Arrays.equals(weight.shape(), new long[] {x.size(-1)}), "rmsNorm " + x + " by " + weight);
        sameType(x, weight);
        return record("rmsNorm", shape(x.dtype(), x.shape()), x, weight);
    }

    @Override
    public Tensor softmax(Tensor x, int dim) {
        axis(x.shape(), dim);
        return record("softmax", shape(x.dtype(), x.shape()), x);
    }

    @Override
    public Tensor logSoftmax(Tensor x, int dim) {
        axis(x.shape(), dim);
        return record("logSoftmax", shape(x.dtype(), x.shape()), x);
    }

    @Override
    public Tensor argmax(Tensor x, int dim) {
        long[] in = x.shape();
        int axis = axis(in, dim);
        long[] out = new long[in.length - 1];
        for (int i = 0, j = 0; i < in.length; i++) {
            if (i != axis) {
                out[j++] = in[i];
            }
        }
        return record("argmax", shape(DType.I64, out), x);
    }

    @Override
    public Tensor compare(Tensor a, Tensor b, Comparison comparison) {
        sameType(a, b);
        return record("compare", shape(DType.BOOL, broadcast(a, b)), a, b);
    }

    @Override
    public Tensor and(Tensor a, Tensor b) {
        check(a.dtype() == DType.BOOL && b.dtype() == DType.BOOL, "and of " + a + ", " + b);
        return record("and", shape(DType.BOOL, broadcast(a, b)), a, b);
    }

    @Override
    public Tensor or(Tensor a, Tensor b) {
        check(a.dtype() == DType.BOOL && b.dtype() == DType.BOOL, "or of " + a + ", " + b);
        return record("or", shape(DType.BOOL, broadcast(a, b)), a, b);
    }

    @Override
    public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale, double softcap) {
        return attention(q, k, v, allowed, scale);
    }

    @Override
    public Tensor attention(Tensor q, Tensor k, Tensor v, Tensor allowed, double scale) {
        long[] qs = q.shape();
        long[] ks = k.shape();
        check(qs.length == 4 && Arrays.equals(ks, v.shape()) && ks.length == 4, "attention " + q + " " + k + " " + v);
        check(qs[0] == ks[0] && qs[3] == ks[3] && qs[1] % ks[1] == 0, "attention heads " + q + " " + k);
        check(allowed.dtype() == DType.BOOL, "attention mask " + allowed);
        long[] full = {qs[0], 1, qs[2], ks[2]};
        check(Arrays.equals(broadcast(full, allowed.shape()), full), "mask " + allowed + " for " + q + " " + k);
        sameType(q, k);
        sameType(q, v);
        return record("attention", shape(q.dtype(), qs), q, k, v, allowed);
    }

    @Override
    public Tensor writeSlots(Tensor target, int dim, Tensor index, Tensor source) {
        long[] expected = target.shape();
        int axis = axis(expected, dim);
        check(index.rank() == 1 && index.dtype() == DType.I64, "slot index " + index);
        expected[axis] = index.size(0);
        check(Arrays.equals(expected, source.shape()), "writeSlots " + source + " into " + target);
        sameType(target, source);
        return record("writeSlots", shape(target.dtype(), target.shape()), target, index, source);
    }

    private static DType sameType(Tensor a, Tensor b) {
        check(a.dtype() == b.dtype(), "mixed dtypes " + a + " and " + b);
        return a.dtype();
    }

    private static long[] broadcast(Tensor a, Tensor b) {
        return broadcast(a.shape(), b.shape());
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

    private static int axis(long[] shape, int dim) {
        int axis = dim < 0 ? shape.length + dim : dim;
        check(axis >= 0 && axis < shape.length, "dim " + dim + " of " + Arrays.toString(shape));
        return axis;
    }

    private static long count(long[] shape) {
        long count = 1;
        for (long extent : shape) {
            count *= extent;
        }
        return count;
    }

    private static void check(boolean condition, String message) {
        if (!condition) {
            throw new IllegalArgumentException(message);
        }
    }
}
