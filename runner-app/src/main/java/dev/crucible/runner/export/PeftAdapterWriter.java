package dev.crucible.runner.export;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.LoraFactors;
import dev.crucible.huggingface.hub.ModelLocator;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Writes LoRA adapters in the PEFT layout, so {@code PeftModel.from_pretrained(base, dir)} loads them:
 * {@code adapter_model.safetensors} with keys {@code base_model.model.<module>.lora_A.weight} /
 * {@code lora_B.weight}, and {@code adapter_config.json}, then the model's extra files. Abliteration lists its
 * target modules by full name, so PEFT attaches adapters exactly where there are weights for them (its edits
 * differ from layer to layer).
 */
public final class PeftAdapterWriter implements ModelWriter {
    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);
    /** The header, adapter_config.json and what callers add (tokenizer files, metadata). */
    private static final long SMALL_FILES_BYTES = 1L << 20;

    @Override
    public void write(ExportedModel model, Path out, boolean force) {
        LoraAdapters adapters = model.requireAdapters("a PEFT adapter");
        List<WritableTensor> tensors = new ArrayList<>();
        long tensorBytes = 0;
        for (Map.Entry<String, LoraFactors> e : adapters.factors().entrySet()) {
            String prefix = "base_model.model." + e.getKey();
            tensors.add(rename(prefix + ".lora_A.weight", WritableTensor.of(e.getValue().a())));
            tensors.add(rename(prefix + ".lora_B.weight", WritableTensor.of(e.getValue().b())));
            tensorBytes += tensors.get(tensors.size() - 2).byteSize() + tensors.getLast().byteSize();
        }
        StagedFolder.write(out, force, folderBytes(tensorBytes), folder -> {
            SafetensorsWriter.write(folder.resolve("adapter_model.safetensors"), tensors, Map.of("format", "pt"));
            JSON.writeValue(folder.resolve("adapter_config.json").toFile(), adapterConfig(model.base(), adapters));
            model.extraFiles().writeInto(folder);
        });
    }

    /** What an adapter folder takes on disk, given its tensors' bytes (known before training from the shapes). */
    public static long folderBytes(long tensorBytes) {
        return SMALL_FILES_BYTES + tensorBytes;
    }

    private static WritableTensor rename(String name, WritableTensor tensor) {
        return new WritableTensor(name, tensor.dtype(), tensor.shape(), tensor.bytes());
    }

    /**
     * @param base written as {@code base_model_name_or_path} and {@code revision} ({@link ModelLocator.Located#reference})
     */
    static Map<String, Object> adapterConfig(ModelLocator.Located base, LoraAdapters adapters) {
        Map<String, Object> c = new LinkedHashMap<>();
        c.put("peft_type", "LORA");
        c.put("task_type", "CAUSAL_LM");
        c.put("base_model_name_or_path", base.reference());
        c.put("revision", base.revision().orElse(null));
        c.put("r", adapters.rank());
        c.put("lora_alpha", adapters.alpha());
        c.put("lora_dropout", adapters.dropout());
        c.put("target_modules", adapters.targetModules());
        c.put("bias", "none");
        c.put("fan_in_fan_out", false);
        c.put("inference_mode", true);
        c.put("init_lora_weights", true);
        c.put("modules_to_save", null);
        c.put("layers_to_transform", null);
        c.put("layers_pattern", null);
        c.put("rank_pattern", Map.of());
        c.put("alpha_pattern", Map.of());
        c.put("use_rslora", false);
        c.put("use_dora", false);
        return c;
    }
}
