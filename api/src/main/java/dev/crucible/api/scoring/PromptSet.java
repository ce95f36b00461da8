package dev.crucible.api.scoring;

/** The evaluation prompt sets a scorer may read. */
public enum PromptSet {
    /** Prompts the base model refuses (the "bad" test split). */
    HARMFUL,
    /** Prompts the base model answers (the "good" test split). */
    HARMLESS
}
