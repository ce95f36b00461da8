package dev.crucible.runner.export;

import dev.crucible.api.io.StagedFolder;
import dev.crucible.api.model.ModelConfig;
import dev.crucible.huggingface.hub.ModelLocator;
import java.util.Objects;
import java.util.Optional;

/**
 * A model on its way out, as every {@link ModelWriter} reads it. What changed is given as the weights, the LoRA
 * factors, or both; each writer reads the form its format stores and is handed only models that have it.
 *
 * @param base       where the base came from (a Hub id and revision, or a folder): adapter configs and cards name it
 * @param config     the base's config, from which its family layout follows (tensor roles, for formats that name
 *                   tensors their own way)
 * @param files      the base folder's files an exported folder carries (config, tokenizer, chat template, licences)
 * @param weights    every tensor as it leaves, computed only once the writer has checked its target; empty when
 *                   the change exists only as adapters (a LoRA fine-tune)
 * @param adapters   the change as LoRA factors, when it is one; empty for a merge of an adapter or a full fine-tune
 * @param card       the folder's README.md, for the exports that carry one
 * @param extraFiles written into the folder last, given the staging folder with everything else already there
 *                   (reproduce.json, finetune_meta.json, tokenizer files beside an adapter)
 */
public record ExportedModel(ModelLocator.Located base, ModelConfig config, BaseFiles files,
                            Optional<ExportWeights> weights, Optional<LoraAdapters> adapters, Optional<ModelCard> card,
                            StagedFolder.Contents extraFiles) {
    public ExportedModel {
        Objects.requireNonNull(base, "base is null");
        Objects.requireNonNull(config, "config is null");
        Objects.requireNonNull(files, "files is null");
        Objects.requireNonNull(weights, "weights is null");
        Objects.requireNonNull(adapters, "adapters is null");
        Objects.requireNonNull(card, "card is null");
        Objects.requireNonNull(extraFiles, "extraFiles is null");
        if (weights.isEmpty() && adapters.isEmpty()) {
            throw new IllegalArgumentException("an exported model needs its weights, its adapters or both");
        }
    }

    /** The weights, for a format that stores them. */
    public ExportWeights requireWeights(String format) {
        return weights.orElseThrow(() -> new IllegalStateException(format + " stores weights; this model has only adapters"));
    }

    /** The adapters, for a format that stores them. */
    LoraAdapters requireAdapters(String format) {
        return adapters.orElseThrow(() -> new IllegalStateException(format + " stores adapters; this model has none"));
    }
}
