package dev.crucible.huggingface.template;

import dev.crucible.api.UserInputException;

/**
 * A chat template that cannot be compiled, or whose rendering failed.
 *
 * <p>When the template itself aborted through {@code raise_exception(msg)} the message is exactly {@code msg},
 * because that text is the model author's explanation to the user (for example "System role not supported")
 * and callers compare it verbatim. Other failures carry a Python-style description ("TypeError: ...",
 * "UndefinedError: 'x' is undefined") followed by the template line.
 */
public final class ChatTemplateException extends UserInputException {

    /** Why rendering stopped. */
    public enum Reason {
        /** The template source is not valid Jinja (or uses something this engine does not offer). */
        SYNTAX_ERROR,
        /** Evaluation failed: an undefined value was used, a type error, a bad filter argument, ... */
        RUNTIME_ERROR,
        /** The template called {@code raise_exception(message)}: the conversation does not fit the model. */
        RAISED_BY_TEMPLATE
    }

    private final Reason reason;
    private final int line;

    ChatTemplateException(Reason reason, String message, int line) {
        super(message);
        this.reason = reason;
        this.line = line;
    }

    static ChatTemplateException syntax(String message, int line) {
        String where = line > 0 ? " at line " + line : "";
        return new ChatTemplateException(Reason.SYNTAX_ERROR, "chat template syntax error" + where + ": " + message,
                line);
    }

    static ChatTemplateException raised(String message) {
        return new ChatTemplateException(Reason.RAISED_BY_TEMPLATE, message, 0);
    }

    /** A failure during evaluation, named like the Python exception Jinja would raise. */
    static ChatTemplateException runtime(String pythonError, String message) {
        return new ChatTemplateException(Reason.RUNTIME_ERROR, pythonError + ": " + message, 0);
    }

    static ChatTemplateException typeError(String message) {
        return runtime("TypeError", message);
    }

    static ChatTemplateException valueError(String message) {
        return runtime("ValueError", message);
    }

    /** Adds the template line to a runtime error that does not have one yet. */
    ChatTemplateException atLine(int templateLine) {
        if (reason != Reason.RUNTIME_ERROR || line != 0 || templateLine <= 0) {
            return this;
        }
        ChatTemplateException located = new ChatTemplateException(reason,
                getMessage() + " (chat template line " + templateLine + ")", templateLine);
        located.setStackTrace(getStackTrace());
        return located;
    }

    public Reason reason() {
        return reason;
    }

    /** The 1-based template line the error was found at, or 0 when unknown. */
    public int line() {
        return line;
    }
}
