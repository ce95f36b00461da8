package dev.crucible.api.io;

import java.util.ArrayList;
import java.util.List;

/**
 * {@code model.safetensors.index.json} as transformers writes it:
 * {@code json.dumps({"metadata": {"total_size": N}, "weight_map": {...}}, indent=2, sort_keys=True) + "\n"}.
 */
final class ShardIndex {
    private ShardIndex() {
    }

    static String json(List<List<WritableTensor>> shards, List<String> fileNames) {
        long totalSize = 0;
        List<String[]> entries = new ArrayList<>();
        for (int i = 0; i < shards.size(); i++) {
            for (WritableTensor tensor : shards.get(i)) {
                totalSize += tensor.byteSize();
                entries.add(new String[] {tensor.name(), fileNames.get(i)});
            }
        }
        entries.sort((a, b) -> Json.compareCodePoints(a[0], b[0]));
        StringBuilder out = new StringBuilder();
        out.append("{\n  \"metadata\": {\n    \"total_size\": ").append(totalSize).append("\n  },\n");
        out.append("  \"weight_map\": {");
        // Only written for two or more shards, so the map is never empty (Python would print "{}").
        for (int i = 0; i < entries.size(); i++) {
            out.append(i == 0 ? "\n    " : ",\n    ");
            Json.appendPythonString(out, entries.get(i)[0]);
            out.append(": ");
            Json.appendPythonString(out, entries.get(i)[1]);
        }
        out.append("\n  }\n");
        out.append("}\n");
        return out.toString();
    }
}
