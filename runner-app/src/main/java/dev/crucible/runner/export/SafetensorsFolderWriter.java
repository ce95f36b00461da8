package dev.crucible.runner.export;

import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.StagedFolder;
import java.nio.file.Path;
import java.util.Map;

/**
 * A Hugging Face model folder: the model's weights under the base's tensor names, shapes and dtypes in safetensors
 * shards no larger than {@code maxShardBytes}, the base's config, tokenizer, chat template and licence files
 * ({@link BaseFiles}), the model card when there is one, then the extra files. The chat templates it copies are
 * compiled first, and the location and its room are checked, before any weight is computed.
 */
public record SafetensorsFolderWriter(long maxShardBytes) implements ModelWriter {
    @Override
    public void write(ExportedModel model, Path out, boolean force) {
        ExportWeights weights = model.requireWeights("a safetensors folder");
        BaseFiles base = model.files();
        base.checkChatTemplates();
        StagedFolder.write(out, force, base.exportBytes(), folder -> {
            try (ExportWeights.Opened opened = weights.open()) {
                SafetensorsWriter.writeModel(folder, opened.tensors(), Map.of("format", "pt"), maxShardBytes);
            }
            base.copyInto(folder);
            if (model.card().isPresent()) {
                model.card().get().writeInto(folder, out.toAbsolutePath().normalize().getFileName().toString(), base);
            }
            model.extraFiles().writeInto(folder);
        });
    }
}
