package dev.crucible.runner.export;

import java.util.Locale;

/** What a model is exported as, and the writer that makes it. */
public enum ExportFormat {
    /** A Hugging Face model folder with the change merged into the weights. */
    MERGED,
    /** A PEFT adapter folder to load on top of the base model. */
    ADAPTER;

    /** @param maxShardBytes the largest safetensors shard a model folder may have */
    public ModelWriter writer(long maxShardBytes) {
        return switch (this) {
            case MERGED -> new SafetensorsFolderWriter(maxShardBytes);
            case ADAPTER -> new PeftAdapterWriter();
        };
    }

    /** The name reproduce.json and {@code export_format} use: {@code merged}, {@code adapter}. */
    public String userName() {
        return name().toLowerCase(Locale.ROOT);
    }
}
