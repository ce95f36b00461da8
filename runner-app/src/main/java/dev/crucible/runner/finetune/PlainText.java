package dev.crucible.runner.finetune;

import java.util.Objects;

/**
 * A {@code {"text": "..."}} row: language-model training on every token, the text and the EOS token encoded as the
 * tokenizer encodes raw text (with the BOS it adds), no chat template involved, as TRL's SFTTrainer does. For
 * continued pre-training and base models without a template.
 */
public record PlainText(String text, String source) implements TrainingRow {
    public PlainText {
        Objects.requireNonNull(text, "text is null");
        Objects.requireNonNull(source, "source is null");
    }
}
