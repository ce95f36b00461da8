package dev.crucible.runner.session;

/**
 * What happens to a prompt too long for the model's context ({@code --truncate-prompts}): refused with one line
 * (the default), or its text cut to fit, keeping its end ({@code left}: tokens go from the left, as Hugging Face's
 * {@code truncation_side="left"}) or its start ({@code right}). The chat template's framing and the system prompt
 * are never cut, only the prompt's own text.
 */
public enum PromptTruncation {
    NONE,
    LEFT,
    RIGHT
}
