package dev.crucible.runner.export;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.crucible.api.tensor.HostTensor;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.io.TensorInfo;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.TransformerWeights;
import dev.crucible.api.quant.CompressedTensors;
import dev.crucible.api.quant.IntCodec;
import dev.crucible.api.quant.QuantizationConfig;
import dev.crucible.api.tensor.WeightFormat;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * A Hugging Face folder whose projection weights are stored quantized in the compressed-tensors layout
 * ({@link CompressedTensors}): what {@code runner quantize} writes, and what vLLM, transformers and every Crucible
 * command load. Every other tensor (embeddings, the output head, norms, biases, and the projections
 * {@code quantization} excludes) is written as it is; config.json gains the {@code quantization_config} that says so.
 * Scales are stored in each weight's dtype and computed in it, so they dequantize exactly what was quantized.
 *
 * @param quantization int8 or int4, with its scheme and exclusions
 * @param written      told, once the folder is in place, how many projections were quantized out of how many
 */
public record CompressedTensorsFolderWriter(QuantizationConfig quantization, long maxShardBytes, Written written)
        implements ModelWriter {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** What a write stored: projections quantized, projections in all, bytes of every tensor written. */
    public interface Written {
        void report(int quantized, int projections, long bytes);
    }

    public CompressedTensorsFolderWriter {
        Objects.requireNonNull(quantization, "quantization is null");
        Objects.requireNonNull(written, "written is null");
        if (!(quantization.enabled() && quantization.format() instanceof WeightFormat.Int)) {
            throw new IllegalArgumentException("compressed-tensors folders store int8 or int4 weights");
        }
    }

    @Override
    public void write(ExportedModel model, Path out, boolean force) {
        ExportWeights weights = model.requireWeights("a compressed-tensors folder");
        BaseFiles base = model.files();
        base.checkChatTemplates();
        int[] counts = new int[2];
        long[] bytes = new long[1];
        StagedFolder.write(out, force, base.exportBytes(), folder -> {
            List<String> ignore = new ArrayList<>();
            ignore.add("lm_head");
            try (ExportWeights.Opened opened = weights.open()) {
                Map<String, WritableTensor> byName = new LinkedHashMap<>();
                opened.tensors().forEach(tensor -> byName.put(tensor.name(), tensor));
                List<String> projections = TransformerWeights.projectionWeights(model.config(), name -> {
                    WritableTensor tensor = byName.get(name);
                    return tensor == null ? null : new TensorInfo(name, tensor.dtype(), tensor.shape(), 0, tensor.byteSize());
                });
                WeightFormat.Int format = (WeightFormat.Int) quantization.format();
                List<WritableTensor> stored = new ArrayList<>();
                for (WritableTensor tensor : opened.tensors()) {
                    String name = tensor.name();
                    if (!projections.contains(name)) {
                        stored.add(tensor);
                    } else if (!quantization.quantizes(name)) {
                        stored.add(tensor);
                        ignore.add(CompressedTensors.module(name));
                    } else {
                        float[] values = new HostTensor(name, tensor.dtype(), tensor.shape(), tensor.bytes()).toFloatArray();
                        CompressedTensors.tensors(new IntCodec(format, tensor.dtype())
                                .encode(name, values, tensor.shape()), tensor.dtype())
                                .forEach(part -> stored.add(WritableTensor.of(part)));
                        counts[0]++;
                    }
                }
                counts[1] = projections.size();
                bytes[0] = stored.stream().mapToLong(WritableTensor::byteSize).sum();
                SafetensorsWriter.writeModel(folder, stored, Map.of("format", "pt"), maxShardBytes);
            }
            base.copyInto(folder);
            writeQuantizationConfig(folder.resolve("config.json"), ignore);
            if (model.card().isPresent()) {
                model.card().get().writeInto(folder, out.toAbsolutePath().normalize().getFileName().toString(), base);
            }
            model.extraFiles().writeInto(folder);
        });
        written.report(counts[0], counts[1], bytes[0]);
    }

    private void writeQuantizationConfig(Path configFile, List<String> ignore) throws IOException {
        ObjectNode config = (ObjectNode) JSON.readTree(configFile.toFile());
        config.set("quantization_config", CompressedTensors.quantizationConfig(quantization, ignore));
        Files.writeString(configFile, JSON.writerWithDefaultPrettyPrinter().writeValueAsString(config) + "\n");
    }
}
