package dev.crucible.accelerator.xla.lower;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.accelerator.xla.exec.TensorSpec;
import dev.crucible.accelerator.xla.pjrt.CompileOptions.Partitioner;
import java.util.Locale;
import java.util.Map;

/**
 * The manifest written beside each program, so that any PJRT host (JAX included) can run it: every argument in
 * order (its name: the checkpoint tensor's, or {@code input:N} for a step input; dtype; whole shape; the shape each
 * device holds; how it is split) and every result, which arguments are donated to which result, and how the program
 * is partitioned.
 *
 * <pre>{@code
 * {"format": "crucible-program/1", "program": "decode_step", "stablehlo": "decode_step.mlir",
 *  "partitions": 8, "partitioner": "shardy", "num_replicas": 1,
 *  "arguments": [{"index": 0, "name": "model.embed_tokens.weight", "dtype": "BF16", "shape": [512, 64],
 *                 "device_shape": [64, 64], "sharding": {"split_dim": 0}}, ...],
 *  "results": [{"index": 0, "name": "state:0", ..., "donated_from": 3}, ...]}
 * }</pre>
 */
public final class ManifestJson {
    public static final String FORMAT = "crucible-program/1";
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private ManifestJson() {
    }

    /** The manifest of {@code program}, whose StableHLO lies in the file {@code stablehloFile}. */
    public static String write(LoweredProgram program, String stablehloFile) {
        ObjectNode root = JSON.createObjectNode();
        root.put("format", FORMAT);
        root.put("program", program.name());
        root.put("stablehlo", stablehloFile);
        Sharding sharding = program.sharding();
        root.put("partitions", sharding.partitions());
        root.put("partitioner", sharding.partitioner() == Partitioner.NONE ? "none"
                : sharding.partitioner().name().toLowerCase(Locale.ROOT));
        root.put("strategy", sharding.strategy());
        root.put("num_replicas", 1);
        Map<Integer, Integer> donations = program.program().manifest().donations();
        ArrayNode arguments = root.putArray("arguments");
        for (int i = 0; i < program.arguments().size(); i++) {
            ObjectNode argument = tensor(arguments.addObject(), i, program.arguments().get(i),
                    program.argumentLayouts().get(i), sharding);
            if (donations.containsKey(i)) {
                argument.put("donated_to", donations.get(i));
            }
        }
        ArrayNode results = root.putArray("results");
        for (int i = 0; i < program.results().size(); i++) {
            ObjectNode result = tensor(results.addObject(), i, program.results().get(i), program.resultLayouts().get(i),
                    sharding);
            for (var donation : donations.entrySet()) {
                if (donation.getValue() == i) {
                    result.put("donated_from", donation.getKey());
                }
            }
        }
        try {
            return JSON.writeValueAsString(root) + "\n";
        } catch (com.fasterxml.jackson.core.JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    private static ObjectNode tensor(ObjectNode node, int index, TensorSpec spec, Layout layout, Sharding sharding) {
        node.put("index", index);
        node.put("name", spec.name());
        node.put("dtype", spec.dtype().name());
        shape(node.putArray("shape"), spec.shape());
        shape(node.putArray("device_shape"), layout.deviceShape(spec.shape(), sharding.partitions()));
        if (layout.replicated()) {
            node.put("sharding", "replicated");
        } else {
            node.putObject("sharding").put("split_dim", layout.splitDim());
        }
        return node;
    }

    private static void shape(ArrayNode array, long[] shape) {
        for (long extent : shape) {
            array.add(extent);
        }
    }
}
