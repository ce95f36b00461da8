package dev.crucible.runner.export;

import dev.crucible.api.io.Checkpoint;
import dev.crucible.api.io.HostTensor;
import dev.crucible.api.io.SafetensorsWriter;
import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.io.WritableTensor;
import dev.crucible.api.model.MergedWeights;
import dev.crucible.runner.session.ModelSession;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Writes the session's model, with its current adapters merged, as a Hugging Face folder: the same tensor names,
 * shapes and dtypes as the base (edited weights replaced by their merged values, every other tensor copied
 * byte for byte), safetensors shards no larger than {@code maxShardBytes}, the base's config, tokenizer, chat
 * template and licence files ({@link BaseFiles}), and a model card of its own. The folder appears whole or not at all.
 */
public final class ModelExporter {
    private ModelExporter() {
    }

    /**
     * Checks what can be checked before the merge (the output location and its free space, the chat templates that
     * will be copied), then writes the folder.
     *
     * @param extraFiles written into the folder last, before it is moved into place (e.g. reproduce.json), given the
     *                   staging folder with everything else already there
     */
    public static void exportMerged(ModelSession session, Path out, long maxShardBytes, boolean force, ModelCard card,
                                    StagedFolder.Contents extraFiles) {
        BaseFiles base = BaseFiles.of(session.modelDir());
        base.checkChatTemplates();
        StagedFolder.write(out, force, base.exportBytes(), folder -> {
            try (MergedWeights merged = session.merge()) {
                Checkpoint weights = session.checkpoint();
                Map<String, HostTensor> replaced = merged.tensors();
                List<WritableTensor> tensors = new ArrayList<>();
                for (String name : weights.names()) {
                    HostTensor tensor = replaced.containsKey(name) ? replaced.get(name) : weights.tensor(name);
                    tensors.add(WritableTensor.of(tensor));
                }
                SafetensorsWriter.writeModel(folder, tensors, Map.of("format", "pt"), maxShardBytes);
            }
            base.copyInto(folder);
            card.writeInto(folder, out.toAbsolutePath().normalize().getFileName().toString(), base);
            extraFiles.writeInto(folder);
        });
    }
}
