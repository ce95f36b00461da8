package dev.crucible.runner.abliterate.config;

/** What a chosen trial is exported as. */
public enum ExportFormat {
    /** A Hugging Face model folder with the edit merged into the weights. */
    MERGED,
    /** A PEFT adapter folder to load on top of the base model. */
    ADAPTER
}
