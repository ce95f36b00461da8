package dev.crucible.api;

/**
 * The user's mistake, not ours: a missing file, a malformed config, an unavailable device.
 * The runner prints {@link #getMessage()} as one line and exits with status 2, without a stack trace.
 * Messages say what is wrong and, where it helps, what to do next.
 */
public class UserInputException extends RuntimeException {
    public UserInputException(String message) {
        super(message);
    }

    public UserInputException(String message, Throwable cause) {
        super(message, cause);
    }
}
