package dev.crucible.runner.finetune;

/** One row of training data: a conversation (rendered with the chat template) or plain text. */
public sealed interface TrainingRow permits Conversation, PlainText {

    /** {@code FILE:LINE}, for error messages. */
    String source();
}
