package dev.crucible.runner.export;

import java.nio.file.Path;

/**
 * One format a model leaves Crucible in. Every writer reads the same {@link ExportedModel} (the base it was made
 * from, its config and so its family layout, and what changed), so a format is one more implementation and the
 * commands that export do not change: {@link SafetensorsFolderWriter} (a Hugging Face folder: {@code merge},
 * {@code abliterate --export}, a full fine-tune), {@link PeftAdapterWriter} (a PEFT adapter folder:
 * {@code abliterate --export-adapter}, LoRA and QLoRA fine-tunes), and GGUF next.
 *
 * <p>A write is whole or not at all: staged beside {@code out}, then moved into place. It replaces an existing
 * {@code out} only with {@code force}, and refuses a location that cannot take it (one line, exit 2) before it
 * computes any weight.
 */
public interface ModelWriter {
    void write(ExportedModel model, Path out, boolean force);
}
