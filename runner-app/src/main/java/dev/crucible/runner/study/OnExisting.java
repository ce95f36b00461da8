package dev.crucible.runner.study;

import dev.crucible.api.UserInputException;
import java.util.Locale;

/** What to do when {@code --study DIR} already holds a journal ({@code --on-existing}). */
public enum OnExisting {
    /** Replay the journal and add trials after the last one. */
    CONTINUE,
    /** Move the old journal aside ({@code journal.jsonl.bak-<time>}) and start a new study. */
    RESTART,
    /** Stop with a message that says which of the other two to choose. */
    EXIT;

    public static OnExisting parse(String text) {
        try {
            return valueOf(text.trim().toUpperCase(Locale.ROOT));
        } catch (IllegalArgumentException e) {
            throw new UserInputException("--on-existing '" + text + "' is not one of continue, restart, exit");
        }
    }

    @Override
    public String toString() {
        return name().toLowerCase(Locale.ROOT);
    }
}
