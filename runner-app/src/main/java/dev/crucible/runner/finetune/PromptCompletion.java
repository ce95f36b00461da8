package dev.crucible.runner.finetune;

import java.util.List;
import java.util.Objects;

/**
 * A {@code {"prompt", "completion"}} row (or an {@code {"instruction", "input", "output"}} row, read as one): the
 * completion is what is learned. How it is rendered depends on the model ({@link ExampleEncoder}): with a chat
 * template it is a user turn and the assistant's answer; without one it is plain text, {@code prompt + separator +
 * completion} followed by the EOS token, as TRL's SFTTrainer treats prompt-completion rows.
 *
 * @param separator written between prompt and completion in plain text: empty for prompt/completion rows (TRL
 *                  concatenates them as written, so the data carries its own space or newline), a blank line for
 *                  instruction rows, whose fields carry none
 */
public record PromptCompletion(String prompt, String completion, String separator, String source) implements TrainingRow {
    public PromptCompletion {
        Objects.requireNonNull(prompt, "prompt is null");
        Objects.requireNonNull(completion, "completion is null");
        Objects.requireNonNull(separator, "separator is null");
        Objects.requireNonNull(source, "source is null");
    }

    /** The row as a chat: the prompt is the user's turn, the completion the assistant's. */
    public Conversation asConversation() {
        return new Conversation(List.of(Conversation.message("user", prompt),
                Conversation.message("assistant", completion)), source);
    }

    /** The text before the completion in plain rendering. */
    public String plainPrompt() {
        return prompt + separator;
    }
}
