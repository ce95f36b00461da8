package dev.crucible.accelerator.xla.lower;

import static dev.crucible.accelerator.xla.exec.TensorSpec.mlirElementType;
import static dev.crucible.accelerator.xla.exec.TensorSpec.mlirType;

import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import dev.crucible.api.tensor.HalfFloats;
import dev.crucible.api.tensor.Comparison;
import dev.crucible.api.tensor.DType;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.StringJoiner;

/**
 * Writes a {@link Graph} as a StableHLO module (MLIR text): {@code @main} takes the graph's arguments and returns
 * its results, every shape static. The semantics of each op are {@link dev.crucible.api.tensor.TensorOps}': in bf16
 * and f16, products accumulate in float32 and norms, softmax and SiLU compute in float32 and round once, as
 * transformers and libtorch do; float32 products ask for full precision (a TPU otherwise multiplies float32 in bf16
 * passes). Under SPMD every argument and result carries its sharding, as Shardy or as GSPMD writes it.
 */
final class StableHloEmitter {

    /** How the program is split: partitions and the partitioner its annotations are written for. */
    record Partitioning(int partitions, Partitioner partitioner) {
        static final Partitioning SINGLE = new Partitioning(1, Partitioner.NONE);

        boolean spmd() {
            return partitions > 1;
        }
    }

    private final Graph graph;
    private final Partitioning partitioning;
    private final StringBuilder body = new StringBuilder();
    private final Map<XlaTensor, String> values = new IdentityHashMap<>();
    private int counter;

    private StableHloEmitter(Graph graph, Partitioning partitioning) {
        this.graph = graph;
        this.partitioning = partitioning;
    }

    /**
     * The module text.
     *
     * @param argumentLayouts one per {@link Graph#arguments()}
     * @param resultLayouts   one per {@link Graph#results()}
     * @param donations       argument index to the result index that reuses its memory
     */
    static String emit(Graph graph, Partitioning partitioning, List<Layout> argumentLayouts,
                       List<Layout> resultLayouts, Map<Integer, Integer> donations) {
        return new StableHloEmitter(graph, partitioning).module(argumentLayouts, resultLayouts, donations);
    }

    private String module(List<Layout> argumentLayouts, List<Layout> resultLayouts, Map<Integer, Integer> donations) {
        List<XlaTensor> arguments = graph.arguments();
        StringJoiner parameters = new StringJoiner(", ");
        for (int i = 0; i < arguments.size(); i++) {
            XlaTensor argument = arguments.get(i);
            String name = "%arg" + i;
            values.put(argument, name);
            List<String> attributes = new ArrayList<>();
            sharding(argument, argumentLayouts.get(i)).ifPresent(attributes::add);
            Integer aliased = donations.get(i);
            if (aliased != null) {
                attributes.add("tf.aliasing_output = " + aliased + " : i32");
            }
            parameters.add(name + ": " + type(argument) + attributes(attributes));
        }
        for (XlaTensor node : graph.nodes()) {
            values.put(node, lower(node));
        }
        StringJoiner resultTypes = new StringJoiner(", ");
        StringJoiner returned = new StringJoiner(", ");
        StringJoiner returnedTypes = new StringJoiner(", ");
        for (int i = 0; i < graph.results().size(); i++) {
            XlaTensor result = graph.results().get(i);
            List<String> attributes = new ArrayList<>();
            sharding(result, resultLayouts.get(i)).ifPresent(attributes::add);
            resultTypes.add(type(result) + attributes(attributes));
            returned.add(values.get(result));
            returnedTypes.add(type(result));
        }
        StringBuilder text = new StringBuilder();
        text.append("module @crucible attributes {mhlo.num_partitions = ").append(partitioning.partitions())
                .append(" : i32, mhlo.num_replicas = 1 : i32} {\n");
        if (partitioning.partitioner() == Partitioner.SHARDY) {
            text.append("  sdy.mesh @mesh = <[\"x\"=").append(partitioning.partitions()).append("]>\n");
        }
        text.append("  func.func public @main(").append(parameters).append(") -> (").append(resultTypes)
                .append(") {\n").append(body)
                .append("    return ").append(returned).append(" : ").append(returnedTypes).append("\n  }\n}\n");
        return text.toString();
    }

    private static String attributes(List<String> attributes) {
        return attributes.isEmpty() ? "" : " {" + String.join(", ", attributes) + "}";
    }

    private java.util.Optional<String> sharding(XlaTensor tensor, Layout layout) {
        if (!partitioning.spmd()) {
            return java.util.Optional.empty();
        }
        int rank = tensor.shapeView().length;
        return java.util.Optional.of(switch (partitioning.partitioner()) {
            case SHARDY -> {
                StringJoiner dims = new StringJoiner(", ", "[", "]");
                for (int d = 0; d < rank; d++) {
                    dims.add(d == layout.splitDim() ? "{\"x\"}" : "{}");
                }
                yield "sdy.sharding = #sdy.sharding<@mesh, " + dims + ">";
            }
            case GSPMD -> {
                if (layout.replicated()) {
                    yield "mhlo.sharding = \"{replicated}\"";
                }
                StringJoiner tiles = new StringJoiner(",", "[", "]");
                for (int d = 0; d < rank; d++) {
                    tiles.add(d == layout.splitDim() ? Integer.toString(partitioning.partitions()) : "1");
                }
                yield "mhlo.sharding = \"{devices=" + tiles + "<=[" + partitioning.partitions() + "]}\"";
            }
            case NONE -> throw new IllegalStateException("SPMD without a partitioner");
        });
    }

    // ---- one node ---------------------------------------------------------------------------------------------

    private String lower(XlaTensor node) {
        XlaTensor[] in = node.inputs;
        return switch (node.op) {
            case Op.Zeros zeros -> line("stablehlo.constant dense<" + literal(node.dtype(), 0) + "> : " + type(node));
            case Op.Convert convert -> convert(value(in[0]), in[0].dtype(), node.dtype(), node.shapeView());
            case Op.Reshape reshape -> reshape(value(in[0]), in[0], node.dtype(), node.shapeView());
            case Op.Transpose transpose -> transpose(node, in[0], transpose.dim0(), transpose.dim1());
            case Op.Slice slice -> slice(value(in[0]), in[0].dtype(), in[0].shapeView(), slice.dim(), slice.start(),
                    slice.end());
            case Op.Concat concat -> concatenate(node, in, concat.dim());
            case Op.Binary binary -> {
                String a = broadcast(value(in[0]), in[0].dtype(), in[0].shapeView(), node.shapeView());
                String b = broadcast(value(in[1]), in[1].dtype(), in[1].shapeView(), node.shapeView());
                String name = binary.kind() == Op.Binary.Kind.ADD ? "add" : "multiply";
                yield line("stablehlo." + name + " " + a + ", " + b + " : " + type(node));
            }
            case Op.Scale scale -> scale(node, in[0], scale.factor());
            case Op.Negate negate -> line("stablehlo.negate " + value(in[0]) + " : " + type(node));
            case Op.Silu silu -> silu(node, in[0]);
            case Op.Tanh tanh -> tanh(node, in[0]);
            case Op.Linear linear -> linear(node, in[0], in[1], linear.scaled() ? in[2] : null,
                    linear.bias() ? in[linear.scaled() ? 3 : 2] : null);
            case Op.MatMul matMul -> matMul(node, in[0], in[1]);
            case Op.Embedding embedding -> embedding(node, in[0], in[1]);
            case Op.RmsNorm norm -> rmsNorm(node, in[0], in[1], norm.eps());
            case Op.Softmax softmax -> softmax(node, in[0], softmax.dim(), softmax.log());
            case Op.Argmax argmax -> argmax(node, in[0], argmax.dim());
            case Op.Compare compare -> compare(node, in[0], in[1], compare.comparison());
            case Op.Logical logical -> {
                String a = broadcast(value(in[0]), in[0].dtype(), in[0].shapeView(), node.shapeView());
                String b = broadcast(value(in[1]), in[1].dtype(), in[1].shapeView(), node.shapeView());
                yield line("stablehlo." + (logical.and() ? "and" : "or") + " " + a + ", " + b + " : " + type(node));
            }
            case Op.Attention attention -> attention(node, in[0], in[1], in[2], in[3], attention.scale(),
                    attention.softcap());
            case Op.WriteSlots write -> write.contiguous()
                    ? dynamicUpdateSlice(node, in[0], in[1], in[2], write.dim())
                    : scatter(node, in[0], in[1], in[2], write.dim());
        };
    }

    private String convert(String x, DType from, DType to, long[] shape) {
        if (from == to) {
            return x;
        }
        if (to == DType.BOOL) {
            String zero = splat(from, shape, 0);
            return line("stablehlo.compare NE, " + x + ", " + zero + ", " + comparisonType(from) + " : ("
                    + mlirType(from, shape) + ", " + mlirType(from, shape) + ") -> " + mlirType(to, shape));
        }
        return line("stablehlo.convert " + x + " : (" + mlirType(from, shape) + ") -> " + mlirType(to, shape));
    }

    private String reshape(String x, XlaTensor input, DType dtype, long[] shape) {
        if (Arrays.equals(input.shapeView(), shape)) {
            return x;
        }
        return line("stablehlo.reshape " + x + " : (" + mlirType(dtype, input.shapeView()) + ") -> "
                + mlirType(dtype, shape));
    }

    private String transpose(XlaTensor node, XlaTensor input, int dim0, int dim1) {
        int[] permutation = identity(input.shapeView().length);
        permutation[dim0] = dim1;
        permutation[dim1] = dim0;
        return transpose(value(input), input.dtype(), input.shapeView(), permutation, node.shapeView());
    }

    private String transpose(String x, DType dtype, long[] from, int[] permutation, long[] to) {
        return line("stablehlo.transpose " + x + ", dims = " + list(permutation) + " : (" + mlirType(dtype, from)
                + ") -> " + mlirType(dtype, to));
    }

    private String slice(String x, DType dtype, long[] shape, int dim, long start, long end) {
        StringJoiner ranges = new StringJoiner(", ", "[", "]");
        long[] out = shape.clone();
        for (int d = 0; d < shape.length; d++) {
            ranges.add(d == dim ? start + ":" + end : "0:" + shape[d]);
        }
        out[dim] = end - start;
        return line("stablehlo.slice " + x + " " + ranges + " : (" + mlirType(dtype, shape) + ") -> "
                + mlirType(dtype, out));
    }

    private String concatenate(XlaTensor node, XlaTensor[] parts, int dim) {
        StringJoiner operands = new StringJoiner(", ");
        StringJoiner types = new StringJoiner(", ");
        for (XlaTensor part : parts) {
            operands.add(value(part));
            types.add(type(part));
        }
        return line("stablehlo.concatenate " + operands + ", dim = " + dim + " : (" + types + ") -> " + type(node));
    }

    private String scale(XlaTensor node, XlaTensor x, double factor) {
        DType dtype = x.dtype();
        long[] shape = x.shapeView();
        if (!dtype.isFloatingPoint()) {
            if (factor != Math.rint(factor)) {
                throw new IllegalArgumentException("scaling an integer tensor by " + factor);
            }
            return line("stablehlo.multiply " + value(x) + ", " + splat(dtype, shape, factor) + " : " + type(node));
        }
        // libtorch multiplies by a Python scalar in float32 (its opmath) and rounds once.
        String wide = convert(value(x), dtype, DType.F32, shape);
        String product = line("stablehlo.multiply " + wide + ", " + splat(DType.F32, shape, factor) + " : "
                + mlirType(DType.F32, shape));
        return convert(product, DType.F32, dtype, shape);
    }

    private String silu(XlaTensor node, XlaTensor x) {
        long[] shape = x.shapeView();
        String wide = convert(value(x), x.dtype(), DType.F32, shape);
        String f32 = mlirType(DType.F32, shape);
        String sigmoid = line("stablehlo.logistic " + wide + " : " + f32);
        String product = line("stablehlo.multiply " + wide + ", " + sigmoid + " : " + f32);
        return convert(product, DType.F32, node.dtype(), shape);
    }

    /** In float32 and back, as {@link #silu}. */
    private String tanh(XlaTensor node, XlaTensor x) {
        long[] shape = x.shapeView();
        String wide = convert(value(x), x.dtype(), DType.F32, shape);
        String result = line("stablehlo.tanh " + wide + " : " + mlirType(DType.F32, shape));
        return convert(result, DType.F32, node.dtype(), shape);
    }

    private String linear(XlaTensor node, XlaTensor x, XlaTensor weight, XlaTensor scales, XlaTensor bias) {
        int rank = x.shapeView().length;
        DType accumulate = accumulation(node.dtype());
        long[] out = node.shapeView();
        String product = line("stablehlo.dot_general " + value(x) + ", " + value(weight) + ", contracting_dims = ["
                + (rank - 1) + "] x [1]" + precision(x.dtype()) + " : (" + type(x) + ", " + type(weight) + ") -> "
                + mlirType(accumulate, out));
        if (scales != null) {
            String wideScales = convert(value(scales), scales.dtype(), accumulate, scales.shapeView());
            String broadcastScales = broadcast(wideScales, accumulate, scales.shapeView(), out);
            product = line("stablehlo.multiply " + product + ", " + broadcastScales + " : " + mlirType(accumulate, out));
        }
        if (bias != null) {
            String wideBias = convert(value(bias), bias.dtype(), accumulate, bias.shapeView());
            String broadcastBias = broadcast(wideBias, accumulate, bias.shapeView(), out);
            product = line("stablehlo.add " + product + ", " + broadcastBias + " : " + mlirType(accumulate, out));
        }
        return convert(product, accumulate, node.dtype(), out);
    }

    private String matMul(XlaTensor node, XlaTensor a, XlaTensor b) {
        DType accumulate = accumulation(node.dtype());
        String product = line("stablehlo.dot_general " + value(a) + ", " + value(b) + ", contracting_dims = [1] x [0]"
                + precision(a.dtype()) + " : (" + type(a) + ", " + type(b) + ") -> "
                + mlirType(accumulate, node.shapeView()));
        return convert(product, accumulate, node.dtype(), node.shapeView());
    }

    private String embedding(XlaTensor node, XlaTensor table, XlaTensor ids) {
        int rank = ids.shapeView().length;
        // Row indices in 32 bits: TPUs emulate 64-bit integers, and no vocabulary needs them.
        String indices = convert(value(ids), ids.dtype(), DType.I32, ids.shapeView());
        return line("\"stablehlo.gather\"(" + value(table) + ", " + indices + ") <{dimension_numbers = "
                + "#stablehlo.gather<offset_dims = [" + rank + "], collapsed_slice_dims = [0], start_index_map = [0], "
                + "index_vector_dim = " + rank + ">, indices_are_sorted = false, slice_sizes = array<i64: 1, "
                + table.shapeView()[1] + ">}> : (" + type(table) + ", " + mlirType(DType.I32, ids.shapeView()) + ") -> "
                + type(node));
    }

    private String rmsNorm(XlaTensor node, XlaTensor x, XlaTensor weight, double eps) {
        long[] shape = x.shapeView();
        int last = shape.length - 1;
        long[] reduced = Arrays.copyOf(shape, last);
        String f32 = mlirType(DType.F32, shape);
        String wide = convert(value(x), x.dtype(), DType.F32, shape);
        String squares = line("stablehlo.multiply " + wide + ", " + wide + " : " + f32);
        String sum = reduce(squares, DType.F32, shape, last, "add", 0);
        String mean = line("stablehlo.divide " + sum + ", " + splat(DType.F32, reduced, shape[last]) + " : "
                + mlirType(DType.F32, reduced));
        String variance = line("stablehlo.add " + mean + ", " + splat(DType.F32, reduced, (float) eps) + " : "
                + mlirType(DType.F32, reduced));
        String inverse = line("stablehlo.rsqrt " + variance + " : " + mlirType(DType.F32, reduced));
        String normed = line("stablehlo.multiply " + wide + ", " + expand(inverse, DType.F32, reduced, shape, last)
                + " : " + f32);
        // transformers: normalize in float32, round to the input dtype, then scale by the weight in that dtype.
        String narrowed = convert(normed, DType.F32, x.dtype(), shape);
        String scale = broadcast(value(weight), weight.dtype(), weight.shapeView(), shape);
        return line("stablehlo.multiply " + narrowed + ", " + scale + " : " + type(node));
    }

    private String softmax(XlaTensor node, XlaTensor x, int dim, boolean log) {
        long[] shape = x.shapeView();
        String wide = convert(value(x), x.dtype(), DType.F32, shape);
        String result = softmaxF32(wide, shape, dim, log);
        return convert(result, DType.F32, node.dtype(), shape);
    }

    /** Softmax (or log-softmax) of a float32 value along {@code dim}, shifted by the maximum. */
    private String softmaxF32(String x, long[] shape, int dim, boolean log) {
        String f32 = mlirType(DType.F32, shape);
        long[] reduced = without(shape, dim);
        String max = reduce(x, DType.F32, shape, dim, "maximum", Double.NEGATIVE_INFINITY);
        String shifted = line("stablehlo.subtract " + x + ", " + expand(max, DType.F32, reduced, shape, dim) + " : " + f32);
        String exponentials = line("stablehlo.exponential " + shifted + " : " + f32);
        String sum = reduce(exponentials, DType.F32, shape, dim, "add", 0);
        if (log) {
            String logSum = line("stablehlo.log " + sum + " : " + mlirType(DType.F32, reduced));
            return line("stablehlo.subtract " + shifted + ", " + expand(logSum, DType.F32, reduced, shape, dim) + " : "
                    + f32);
        }
        return line("stablehlo.divide " + exponentials + ", " + expand(sum, DType.F32, reduced, shape, dim) + " : "
                + f32);
    }

    private String argmax(XlaTensor node, XlaTensor x, int dim) {
        long[] shape = x.shapeView();
        DType dtype = x.dtype();
        String scalar = mlirType(dtype, new long[0]);
        String index = mlirType(DType.I64, new long[0]);
        String iota = line("stablehlo.iota dim = " + dim + " : " + mlirType(DType.I64, shape));
        String lowest = line("stablehlo.constant dense<" + literal(dtype, lowest(dtype)) + "> : " + scalar);
        String zero = line("stablehlo.constant dense<0> : " + index);
        String a = fresh();
        String b = fresh();
        String i = fresh();
        String j = fresh();
        String result = fresh();
        String cmp = comparisonType(dtype);
        String greater = fresh();
        String unordered = fresh();
        String pick = fresh();
        String equal = fresh();
        String earlier = fresh();
        String tie = fresh();
        String keep = fresh();
        String value = fresh();
        String position = fresh();
        // The first maximum wins, as torch.argmax and numpy do; NaN counts as the maximum.
        body.append("    ").append(result).append(":2 = stablehlo.reduce(").append(value(x)).append(" init: ")
                .append(lowest).append("), (").append(iota).append(" init: ").append(zero).append(") across dimensions = [")
                .append(dim).append("] : (").append(type(x)).append(", ").append(mlirType(DType.I64, shape)).append(", ")
                .append(scalar).append(", ").append(index).append(") -> (").append(mlirType(dtype, node.shapeView()))
                .append(", ").append(type(node)).append(")\n")
                .append("     reducer(").append(a).append(": ").append(scalar).append(", ").append(b).append(": ")
                .append(scalar).append(") (").append(i).append(": ").append(index).append(", ").append(j).append(": ")
                .append(index).append(")  {\n")
                .append("      ").append(greater).append(" = stablehlo.compare GT, ").append(a).append(", ").append(b)
                .append(", ").append(cmp).append(" : (").append(scalar).append(", ").append(scalar).append(") -> tensor<i1>\n")
                .append("      ").append(unordered).append(" = stablehlo.compare NE, ").append(a).append(", ").append(a)
                .append(", ").append(cmp).append(" : (").append(scalar).append(", ").append(scalar).append(") -> tensor<i1>\n")
                .append("      ").append(pick).append(" = stablehlo.or ").append(greater).append(", ").append(unordered)
                .append(" : tensor<i1>\n")
                .append("      ").append(equal).append(" = stablehlo.compare EQ, ").append(a).append(", ").append(b)
                .append(", ").append(cmp).append(" : (").append(scalar).append(", ").append(scalar).append(") -> tensor<i1>\n")
                .append("      ").append(earlier).append(" = stablehlo.compare LT, ").append(i).append(", ").append(j)
                .append(", SIGNED : (").append(index).append(", ").append(index).append(") -> tensor<i1>\n")
                .append("      ").append(tie).append(" = stablehlo.and ").append(equal).append(", ").append(earlier)
                .append(" : tensor<i1>\n")
                .append("      ").append(keep).append(" = stablehlo.or ").append(pick).append(", ").append(tie)
                .append(" : tensor<i1>\n")
                .append("      ").append(value).append(" = stablehlo.select ").append(pick).append(", ").append(a)
                .append(", ").append(b).append(" : tensor<i1>, ").append(scalar).append("\n")
                .append("      ").append(position).append(" = stablehlo.select ").append(keep).append(", ").append(i)
                .append(", ").append(j).append(" : tensor<i1>, ").append(index).append("\n")
                .append("      stablehlo.return ").append(value).append(", ").append(position).append(" : ")
                .append(scalar).append(", ").append(index).append("\n")
                .append("    }\n");
        return result + "#1";
    }

    private String compare(XlaTensor node, XlaTensor left, XlaTensor right, Comparison comparison) {
        long[] shape = node.shapeView();
        String a = broadcast(value(left), left.dtype(), left.shapeView(), shape);
        String b = broadcast(value(right), right.dtype(), right.shapeView(), shape);
        String direction = switch (comparison) {
            case LESS -> "LT";
            case LESS_OR_EQUAL -> "LE";
            case EQUAL -> "EQ";
            case GREATER_OR_EQUAL -> "GE";
            case GREATER -> "GT";
        };
        String operand = mlirType(left.dtype(), shape);
        return line("stablehlo.compare " + direction + ", " + a + ", " + b + ", " + comparisonType(left.dtype())
                + " : (" + operand + ", " + operand + ") -> " + type(node));
    }

    /**
     * Grouped-query attention: the query heads are viewed as {@code [kvHeads, group]}, so each group meets its
     * key/value head in one batched product. Scores and softmax are float32 (in bf16 the products accumulate in
     * float32); the probabilities are rounded to the compute dtype before they weight the values, as transformers'
     * attention does.
     */
    private String attention(XlaTensor node, XlaTensor q, XlaTensor k, XlaTensor v, XlaTensor allowed, double scale,
                             double softcap) {
        long[] qs = q.shapeView();
        long[] ks = k.shapeView();
        long batch = qs[0];
        long heads = qs[1];
        long queries = qs[2];
        long width = qs[3];
        long kvHeads = ks[1];
        long keys = ks[2];
        long group = heads / kvHeads;
        DType dtype = q.dtype();
        long[] grouped = {batch, kvHeads, group, queries, width};
        long[] scoreShape = {batch, kvHeads, group, queries, keys};
        String scores5 = mlirType(DType.F32, scoreShape);
        String q5 = reshape(value(q), q, dtype, grouped);
        String scores = line("stablehlo.dot_general " + q5 + ", " + value(k) + ", batching_dims = [0, 1] x [0, 1], "
                + "contracting_dims = [4] x [3]" + precision(dtype) + " : (" + mlirType(dtype, grouped) + ", " + type(k)
                + ") -> " + scores5);
        String scaled = line("stablehlo.multiply " + scores + ", " + splat(DType.F32, scoreShape, (float) scale) + " : "
                + scores5);
        if (softcap != 0) {
            String divided = line("stablehlo.divide " + scaled + ", " + splat(DType.F32, scoreShape, (float) softcap)
                    + " : " + scores5);
            String capped = line("stablehlo.tanh " + divided + " : " + scores5);
            scaled = line("stablehlo.multiply " + capped + ", " + splat(DType.F32, scoreShape, (float) softcap) + " : "
                    + scores5);
        }
        long[] maskShape = {batch, 1, queries, keys};
        String mask = broadcast(value(allowed), DType.BOOL, allowed.shapeView(), maskShape);
        long[] mask3 = {batch, queries, keys};
        mask = line("stablehlo.reshape " + mask + " : (" + mlirType(DType.BOOL, maskShape) + ") -> "
                + mlirType(DType.BOOL, mask3));
        mask = line("stablehlo.broadcast_in_dim " + mask + ", dims = [0, 3, 4] : (" + mlirType(DType.BOOL, mask3)
                + ") -> " + mlirType(DType.BOOL, scoreShape));
        String masked = line("stablehlo.select " + mask + ", " + scaled + ", "
                + splat(DType.F32, scoreShape, Double.NEGATIVE_INFINITY) + " : " + mlirType(DType.BOOL, scoreShape)
                + ", " + scores5);
        String probabilities = convert(softmaxF32(masked, scoreShape, 4, false), DType.F32, dtype, scoreShape);
        DType accumulate = accumulation(dtype);
        String mixed = line("stablehlo.dot_general " + probabilities + ", " + value(v) + ", batching_dims = [0, 1] x "
                + "[0, 1], contracting_dims = [4] x [2]" + precision(dtype) + " : (" + mlirType(dtype, scoreShape)
                + ", " + type(v) + ") -> " + mlirType(accumulate, grouped));
        String narrowed = convert(mixed, accumulate, dtype, grouped);
        return line("stablehlo.reshape " + narrowed + " : (" + mlirType(dtype, grouped) + ") -> " + type(node));
    }

    private String dynamicUpdateSlice(XlaTensor node, XlaTensor target, XlaTensor index, XlaTensor source, int dim) {
        String first = slice(value(index), index.dtype(), index.shapeView(), 0, 0, 1);
        String start = line("stablehlo.reshape " + first + " : (" + mlirType(index.dtype(), new long[] {1}) + ") -> "
                + mlirType(index.dtype(), new long[0]));
        String zero = line("stablehlo.constant dense<0> : " + mlirType(index.dtype(), new long[0]));
        int rank = target.shapeView().length;
        StringJoiner starts = new StringJoiner(", ");
        StringJoiner types = new StringJoiner(", ");
        for (int d = 0; d < rank; d++) {
            starts.add(d == dim ? start : zero);
            types.add(mlirType(index.dtype(), new long[0]));
        }
        return line("stablehlo.dynamic_update_slice " + value(target) + ", " + value(source) + ", " + starts + " : ("
                + type(target) + ", " + type(source) + ", " + types + ") -> " + type(node));
    }

    private String scatter(XlaTensor node, XlaTensor target, XlaTensor index, XlaTensor source, int dim) {
        long count = index.shapeView()[0];
        long[] column = {count, 1};
        String indices = convert(value(index), index.dtype(), DType.I32, index.shapeView());
        indices = line("stablehlo.reshape " + indices + " : (" + mlirType(DType.I32, index.shapeView()) + ") -> "
                + mlirType(DType.I32, column));
        int rank = target.shapeView().length;
        StringJoiner window = new StringJoiner(", ", "[", "]");
        for (int d = 0; d < rank; d++) {
            if (d != dim) {
                window.add(Integer.toString(d));
            }
        }
        String scalar = mlirType(target.dtype(), new long[0]);
        String old = fresh();
        String replacement = fresh();
        return line("\"stablehlo.scatter\"(" + value(target) + ", " + indices + ", " + value(source) + ") <{"
                + "indices_are_sorted = false, scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = "
                + window + ", inserted_window_dims = [" + dim + "], scatter_dims_to_operand_dims = [" + dim + "], "
                + "index_vector_dim = 1>, unique_indices = false}> ({\n"
                + "    ^bb0(" + old + ": " + scalar + ", " + replacement + ": " + scalar + "):\n"
                + "      stablehlo.return " + replacement + " : " + scalar + "\n"
                + "    }) : (" + type(target) + ", " + mlirType(DType.I32, column) + ", " + type(source) + ") -> "
                + type(node));
    }

    // ---- helpers ----------------------------------------------------------------------------------------------

    /** NumPy broadcasting: dimensions align from the right, and extents of 1 stretch. */
    private String broadcast(String x, DType dtype, long[] from, long[] to) {
        if (Arrays.equals(from, to)) {
            return x;
        }
        int offset = to.length - from.length;
        int[] dims = new int[from.length];
        for (int d = 0; d < from.length; d++) {
            dims[d] = d + offset;
        }
        return line("stablehlo.broadcast_in_dim " + x + ", dims = " + list(dims) + " : (" + mlirType(dtype, from)
                + ") -> " + mlirType(dtype, to));
    }

    /** A value reduced over {@code dim} stretched back over it. */
    private String expand(String x, DType dtype, long[] reduced, long[] shape, int dim) {
        int[] dims = new int[reduced.length];
        for (int d = 0, j = 0; d < shape.length; d++) {
            if (d != dim) {
                dims[j++] = d;
            }
        }
        return line("stablehlo.broadcast_in_dim " + x + ", dims = " + list(dims) + " : (" + mlirType(dtype, reduced)
                + ") -> " + mlirType(dtype, shape));
    }

    private String reduce(String x, DType dtype, long[] shape, int dim, String combiner, double init) {
        String scalar = mlirType(dtype, new long[0]);
        String start = line("stablehlo.constant dense<" + literal(dtype, init) + "> : " + scalar);
        return line("stablehlo.reduce(" + x + " init: " + start + ") applies stablehlo." + combiner
                + " across dimensions = [" + dim + "] : (" + mlirType(dtype, shape) + ", " + scalar + ") -> "
                + mlirType(dtype, without(shape, dim)));
    }

    private String splat(DType dtype, long[] shape, double value) {
        return line("stablehlo.constant dense<" + literal(dtype, value) + "> : " + mlirType(dtype, shape));
    }

    /** An exact literal: floats by their bits, so the program holds what Java computed. */
    static String literal(DType dtype, double value) {
        return switch (dtype) {
            case F32 -> String.format("0x%08X", Float.floatToRawIntBits((float) value));
            case BF16 -> String.format("0x%04X", HalfFloats.floatToBf16((float) value) & 0xFFFF);
            case F16 -> String.format("0x%04X", HalfFloats.floatToF16((float) value) & 0xFFFF);
            case BOOL -> value != 0 ? "true" : "false";
            case I64, I32, I8, U8 -> Long.toString((long) value);
        };
    }

    private static double lowest(DType dtype) {
        return switch (dtype) {
            case F32, BF16, F16 -> Double.NEGATIVE_INFINITY;
            case I64 -> Long.MIN_VALUE;
            case I32 -> Integer.MIN_VALUE;
            case I8 -> Byte.MIN_VALUE;
            case U8, BOOL -> 0;
        };
    }

    private static String comparisonType(DType dtype) {
        return switch (dtype) {
            case F32, BF16, F16 -> "FLOAT";
            case I64, I32, I8 -> "SIGNED";
            case U8, BOOL -> "UNSIGNED";
        };
    }

    /** Half precision accumulates in float32; float32 in itself. */
    private static DType accumulation(DType dtype) {
        return dtype == DType.BF16 || dtype == DType.F16 ? DType.F32 : dtype;
    }

    /** Float32 products at full precision: a TPU's default multiplies float32 in bf16 passes. */
    private static String precision(DType operands) {
        return operands == DType.F32 ? ", precision = [HIGHEST, HIGHEST]" : "";
    }

    private static long[] without(long[] shape, int dim) {
        long[] out = new long[shape.length - 1];
        for (int d = 0, j = 0; d < shape.length; d++) {
            if (d != dim) {
                out[j++] = shape[d];
            }
        }
        return out;
    }

    private static int[] identity(int rank) {
        int[] permutation = new int[rank];
        for (int d = 0; d < rank; d++) {
            permutation[d] = d;
        }
        return permutation;
    }

    private static String list(int[] values) {
        StringJoiner joined = new StringJoiner(", ", "[", "]");
        for (int value : values) {
            joined.add(Integer.toString(value));
        }
        return joined.toString();
    }

    private String value(XlaTensor tensor) {
        String name = values.get(tensor);
        if (name == null) {
            throw new IllegalStateException("no value for " + tensor + " (the graph is out of order)");
        }
        return name;
    }

    private static String type(XlaTensor tensor) {
        return mlirType(tensor.dtype(), tensor.shapeView());
    }

    private String fresh() {
        return "%" + counter++;
    }

    private String line(String expression) {
        String name = fresh();
        body.append("    ").append(name).append(" = ").append(expression).append('\n');
        return name;
    }

    static String elementType(DType dtype) {
        return mlirElementType(dtype);
    }
}
