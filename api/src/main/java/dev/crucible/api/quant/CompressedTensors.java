package dev.crucible.api.quant;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.UserInputException;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.tensor.DType;
import dev.crucible.api.tensor.WeightFormat;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The compressed-tensors layout that vLLM and transformers read: {@code quantization_config} with
 * {@code quant_method: compressed-tensors} in config.json, and beside each quantized {@code M.weight}:
 * <ul>
 *   <li>8 bits ({@code format: int-quantized}): {@code M.weight} int8 {@code [out, in]};</li>
 *   <li>4 bits ({@code format: pack-quantized}): {@code M.weight_packed} int32 {@code [out, ceil(in / 8)]}, eight
 *       codes {@code q + 8} per int32 from the low bits up, and {@code M.weight_shape} {@code [out, in]};</li>
 *   <li>{@code M.weight_scale} {@code [out, groups]} in the model's dtype (one group per row for {@code channel},
 *       {@code in / group_size} for {@code group});</li>
 *   <li>asymmetric only, {@code M.weight_zero_point}: int8 {@code [out, groups]} for 8 bits; for 4 bits packed like
 *       the codes but down the rows, int32 {@code [ceil(out / 8), groups]}.</li>
 * </ul>
 * The integer arithmetic is {@link IntCodec}'s, whose 4-bit bytes are the little-endian bytes of these int32s.
 */
public final class CompressedTensors {

    public static final String QUANT_METHOD = "compressed-tensors";
    public static final String INT_QUANTIZED = "int-quantized";
    public static final String PACK_QUANTIZED = "pack-quantized";

    private static final ValueLayout.OfInt I32_LE = ValueLayout.JAVA_INT_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);
    private static final ValueLayout.OfLong I64_LE = ValueLayout.JAVA_LONG_UNALIGNED.withOrder(ByteOrder.LITTLE_ENDIAN);

    /** The tensors that stand for a quantized {@code M.weight}, by suffix after {@code M.}. */
    public static final List<String> PARAMETERS =
            List.of("weight_packed", "weight_shape", "weight_scale", "weight_zero_point", "weight_g_idx");

    private CompressedTensors() {
    }

    /**
     * What {@code config}'s (config.json's) {@code quantization_config} says the weights are, when it is a
     * compressed-tensors config of integer weights; empty when there is none. A quantization Crucible cannot read
     * (another {@code quant_method}, activations, a {@code tensor} strategy, ...) is a one-line user error.
     */
    public static java.util.Optional<QuantizationConfig> read(JsonNode config, String where) {
        JsonNode quantization = config == null ? null : config.get("quantization_config");
        if (quantization == null || quantization.isNull()) {
            return java.util.Optional.empty();
        }
        String method = quantization.path("quant_method").asText("");
        if (!method.equals(QUANT_METHOD)) {
            throw new UserInputException(where + ": quantization_config quant_method '" + method + "' is not "
                    + "supported; Crucible reads compressed-tensors folders (runner quantize writes them) and "
                    + "full-precision ones");
        }
        String format = quantization.path("format").asText("");
        if (format.equals("dense")) {
            return java.util.Optional.empty();
        }
        if (!format.equals(INT_QUANTIZED) && !format.equals(PACK_QUANTIZED)) {
            throw new UserInputException(where + ": compressed-tensors format '" + format + "' is not supported "
                    + "(Crucible reads " + INT_QUANTIZED + " and " + PACK_QUANTIZED + ")");
        }
        String status = quantization.path("quantization_status").asText("compressed");
        if (!status.equals("compressed")) {
            throw new UserInputException(where + ": compressed-tensors quantization_status '" + status
                    + "' is not supported (Crucible reads compressed weights)");
        }
        JsonNode groups = quantization.path("config_groups");
        if (!groups.isObject() || groups.isEmpty()) {
            throw new UserInputException(where + ": compressed-tensors quantization_config has no config_groups");
        }
        QuantizationConfig found = null;
        for (var group : groups.properties()) {
            JsonNode node = group.getValue();
            for (String activations : List.of("input_activations", "output_activations")) {
                if (!node.path(activations).isMissingNode() && !node.path(activations).isNull()) {
                    throw new UserInputException(where + ": compressed-tensors group " + group.getKey() + " quantizes "
                            + activations + "; Crucible reads weight-only quantization");
                }
            }
            QuantizationConfig weights = weights(node.path("weights"), where + ": compressed-tensors group "
                    + group.getKey(), ignored(quantization.path("ignore")));
            if (found != null && !found.equals(weights)) {
                throw new UserInputException(where + ": compressed-tensors groups with different weight schemes are "
                        + "not supported");
            }
            found = weights;
        }
        return java.util.Optional.of(found);
    }

    private static List<String> ignored(JsonNode ignore) {
        List<String> names = new ArrayList<>();
        for (JsonNode name : ignore) {
            names.add(name.asText());
        }
        return names;
    }

    private static QuantizationConfig weights(JsonNode weights, String where, List<String> ignore) {
        if (!weights.isObject()) {
            throw new UserInputException(where + " has no weights scheme");
        }
        String type = weights.path("type").asText("int");
        int bits = weights.path("num_bits").asInt(0);
        if (!type.equals("int") || (bits != 8 && bits != 4)) {
            throw new UserInputException(where + ": " + bits + "-bit " + type + " weights are not supported "
                    + "(Crucible reads 8-bit and 4-bit int)");
        }
        String strategy = weights.path("strategy").asText("").toLowerCase(Locale.ROOT);
        boolean symmetric = weights.path("symmetric").asBoolean(true);
        int block = switch (strategy) {
            case "channel" -> 0;
            case "group" -> weights.path("group_size").asInt(0);
            default -> throw new UserInputException(where + ": strategy '" + strategy + "' is not supported "
                    + "(Crucible reads channel and group)");
        };
        if (strategy.equals("group") && block <= 0) {
            throw new UserInputException(where + ": strategy group needs a positive group_size");
        }
        if (!weights.path("actorder").isMissingNode() && !weights.path("actorder").isNull()) {
            throw new UserInputException(where + ": activation-ordered groups (actorder) are not supported");
        }
        QuantizationConfig.Method method = bits == 8 ? QuantizationConfig.Method.INT8 : QuantizationConfig.Method.INT4;
        QuantizationConfig.Scheme scheme = !symmetric ? QuantizationConfig.Scheme.ASYMMETRIC
                : block == 0 ? QuantizationConfig.Scheme.PER_CHANNEL : QuantizationConfig.Scheme.BLOCKWISE;
        List<String> exclude = new ArrayList<>(ignore);
        exclude.add("model.embed_tokens");
        return new QuantizationConfig(method, scheme, block, exclude, false);
    }

    /**
     * The {@code quantization_config} for weights quantized as {@code quantization} says, with {@code ignore} the
     * linear modules kept in full precision (the output head always: Crucible never quantizes it).
     */
    public static ObjectNode quantizationConfig(QuantizationConfig quantization, List<String> ignore) {
        WeightFormat.Int format = intFormat(quantization);
        JsonNodeFactory json = JsonNodeFactory.instance;
        ObjectNode weights = json.objectNode();
        weights.put("num_bits", format.bits());
        weights.put("type", "int");
        weights.put("symmetric", !format.zeroPoints());
        weights.put("strategy", format.blockSize() == 0 ? "channel" : "group");
        if (format.blockSize() == 0) {
            weights.putNull("group_size");
        } else {
            weights.put("group_size", format.blockSize());
        }
        weights.put("dynamic", false);
        weights.putNull("actorder");
        weights.putNull("block_structure");
        weights.put("observer", "minmax");
        weights.putObject("observer_kwargs");
        ObjectNode group = json.objectNode();
        group.putArray("targets").add("Linear");
        group.set("weights", weights);
        group.putNull("input_activations");
        group.putNull("output_activations");
        ObjectNode config = json.objectNode();
        config.put("quant_method", QUANT_METHOD);
        config.put("format", format.bits() == 8 ? INT_QUANTIZED : PACK_QUANTIZED);
        config.put("quantization_status", "compressed");
        config.putObject("config_groups").set("group_0", group);
        var ignored = config.putArray("ignore");
        ignore.forEach(ignored::add);
        config.putNull("kv_cache_scheme");
        config.putNull("global_compression_ratio");
        return config;
    }

    private static WeightFormat.Int intFormat(QuantizationConfig quantization) {
        if (!(quantization.enabled() && quantization.format() instanceof WeightFormat.Int format)) {
            throw new IllegalArgumentException("compressed-tensors stores int8 or int4 weights, not "
                    + quantization.method().userName());
        }
        return format;
    }

    /**
     * The tensors that store {@code parts} (an {@link IntCodec} encoding of {@code M.weight}), scales rounded to
     * {@code scaleDtype}: encode with {@code new IntCodec(format, scaleDtype)} so that they are exact.
     */
    public static List<HostTensor> tensors(QuantizedHostTensor parts, DType scaleDtype) {
        WeightFormat.Int format = (WeightFormat.Int) parts.format();
        String module = module(parts.name());
        long[] shape = parts.shape();
        if (shape.length != 2) {
            throw new IllegalArgumentException(parts.name() + ": compressed-tensors quantizes 2-D weights");
        }
        long rows = shape[0];
        long columns = shape[1];
        long groups = format.groupsPerRow(columns);
        List<HostTensor> out = new ArrayList<>();
        if (format.bits() == 8) {
            out.add(new HostTensor(module + ".weight", DType.I8, shape, parts.data().data()));
        } else {
            out.add(new HostTensor(module + ".weight_packed", DType.I32, new long[] {rows, (columns + 7) / 8},
                    packedRows(parts.data().data(), rows, format.rowBytes(columns))));
            MemorySegment extents = MemorySegment.ofArray(new byte[16]);
            extents.set(I64_LE, 0, rows);
            extents.set(I64_LE, 8, columns);
            out.add(new HostTensor(module + ".weight_shape", DType.I64, new long[] {2}, extents));
        }
        out.add(HostTensor.ofFloats(module + ".weight_scale", scaleDtype, new long[] {rows, groups},
                parts.scales().toFloatArray()));
        if (format.zeroPoints()) {
            byte[] zeros = parts.zeroPoints().toByteArray();
            out.add(format.bits() == 8
                    ? new HostTensor(module + ".weight_zero_point", DType.I8, new long[] {rows, groups},
                            MemorySegment.ofArray(zeros))
                    : new HostTensor(module + ".weight_zero_point", DType.I32,
                            new long[] {(rows + 7) / 8, groups}, packedColumns(zeros, rows, groups)));
        }
        return out;
    }

    /** IntCodec's 4-bit rows ({@code rowBytes} each), each padded with zero bytes to whole int32s. */
    private static MemorySegment packedRows(MemorySegment data, long rows, long rowBytes) {
        long packedBytes = (rowBytes + 3) / 4 * 4;
        MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(rows * packedBytes)]);
        for (long row = 0; row < rows; row++) {
            MemorySegment.copy(data, row * rowBytes, out, row * packedBytes, rowBytes);
        }
        return out;
    }

    /** Signed 4-bit zero points {@code [rows, groups]}, eight rows per int32 (row {@code 8k + i} in bits 4i..4i+3). */
    private static MemorySegment packedColumns(byte[] zeros, long rows, long groups) {
        long packedRows = (rows + 7) / 8;
        MemorySegment out = MemorySegment.ofArray(new byte[Math.toIntExact(packedRows * groups * 4)]);
        for (long row = 0; row < rows; row++) {
            for (long group = 0; group < groups; group++) {
                long at = ((row / 8) * groups + group) * 4;
                int word = out.get(I32_LE, at);
                word |= ((zeros[Math.toIntExact(row * groups + group)] + 8) & 15) << (4 * (row % 8));
                out.set(I32_LE, at, word);
            }
        }
        return out;
    }

    /**
     * The parts of the quantized {@code weightName} ({@code M.weight}) in {@code format}, from the stored tensors
     * {@code stored} finds by name (null when absent): copies on the heap, scales in float32.
     */
    public static QuantizedHostTensor parts(String weightName, WeightFormat.Int format,
                                            Function<String, HostTensor> stored) {
        String module = module(weightName);
        HostTensor scales = require(stored, module + ".weight_scale");
        long[] shape = shape(weightName, format, stored);
        long rows = shape[0];
        long columns = shape[1];
        long groups = format.groupsPerRow(columns);
        if (scales.elementCount() != rows * groups) {
            throw new UserInputException(module + ".weight_scale has " + scales.elementCount() + " values, expected "
                    + rows + " x " + groups + " for " + weightName + " " + java.util.Arrays.toString(shape));
        }
        long rowBytes = format.rowBytes(columns);
        HostTensor data;
        if (format.bits() == 8) {
            HostTensor codes = require(stored, weightName);
            data = new HostTensor(weightName + ".qdata", DType.I8, shape,
                    MemorySegment.ofArray(codes.toByteArray()));
        } else {
            HostTensor packed = require(stored, module + ".weight_packed");
            long packedBytes = (columns + 7) / 8 * 4;
            if (packed.dtype() != DType.I32 || packed.data().byteSize() != rows * packedBytes) {
                throw new UserInputException(module + ".weight_packed is " + packed.dtype()
                        + java.util.Arrays.toString(packed.shape()) + ", expected I32[" + rows + ", "
                        + (columns + 7) / 8 + "]");
            }
            MemorySegment bytes = MemorySegment.ofArray(new byte[Math.toIntExact(rows * rowBytes)]);
            for (long row = 0; row < rows; row++) {
                MemorySegment.copy(packed.data(), row * packedBytes, bytes, row * rowBytes, rowBytes);
            }
            data = new HostTensor(weightName + ".qdata", DType.U8, new long[] {rows, rowBytes}, bytes);
        }
        HostTensor scaleParts = HostTensor.ofFloats(weightName + ".scales", DType.F32, new long[] {rows, groups},
                scales.toFloatArray());
        HostTensor zeroParts = null;
        if (format.zeroPoints()) {
            HostTensor zeros = require(stored, module + ".weight_zero_point");
            byte[] values = new byte[Math.toIntExact(rows * groups)];
            if (zeros.dtype() == DType.I8 && zeros.elementCount() == rows * groups) {
                values = zeros.toByteArray();
            } else if (zeros.dtype() == DType.I32 && zeros.elementCount() == (rows + 7) / 8 * groups) {
                for (long row = 0; row < rows; row++) {
                    for (long group = 0; group < groups; group++) {
                        int word = zeros.data().get(I32_LE, ((row / 8) * groups + group) * 4);
                        values[Math.toIntExact(row * groups + group)] = (byte) (((word >>> (4 * (row % 8))) & 15) - 8);
                    }
                }
            } else {
                throw new UserInputException(module + ".weight_zero_point is " + zeros.dtype()
                        + java.util.Arrays.toString(zeros.shape()) + ", which does not fit " + rows + " x " + groups
                        + " zero points");
            }
            zeroParts = new HostTensor(weightName + ".zero_points", DType.I8, new long[] {rows, groups},
                    MemorySegment.ofArray(values));
        }
        return new QuantizedHostTensor(weightName, format, shape, data, scaleParts, zeroParts);
    }

    /** The dense shape of the quantized {@code weightName}, from its int8 codes or its {@code weight_shape}. */
    public static long[] shape(String weightName, WeightFormat.Int format, Function<String, HostTensor> stored) {
        if (format.bits() == 8) {
            return require(stored, weightName).shape();
        }
        HostTensor extents = require(stored, module(weightName) + ".weight_shape");
        if (extents.elementCount() != 2 || (extents.dtype() != DType.I64 && extents.dtype() != DType.I32)) {
            throw new UserInputException(module(weightName) + ".weight_shape is " + extents.dtype()
                    + java.util.Arrays.toString(extents.shape()) + ", expected two integers");
        }
        return extents.dtype() == DType.I64
                ? new long[] {extents.data().get(I64_LE, 0), extents.data().get(I64_LE, 8)}
                : new long[] {extents.data().get(I32_LE, 0), extents.data().get(I32_LE, 4)};
    }

    private static HostTensor require(Function<String, HostTensor> stored, String name) {
        HostTensor tensor = stored.apply(name);
        if (tensor == null) {
            throw new UserInputException("compressed-tensors checkpoint has no " + name);
        }
        return tensor;
    }

    /** {@code M} of {@code M.weight}. */
    public static String module(String weightName) {
        if (!weightName.endsWith(".weight")) {
            throw new IllegalArgumentException("not a weight name: " + weightName);
        }
        return weightName.substring(0, weightName.length() - ".weight".length());
    }
}
