package dev.crucible.runner.finetune;

/**
 * One row of training data: a conversation (rendered with the chat template), a prompt and its completion (chat or
 * plain text, depending on the model) or plain text.
 */
public sealed interface TrainingRow permits Conversation, PromptCompletion, PlainText {

    /** {@code FILE:LINE}, for error messages. */
    String source();
}
